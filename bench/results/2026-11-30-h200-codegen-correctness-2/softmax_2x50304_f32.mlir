func.func @softmax(%x: tensor<2x50304xf32>) -> tensor<2x50304xf32> {
  %0 = fusec.softmax %x dim 1 : tensor<2x50304xf32>
  return %0 : tensor<2x50304xf32>
}

