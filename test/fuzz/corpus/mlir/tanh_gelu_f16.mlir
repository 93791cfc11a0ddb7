func.func @tanh_gelu_f16(%x: tensor<1000xf16>) -> (tensor<1000xf16>) {
  %y = fusec.gelu %x {tanh} : tensor<1000xf16>
  return %y : tensor<1000xf16>
}
