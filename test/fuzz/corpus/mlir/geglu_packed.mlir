func.func @geglu_packed(%x: tensor<3x48xbf16>) -> (tensor<3x24xbf16>) {
  %g = fusec.slice %x offsets [0, 0] strides [1, 1] : tensor<3x48xbf16> -> tensor<3x24xbf16>
  %u = fusec.slice %x offsets [0, 24] strides [1, 1] : tensor<3x48xbf16> -> tensor<3x24xbf16>
  %a = fusec.gelu %g {tanh} : tensor<3x24xbf16>
  %y = fusec.mul %a, %u : tensor<3x24xbf16>
  return %y : tensor<3x24xbf16>
}
