func.func @convt(%x: tensor<1x8x5x5xbf16>, %w: tensor<8x16x3x3xbf16>) -> tensor<1x16x10x10xbf16> {
  %y = fusec.conv %x, %w {transposed, strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 0, 0>} : (tensor<1x8x5x5xbf16>, tensor<8x16x3x3xbf16>) -> tensor<1x16x10x10xbf16>
  return %y : tensor<1x16x10x10xbf16>
}
