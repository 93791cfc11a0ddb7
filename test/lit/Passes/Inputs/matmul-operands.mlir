// Matmuls whose operands are transposed or scaled (decompose.mlir).
func.func @logits(%x: tensor<8x64xf16>, %w: tensor<101x64xf16>) -> tensor<8x101xf16> {
  %t = fusec.transpose %w perm [1, 0] : tensor<101x64xf16> -> tensor<64x101xf16>
  %0 = fusec.matmul %x, %t : (tensor<8x64xf16>, tensor<64x101xf16>) -> tensor<8x101xf16>
  return %0 : tensor<8x101xf16>
}

func.func @scaled_scores(%q: tensor<2x16x8xf16>, %k: tensor<2x16x8xf16>) -> tensor<2x8x8xf16> {
  %qt = fusec.transpose %q perm [0, 2, 1] : tensor<2x16x8xf16> -> tensor<2x8x16xf16>
  %c1 = fusec.constant dense<0.25> : tensor<2x8x16xf16>
  %qs = fusec.mul %qt, %c1 : tensor<2x8x16xf16>
  %c2 = fusec.constant dense<0.5> : tensor<2x16x8xf16>
  %ks = fusec.mul %c2, %k : tensor<2x16x8xf16>
  %0 = fusec.matmul %qs, %ks : (tensor<2x8x16xf16>, tensor<2x16x8xf16>) -> tensor<2x8x8xf16>
  return %0 : tensor<2x8x8xf16>
}
