func.func @same(%a: tensor<1x3x2x8xf32>) -> tensor<1x3x2x3xf32> {
  %r = fusec.pool max %a {kernel = array<i64: 2, 3>, strides = array<i64: 2, 3>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 2>, pad_high = array<i64: 1, 0>} : tensor<1x3x2x8xf32> -> tensor<1x3x2x3xf32>
  return %r : tensor<1x3x2x3xf32>
}
func.func @nopadw(%a: tensor<1x3x2x8xf32>) -> tensor<1x3x2x2xf32> {
  %r = fusec.pool max %a {kernel = array<i64: 2, 3>, strides = array<i64: 2, 3>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 0>, pad_high = array<i64: 1, 0>} : tensor<1x3x2x8xf32> -> tensor<1x3x2x2xf32>
  return %r : tensor<1x3x2x2xf32>
}
func.func @nopadh(%a: tensor<1x3x2x8xf32>) -> tensor<1x3x1x3xf32> {
  %r = fusec.pool max %a {kernel = array<i64: 2, 3>, strides = array<i64: 2, 3>, dilations = array<i64: 1, 1>, pad_low = array<i64: 0, 2>, pad_high = array<i64: 0, 0>} : tensor<1x3x2x8xf32> -> tensor<1x3x1x3xf32>
  return %r : tensor<1x3x1x3xf32>
}
func.func @k2s2(%a: tensor<1x3x4x8xf32>) -> tensor<1x3x3x5xf32> {
  %r = fusec.pool max %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : tensor<1x3x4x8xf32> -> tensor<1x3x3x5xf32>
  return %r : tensor<1x3x3x5xf32>
}
func.func @mean(%a: tensor<1x3x2x8xf32>) -> tensor<1x3x2x3xf32> {
  %r = fusec.pool mean %a {kernel = array<i64: 2, 3>, strides = array<i64: 2, 3>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 2>, pad_high = array<i64: 1, 0>} : tensor<1x3x2x8xf32> -> tensor<1x3x2x3xf32>
  return %r : tensor<1x3x2x3xf32>
}
func.func @big(%a: tensor<4x16x9x17xf32>) -> tensor<4x16x5x6xf32> {
  %r = fusec.pool max %a {kernel = array<i64: 2, 3>, strides = array<i64: 2, 3>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 2>, pad_high = array<i64: 1, 0>} : tensor<4x16x9x17xf32> -> tensor<4x16x5x6xf32>
  return %r : tensor<4x16x5x6xf32>
}
