func.func @fp8_matmul(%a: tensor<64x32xf8E4M3FN>, %b: tensor<32x64xf8E4M3FN>) -> tensor<64x64xf32> {
  %0 = fusec.matmul %a, %b : (tensor<64x32xf8E4M3FN>, tensor<32x64xf8E4M3FN>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
