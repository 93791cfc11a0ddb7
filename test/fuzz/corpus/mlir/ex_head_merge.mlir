func.func @head_merge(%x: tensor<2x5x7x24xbf16>) -> tensor<2x7x120xbf16> {
  %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<2x5x7x24xbf16> -> tensor<2x7x5x24xbf16>
  %r = fusec.reshape %t : tensor<2x7x5x24xbf16> -> tensor<2x7x120xbf16>
  return %r : tensor<2x7x120xbf16>
}
