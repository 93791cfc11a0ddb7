func.func @mvn(%x: tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32> {
  %m = fusec.reduce mean %x dims [0, 2, 3] : tensor<2x3x5x7xf32> -> tensor<3xf32>
  %mb = fusec.broadcast %m dims [1] : tensor<3xf32> -> tensor<2x3x5x7xf32>
  %d = fusec.sub %x, %mb : tensor<2x3x5x7xf32>
  %s = fusec.mul %d, %d : tensor<2x3x5x7xf32>
  %v = fusec.reduce mean %s dims [0, 2, 3] : tensor<2x3x5x7xf32> -> tensor<3xf32>
  %vb = fusec.broadcast %v dims [1] : tensor<3xf32> -> tensor<2x3x5x7xf32>
  %r = fusec.rsqrt %vb : tensor<2x3x5x7xf32>
  %y = fusec.mul %d, %r : tensor<2x3x5x7xf32>
  return %y : tensor<2x3x5x7xf32>
}
