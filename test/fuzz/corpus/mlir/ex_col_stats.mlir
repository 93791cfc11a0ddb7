func.func @col_stats(%x: tensor<8x16x33xf32>) -> (tensor<33xf32>, tensor<33xf32>) {
  %0 = fusec.reduce max %x dims [0, 1] : tensor<8x16x33xf32> -> tensor<33xf32>
  %1 = fusec.reduce sum %x dims [0, 1] : tensor<8x16x33xf32> -> tensor<33xf32>
  return %0, %1 : tensor<33xf32>, tensor<33xf32>
}
