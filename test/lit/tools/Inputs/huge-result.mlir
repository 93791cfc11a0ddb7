func.func @f(%x: tensor<1xf32>) -> tensor<1000000x1000000xf32> {
  %y = fusec.broadcast %x dims [1] : tensor<1xf32> -> tensor<1000000x1000000xf32>
  return %y : tensor<1000000x1000000xf32>
}
