func.func @head_transpose_scale(%x: tensor<3x37x5x40xf16>) -> tensor<3x5x37x40xf16> {
  %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<3x37x5x40xf16> -> tensor<3x5x37x40xf16>
  %s = fusec.constant dense<0.125> : tensor<3x5x37x40xf16>
  %0 = fusec.mul %t, %s : tensor<3x5x37x40xf16>
  return %0 : tensor<3x5x37x40xf16>
}
