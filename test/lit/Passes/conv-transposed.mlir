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
// RUN: for f in upsample upsample3 mixed grouped2 upsample3d; do \
// RUN:   fusec-run %s --function=$f --verify-pipeline="fusec-pipeline{target=h200}"; done | FileCheck %s --check-prefix=STACKED
// RUN: for f in upsample grouped2; do env FUSEC_CONVT_STACKED=0 \
// RUN:   fusec-run %s --function=$f --verify-pipeline="fusec-pipeline{target=h200}"; done | FileCheck %s --check-prefix=SAME
// RUN: env FUSEC_CONVT_STACKED=0 fusec-opt %s --fusec-fuse | FileCheck %s --check-prefix=PHASES
// FUSEC_CONVT_STACKED=2 stacks phases with different taps too (zero taps
// pad each phase's filter to the most any phase has):
// RUN: for f in strided grouped dilated; do env FUSEC_CONVT_STACKED=2 \
// RUN:   fusec-run %s --function=$f --verify-pipeline="fusec-pipeline{target=h200}"; done | FileCheck %s --check-prefix=PADDED
// RUN: env FUSEC_CONVT_STACKED=2 fusec-opt %s --fusec-fuse | FileCheck %s --check-prefix=STACK2
// PADDED-COUNT-3: PASS: {{.*}} keeps the graph's meaning
// SAME: PASS: {{.*}} keeps the graph's meaning
// STACKED-COUNT-5: PASS: {{.*}} keeps the graph's meaning
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
// STACK2-LABEL: func.func @strided
// STACK2: fusec.gather {{.*}} -> tensor<128x16x2x2xbf16>
// STACK2-COUNT-1: fusec.matmul {{.*}} -> tensor<144x128xbf16>
// STACK2-NOT: fusec.matmul
// STACK2: return
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

// A kernel that is a multiple of the stride (a U-Net's 4x4 stride-2
// upsampling): every phase has 2 x 2 taps at the same offsets, so the four
// phases are one forward convolution of 4 x 32 output channels (one
// matmul of 128 columns), and the interleave (depth to space) folds into
// the matmul's store: no concat of phases. FUSEC_CONVT_STACKED=0 keeps a
// convolution a phase (PHASES).
// CHECK-LABEL: func.func @upsample
// CHECK: fusec.gather {{.*}} -> tensor<128x64x2x2xf16>
// CHECK: fusec.kernel "{{k[0-9]+}}_matmul"{{.*}} -> tensor<2x32x14x12xf16>
// CHECK: fusec.matmul {{.*}} -> tensor<112x128xf16>
// CHECK: fusec.transpose {{.*}} perm [0, 1, 4, 5, 2, 6, 3] : tensor<2x1x2x2x32x8x7xf16>
// CHECK-NOT: fusec.kernel
// CHECK: return
// PHASES-LABEL: func.func @upsample
// PHASES-COUNT-4: fusec.matmul {{.*}} -> tensor<{{[0-9]+}}x32xf16>
// PHASES: return
func.func @upsample(%x: tensor<2x64x7x6xf16>, %w: tensor<64x32x4x4xf16>) -> tensor<2x32x14x12xf16> {
  %y = fusec.conv %x, %w {transposed, strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x7x6xf16>, tensor<64x32x4x4xf16>) -> tensor<2x32x14x12xf16>
  return %y : tensor<2x32x14x12xf16>
}

// 6x6 taps, stride 3, uneven pads: nine phases of 2 x 2 taps.
// CHECK-LABEL: func.func @upsample3
// CHECK: fusec.matmul {{.*}} -> tensor<{{[0-9]+}}x144xf16>
// CHECK: return
func.func @upsample3(%x: tensor<1x64x4x5xf16>, %w: tensor<64x16x6x6xf16>) -> tensor<1x16x13x15xf16> {
  %y = fusec.conv %x, %w {transposed, strides = array<i64: 3, 3>, pad_low = array<i64: 2, 1>, pad_high = array<i64: 0, 2>} : (tensor<1x64x4x5xf16>, tensor<64x16x6x6xf16>) -> tensor<1x16x13x15xf16>
  return %y : tensor<1x16x13x15xf16>
}

// Stride 2 along one dim, 1 along the other (4 x 3 taps).
func.func @mixed(%x: tensor<2x32x5x6xf16>, %w: tensor<32x16x4x3xf16>) -> tensor<2x16x10x6xf16> {
  %y = fusec.conv %x, %w {transposed, strides = array<i64: 2, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x32x5x6xf16>, tensor<32x16x4x3xf16>) -> tensor<2x16x10x6xf16>
  return %y : tensor<2x16x10x6xf16>
}

// Two groups: output channels ordered group, phase, channel.
func.func @grouped2(%x: tensor<2x64x5x5xf16>, %w: tensor<64x16x4x4xf16>) -> tensor<2x32x10x10xf16> {
  %y = fusec.conv %x, %w {transposed, groups = 2, strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x5x5xf16>, tensor<64x16x4x4xf16>) -> tensor<2x32x10x10xf16>
  return %y : tensor<2x32x10x10xf16>
}

// 3-D, 2x2x2 stride 2 (a 3-D U-Net's upsampling): eight phases of one tap.
func.func @upsample3d(%x: tensor<1x64x3x4x3xf16>, %w: tensor<64x16x2x2x2xf16>) -> tensor<1x16x6x8x6xf16> {
  %y = fusec.conv %x, %w {transposed, strides = array<i64: 2, 2, 2>} : (tensor<1x64x3x4x3xf16>, tensor<64x16x2x2x2xf16>) -> tensor<1x16x6x8x6xf16>
  return %y : tensor<1x16x6x8x6xf16>
}
