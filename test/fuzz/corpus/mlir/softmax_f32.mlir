func.func @softmax_f32(%x: tensor<4x100xf32>) -> (tensor<4x100xf32>) {
  %y = fusec.softmax %x dim 1 : tensor<4x100xf32>
  return %y : tensor<4x100xf32>
}
