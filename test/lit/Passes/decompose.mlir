// RUN: fusec-opt %s -split-input-file --fusec-decompose | FileCheck %s
// The decomposed graphs compute what the composites did, on random inputs:
// RUN: fusec-run --verify-pipeline=fusec-decompose --trials=3 %S/Inputs/composites.mlir | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-decompose --trials=3 --function=logits %S/Inputs/matmul-operands.mlir | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-decompose --trials=3 --function=scaled_scores %S/Inputs/matmul-operands.mlir | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-decompose --trials=3 --function=regrouped_kt %S/Inputs/matmul-operands.mlir | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --trials=3 --function=linear_rows %S/Inputs/matmul-operands.mlir | FileCheck %s --check-prefix=SAME-PIPE
// The linear layer, its bias, GELU and residual are one kernel:
// RUN: fusec-opt --fusec-pipeline %S/Inputs/matmul-operands.mlir | FileCheck %s --check-prefix=FUSED

// SAME-NOT: MISMATCH
// SAME: PASS: fusec-decompose keeps the graph's meaning
// SAME-PIPE-NOT: MISMATCH
// SAME-PIPE: PASS: fusec-pipeline keeps the graph's meaning

// FUSED-LABEL: func.func @linear_rows
// FUSED: %[[X:.*]] = fusec.reshape %arg0 : tensor<2x5x16xf16> -> tensor<10x16xf16>
// FUSED: %[[R:.*]] = fusec.reshape %arg3 : tensor<2x5x24xf16> -> tensor<10x24xf16>
// FUSED: %[[K:.*]] = fusec.kernel "{{.*}}"(%[[X]], %arg1, %arg2, %[[R]]) {{.*}}matmul_wgmma
// FUSED: fusec.tanh
// FUSED: fusec.yield
// FUSED-NOT: fusec.kernel
// FUSED: fusec.reshape %[[K]] : tensor<10x24xf16> -> tensor<2x5x24xf16>

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[MEAN:.*]] = fusec.reduce mean %[[X]] dims [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK: %[[MEANB:.*]] = fusec.broadcast %[[MEAN]] dims [0] : tensor<4xf32> -> tensor<4x8xf32>
// CHECK: %[[C:.*]] = fusec.sub %[[X]], %[[MEANB]]
// CHECK: %[[SQ:.*]] = fusec.mul %[[C]], %[[C]]
// CHECK: %[[VAR:.*]] = fusec.reduce mean %[[SQ]] dims [1]
// CHECK: %[[EPS:.*]] = fusec.constant dense<1.000000e-03> : tensor<4xf32>
// CHECK: %[[VE:.*]] = fusec.add %[[VAR]], %[[EPS]]
// CHECK: %[[RSTD:.*]] = fusec.rsqrt %[[VE]]
// CHECK: %[[RB:.*]] = fusec.broadcast %[[RSTD]] dims [0]
// CHECK: %[[N:.*]] = fusec.mul %[[C]], %[[RB]]
// CHECK: %[[GB:.*]] = fusec.broadcast %[[G]] dims [1] : tensor<8xf32> -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = fusec.mul %[[N]], %[[GB]]
// CHECK: %[[BB:.*]] = fusec.broadcast %[[B]] dims [1]
// CHECK: %[[Y:.*]] = fusec.add %[[S]], %[[BB]]
// CHECK: return %[[Y]]
// CHECK-NOT: fusec.layer_norm
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = fusec.layer_norm %x, %g, %b {epsilon = 1.0e-3 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Narrow inputs are computed in f32 and rounded once, at the output.
// CHECK-LABEL: func.func @rms_norm_bf16
// CHECK: %[[X:.*]] = fusec.cast %{{.*}} : tensor<2x16xbf16> to tensor<2x16xf32>
// CHECK: %[[SQ:.*]] = fusec.mul %[[X]], %[[X]] : tensor<2x16xf32>
// CHECK: %[[MS:.*]] = fusec.reduce mean %[[SQ]] dims [1]
// CHECK: %[[E:.*]] = fusec.add %[[MS]], %{{.*}} : tensor<2xf32>
// CHECK: %[[R:.*]] = fusec.rsqrt %[[E]]
// CHECK: %[[RB:.*]] = fusec.broadcast %[[R]] dims [0]
// CHECK: %[[N:.*]] = fusec.mul %[[X]], %[[RB]]
// CHECK: %[[G:.*]] = fusec.cast %{{.*}} : tensor<16xbf16> to tensor<16xf32>
// CHECK: %[[GB:.*]] = fusec.broadcast %[[G]] dims [1]
// CHECK: %[[Y:.*]] = fusec.mul %[[N]], %[[GB]]
// CHECK: %[[OUT:.*]] = fusec.cast %[[Y]] : tensor<2x16xf32> to tensor<2x16xbf16>
// CHECK: return %[[OUT]]
func.func @rms_norm_bf16(%x: tensor<2x16xbf16>, %g: tensor<16xbf16>) -> tensor<2x16xbf16> {
  %0 = fusec.rms_norm %x, %g : (tensor<2x16xbf16>, tensor<16xbf16>) -> tensor<2x16xbf16>
  return %0 : tensor<2x16xbf16>
}

// -----

// Softmax subtracts the row maximum before exp.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<3x5x7xf32>)
// CHECK: %[[M:.*]] = fusec.reduce max %[[X]] dims [1] : tensor<3x5x7xf32> -> tensor<3x7xf32>
// CHECK: %[[MB:.*]] = fusec.broadcast %[[M]] dims [0, 2] : tensor<3x7xf32> -> tensor<3x5x7xf32>
// CHECK: %[[D:.*]] = fusec.sub %[[X]], %[[MB]]
// CHECK: %[[E:.*]] = fusec.exp %[[D]]
// CHECK: %[[S:.*]] = fusec.reduce sum %[[E]] dims [1]
// CHECK: %[[SB:.*]] = fusec.broadcast %[[S]] dims [0, 2]
// CHECK: %[[Y:.*]] = fusec.div %[[E]], %[[SB]]
// CHECK: return %[[Y]]
func.func @softmax(%x: tensor<3x5x7xf32>) -> tensor<3x5x7xf32> {
  %0 = fusec.softmax %x dim 1 : tensor<3x5x7xf32>
  return %0 : tensor<3x5x7xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_erf
// CHECK: %[[K:.*]] = fusec.constant dense<0.707106769> : tensor<64xf32>
// CHECK: %[[S:.*]] = fusec.mul %[[X:.*]], %[[K]]
// CHECK: %[[E:.*]] = fusec.erf %[[S]]
// CHECK-DAG: %[[ONE:.*]] = fusec.constant dense<1.000000e+00>
// CHECK-DAG: %[[P:.*]] = fusec.add %[[E]], %[[ONE]]
// CHECK-DAG: %[[HALF:.*]] = fusec.constant dense<5.000000e-01>
// CHECK-DAG: %[[HX:.*]] = fusec.mul %[[X]], %[[HALF]]
// CHECK: fusec.mul %[[HX]], %[[P]]
// CHECK-NOT: fusec.tanh
func.func @gelu_erf(%x: tensor<64xf32>) -> tensor<64xf32> {
  %0 = fusec.gelu %x : tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_tanh
// CHECK: fusec.constant dense<4.471500e-02>
// CHECK: fusec.constant dense<0.797884583>
// CHECK: fusec.tanh
// CHECK-NOT: fusec.erf
func.func @gelu_tanh(%x: tensor<64xf32>) -> tensor<64xf32> {
  %0 = fusec.gelu %x {tanh} : tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.*]]: tensor<64xf16>)
// CHECK: %[[XF:.*]] = fusec.cast %[[X]] : tensor<64xf16> to tensor<64xf32>
// CHECK: %[[S:.*]] = fusec.sigmoid %[[XF]]
// CHECK: %[[Y:.*]] = fusec.mul %[[XF]], %[[S]]
// CHECK: fusec.cast %[[Y]] : tensor<64xf32> to tensor<64xf16>
func.func @silu(%x: tensor<64xf16>) -> tensor<64xf16> {
  %0 = fusec.silu %x : tensor<64xf16>
  return %0 : tensor<64xf16>
}

// -----

// Primitives are left alone.
// CHECK-LABEL: func.func @primitives
// CHECK-NEXT: fusec.add
// CHECK-NEXT: return
func.func @primitives(%x: tensor<64xf32>) -> tensor<64xf32> {
  %0 = fusec.add %x, %x : tensor<64xf32>
  return %0 : tensor<64xf32>
}

// A transpose of an operand's last two dims becomes the matmul's flag (x·Wᵀ
// with W of an odd row count stays readable by TMA); a splat scale on an
// operand moves to the f32 result, before it is rounded.
// CHECK-LABEL: func.func @logits
// CHECK-NOT: fusec.transpose
// CHECK: fusec.matmul %arg0, %arg1 {transpose_rhs}
func.func @logits(%x: tensor<8x64xf16>, %w: tensor<101x64xf16>) -> tensor<8x101xf16> {
  %t = fusec.transpose %w perm [1, 0] : tensor<101x64xf16> -> tensor<64x101xf16>
  %0 = fusec.matmul %x, %t : (tensor<8x64xf16>, tensor<64x101xf16>) -> tensor<8x101xf16>
  return %0 : tensor<8x101xf16>
}

// CHECK-LABEL: func.func @scaled_scores
// CHECK: %[[M:.*]] = fusec.matmul %arg0, %arg1 {transpose_lhs} : (tensor<2x16x8xf16>, tensor<2x16x8xf16>) -> tensor<2x8x8xf32>
// CHECK: %[[C:.*]] = fusec.constant dense<1.250000e-01> : tensor<2x8x8xf32>
// CHECK: %[[S:.*]] = fusec.mul %[[M]], %[[C]] : tensor<2x8x8xf32>
// CHECK: fusec.cast %[[S]] : tensor<2x8x8xf32> to tensor<2x8x8xf16>
func.func @scaled_scores(%q: tensor<2x16x8xf16>, %k: tensor<2x16x8xf16>) -> tensor<2x8x8xf16> {
  %qt = fusec.transpose %q perm [0, 2, 1] : tensor<2x16x8xf16> -> tensor<2x8x16xf16>
  %c1 = fusec.constant dense<0.25> : tensor<2x8x16xf16>
  %qs = fusec.mul %qt, %c1 : tensor<2x8x16xf16>
  %c2 = fusec.constant dense<0.5> : tensor<2x16x8xf16>
  %ks = fusec.mul %c2, %k : tensor<2x16x8xf16>
  %0 = fusec.matmul %qs, %ks : (tensor<2x8x16xf16>, tensor<2x16x8xf16>) -> tensor<2x8x8xf16>
  return %0 : tensor<2x8x8xf16>
}

// kᵀ exported through a merged batch dim is one transpose, then the flag.
// CHECK-LABEL: func.func @regrouped_kt
// CHECK-NOT: fusec.reshape
// CHECK: fusec.matmul %arg0, %arg1 {transpose_rhs} : (tensor<2x3x8x16xf16>, tensor<2x3x8x16xf16>) -> tensor<2x3x8x8xf16>
func.func @regrouped_kt(%q: tensor<2x3x8x16xf16>, %k: tensor<2x3x8x16xf16>) -> tensor<2x3x8x8xf16> {
  %0 = fusec.reshape %k : tensor<2x3x8x16xf16> -> tensor<6x8x16xf16>
  %1 = fusec.transpose %0 perm [0, 2, 1] : tensor<6x8x16xf16> -> tensor<6x16x8xf16>
  %2 = fusec.reshape %1 : tensor<6x16x8xf16> -> tensor<2x3x16x8xf16>
  %3 = fusec.matmul %q, %2 : (tensor<2x3x8x16xf16>, tensor<2x3x16x8xf16>) -> tensor<2x3x8x8xf16>
  return %3 : tensor<2x3x8x8xf16>
}

// A regrouping that a transpose splits across groups stays as it is.
// CHECK-LABEL: func.func @not_regrouped
// CHECK: fusec.transpose %{{.*}} perm [1, 0]
func.func @not_regrouped(%x: tensor<4x6xf32>) -> tensor<2x3x4xf32> {
  %0 = fusec.reshape %x : tensor<4x6xf32> -> tensor<24xf32>
  %1 = fusec.reshape %0 : tensor<24xf32> -> tensor<6x4xf32>
  %2 = fusec.transpose %1 perm [1, 0] : tensor<6x4xf32> -> tensor<4x6xf32>
  %3 = fusec.reshape %2 : tensor<4x6xf32> -> tensor<2x3x4xf32>
  return %3 : tensor<2x3x4xf32>
}

// The activations' leading dims become matmul rows; bias, GELU and the
// residual run on the rows, and one reshape restores the result's shape.
// CHECK-LABEL: func.func @linear_rows
// CHECK: %[[X:.*]] = fusec.reshape %arg0 : tensor<2x5x16xf16> -> tensor<10x16xf16>
// CHECK: %[[M:.*]] = fusec.matmul %[[X]], %arg1 : (tensor<10x16xf16>, tensor<16x24xf16>) -> tensor<10x24xf16>
// CHECK: fusec.broadcast %arg2 dims [1] : tensor<24xf16> -> tensor<10x24xf16>
// CHECK: fusec.tanh %{{.*}} : tensor<10x24xf32>
// CHECK: fusec.reshape %arg3 : tensor<2x5x24xf16> -> tensor<10x24xf16>
// CHECK: %[[S:.*]] = fusec.add %{{.*}}, %{{.*}} : tensor<10x24xf16>
// CHECK: %[[O:.*]] = fusec.reshape %[[S]] : tensor<10x24xf16> -> tensor<2x5x24xf16>
// CHECK: return %[[O]]
func.func @linear_rows(%x: tensor<2x5x16xf16>, %w: tensor<16x24xf16>, %b: tensor<24xf16>,
                       %r: tensor<2x5x24xf16>) -> tensor<2x5x24xf16> {
  %0 = fusec.matmul %x, %w : (tensor<2x5x16xf16>, tensor<16x24xf16>) -> tensor<2x5x24xf16>
  %1 = fusec.broadcast %b dims [2] : tensor<24xf16> -> tensor<2x5x24xf16>
  %2 = fusec.add %0, %1 : tensor<2x5x24xf16>
  %3 = fusec.gelu %2 {tanh} : tensor<2x5x24xf16>
  %4 = fusec.add %3, %r : tensor<2x5x24xf16>
  return %4 : tensor<2x5x24xf16>
}
