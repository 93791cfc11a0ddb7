func.func @g(%x: tensor<1000003xbf16>, %b: tensor<1000003xbf16>) -> tensor<1000003xbf16> {
  %0 = fusec.add %x, %b : tensor<1000003xbf16>
  %1 = fusec.gelu %0 {tanh} : tensor<1000003xbf16>
  return %1 : tensor<1000003xbf16>
}
