func.func @batch_norm_stats(%x: tensor<2x3x5x7xbf16>) -> (tensor<3xf32>, tensor<3xf32>) {
  %xf = fusec.cast %x : tensor<2x3x5x7xbf16> to tensor<2x3x5x7xf32>
  %m = fusec.reduce mean %xf dims [0, 2, 3] : tensor<2x3x5x7xf32> -> tensor<3xf32>
  %mb = fusec.broadcast %m dims [1] : tensor<3xf32> -> tensor<2x3x5x7xf32>
  %d = fusec.sub %xf, %mb : tensor<2x3x5x7xf32>
  %sq = fusec.mul %d, %d : tensor<2x3x5x7xf32>
  %v = fusec.reduce mean %sq dims [0, 2, 3] : tensor<2x3x5x7xf32> -> tensor<3xf32>
  return %m, %v : tensor<3xf32>, tensor<3xf32>
}
