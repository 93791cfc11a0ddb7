func.func @col_split(%x: tensor<0x40xf32>, %y: tensor<3x2000x16xi32>) -> (tensor<40xf32>, tensor<40xf32>, tensor<3x16xi32>) {
  %0 = fusec.reduce sum %x dims [0] : tensor<0x40xf32> -> tensor<40xf32>
  %1 = fusec.reduce max %x dims [0] : tensor<0x40xf32> -> tensor<40xf32>
  %2 = fusec.reduce sum %y dims [1] : tensor<3x2000x16xi32> -> tensor<3x16xi32>
  return %0, %1, %2 : tensor<40xf32>, tensor<40xf32>, tensor<3x16xi32>
}
