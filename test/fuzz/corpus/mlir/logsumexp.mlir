func.func @logsumexp(%x: tensor<3x77xf32>) -> (tensor<3xf32>) {
  %m = fusec.reduce max %x dims [1] : tensor<3x77xf32> -> tensor<3xf32>
  %mb = fusec.broadcast %m dims [0] : tensor<3xf32> -> tensor<3x77xf32>
  %d = fusec.sub %x, %mb : tensor<3x77xf32>
  %e = fusec.exp %d : tensor<3x77xf32>
  %s = fusec.reduce sum %e dims [1] : tensor<3x77xf32> -> tensor<3xf32>
  %l = fusec.log %s : tensor<3xf32>
  %y = fusec.add %l, %m : tensor<3xf32>
  return %y : tensor<3xf32>
}
