// Transposed convolutions (ONNX ConvTranspose) as forward ones, one per
// output phase (DecomposeTransposedConv, the first step of fusec-fuse):
// each phase a stride-1 convolution over the taps that reach it, with the
// filter's taps reversed and its channels swapped, the phases interleaved
// and sliced. Each keeps the graph's meaning (interpreter, before and
// after), and the 16-bit ones run on the tensor cores (implicit GEMM).
// RUN: fusec-run %s --function=strided --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=grouped --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=dilated --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=known --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// SAME: PASS: {{.*}} keeps the graph's meaning
// RUN: fusec-opt %s --fusec-fuse | FileCheck %s
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=PIPE
// RUN: fusec-compile %s --target=h200 --emit=ptx -o /dev/null

// Stride 2 of a 3 x 3 filter: four phases of 2 x 2, 2 x 1, 1 x 2 and 1 x 1
// taps. The filter is an argument: each phase's taps are a gather.
// CHECK-LABEL: func.func @strided
// CHECK-NOT: transposed
// CHECK: fusec.gather {{.*}} : (tensor<4609xbf16>
// CHECK-COUNT-4: fusec.matmul
// CHECK-NOT: fusec.conv
// CHECK: return
// PIPE-LABEL: func.func @strided
// PIPE-COUNT-4: strategy = matmul_wgmma
func.func @strided(%x: tensor<2x16x8x8xbf16>, %w: tensor<16x32x3x3xbf16>) -> tensor<2x32x15x15xbf16> {
  %y = fusec.conv %x, %w {transposed, strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x16x8x8xbf16>, tensor<16x32x3x3xbf16>) -> tensor<2x32x15x15xbf16>
  return %y : tensor<2x32x15x15xbf16>
}

// Two groups, stride 3 past the kernel's 2 taps (a third of the phases get
// no tap: zeros), uneven pads and an output padding of 1.
func.func @grouped(%x: tensor<1x4x5x6xf32>, %w: tensor<4x3x2x2xf32>) -> tensor<1x6x14x17xf32> {
  %y = fusec.conv %x, %w {transposed, groups = 2, strides = array<i64: 3, 3>, pad_low = array<i64: 0, 1>, pad_high = array<i64: 1, 0>} : (tensor<1x4x5x6xf32>, tensor<4x3x2x2xf32>) -> tensor<1x6x14x17xf32>
  return %y : tensor<1x6x14x17xf32>
}

// 1-D, stride 2 and dilation 3: the taps of a phase are not adjacent
// (zeros between them in its filter).
func.func @dilated(%x: tensor<3x5x9xf16>, %w: tensor<5x7x3xf16>) -> tensor<3x7x21xf16> {
  %y = fusec.conv %x, %w {transposed, strides = array<i64: 2>, dilations = array<i64: 3>, pad_low = array<i64: 2>, pad_high = array<i64: 0>} : (tensor<3x5x9xf16>, tensor<5x7x3xf16>) -> tensor<3x7x21xf16>
  return %y : tensor<3x7x21xf16>
}

// A constant filter (a model's weights): each phase's filter is relaid at
// compile time: no gather of its 96 values (and a zero).
// CHECK-LABEL: func.func @known
// CHECK-NOT: tensor<97xf16>
// CHECK: return
func.func @known(%x: tensor<1x2x4x4xf16>) -> tensor<1x3x8x8xf16> {
  %w = fusec.constant dense<[[[[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 2.0, 1.0], [3.0, 1.0, -2.0, 0.5], [1.0, 1.0, 1.0, -1.0]], [[2.0, -2.0, 1.0, 0.0], [1.0, 0.5, 0.25, 2.0], [-1.0, 3.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]], [[1.0, 0.0, -1.0, 2.0], [2.0, 2.0, 1.0, 1.0], [0.5, 0.5, -0.5, 1.0], [3.0, -3.0, 1.0, 2.0]]], [[[1.0, -1.0, 2.0, 0.5], [0.25, 1.0, 1.0, 2.0], [2.0, 3.0, -1.0, 1.0], [1.0, 2.0, 0.0, -2.0]], [[0.5, 1.0, 1.5, 2.0], [-1.0, 2.0, 1.0, 0.0], [1.0, 1.0, 2.0, 2.0], [3.0, 0.5, -1.0, 1.0]], [[2.0, 1.0, 0.0, -1.0], [1.0, -2.0, 3.0, 1.0], [0.5, 2.0, 1.0, 0.25], [1.0, 1.0, -1.0, 2.0]]]]> : tensor<2x3x4x4xf16>
  %y = fusec.conv %x, %w {transposed, strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<1x2x4x4xf16>, tensor<2x3x4x4xf16>) -> tensor<1x3x8x8xf16>
  return %y : tensor<1x3x8x8xf16>
}
