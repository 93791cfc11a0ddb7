func.func @cast_fp8_scaled(%x: tensor<1001xf32>, %s: tensor<f32>) -> (tensor<1001xf8E4M3FN>) {
  %sb = fusec.broadcast %s dims [] : tensor<f32> -> tensor<1001xf32>
  %m = fusec.mul %x, %sb : tensor<1001xf32>
  %hi = fusec.constant dense<448.0> : tensor<1001xf32>
  %lo = fusec.constant dense<-448.0> : tensor<1001xf32>
  %c1 = fusec.min %m, %hi : tensor<1001xf32>
  %c2 = fusec.max %c1, %lo : tensor<1001xf32>
  %y = fusec.cast %c2 : tensor<1001xf32> to tensor<1001xf8E4M3FN>
  return %y : tensor<1001xf8E4M3FN>
}
