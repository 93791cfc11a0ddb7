func.func @layer_norm(%x: tensor<7x5000xbf16>, %g: tensor<5000xbf16>, %b: tensor<5000xbf16>) -> tensor<7x5000xbf16> {
  %0 = fusec.layer_norm %x, %g, %b : (tensor<7x5000xbf16>, tensor<5000xbf16>, tensor<5000xbf16>) -> tensor<7x5000xbf16>
  return %0 : tensor<7x5000xbf16>
}

