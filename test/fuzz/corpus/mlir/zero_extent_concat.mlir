func.func @empty_parts(%x: tensor<3x48xf16>) -> (tensor<3x0xf16>, tensor<3x0xf16>) {
  %g = fusec.slice %x offsets [0, 0] strides [1, 1] : tensor<3x48xf16> -> tensor<3x0xf16>
  %c = fusec.concat %g, %g, %g dim 1 : (tensor<3x0xf16>, tensor<3x0xf16>, tensor<3x0xf16>) -> tensor<3x0xf16>
  %u = fusec.slice %x offsets [0, 24] strides [1, 1] : tensor<3x48xf16> -> tensor<3x0xf16>
  %a = fusec.silu %g : tensor<3x0xf16>
  %d = fusec.div %a, %a : tensor<3x0xf16>
  %n = fusec.neg %d : tensor<3x0xf16>
  %y = fusec.mul %n, %u : tensor<3x0xf16>
  return %y, %c : tensor<3x0xf16>, tensor<3x0xf16>
}
