func.func @int_rows(%x: tensor<6x5000xi32>, %y: tensor<3x70000xi64>, %z: tensor<50x90xi32>) -> (tensor<6xi32>, tensor<6xi32>, tensor<3xi64>, tensor<50xi32>) {
  %0 = fusec.reduce max %x dims [1] : tensor<6x5000xi32> -> tensor<6xi32>
  %1 = fusec.reduce min %x dims [1] : tensor<6x5000xi32> -> tensor<6xi32>
  %2 = fusec.reduce sum %y dims [1] : tensor<3x70000xi64> -> tensor<3xi64>
  %3 = fusec.reduce min %z dims [1] : tensor<50x90xi32> -> tensor<50xi32>
  return %0, %1, %2, %3 : tensor<6xi32>, tensor<6xi32>, tensor<3xi64>, tensor<50xi32>
}
