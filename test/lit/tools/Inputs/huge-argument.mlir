func.func @f(%x: tensor<1000000x1000000xf32>) -> tensor<1000000x1000000xf32> {
  %y = fusec.exp %x : tensor<1000000x1000000xf32>
  return %y : tensor<1000000x1000000xf32>
}
