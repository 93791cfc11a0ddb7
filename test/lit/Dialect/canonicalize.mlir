// RUN: fusec-opt %s -split-input-file -canonicalize | FileCheck %s
// The folds keep the results:
// RUN: fusec-run --verify-pipeline=canonicalize %S/Inputs/foldable.mlir | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=canonicalize %S/Inputs/cast-chains.mlir | FileCheck %s --check-prefix=SAME
// RUN: fusec-opt %S/Inputs/cast-chains.mlir -canonicalize | FileCheck %s --check-prefix=CASTS
// SAME: PASS

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = fusec.cast %x : tensor<4x8xf32> to tensor<4x8xf32>
  %1 = fusec.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = fusec.transpose %x perm [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = fusec.broadcast %x dims [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusec.neg %x : tensor<4x8xf32>
  %4 = fusec.neg %n : tensor<4x8xf32>
  %one = fusec.constant dense<1.0> : tensor<4x8xf32>
  %5 = fusec.mul %x, %one : tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @chains
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = fusec.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: %[[T:.*]] = fusec.transpose %[[X]] perm [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[R]], %[[T]], %[[X]]
func.func @chains(%x: tensor<2x3x4xf32>) -> (tensor<24xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %0 = fusec.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = fusec.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  %2 = fusec.transpose %x perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %3 = fusec.transpose %2 perm [1, 2, 0] : tensor<3x4x2xf32> -> tensor<4x2x3xf32>
  %4 = fusec.transpose %x perm [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %5 = fusec.transpose %4 perm [1, 0, 2] : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  return %1, %3, %5 : tensor<24xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// Splat constants fold through arithmetic.
// CHECK-LABEL: func.func @constants
// CHECK-DAG: fusec.constant dense<5.000000e+00> : tensor<8xf32>
// CHECK-DAG: fusec.constant dense<6> : tensor<8xi32>
// CHECK-NOT: fusec.add
// CHECK-NOT: fusec.mul
func.func @constants() -> (tensor<8xf32>, tensor<8xi32>) {
  %a = fusec.constant dense<2.0> : tensor<8xf32>
  %b = fusec.constant dense<3.0> : tensor<8xf32>
  %c = fusec.add %a, %b : tensor<8xf32>
  %i = fusec.constant dense<2> : tensor<8xi32>
  %j = fusec.constant dense<3> : tensor<8xi32>
  %k = fusec.mul %i, %j : tensor<8xi32>
  return %c, %k : tensor<8xf32>, tensor<8xi32>
}

// -----

// Integer division by a zero constant is not folded.
// CHECK-LABEL: func.func @no_div_by_zero
// CHECK: fusec.div
func.func @no_div_by_zero() -> tensor<8xi32> {
  %i = fusec.constant dense<2> : tensor<8xi32>
  %z = fusec.constant dense<0> : tensor<8xi32>
  %k = fusec.div %i, %z : tensor<8xi32>
  return %k : tensor<8xi32>
}

// A cast through an exact intermediate (bf16 -> f32) is one
// cast, and the round trip is the value; through a lossy one (f32 -> bf16,
// f32 -> f16) both stay (Inputs/cast-chains.mlir).
// CASTS-LABEL: func.func @cast_chains
// CASTS-SAME: (%[[H:.*]]: tensor<4x8xbf16>, %[[F:.*]]: tensor<4x8xf32>)
// CASTS-DAG: %[[A:.*]] = fusec.cast %[[H]] : tensor<4x8xbf16> to tensor<4x8xf16>
// CASTS-DAG: %[[B1:.*]] = fusec.cast %[[F]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CASTS-DAG: %[[B2:.*]] = fusec.cast %[[B1]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CASTS-DAG: %[[C1:.*]] = fusec.cast %[[F]] : tensor<4x8xf32> to tensor<4x8xf16>
// CASTS-DAG: %[[C2:.*]] = fusec.cast %[[C1]] : tensor<4x8xf16> to tensor<4x8xbf16>
// CASTS-DAG: %[[D:.*]] = fusec.cast %[[H]] : tensor<4x8xbf16> to tensor<4x8xi32>
// CASTS: return %[[A]], %[[H]], %[[B2]], %[[C2]], %[[D]]
