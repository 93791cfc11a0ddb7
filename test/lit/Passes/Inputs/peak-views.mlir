// A returned reshape (a view that holds its input to the end), a reduction
// and a transpose: fuse-peak-incremental.test.
func.func @square_transpose(%x: tensor<129x129xf8E5M2>) -> (tensor<129x129xf8E5M2>, tensor<129xf8E5M2>, tensor<1x16641xf8E5M2>) {
  %t = fusec.transpose %x perm [1, 0] : tensor<129x129xf8E5M2> -> tensor<129x129xf8E5M2>
  %0 = fusec.add %t, %x : tensor<129x129xf8E5M2>
  %flat = fusec.reshape %0 : tensor<129x129xf8E5M2> -> tensor<1x16641xf8E5M2>
  %rows = fusec.reduce sum %0 dims [1] : tensor<129x129xf8E5M2> -> tensor<129xf8E5M2>
  %twice = fusec.add %0, %0 : tensor<129x129xf8E5M2>
  return %twice, %rows, %flat : tensor<129x129xf8E5M2>, tensor<129xf8E5M2>, tensor<1x16641xf8E5M2>
}
