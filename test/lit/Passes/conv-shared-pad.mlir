// Implicit GEMM's grid with shared padding (lowerWindowOps' implicitGemm):
// neighbouring rows and images share their zero padding, so the grid's
// pitch along a dim is max(O, ceil((pad_low + extent) / s), Q - pad_low / s)
// rather than the whole window's Q = O + ((k - 1) d) / s. A read past the
// pitch wraps into the next row's low padding. Every case keeps the graph's
// meaning (interpreter, before and after): same and asymmetric padding,
// strides 2 and 3, dilations, 1-D, 3-D, a 3-channel stem, a wide filter.
// FUSEC_CONV_SHARED_PAD=0 keeps the whole window's pitch (the NOSHARE lines).
// This is the padded-grid path: FUSEC_CONV_IM2COL=0 (conv-im2col.mlir has
// the TMA im2col one).
// RUN: for f in same3 asym_lo asym_hi s2p3 s2p1 s2p2k5 dil2 dil3 k5p2 pad1x1 oned threed c3stem wide s3; do \
// RUN:   env FUSEC_CONV_IM2COL=0 fusec-run %s --function=$f --verify-pipeline="fusec-pipeline{target=h200}"; done | FileCheck %s --check-prefix=SAME
// SAME-COUNT-15: PASS: {{.*}} keeps the graph's meaning
// RUN: env FUSEC_CONV_IM2COL=0 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s
// RUN: env FUSEC_CONV_IM2COL=0 FUSEC_CONV_SHARED_PAD=0 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=NOSHARE
// RUN: env FUSEC_CONV_IM2COL=0 fusec-compile %s --target=h200 --emit=ptx -o /dev/null

// 3x3 over 7x7, padded by 1: 8 x 8 positions an image (2 x 64 rows, and
// 2 x 8 + 2 rows of zeros the last taps read), not 9 x 9.
// CHECK-LABEL: func.func @same3
// CHECK: fusec.kernel "conv_pad"{{.*}} -> tensor<1x146x64xf16>
// NOSHARE-LABEL: func.func @same3
// NOSHARE: fusec.kernel "conv_pad"{{.*}} -> tensor<1x182x64xf16>
// Padded low by 2 and not high: the data needs pad_low + extent positions,
// so the pitch stays the window's.
// CHECK-LABEL: func.func @asym_lo
// CHECK: fusec.kernel "conv_pad"{{.*}} -> tensor<1x200x64xf16>
// Stride 2, padding 3, 7 taps: four phases of 136 rows, not 171.
// CHECK-LABEL: func.func @s2p3
// CHECK: fusec.kernel "conv_pad"{{.*}} -> tensor<4x136x64xf16>
// NOSHARE-LABEL: func.func @s2p3
// NOSHARE: fusec.kernel "conv_pad"{{.*}} -> tensor<4x171x64xf16>
// CHECK-LABEL: func.func @threed
// CHECK: fusec.kernel "conv_pad"{{.*}} -> tensor<1x520x64xf16>
// NOSHARE-LABEL: func.func @threed
// NOSHARE: fusec.kernel "conv_pad"{{.*}} -> tensor<1x802x64xf16>

func.func @same3(%x: tensor<2x64x7x7xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x7x7xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x7x7xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x7x7xf16>
  return %y : tensor<2x64x7x7xf16>
}

func.func @asym_lo(%x: tensor<2x64x6x9xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x6x9xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 2, 2>, pad_high = array<i64: 0, 0>} : (tensor<2x64x6x9xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x6x9xf16>
  return %y : tensor<2x64x6x9xf16>
}

func.func @asym_hi(%x: tensor<2x64x6x9xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x6x9xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 0, 1>, pad_high = array<i64: 2, 1>} : (tensor<2x64x6x9xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x6x9xf16>
  return %y : tensor<2x64x6x9xf16>
}

func.func @s2p3(%x: tensor<2x64x11x10xf16>, %w: tensor<64x64x7x7xf16>) -> tensor<2x64x6x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 3, 3>, pad_high = array<i64: 3, 3>} : (tensor<2x64x11x10xf16>, tensor<64x64x7x7xf16>) -> tensor<2x64x6x5xf16>
  return %y : tensor<2x64x6x5xf16>
}

func.func @s2p1(%x: tensor<2x64x9x8xf16>, %w: tensor<128x64x3x3xf16>) -> tensor<2x128x5x4xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x9x8xf16>, tensor<128x64x3x3xf16>) -> tensor<2x128x5x4xf16>
  return %y : tensor<2x128x5x4xf16>
}

func.func @s2p2k5(%x: tensor<3x64x13x9xf16>, %w: tensor<64x64x5x5xf16>) -> tensor<3x64x7x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 2, 2>, pad_high = array<i64: 2, 2>} : (tensor<3x64x13x9xf16>, tensor<64x64x5x5xf16>) -> tensor<3x64x7x5xf16>
  return %y : tensor<3x64x7x5xf16>
}

func.func @dil2(%x: tensor<2x64x9x11xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x9x11xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 3, 3>} : (tensor<2x64x9x11xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x9x11xf16>
  return %y : tensor<2x64x9x11xf16>
}

func.func @dil3(%x: tensor<2x64x10x8xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x10x8xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 3, 3>, pad_low = array<i64: 3, 3>, pad_high = array<i64: 3, 3>} : (tensor<2x64x10x8xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x10x8xf16>
  return %y : tensor<2x64x10x8xf16>
}

func.func @k5p2(%x: tensor<2x128x5x5xf16>, %w: tensor<64x128x5x5xf16>) -> tensor<2x64x5x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 2, 2>, pad_high = array<i64: 2, 2>} : (tensor<2x128x5x5xf16>, tensor<64x128x5x5xf16>) -> tensor<2x64x5x5xf16>
  return %y : tensor<2x64x5x5xf16>
}

func.func @pad1x1(%x: tensor<2x64x5x6xf16>, %w: tensor<64x64x1x1xf16>) -> tensor<2x64x7x8xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x5x6xf16>, tensor<64x64x1x1xf16>) -> tensor<2x64x7x8xf16>
  return %y : tensor<2x64x7x8xf16>
}

func.func @oned(%x: tensor<2x64x13xf16>, %w: tensor<64x64x3xf16>) -> tensor<2x64x13xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pad_low = array<i64: 1>, pad_high = array<i64: 1>} : (tensor<2x64x13xf16>, tensor<64x64x3xf16>) -> tensor<2x64x13xf16>
  return %y : tensor<2x64x13xf16>
}

func.func @threed(%x: tensor<2x64x4x5x6xf16>, %w: tensor<64x64x3x3x3xf16>) -> tensor<2x64x4x5x6xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1, 1>, dilations = array<i64: 1, 1, 1>, pad_low = array<i64: 1, 1, 1>, pad_high = array<i64: 1, 1, 1>} : (tensor<2x64x4x5x6xf16>, tensor<64x64x3x3x3xf16>) -> tensor<2x64x4x5x6xf16>
  return %y : tensor<2x64x4x5x6xf16>
}

func.func @c3stem(%x: tensor<2x3x15x15xf16>, %w: tensor<64x3x7x7xf16>) -> tensor<2x64x8x8xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 3, 3>, pad_high = array<i64: 3, 3>} : (tensor<2x3x15x15xf16>, tensor<64x3x7x7xf16>) -> tensor<2x64x8x8xf16>
  return %y : tensor<2x64x8x8xf16>
}

func.func @wide(%x: tensor<1x64x3x17xf16>, %w: tensor<64x64x3x5xf16>) -> tensor<1x64x3x17xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 2>, pad_high = array<i64: 1, 2>} : (tensor<1x64x3x17xf16>, tensor<64x64x3x5xf16>) -> tensor<1x64x3x17xf16>
  return %y : tensor<1x64x3x17xf16>
}

func.func @s3(%x: tensor<2x64x13x14xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x6x7xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 3, 3>, dilations = array<i64: 1, 1>, pad_low = array<i64: 4, 2>, pad_high = array<i64: 1, 5>} : (tensor<2x64x13x14xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x6x7xf16>
  return %y : tensor<2x64x6x7xf16>
}
