func.func @cast_bf16_scaled(%x: tensor<1001xf32>, %s: tensor<f32>) -> (tensor<1001xbf16>) {
  %sb = fusec.broadcast %s dims [] : tensor<f32> -> tensor<1001xf32>
  %m = fusec.mul %x, %sb : tensor<1001xf32>
  %y = fusec.cast %m : tensor<1001xf32> to tensor<1001xbf16>
  return %y : tensor<1001xbf16>
}
