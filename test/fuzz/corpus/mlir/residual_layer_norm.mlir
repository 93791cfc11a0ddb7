func.func @residual_layer_norm(%x: tensor<5x72xbf16>, %r: tensor<5x72xbf16>, %g: tensor<72xbf16>, %b: tensor<72xbf16>) -> (tensor<5x72xbf16>, tensor<5x72xbf16>) {
  %h = fusec.add %x, %r : tensor<5x72xbf16>
  %y = fusec.layer_norm %h, %g, %b : (tensor<5x72xbf16>, tensor<72xbf16>, tensor<72xbf16>) -> tensor<5x72xbf16>
  return %h, %y : tensor<5x72xbf16>, tensor<5x72xbf16>
}
