func.func @res2(%a: tensor<25088x128xf16>, %w: tensor<128x512xf16>, %r: tensor<25088x512xf16>) -> tensor<25088x512xf16> {
  %zero = fusec.constant dense<0.0> : tensor<25088x512xf16>
  %m = fusec.matmul %a, %w : (tensor<25088x128xf16>, tensor<128x512xf16>) -> tensor<25088x512xf16>
  %y = fusec.add %m, %r : tensor<25088x512xf16>
  %z = fusec.max %y, %zero : tensor<25088x512xf16>
  return %z : tensor<25088x512xf16>
}
