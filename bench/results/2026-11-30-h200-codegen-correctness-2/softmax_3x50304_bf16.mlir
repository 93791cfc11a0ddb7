func.func @softmax(%x: tensor<3x50304xbf16>) -> tensor<3x50304xbf16> {
  %0 = fusec.softmax %x dim 1 : tensor<3x50304xbf16>
  return %0 : tensor<3x50304xbf16>
}

