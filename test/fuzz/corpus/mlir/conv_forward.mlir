func.func @conv(%x: tensor<2x8x9x9xf16>, %w: tensor<16x8x3x3xf16>) -> tensor<2x16x5x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x8x9x9xf16>, tensor<16x8x3x3xf16>) -> tensor<2x16x5x5xf16>
  return %y : tensor<2x16x5x5xf16>
}
