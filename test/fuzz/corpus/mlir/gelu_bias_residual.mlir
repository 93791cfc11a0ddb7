func.func @gelu_bias_residual(%x: tensor<5x40xbf16>, %b: tensor<40xbf16>, %r: tensor<5x40xbf16>) -> (tensor<5x40xbf16>) {
  %bb = fusec.broadcast %b dims [1] : tensor<40xbf16> -> tensor<5x40xbf16>
  %0 = fusec.add %x, %bb : tensor<5x40xbf16>
  %1 = fusec.gelu %0 : tensor<5x40xbf16>
  %h = fusec.constant dense<0.5> : tensor<5x40xbf16>
  %2 = fusec.mul %1, %h : tensor<5x40xbf16>
  %y = fusec.add %2, %r : tensor<5x40xbf16>
  return %y : tensor<5x40xbf16>
}
