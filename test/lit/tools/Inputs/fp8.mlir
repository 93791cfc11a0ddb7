func.func @to_fp8(%x: tensor<64xf32>) -> tensor<64xf8E4M3FN> {
  %0 = fusec.cast %x : tensor<64xf32> to tensor<64xf8E4M3FN>
  return %0 : tensor<64xf8E4M3FN>
}
