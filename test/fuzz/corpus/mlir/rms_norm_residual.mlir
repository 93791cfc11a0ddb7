func.func @rms_norm_residual(%x: tensor<3x40xbf16>, %r: tensor<3x40xbf16>, %g: tensor<40xbf16>) -> (tensor<3x40xbf16>, tensor<3x40xbf16>) {
  %h = fusec.add %x, %r : tensor<3x40xbf16>
  %y = fusec.rms_norm %h, %g : (tensor<3x40xbf16>, tensor<40xbf16>) -> tensor<3x40xbf16>
  return %h, %y : tensor<3x40xbf16>, tensor<3x40xbf16>
}
