func.func @gelu_bias_residual(%x: tensor<4096xbf16>, %b: tensor<4096xbf16>, %r: tensor<4096xbf16>) -> tensor<4096xbf16> {
  %0 = fusec.add %x, %b : tensor<4096xbf16>
  %1 = fusec.gelu %0 : tensor<4096xbf16>
  %h = fusec.constant dense<0.5> : tensor<4096xbf16>
  %2 = fusec.mul %1, %h : tensor<4096xbf16>
  %3 = fusec.add %2, %r : tensor<4096xbf16>
  return %3 : tensor<4096xbf16>
}
