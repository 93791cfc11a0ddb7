func.func @head_merge(%x: tensor<2x3x5x8xbf16>) -> (tensor<2x5x24xbf16>) {
  %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<2x3x5x8xbf16> -> tensor<2x5x3x8xbf16>
  %y = fusec.reshape %t : tensor<2x5x3x8xbf16> -> tensor<2x5x24xbf16>
  return %y : tensor<2x5x24xbf16>
}
