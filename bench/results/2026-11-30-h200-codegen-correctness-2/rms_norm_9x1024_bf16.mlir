func.func @rms_norm(%x: tensor<9x1024xbf16>, %g: tensor<1024xbf16>) -> tensor<9x1024xbf16> {
  %0 = fusec.rms_norm %x, %g : (tensor<9x1024xbf16>, tensor<1024xbf16>) -> tensor<9x1024xbf16>
  return %0 : tensor<9x1024xbf16>
}

