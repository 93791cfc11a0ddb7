func.func @runs(%a: tensor<3x5x16xbf16>, %b: tensor<3x5x8xbf16>, %c: tensor<3x5x40xbf16>, %bias: tensor<24xbf16>) -> tensor<3x5x24xbf16> {
  %cat = fusec.concat %a, %b dim 2 : (tensor<3x5x16xbf16>, tensor<3x5x8xbf16>) -> tensor<3x5x24xbf16>
  %s = fusec.slice %c offsets [0, 0, 8] strides [1, 1, 1] : tensor<3x5x40xbf16> -> tensor<3x5x24xbf16>
  %bb = fusec.broadcast %bias dims [2] : tensor<24xbf16> -> tensor<3x5x24xbf16>
  %0 = fusec.mul %cat, %s : tensor<3x5x24xbf16>
  %1 = fusec.add %0, %bb : tensor<3x5x24xbf16>
  return %1 : tensor<3x5x24xbf16>
}
