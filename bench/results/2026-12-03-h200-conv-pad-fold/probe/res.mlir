func.func @res(%a: tensor<100352x64xf16>, %w: tensor<64x256xf16>, %bias: tensor<256xf16>, %r: tensor<100352x256xf16>) -> tensor<100352x256xf16> {
  %zero = fusec.constant dense<0.0> : tensor<100352x256xf16>
  %m = fusec.matmul %a, %w : (tensor<100352x64xf16>, tensor<64x256xf16>) -> tensor<100352x256xf16>
  %bb = fusec.broadcast %bias dims [1] : tensor<256xf16> -> tensor<100352x256xf16>
  %x = fusec.add %m, %bb : tensor<100352x256xf16>
  %y = fusec.add %x, %r : tensor<100352x256xf16>
  %z = fusec.max %y, %zero : tensor<100352x256xf16>
  return %z : tensor<100352x256xf16>
}
