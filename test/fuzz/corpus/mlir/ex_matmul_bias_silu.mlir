func.func @matmul_bias_silu(%x: tensor<3x37x19xf32>, %w: tensor<19x23xf32>, %b: tensor<23xf32>) -> tensor<3x37x23xf32> {
  %0 = fusec.matmul %x, %w : (tensor<3x37x19xf32>, tensor<19x23xf32>) -> tensor<3x37x23xf32>
  %bb = fusec.broadcast %b dims [2] : tensor<23xf32> -> tensor<3x37x23xf32>
  %1 = fusec.add %0, %bb : tensor<3x37x23xf32>
  %2 = fusec.silu %1 : tensor<3x37x23xf32>
  return %2 : tensor<3x37x23xf32>
}
