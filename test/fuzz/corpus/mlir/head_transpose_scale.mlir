func.func @head_transpose_scale(%x: tensor<2x5x3x8xbf16>) -> (tensor<2x3x5x8xbf16>) {
  %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<2x5x3x8xbf16> -> tensor<2x3x5x8xbf16>
  %c = fusec.constant dense<0.125> : tensor<2x3x5x8xbf16>
  %y = fusec.mul %t, %c : tensor<2x3x5x8xbf16>
  return %y : tensor<2x3x5x8xbf16>
}
