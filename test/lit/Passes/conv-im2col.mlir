// Implicit GEMM by TMA's im2col mode (the default; FUSEC_CONV_IM2COL=0
// keeps the padded grid of conv-shared-pad.mlir): the matmul
// kernel reads each k-block (one tap's 64 channels for the tile's output
// positions) from the channels-last input itself, the padding and the
// channels past the input's read as TMA's out-of-bounds zeros. No conv_pad
// kernel, no padded tensor, no grid rows past the output. Every case keeps
// the graph's meaning (interpreter, before and after) by im2col and on the
// padded grid: same and asymmetric padding, strides 2 and 3 (mixed), a strided
// 1x1, dilation, 1-D and 3-D, channels that are not a multiple of 64 (96
// and 8, read as 128 and 64), several tiles across images, a bottleneck
// (1x1, 3x3, 1x1 with bias and ReLU) whose layout transposes cancel. 12
// input channels (24 bytes, not a multiple of TMA's 16) keep conv_pad.
// RUN: for f in same3 c96 c8 s2rect s2_1x1 s3mixed dil2 asym oned threed tiles c12 bottleneck nhwc_arg; do \
// RUN:   fusec-run %s --function=$f --verify-pipeline="fusec-pipeline{target=h200}"; \
// RUN:   env FUSEC_CONV_IM2COL=0 fusec-run %s --function=$f --verify-pipeline="fusec-pipeline{target=h200}"; done | FileCheck %s --check-prefix=SAME
// SAME-COUNT-28: PASS: {{.*}} keeps the graph's meaning
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s
// RUN: env FUSEC_CONV_IM2COL=1 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s
// RUN: env FUSEC_CONV_IM2COL=0 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=GRID
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=MAPS < %t/out.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t/s3mixed.k1_matmul.ptx
// RUN: %python %S/../CodeGen/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/same3.k1_matmul.ptx %t/s2rect.k1_matmul.ptx %t/threed.k1_matmul.ptx %t/tiles.k1_matmul.ptx
// Blackwell's matmul_tcgen05 takes the same loads (sm_100a):
// RUN: rm -rf %t.b && mkdir -p %t.b
// RUN: fusec-opt %s --fusec-pipeline="target=b200" --fusec-codegen="arch=sm_100a dump-dir=%t.b" -o %t.b/out.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t.b/s3mixed.k1_matmul.ptx
// RUN: %python %S/../CodeGen/Inputs/ptxas_clean.py %ptxas sm_100a 255 %t.b/same3.k1_matmul.ptx %t.b/s3mixed.k1_matmul.ptx %t.b/threed.k1_matmul.ptx
// REQUIRES: ptxas

// The input's channels-last transpose, the filter's relayout and one
// matmul kernel: no conv_pad, no conv_window.
// Under FUSEC_CONV_IM2COL=0 the input is padded by a kernel first.
// GRID-LABEL: func.func @same3
// GRID: fusec.kernel "conv_pad"
// GRID: strategy = matmul_wgmma
// CHECK-LABEL: func.func @same3
// CHECK-NOT: conv_pad
// CHECK-NOT: conv_window
// CHECK: fusec.kernel "k1_matmul"{{.*}}strategy = matmul_wgmma{{.*}} -> tensor<2x64x7x7xf16>
// CHECK-LABEL: func.func @c96
// CHECK-NOT: conv_pad
// CHECK: fusec.kernel "k1_matmul"{{.*}}strategy = matmul_wgmma
// CHECK-LABEL: func.func @c12
// CHECK: fusec.kernel "conv_pad"
// The network's input is transposed once; then three matmul kernels (the
// 3x3's filter, an argument here, relaid by filter_im2col), and no other
// transpose, conv_pad or conv_window.
// CHECK-LABEL: func.func @bottleneck
// CHECK: fusec.kernel "k0_transpose"
// CHECK-NOT: {{conv_pad|conv_window|_transpose}}
// CHECK: fusec.kernel "k1_matmul_max"{{.*}}strategy = matmul_wgmma
// CHECK-NOT: {{conv_pad|conv_window|_transpose}}
// CHECK: fusec.kernel "k2_matmul_max"{{.*}}strategy = matmul_wgmma
// CHECK-NOT: {{conv_pad|conv_window|_transpose}}
// CHECK: fusec.kernel "k3_matmul"{{.*}}strategy = matmul_wgmma
// A channels-last argument (its transposes to NCHW and back cancel the
// lowering's): the matmul reads it directly, no kernel before it but the
// filter's relayout.
// CHECK-LABEL: func.func @nhwc_arg
// CHECK-NOT: {{conv_pad|conv_window|_transpose}}
// CHECK: fusec.kernel "filter_im2col"
// CHECK-NEXT: ^bb0
// CHECK-NOT: {{conv_pad|conv_window|_transpose}}
// CHECK: fusec.kernel "k0_matmul"(%arg0, %{{.*}}){{.*}}strategy = matmul_wgmma{{.*}} -> tensor<98x64xf16>
// CHECK-LABEL: func.func @tail

// The maps, innermost first: [C, W, H, N], the pixel box's corners (lower
// -pad_low; upper (O - 1) s + 1 - extent - pad_low) and the strides.
// MAPS-LABEL: func.func @same3
// MAPS: #fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 7, 7, 2], strides = [128, 896, 6272], box = [64, 64, 1, 1], swizzle = 128, lower = [-1, -1], upper = [-1, -1]>
// MAPS-LABEL: func.func @c96
// MAPS: dims = [96, 5, 6, 2], strides = [192, 960, 5760], box = [64, 64, 1, 1], swizzle = 128, lower = [-1, -1], upper = [-1, -1]>
// MAPS-LABEL: func.func @s2rect
// MAPS: dims = [64, 15, 14, 2], strides = [128, 1920, 26880], box = [64, 64, 1, 1], swizzle = 128, lower = [-1, -1], upper = [-1, -2], element_strides = [1, 2, 2, 1]>
// MAPS-LABEL: func.func @s3mixed
// MAPS: dims = [64, 11, 13, 2], strides = [128, 1408, 18304], box = [64, 64, 1, 1], swizzle = 128, lower = [-2, 0], upper = [-4, -3], element_strides = [1, 2, 3, 1]>
// MAPS-LABEL: func.func @oned
// MAPS: dims = [64, 29, 2], strides = [128, 3712], box = [64, 64, 1], swizzle = 128, lower = [-2], upper = [-2]>
// MAPS-LABEL: func.func @threed
// MAPS: dims = [64, 6, 5, 4, 2], strides = [128, 768, 3840, 15360], box = [64, 128, 1, 1, 1], swizzle = 128, lower = [-1, -1, -1], upper = [-1, -1, -1]>

// 15 taps of a 3x5 window: each offset by arithmetic on the tap's index,
// one im2col load a k-block with the tap's two offsets.
// PTX: cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}], [{{.*}}], {{{%rs[0-9]+}}, {{%rs[0-9]+}}};

func.func @same3(%x: tensor<2x64x7x7xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x7x7xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x7x7xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x7x7xf16>
  return %y : tensor<2x64x7x7xf16>
}

func.func @c96(%x: tensor<2x96x6x5xf16>, %w: tensor<64x96x3x3xf16>) -> tensor<2x64x6x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x96x6x5xf16>, tensor<64x96x3x3xf16>) -> tensor<2x64x6x5xf16>
  return %y : tensor<2x64x6x5xf16>
}

func.func @c8(%x: tensor<2x8x9x7xf16>, %w: tensor<64x8x3x3xf16>) -> tensor<2x64x9x7xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x8x9x7xf16>, tensor<64x8x3x3xf16>) -> tensor<2x64x9x7xf16>
  return %y : tensor<2x64x9x7xf16>
}

func.func @s2rect(%x: tensor<2x64x14x15xf16>, %w: tensor<128x64x3x3xf16>) -> tensor<2x128x7x8xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x14x15xf16>, tensor<128x64x3x3xf16>) -> tensor<2x128x7x8xf16>
  return %y : tensor<2x128x7x8xf16>
}

func.func @s2_1x1(%x: tensor<2x64x9x10xf16>, %w: tensor<128x64x1x1xf16>) -> tensor<2x128x5x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 0, 0>, pad_high = array<i64: 0, 0>} : (tensor<2x64x9x10xf16>, tensor<128x64x1x1xf16>) -> tensor<2x128x5x5xf16>
  return %y : tensor<2x128x5x5xf16>
}

func.func @s3mixed(%x: tensor<2x64x13x11xf16>, %w: tensor<64x64x3x5xf16>) -> tensor<2x64x4x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 3, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 0, 2>, pad_high = array<i64: 1, 1>} : (tensor<2x64x13x11xf16>, tensor<64x64x3x5xf16>) -> tensor<2x64x4x5xf16>
  return %y : tensor<2x64x4x5xf16>
}

func.func @dil2(%x: tensor<2x64x9x11xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x9x11xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>, pad_low = array<i64: 2, 2>, pad_high = array<i64: 2, 2>} : (tensor<2x64x9x11xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x9x11xf16>
  return %y : tensor<2x64x9x11xf16>
}

func.func @asym(%x: tensor<2x64x6x9xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x64x6x9xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 0, 2>, pad_high = array<i64: 2, 0>} : (tensor<2x64x6x9xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x6x9xf16>
  return %y : tensor<2x64x6x9xf16>
}

func.func @oned(%x: tensor<2x64x29xf16>, %w: tensor<64x64x5xf16>) -> tensor<2x64x29xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pad_low = array<i64: 2>, pad_high = array<i64: 2>} : (tensor<2x64x29xf16>, tensor<64x64x5xf16>) -> tensor<2x64x29xf16>
  return %y : tensor<2x64x29xf16>
}

func.func @threed(%x: tensor<2x64x4x5x6xf16>, %w: tensor<64x64x3x3x3xf16>) -> tensor<2x64x4x5x6xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1, 1>, dilations = array<i64: 1, 1, 1>, pad_low = array<i64: 1, 1, 1>, pad_high = array<i64: 1, 1, 1>} : (tensor<2x64x4x5x6xf16>, tensor<64x64x3x3x3xf16>) -> tensor<2x64x4x5x6xf16>
  return %y : tensor<2x64x4x5x6xf16>
}

func.func @tiles(%x: tensor<3x64x20x20xf16>, %w: tensor<128x64x3x3xf16>) -> tensor<3x128x20x20xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<3x64x20x20xf16>, tensor<128x64x3x3xf16>) -> tensor<3x128x20x20xf16>
  return %y : tensor<3x128x20x20xf16>
}

func.func @c12(%x: tensor<2x12x8x8xf16>, %w: tensor<64x12x3x3xf16>) -> tensor<2x64x8x8xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x12x8x8xf16>, tensor<64x12x3x3xf16>) -> tensor<2x64x8x8xf16>
  return %y : tensor<2x64x8x8xf16>
}

func.func @bottleneck(%x: tensor<2x256x10x9xf16>, %w1: tensor<64x256x1x1xf16>, %b1: tensor<1x64x1x1xf16>, %w2: tensor<64x64x3x3xf16>, %b2: tensor<1x64x1x1xf16>, %w3: tensor<256x64x1x1xf16>) -> tensor<2x256x10x9xf16> {
  %z = fusec.constant dense<0.0> : tensor<2x64x10x9xf16>
  %a = fusec.conv %x, %w1 {} : (tensor<2x256x10x9xf16>, tensor<64x256x1x1xf16>) -> tensor<2x64x10x9xf16>
  %bb1 = fusec.broadcast %b1 dims [0, 1, 2, 3] : tensor<1x64x1x1xf16> -> tensor<2x64x10x9xf16>
  %a1 = fusec.add %a, %bb1 : tensor<2x64x10x9xf16>
  %a2 = fusec.max %a1, %z : tensor<2x64x10x9xf16>
  %c = fusec.conv %a2, %w2 {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x10x9xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x10x9xf16>
  %bb2 = fusec.broadcast %b2 dims [0, 1, 2, 3] : tensor<1x64x1x1xf16> -> tensor<2x64x10x9xf16>
  %c1 = fusec.add %c, %bb2 : tensor<2x64x10x9xf16>
  %c2 = fusec.max %c1, %z : tensor<2x64x10x9xf16>
  %d = fusec.conv %c2, %w3 {} : (tensor<2x64x10x9xf16>, tensor<256x64x1x1xf16>) -> tensor<2x256x10x9xf16>
  return %d : tensor<2x256x10x9xf16>
}

func.func @nhwc_arg(%xh: tensor<2x7x7x64xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<2x7x7x64xf16> {
  %x = fusec.transpose %xh perm [0, 3, 1, 2] : tensor<2x7x7x64xf16> -> tensor<2x64x7x7xf16>
  %y = fusec.conv %x, %w {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x7x7xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x7x7xf16>
  %yh = fusec.transpose %y perm [0, 2, 3, 1] : tensor<2x64x7x7xf16> -> tensor<2x7x7x64xf16>
  return %yh : tensor<2x7x7x64xf16>
}

func.func @tail(%x: tensor<1x8xf16>) -> tensor<1x8xf16> {
  return %x : tensor<1x8xf16>
}
