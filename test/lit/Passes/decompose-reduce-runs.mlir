// A reduction over dims that are not one contiguous run becomes two: over
// the innermost run first (a row or column reduction), then over the rest.
// Narrow floats reduce in f32 between the two; integers in their own type.
// Only from a million elements on (below, one row_stream kernel).
// RUN: fusec-opt %s --fusec-decompose | FileCheck %s
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=bn_mean %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=bn_max_bf16 %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=three_runs %s | FileCheck %s --check-prefix=SAME
// SAME: PASS

// CHECK-LABEL: func.func @bn_mean
// CHECK: %[[A:.*]] = fusec.reduce mean %arg0 dims [2, 3] : tensor<16x6x96x128xf32> -> tensor<16x6xf32>
// CHECK: fusec.reduce mean %[[A]] dims [0] : tensor<16x6xf32> -> tensor<6xf32>
func.func @bn_mean(%x: tensor<16x6x96x128xf32>) -> tensor<6xf32> {
  %m = fusec.reduce mean %x dims [0, 2, 3] : tensor<16x6x96x128xf32> -> tensor<6xf32>
  return %m : tensor<6xf32>
}

// CHECK-LABEL: func.func @bn_max_bf16
// CHECK: %[[C:.*]] = fusec.cast %arg0 : tensor<16x6x96x128xbf16> to tensor<16x6x96x128xf32>
// CHECK: %[[A:.*]] = fusec.reduce max %[[C]] dims [2, 3] : tensor<16x6x96x128xf32> -> tensor<16x6xf32>
// CHECK: %[[B:.*]] = fusec.reduce max %[[A]] dims [0] : tensor<16x6xf32> -> tensor<6xf32>
// CHECK: fusec.cast %[[B]] : tensor<6xf32> to tensor<6xbf16>
func.func @bn_max_bf16(%x: tensor<16x6x96x128xbf16>) -> tensor<6xbf16> {
  %m = fusec.reduce max %x dims [0, 2, 3] : tensor<16x6x96x128xbf16> -> tensor<6xbf16>
  return %m : tensor<6xbf16>
}

// Three runs, [1], [3, 4] and [6], of a rank-7 i32 tensor: the innermost
// run first; the rest, 11520 elements, stays one reduction.
// CHECK-LABEL: func.func @three_runs
// CHECK: %[[A:.*]] = fusec.reduce sum %arg0 dims [6] : tensor<8x3x8x5x4x3x128xi32> -> tensor<8x3x8x5x4x3xi32>
// CHECK: fusec.reduce sum %[[A]] dims [1, 3, 4] : tensor<8x3x8x5x4x3xi32> -> tensor<8x8x3xi32>
func.func @three_runs(%x: tensor<8x3x8x5x4x3x128xi32>) -> tensor<8x8x3xi32> {
  %s = fusec.reduce sum %x dims [1, 3, 4, 6] : tensor<8x3x8x5x4x3x128xi32> -> tensor<8x8x3xi32>
  return %s : tensor<8x8x3xi32>
}

// CHECK-LABEL: func.func @small
// CHECK: fusec.reduce sum %arg0 dims [0, 2] : tensor<4x8x16xf32> -> tensor<8xf32>
// CHECK-NOT: fusec.reduce
func.func @small(%x: tensor<4x8x16xf32>) -> tensor<8xf32> {
  %0 = fusec.reduce sum %x dims [0, 2] : tensor<4x8x16xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
