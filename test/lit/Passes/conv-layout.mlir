// A ResNet bottleneck with a projection shortcut (NCHW, f16): between its
// convolutions the activations stay channels last (each convolution's
// channels-first transpose sinks through the bias and ReLU and cancels
// against the next one's), so every convolution is one matmul kernel with
// its bias, ReLU and residual add in the epilogue; the 3x3 one reads its
// shifted windows through the padded input (implicit GEMM), which the
// 1x1 convolution before it writes from its epilogue (no conv_pad kernel),
// and no im2col matrix is written. Only the block's input is transposed,
// once for both convolutions that read it (CSE after the lowering). The
// biases are broadcast from [1, K, 1, 1], as the ONNX importer writes them.
// Under FUSEC_CONV_IM2COL=1 (the IM2COL lines) the 3x3 convolution's
// matmul reads the 1x1's channels-last result by TMA im2col: no padded
// layout, exactly one row an output position, no slice.
// RUN: env FUSEC_CONV_IM2COL=0 fusec-opt %s --fusec-fuse | FileCheck %s
// RUN: env FUSEC_CONV_IM2COL=0 fusec-run --verify-pipeline="fusec-fuse" %s | FileCheck %s --check-prefix=SAME
// RUN: env FUSEC_CONV_IM2COL=1 fusec-opt %s --fusec-fuse | FileCheck %s --check-prefix=IM2COL
// RUN: env FUSEC_CONV_IM2COL=1 fusec-run --verify-pipeline="fusec-fuse" %s | FileCheck %s --check-prefix=SAME
// SAME: match

// IM2COL-LABEL: func.func @rn
// IM2COL: fusec.kernel "k0_transpose"(%arg0)
// IM2COL-NOT: {{_transpose"|conv_pad|conv_window}}
// IM2COL: fusec.kernel "k2_matmul_max"{{.*}} -> tensor<128x64xf16>
// IM2COL-NOT: {{_transpose"|conv_pad|conv_window}}
// IM2COL: fusec.kernel "k3_matmul_max"(%{{.*}}) {{.*}}: (tensor<2x8x8x64xf16>, tensor<64x576xf16>, tensor<64xf16>) -> tensor<128x64xf16>
// IM2COL-NOT: {{_transpose"|conv_pad|conv_window}}
// IM2COL: fusec.kernel "k4_matmul_max"
// IM2COL: fusec.kernel "k6_reduce"
// IM2COL-NOT: fusec.kernel

// CHECK-LABEL: func.func @rn
// CHECK: fusec.kernel "k0_transpose"(%arg0)
// CHECK-NOT: _transpose"
// CHECK: fusec.kernel "k1_matmul_add"
// CHECK-NOT: _transpose"
// CHECK: fusec.kernel "k2_matmul_max"
// CHECK-SAME: -> tensor<1x182x64xf16>
// CHECK-NOT: _transpose"
// CHECK-NOT: "conv_pad"
// CHECK: fusec.kernel "filter_im2col"
// CHECK: fusec.transpose %{{.*}} perm [0, 2, 3, 1] : tensor<64x64x3x3xf16>
// CHECK-NOT: _transpose"
// CHECK: fusec.kernel "k3_matmul_max"(%{{.*}}) {{.*}}: (tensor<1x182x64xf16>, tensor<64x576xf16>, tensor<64xf16>) -> tensor<2x8x8x64xf16>
// CHECK: fusec.slice
// CHECK-NOT: _transpose"
// CHECK: fusec.kernel "k5_matmul_max"
// CHECK: fusec.kernel "k7_reduce"
// CHECK-NOT: fusec.kernel

func.func @rn(%x: tensor<2x64x8x8xf16>, %w1: tensor<256x64x1x1xf16>, %b1: tensor<256xf16>, %w2: tensor<64x64x1x1xf16>, %b2: tensor<64xf16>, %w3: tensor<64x64x3x3xf16>, %b3: tensor<64xf16>, %w4: tensor<256x64x1x1xf16>, %b4: tensor<256xf16>) -> tensor<2x256xf16> {
  %v1 = fusec.conv %x, %w1 {strides = array<i64: 1, 1>, pad_low = array<i64: 0, 0>, pad_high = array<i64: 0, 0>} : (tensor<2x64x8x8xf16>, tensor<256x64x1x1xf16>) -> tensor<2x256x8x8xf16>
  %v2 = fusec.reshape %b1 : tensor<256xf16> -> tensor<1x256x1x1xf16>
  %v3 = fusec.broadcast %v2 dims [0, 1, 2, 3] : tensor<1x256x1x1xf16> -> tensor<2x256x8x8xf16>
  %v4 = fusec.add %v1, %v3 : tensor<2x256x8x8xf16>
  %v5 = fusec.conv %x, %w2 {strides = array<i64: 1, 1>, pad_low = array<i64: 0, 0>, pad_high = array<i64: 0, 0>} : (tensor<2x64x8x8xf16>, tensor<64x64x1x1xf16>) -> tensor<2x64x8x8xf16>
  %v6 = fusec.reshape %b2 : tensor<64xf16> -> tensor<1x64x1x1xf16>
  %v7 = fusec.broadcast %v6 dims [0, 1, 2, 3] : tensor<1x64x1x1xf16> -> tensor<2x64x8x8xf16>
  %v8 = fusec.add %v5, %v7 : tensor<2x64x8x8xf16>
  %v9 = fusec.constant dense<0.0> : tensor<2x64x8x8xf16>
  %v10 = fusec.max %v8, %v9 : tensor<2x64x8x8xf16>
  %v11 = fusec.conv %v10, %w3 {strides = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x8x8xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x8x8xf16>
  %v12 = fusec.reshape %b3 : tensor<64xf16> -> tensor<1x64x1x1xf16>
  %v13 = fusec.broadcast %v12 dims [0, 1, 2, 3] : tensor<1x64x1x1xf16> -> tensor<2x64x8x8xf16>
  %v14 = fusec.add %v11, %v13 : tensor<2x64x8x8xf16>
  %v15 = fusec.constant dense<0.0> : tensor<2x64x8x8xf16>
  %v16 = fusec.max %v14, %v15 : tensor<2x64x8x8xf16>
  %v17 = fusec.conv %v16, %w4 {strides = array<i64: 1, 1>, pad_low = array<i64: 0, 0>, pad_high = array<i64: 0, 0>} : (tensor<2x64x8x8xf16>, tensor<256x64x1x1xf16>) -> tensor<2x256x8x8xf16>
  %v18 = fusec.reshape %b4 : tensor<256xf16> -> tensor<1x256x1x1xf16>
  %v19 = fusec.broadcast %v18 dims [0, 1, 2, 3] : tensor<1x256x1x1xf16> -> tensor<2x256x8x8xf16>
  %v20 = fusec.add %v17, %v19 : tensor<2x256x8x8xf16>
  %v21 = fusec.add %v20, %v4 : tensor<2x256x8x8xf16>
  %v22 = fusec.constant dense<0.0> : tensor<2x256x8x8xf16>
  %v23 = fusec.max %v21, %v22 : tensor<2x256x8x8xf16>
  %v24 = fusec.reduce mean %v23 dims [2, 3] : tensor<2x256x8x8xf16> -> tensor<2x256xf16>
  return %v24 : tensor<2x256xf16>
}
