func.func @softmax_rows(%x: tensor<17x1000xf32>) -> (tensor<17x1000xf32>, tensor<17xf32>) {
  %0 = fusec.softmax %x dim 1 : tensor<17x1000xf32>
  %1 = fusec.reduce max %x dims [1] : tensor<17x1000xf32> -> tensor<17xf32>
  return %0, %1 : tensor<17x1000xf32>, tensor<17xf32>
}
