func.func @layer_norm(%x: tensor<33x3000xbf16>, %g: tensor<3000xbf16>, %b: tensor<3000xbf16>) -> tensor<33x3000xbf16> {
  %0 = fusec.layer_norm %x, %g, %b : (tensor<33x3000xbf16>, tensor<3000xbf16>, tensor<3000xbf16>) -> tensor<33x3000xbf16>
  return %0 : tensor<33x3000xbf16>
}
