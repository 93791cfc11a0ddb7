// A 1x1, stride-1, unpadded convolution whose filter is an argument: the
// filter [K, C, 1, 1] lies in memory as the matmul's [K, C], so the matmul
// reads it through a reshape and no filter_im2col kernel relays it (a 3x3
// filter still needs one: [K, C, 3, 3] -> [K, 3, 3, C]). Both keep the
// graph's meaning (interpreter, before and after).
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s
// RUN: fusec-run %s --function=pointwise --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=pointwise3d --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// By default the 1x1 GEMM's rows are every image's positions ([N·P, C],
// ROWS); FUSEC_CONV_POINTWISE_ROWS=0 keeps a batch of images ([N, P, C],
// BATCH).
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=ROWS
// RUN: env FUSEC_CONV_POINTWISE_ROWS=0 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=BATCH
// RUN: env FUSEC_CONV_POINTWISE_ROWS=0 fusec-run %s --function=pointwise --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// RUN: env FUSEC_CONV_POINTWISE_ROWS=0 fusec-run %s --function=pointwise3d --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// SAME: PASS: {{.*}} keeps the graph's meaning
// BATCH-LABEL: func.func @pointwise
// BATCH: fusec.matmul {{.*}} : (tensor<2x35x64xf16>, tensor<128x64xf16>) -> tensor<2x35x128xf16>
// ROWS-LABEL: func.func @pointwise
// ROWS: fusec.matmul {{.*}} : (tensor<70x64xf16>, tensor<128x64xf16>) -> tensor<70x128xf16>
// ROWS-LABEL: func.func @pointwise3d
// ROWS: fusec.matmul {{.*}} : (tensor<60x64xbf16>, tensor<64x64xbf16>) -> tensor<60x64xbf16>

// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: filter_im2col
// CHECK: strategy = matmul_wgmma
// CHECK-NOT: filter_im2col
// CHECK: return
func.func @pointwise(%xh: tensor<2x5x7x64xf16>, %w: tensor<128x64x1x1xf16>) -> tensor<2x5x7x128xf16> {
  %x = fusec.transpose %xh perm [0, 3, 1, 2] : tensor<2x5x7x64xf16> -> tensor<2x64x5x7xf16>
  %y = fusec.conv %x, %w : (tensor<2x64x5x7xf16>, tensor<128x64x1x1xf16>) -> tensor<2x128x5x7xf16>
  %yh = fusec.transpose %y perm [0, 2, 3, 1] : tensor<2x128x5x7xf16> -> tensor<2x5x7x128xf16>
  return %yh : tensor<2x5x7x128xf16>
}

// CHECK-LABEL: func.func @pointwise3d
// CHECK-NOT: filter_im2col
// CHECK: return
func.func @pointwise3d(%x: tensor<1x64x3x4x5xbf16>, %w: tensor<64x64x1x1x1xbf16>) -> tensor<1x64x3x4x5xbf16> {
  %y = fusec.conv %x, %w : (tensor<1x64x3x4x5xbf16>, tensor<64x64x1x1x1xbf16>) -> tensor<1x64x3x4x5xbf16>
  return %y : tensor<1x64x3x4x5xbf16>
}

// CHECK-LABEL: func.func @tapped
// CHECK: fusec.kernel "filter_im2col"
func.func @tapped(%x: tensor<1x64x6x6xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<1x64x6x6xf16> {
  %y = fusec.conv %x, %w {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<1x64x6x6xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x6x6xf16>
  return %y : tensor<1x64x6x6xf16>
}
