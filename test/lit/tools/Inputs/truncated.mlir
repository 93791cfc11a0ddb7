func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fusec.add %a, %a : tensor<4xf3
