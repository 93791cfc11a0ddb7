func.func @reshape_mul(%x: tensor<6x10xf32>, %y: tensor<60xf32>) -> tensor<60xf32> {
  %r = fusec.reshape %x : tensor<6x10xf32> -> tensor<60xf32>
  %0 = fusec.mul %r, %y : tensor<60xf32>
  return %0 : tensor<60xf32>
}
