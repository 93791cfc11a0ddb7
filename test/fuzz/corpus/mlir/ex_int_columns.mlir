func.func @int_columns(%x: tensor<900x37xi32>, %y: tensor<5x64x9xi64>) -> (tensor<37xi32>, tensor<5x9xi64>) {
  %0 = fusec.reduce sum %x dims [0] : tensor<900x37xi32> -> tensor<37xi32>
  %1 = fusec.reduce max %y dims [1] : tensor<5x64x9xi64> -> tensor<5x9xi64>
  return %0, %1 : tensor<37xi32>, tensor<5x9xi64>
}
