func.func @transpose3d(%x: tensor<5x6x7xf16>) -> tensor<7x5x6xf16> {
  %t = fusec.transpose %x perm [2, 0, 1] : tensor<5x6x7xf16> -> tensor<7x5x6xf16>
  return %t : tensor<7x5x6xf16>
}
