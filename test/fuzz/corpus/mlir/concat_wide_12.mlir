func.func @concat(%a0: tensor<8x3xf32>, %a1: tensor<8x3xf32>, %a2: tensor<8x3xf32>, %a3: tensor<8x3xf32>, %a4: tensor<8x3xf32>, %a5: tensor<8x3xf32>, %a6: tensor<8x3xf32>, %a7: tensor<8x3xf32>, %a8: tensor<8x3xf32>, %a9: tensor<8x3xf32>, %a10: tensor<8x3xf32>, %a11: tensor<8x5xf32>) -> tensor<8x38xf32> {
  %c = fusec.concat %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7, %a8, %a9, %a10, %a11 dim 1 : (tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x5xf32>) -> tensor<8x38xf32>
  %s = fusec.constant dense<2.0> : tensor<8x38xf32>
  %y = fusec.mul %c, %s : tensor<8x38xf32>
  return %y : tensor<8x38xf32>
}
