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

// kᵀ as PyTorch exports it: heads merged into one batch dim, transposed, split.
func.func @regrouped_kt(%q: tensor<2x3x8x16xf16>, %k: tensor<2x3x8x16xf16>) -> tensor<2x3x8x8xf16> {
  %0 = fusec.reshape %k : tensor<2x3x8x16xf16> -> tensor<6x8x16xf16>
  %1 = fusec.transpose %0 perm [0, 2, 1] : tensor<6x8x16xf16> -> tensor<6x16x8xf16>
  %2 = fusec.reshape %1 : tensor<6x16x8xf16> -> tensor<2x3x16x8xf16>
  %3 = fusec.matmul %q, %2 : (tensor<2x3x8x16xf16>, tensor<2x3x16x8xf16>) -> tensor<2x3x8x8xf16>
  return %3 : tensor<2x3x8x8xf16>
}

// A linear layer on [batch, sequence, features], its bias, a tanh-GELU and
// the residual: the activations' leading dims become matmul rows.
func.func @linear_rows(%x: tensor<2x5x16xf16>, %w: tensor<16x24xf16>, %b: tensor<24xf16>,
                       %r: tensor<2x5x24xf16>) -> tensor<2x5x24xf16> {
  %0 = fusec.matmul %x, %w : (tensor<2x5x16xf16>, tensor<16x24xf16>) -> tensor<2x5x24xf16>
  %1 = fusec.broadcast %b dims [2] : tensor<24xf16> -> tensor<2x5x24xf16>
  %2 = fusec.add %0, %1 : tensor<2x5x24xf16>
  %3 = fusec.gelu %2 {tanh} : tensor<2x5x24xf16>
  %4 = fusec.add %3, %r : tensor<2x5x24xf16>
  return %4 : tensor<2x5x24xf16>
}
