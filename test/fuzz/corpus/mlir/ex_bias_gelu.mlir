func.func @bias_gelu(%x: tensor<1000x37xbf16>, %b: tensor<37xbf16>) -> tensor<1000x37xbf16> {
  %bb = fusec.broadcast %b dims [1] : tensor<37xbf16> -> tensor<1000x37xbf16>
  %0 = fusec.add %x, %bb : tensor<1000x37xbf16>
  %1 = fusec.gelu %0 {tanh} : tensor<1000x37xbf16>
  return %1 : tensor<1000x37xbf16>
}
