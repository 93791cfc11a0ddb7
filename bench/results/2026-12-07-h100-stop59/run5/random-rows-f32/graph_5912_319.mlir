func.func @g(%a0: tensor<16x33x64x5xi64>, %a1: tensor<16x33x64x5xi64>, %a2: tensor<8x5xf32>, %a3: tensor<1x3x2x8xf32>) -> (tensor<16x33x64x8xf32>, tensor<5xf32>, tensor<1x3x2x3xf32>) {
  %v1 = fusec.abs %a0 : tensor<16x33x64x5xi64>
  %v2 = fusec.max %v1, %a1 : tensor<16x33x64x5xi64>
  %v3 = fusec.cast %v2 : tensor<16x33x64x5xi64> to tensor<16x33x64x5xf32>
  %v4 = fusec.matmul %v3, %a2 {transpose_rhs} : (tensor<16x33x64x5xf32>, tensor<8x5xf32>) -> tensor<16x33x64x8xf32>
  %v5 = fusec.reduce mean %v3 dims [0] : tensor<16x33x64x5xf32> -> tensor<33x64x5xf32>
  %v6 = fusec.reduce sum %v5 dims [0, 1] : tensor<33x64x5xf32> -> tensor<5xf32>
  %v7 = fusec.pool max %a3 {kernel = array<i64: 2, 3>, strides = array<i64: 2, 3>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 2>, pad_high = array<i64: 1, 0>} : tensor<1x3x2x8xf32> -> tensor<1x3x2x3xf32>
  return %v4, %v6, %v7 : tensor<16x33x64x8xf32>, tensor<5xf32>, tensor<1x3x2x3xf32>
}
