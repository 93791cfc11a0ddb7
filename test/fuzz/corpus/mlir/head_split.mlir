func.func @head_split(%x: tensor<2x5x24xbf16>) -> (tensor<2x3x5x8xbf16>) {
  %r = fusec.reshape %x : tensor<2x5x24xbf16> -> tensor<2x5x3x8xbf16>
  %y = fusec.transpose %r perm [0, 2, 1, 3] : tensor<2x5x3x8xbf16> -> tensor<2x3x5x8xbf16>
  return %y : tensor<2x3x5x8xbf16>
}
