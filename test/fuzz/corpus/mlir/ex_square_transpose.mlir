func.func @square_transpose(%x: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %t = fusec.transpose %x perm [1, 0] : tensor<32x32xbf16> -> tensor<32x32xbf16>
  %0 = fusec.add %t, %x : tensor<32x32xbf16>
  return %0 : tensor<32x32xbf16>
}
