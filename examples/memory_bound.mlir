// Memory-bound graphs of every kind fusec generates code for: elementwise
// and broadcast, reductions over trailing dims (rows), leading or middle
// dims (columns) and dims apart (mvn), integer reductions, data movement, and small matmuls with
// their epilogues (the SIMT fallback). Odd sizes on purpose (tails, partial
// tiles).
//
//   fusec-run examples/memory_bound.mlir --function=col_center           (GPU)
//   fusec-run examples/memory_bound.mlir --function=col_center --reference

func.func @bias_gelu(%x: tensor<1000x37xbf16>, %b: tensor<37xbf16>) -> tensor<1000x37xbf16> {
  %bb = fusec.broadcast %b dims [1] : tensor<37xbf16> -> tensor<1000x37xbf16>
  %0 = fusec.add %x, %bb : tensor<1000x37xbf16>
  %1 = fusec.gelu %0 {tanh} : tensor<1000x37xbf16>
  return %1 : tensor<1000x37xbf16>
}

func.func @layer_norm(%x: tensor<33x3000xbf16>, %g: tensor<3000xbf16>, %b: tensor<3000xbf16>) -> tensor<33x3000xbf16> {
  %0 = fusec.layer_norm %x, %g, %b : (tensor<33x3000xbf16>, tensor<3000xbf16>, tensor<3000xbf16>) -> tensor<33x3000xbf16>
  return %0 : tensor<33x3000xbf16>
}

func.func @softmax_rows(%x: tensor<17x1000xf32>) -> (tensor<17x1000xf32>, tensor<17xf32>) {
  %0 = fusec.softmax %x dim 1 : tensor<17x1000xf32>
  %1 = fusec.reduce max %x dims [1] : tensor<17x1000xf32> -> tensor<17xf32>
  return %0, %1 : tensor<17x1000xf32>, tensor<17xf32>
}

func.func @column_sum(%x: tensor<64x256xf32>) -> tensor<256xf32> {
  %0 = fusec.reduce sum %x dims [0] : tensor<64x256xf32> -> tensor<256xf32>
  return %0 : tensor<256xf32>
}

func.func @col_center(%x: tensor<1000x24xbf16>) -> tensor<1000x24xbf16> {
  %m = fusec.reduce mean %x dims [0] : tensor<1000x24xbf16> -> tensor<24xbf16>
  %b = fusec.broadcast %m dims [1] : tensor<24xbf16> -> tensor<1000x24xbf16>
  %0 = fusec.sub %x, %b : tensor<1000x24xbf16>
  return %0 : tensor<1000x24xbf16>
}

func.func @col_stats(%x: tensor<8x16x33xf32>) -> (tensor<33xf32>, tensor<33xf32>) {
  %0 = fusec.reduce max %x dims [0, 1] : tensor<8x16x33xf32> -> tensor<33xf32>
  %1 = fusec.reduce sum %x dims [0, 1] : tensor<8x16x33xf32> -> tensor<33xf32>
  return %0, %1 : tensor<33xf32>, tensor<33xf32>
}

func.func @col_var(%x: tensor<777x40xf32>) -> tensor<40xf32> {
  %m = fusec.reduce mean %x dims [0] : tensor<777x40xf32> -> tensor<40xf32>
  %b = fusec.broadcast %m dims [1] : tensor<40xf32> -> tensor<777x40xf32>
  %d = fusec.sub %x, %b : tensor<777x40xf32>
  %s = fusec.mul %d, %d : tensor<777x40xf32>
  %v = fusec.reduce mean %s dims [0] : tensor<777x40xf32> -> tensor<40xf32>
  return %v : tensor<40xf32>
}

func.func @middle_max(%x: tensor<3x50x24xbf16>) -> (tensor<3x24xbf16>, tensor<3x50x24xbf16>) {
  %m = fusec.reduce max %x dims [1] : tensor<3x50x24xbf16> -> tensor<3x24xbf16>
  %b = fusec.broadcast %m dims [0, 2] : tensor<3x24xbf16> -> tensor<3x50x24xbf16>
  %d = fusec.sub %x, %b : tensor<3x50x24xbf16>
  return %m, %d : tensor<3x24xbf16>, tensor<3x50x24xbf16>
}

func.func @transpose_add(%x: tensor<64x48xf32>, %y: tensor<48x64xf32>) -> tensor<48x64xf32> {
  %t = fusec.transpose %x perm [1, 0] : tensor<64x48xf32> -> tensor<48x64xf32>
  %0 = fusec.add %t, %y : tensor<48x64xf32>
  return %0 : tensor<48x64xf32>
}

// A head merge [B, H, S, D] -> [B, S, H, D] -> [B, S, H D]: the kernel walks
// the input's order (reads stream, rows of D are written 5 x 24 apart).
func.func @head_merge(%x: tensor<2x5x7x24xbf16>) -> tensor<2x7x120xbf16> {
  %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<2x5x7x24xbf16> -> tensor<2x7x5x24xbf16>
  %r = fusec.reshape %t : tensor<2x7x5x24xbf16> -> tensor<2x7x120xbf16>
  return %r : tensor<2x7x120xbf16>
}

// A head transpose [B, S, H, D] -> [B, H, S, D] times a scale: one kernel
// reading through the transpose (odd sizes; D keeps 16-byte vectors).
func.func @head_transpose_scale(%x: tensor<3x37x5x40xf16>) -> tensor<3x5x37x40xf16> {
  %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<3x37x5x40xf16> -> tensor<3x5x37x40xf16>
  %s = fusec.constant dense<0.125> : tensor<3x5x37x40xf16>
  %0 = fusec.mul %t, %s : tensor<3x5x37x40xf16>
  return %0 : tensor<3x5x37x40xf16>
}

func.func @square_transpose(%x: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %t = fusec.transpose %x perm [1, 0] : tensor<32x32xbf16> -> tensor<32x32xbf16>
  %0 = fusec.add %t, %x : tensor<32x32xbf16>
  return %0 : tensor<32x32xbf16>
}

func.func @transpose3d(%x: tensor<5x6x7xf16>) -> tensor<7x5x6xf16> {
  %t = fusec.transpose %x perm [2, 0, 1] : tensor<5x6x7xf16> -> tensor<7x5x6xf16>
  return %t : tensor<7x5x6xf16>
}

func.func @slice_concat(%a: tensor<10x20xf32>, %b: tensor<10x7xf32>) -> tensor<10x17xf32> {
  %s = fusec.slice %a offsets [0, 3] strides [1, 2] : tensor<10x20xf32> -> tensor<10x8xf32>
  %e = fusec.exp %s : tensor<10x8xf32>
  %c = fusec.concat %e, %b, %s dim 1 : (tensor<10x8xf32>, tensor<10x7xf32>, tensor<10x8xf32>) -> tensor<10x23xf32>
  %r = fusec.slice %c offsets [0, 2] strides [1, 1] : tensor<10x23xf32> -> tensor<10x17xf32>
  return %r : tensor<10x17xf32>
}

// Lane runs: a chunk's 8 bf16 lanes stay in one row, so the operands read
// through the concat along the last dim (parts of 16 and 8), the slice at
// an aligned offset and the broadcast bias are vector loads; rows of 24.
func.func @runs(%a: tensor<3x5x16xbf16>, %b: tensor<3x5x8xbf16>, %c: tensor<3x5x40xbf16>, %bias: tensor<24xbf16>) -> tensor<3x5x24xbf16> {
  %cat = fusec.concat %a, %b dim 2 : (tensor<3x5x16xbf16>, tensor<3x5x8xbf16>) -> tensor<3x5x24xbf16>
  %s = fusec.slice %c offsets [0, 0, 8] strides [1, 1, 1] : tensor<3x5x40xbf16> -> tensor<3x5x24xbf16>
  %bb = fusec.broadcast %bias dims [2] : tensor<24xbf16> -> tensor<3x5x24xbf16>
  %0 = fusec.mul %cat, %s : tensor<3x5x24xbf16>
  %1 = fusec.add %0, %bb : tensor<3x5x24xbf16>
  return %1 : tensor<3x5x24xbf16>
}

func.func @embed(%t: tensor<100x16xbf16>, %ids: tensor<4x9xi32>) -> tensor<4x9x16xbf16> {
  %e = fusec.gather %t[%ids] axis 0 : (tensor<100x16xbf16>, tensor<4x9xi32>) -> tensor<4x9x16xbf16>
  return %e : tensor<4x9x16xbf16>
}

func.func @reshape_mul(%x: tensor<6x10xf32>, %y: tensor<60xf32>) -> tensor<60xf32> {
  %r = fusec.reshape %x : tensor<6x10xf32> -> tensor<60xf32>
  %0 = fusec.mul %r, %y : tensor<60xf32>
  return %0 : tensor<60xf32>
}

// MeanVarianceNormalization: mean and variance over dims 0, 2 and 3.
func.func @mvn(%x: tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32> {
  %m = fusec.reduce mean %x dims [0, 2, 3] : tensor<2x3x5x7xf32> -> tensor<3xf32>
  %mb = fusec.broadcast %m dims [1] : tensor<3xf32> -> tensor<2x3x5x7xf32>
  %d = fusec.sub %x, %mb : tensor<2x3x5x7xf32>
  %s = fusec.mul %d, %d : tensor<2x3x5x7xf32>
  %v = fusec.reduce mean %s dims [0, 2, 3] : tensor<2x3x5x7xf32> -> tensor<3xf32>
  %vb = fusec.broadcast %v dims [1] : tensor<3xf32> -> tensor<2x3x5x7xf32>
  %r = fusec.rsqrt %vb : tensor<2x3x5x7xf32>
  %y = fusec.mul %d, %r : tensor<2x3x5x7xf32>
  return %y : tensor<2x3x5x7xf32>
}

// A batched matmul against a shared weight, with a bias and silu epilogue.
func.func @matmul_bias_silu(%x: tensor<3x37x19xf32>, %w: tensor<19x23xf32>, %b: tensor<23xf32>) -> tensor<3x37x23xf32> {
  %0 = fusec.matmul %x, %w : (tensor<3x37x19xf32>, tensor<19x23xf32>) -> tensor<3x37x23xf32>
  %bb = fusec.broadcast %b dims [2] : tensor<23xf32> -> tensor<3x37x23xf32>
  %1 = fusec.add %0, %bb : tensor<3x37x23xf32>
  %2 = fusec.silu %1 : tensor<3x37x23xf32>
  return %2 : tensor<3x37x23xf32>
}

// Transposed bf16 operands, f32 result.
func.func @matmul_tt(%a: tensor<40x9xbf16>, %b: tensor<11x40xbf16>) -> tensor<9x11xf32> {
  %0 = fusec.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<40x9xbf16>, tensor<11x40xbf16>) -> tensor<9x11xf32>
  return %0 : tensor<9x11xf32>
}

// Integer reductions (exact; sums wrap). RoBERTa's position ids: a running
// count of the tokens that are not padding (CumSum of the mask, as
// fusec-import lowers it: a triangular mask and an i64 row sum).
func.func @positions(%ids: tensor<4x300xi64>, %tri: tensor<300x300xi1>) -> tensor<4x300xi64> {
  %one = fusec.constant dense<1> : tensor<4x300xi64>
  %pad = fusec.compare eq, %ids, %one : tensor<4x300xi64>
  %keep = fusec.not %pad : tensor<4x300xi1>
  %k = fusec.cast %keep : tensor<4x300xi1> to tensor<4x300xi64>
  %w = fusec.broadcast %k dims [0, 2] : tensor<4x300xi64> -> tensor<4x300x300xi64>
  %m = fusec.broadcast %tri dims [1, 2] : tensor<300x300xi1> -> tensor<4x300x300xi1>
  %zero = fusec.constant dense<0> : tensor<4x300x300xi64>
  %s = fusec.select %m, %w, %zero : tensor<4x300x300xi64>
  %c = fusec.reduce sum %s dims [2] : tensor<4x300x300xi64> -> tensor<4x300xi64>
  %p = fusec.mul %c, %k : tensor<4x300xi64>
  %q = fusec.add %p, %one : tensor<4x300xi64>
  return %q : tensor<4x300xi64>
}

// i32 max and min over long rows (the CTA-wide row kernel), an i64 sum
// over very long rows (streaming) and an i32 min over short ones (a warp a
// row); then sums and maxima over leading and middle dims (the column
// kernel).
func.func @int_rows(%x: tensor<6x5000xi32>, %y: tensor<3x70000xi64>, %z: tensor<50x90xi32>) -> (tensor<6xi32>, tensor<6xi32>, tensor<3xi64>, tensor<50xi32>) {
  %0 = fusec.reduce max %x dims [1] : tensor<6x5000xi32> -> tensor<6xi32>
  %1 = fusec.reduce min %x dims [1] : tensor<6x5000xi32> -> tensor<6xi32>
  %2 = fusec.reduce sum %y dims [1] : tensor<3x70000xi64> -> tensor<3xi64>
  %3 = fusec.reduce min %z dims [1] : tensor<50x90xi32> -> tensor<50xi32>
  return %0, %1, %2, %3 : tensor<6xi32>, tensor<6xi32>, tensor<3xi64>, tensor<50xi32>
}

func.func @int_columns(%x: tensor<900x37xi32>, %y: tensor<5x64x9xi64>) -> (tensor<37xi32>, tensor<5x9xi64>) {
  %0 = fusec.reduce sum %x dims [0] : tensor<900x37xi32> -> tensor<37xi32>
  %1 = fusec.reduce max %y dims [1] : tensor<5x64x9xi64> -> tensor<5x9xi64>
  return %0, %1 : tensor<37xi32>, tensor<5x9xi64>
}

// Few columns over many rows (a bias gradient): the rows are split into
// parts a CTA each, combined in part order by the part that finishes last.
func.func @col_split(%x: tensor<6000x40xf32>, %y: tensor<3x2000x16xi32>) -> (tensor<40xf32>, tensor<40xf32>, tensor<3x16xi32>) {
  %0 = fusec.reduce sum %x dims [0] : tensor<6000x40xf32> -> tensor<40xf32>
  %1 = fusec.reduce max %x dims [0] : tensor<6000x40xf32> -> tensor<40xf32>
  %2 = fusec.reduce sum %y dims [1] : tensor<3x2000x16xi32> -> tensor<3x16xi32>
  return %0, %1, %2 : tensor<40xf32>, tensor<40xf32>, tensor<3x16xi32>
}
