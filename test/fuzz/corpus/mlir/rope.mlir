func.func @rope(%x: tensor<2x5x3x8xbf16>, %cos: tensor<5x8xbf16>, %sin: tensor<5x8xbf16>) -> (tensor<2x5x3x8xbf16>) {
  %x1 = fusec.slice %x offsets [0, 0, 0, 0] strides [1, 1, 1, 1] : tensor<2x5x3x8xbf16> -> tensor<2x5x3x4xbf16>
  %x2 = fusec.slice %x offsets [0, 0, 0, 4] strides [1, 1, 1, 1] : tensor<2x5x3x8xbf16> -> tensor<2x5x3x4xbf16>
  %n2 = fusec.neg %x2 : tensor<2x5x3x4xbf16>
  %rh = fusec.concat %n2, %x1 dim 3 : (tensor<2x5x3x4xbf16>, tensor<2x5x3x4xbf16>) -> tensor<2x5x3x8xbf16>
  %cb = fusec.broadcast %cos dims [1, 3] : tensor<5x8xbf16> -> tensor<2x5x3x8xbf16>
  %sb = fusec.broadcast %sin dims [1, 3] : tensor<5x8xbf16> -> tensor<2x5x3x8xbf16>
  %a = fusec.mul %x, %cb : tensor<2x5x3x8xbf16>
  %r = fusec.mul %rh, %sb : tensor<2x5x3x8xbf16>
  %y = fusec.add %a, %r : tensor<2x5x3x8xbf16>
  return %y : tensor<2x5x3x8xbf16>
}
