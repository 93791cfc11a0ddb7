// A convolution's padding folds into the store of the matmul kernel that
// produces its input: the epilogue writes each element of the 1x1
// convolution's result into the 3x3 convolution's padded, channels-last
// layout (and, for a strided convolution, into its stride phases), and no
// conv_pad kernel copies it. The zeros of the padding are never written:
// code generation marks the output fusec.zero_init, and the JIT zeroes its
// buffer once. The fused graph computes the same values (--verify-pipeline),
// and the GPU run of examples/convnet.mlir checks the zero-filled buffers
// against the interpreter. This is the padded-grid path
// (FUSEC_CONV_IM2COL=0); with TMA im2col no padded layout is written.
// RUN: env FUSEC_CONV_IM2COL=0 fusec-opt %s --fusec-fuse | FileCheck %s
// RUN: env FUSEC_CONV_IM2COL=0 fusec-run --verify-pipeline="fusec-fuse" %s --function=bottleneck | FileCheck %s --check-prefix=SAME
// RUN: env FUSEC_CONV_IM2COL=0 fusec-run --verify-pipeline="fusec-fuse" %s --function=strided | FileCheck %s --check-prefix=SAME
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FUSEC_CONV_IM2COL=0 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=ZERO < %t/out.mlir
// RUN: %python %S/../CodeGen/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/bottleneck.k1_matmul_max.ptx %t/strided.k1_matmul_max.ptx
// REQUIRES: ptxas
// SAME: PASS: fusec-fuse keeps the graph's meaning

// CHECK-LABEL: func.func @bottleneck
// CHECK-NOT: "conv_pad"
// Rows and images share their padding (the grid's pitch is 9, not 10:
// test/lit/Passes/conv-shared-pad.mlir), so each padded dim has a low pad
// only.
// CHECK: fusec.kernel "k1_matmul_max"{{.*}} -> tensor<1x182x64xf16>
// CHECK: fusec.matmul
// CHECK: fusec.concat %{{.*}}, %{{.*}} dim 1 : (tensor<2x1x8x64xf16>, tensor<2x8x8x64xf16>)
// CHECK: fusec.concat %{{.*}}, %{{.*}} dim 2
// CHECK: fusec.concat %{{.*}}, %{{.*}} dim 1 : (tensor<1x162x64xf16>, tensor<1x20x64xf16>) -> tensor<1x182x64xf16>
// CHECK: fusec.yield
// CHECK-NOT: "conv_pad"
// CHECK: _matmul_max"
// ZERO-LABEL: func.func @bottleneck
// ZERO: fusec.entry = "k1_matmul_max"
// ZERO-SAME: fusec.zero_init = array<i64: 0>
func.func @bottleneck(%x: tensor<2x64x8x8xf16>, %w1: tensor<64x64x1x1xf16>, %w2: tensor<64x64x3x3xf16>) -> tensor<2x64x8x8xf16> {
  %zero = fusec.constant dense<0.0> : tensor<2x64x8x8xf16>
  %a = fusec.conv %x, %w1 : (tensor<2x64x8x8xf16>, tensor<64x64x1x1xf16>) -> tensor<2x64x8x8xf16>
  %r = fusec.max %a, %zero : tensor<2x64x8x8xf16>
  %b = fusec.conv %r, %w2 {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x8x8xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x8x8xf16>
  %o = fusec.max %b, %zero : tensor<2x64x8x8xf16>
  return %o : tensor<2x64x8x8xf16>
}

// A strided 3x3 convolution (padding, then four stride phases) and a
// strided 1x1 downsample (phase 0 only) of the same activation: both
// layouts are outputs of the producer; only the padded one needs zeros.
// CHECK-LABEL: func.func @strided
// CHECK-NOT: "conv_pad"
// CHECK: fusec.kernel "k1_matmul_max"{{.*}} -> (tensor<4x56x64xf16>, tensor<{{(1x)?}}32x64xf16>)
// CHECK: fusec.transpose %{{.*}} perm [2, 4, 0, 1, 3, 5]
// CHECK: fusec.yield
// CHECK-NOT: "conv_pad"
// ZERO-LABEL: func.func @strided
// ZERO: fusec.entry = "k1_matmul_max"
// ZERO-SAME: fusec.zero_init = array<i64: 0>
func.func @strided(%x: tensor<2x64x8x8xf16>, %w1: tensor<64x64x1x1xf16>, %w2: tensor<64x64x3x3xf16>, %w3: tensor<64x64x1x1xf16>) -> (tensor<2x64x4x4xf16>, tensor<2x64x4x4xf16>) {
  %zero = fusec.constant dense<0.0> : tensor<2x64x8x8xf16>
  %a = fusec.conv %x, %w1 : (tensor<2x64x8x8xf16>, tensor<64x64x1x1xf16>) -> tensor<2x64x8x8xf16>
  %r = fusec.max %a, %zero : tensor<2x64x8x8xf16>
  %b = fusec.conv %r, %w2 {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x8x8xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x4x4xf16>
  %c = fusec.conv %r, %w3 {strides = array<i64: 2, 2>} : (tensor<2x64x8x8xf16>, tensor<64x64x1x1xf16>) -> tensor<2x64x4x4xf16>
  return %b, %c : tensor<2x64x4x4xf16>, tensor<2x64x4x4xf16>
}
