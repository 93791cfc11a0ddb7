func.func @b(%x: tensor<2x64x8x8xf16>, %w1: tensor<64x64x1x1xf16>, %w2: tensor<64x64x3x3xf16>) -> tensor<2x64x8x8xf16> {
  %zero = fusec.constant dense<0.0> : tensor<2x64x8x8xf16>
  %a = fusec.conv %x, %w1 : (tensor<2x64x8x8xf16>, tensor<64x64x1x1xf16>) -> tensor<2x64x8x8xf16>
  %r = fusec.max %a, %zero : tensor<2x64x8x8xf16>
  %b = fusec.conv %r, %w2 {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x8x8xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x8x8xf16>
  %o = fusec.max %b, %zero : tensor<2x64x8x8xf16>
  return %o : tensor<2x64x8x8xf16>
}
