// Transposes that keep the head dim last fold into fusec.attention's layout
// attributes (fusec-recognize-attention), in both directions and through
// chains, and the graph keeps its meaning (the interpreter reads each
// operand through its permutation; before and after on random inputs).
// RUN: fusec-opt %s --fusec-recognize-attention | FileCheck %s
// RUN: fusec-run %s --function=bshd --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=chains --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=kept --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=chains --verify-pipeline="fusec-pipeline{target=h200}" | FileCheck %s --check-prefix=SAME
// The attribute form round-trips, and the pass leaves what it cannot fold:
// RUN: fusec-opt %s --fusec-recognize-attention | fusec-opt --fusec-recognize-attention | FileCheck %s
// FUSEC_ATTENTION_LAYOUTS=0 turns the fold off:
// RUN: env FUSEC_ATTENTION_LAYOUTS=0 fusec-opt %s --fusec-recognize-attention | FileCheck %s --check-prefix=OFF
// SAME: PASS: {{.*}} keeps the graph's meaning

// Q, K and V as [B, S, H, D] (GQA: 2 kv heads), O back to [B, S, H, D].
// CHECK-LABEL: func.func @bshd
// CHECK-NOT: fusec.transpose
// CHECK: %[[O:.*]] = fusec.attention %arg0, %arg1, %arg2 {causal, key_perm = array<i64: 0, 2, 1, 3>, query_perm = array<i64: 0, 2, 1, 3>, result_perm = array<i64: 0, 2, 1, 3>, scale = 1.250000e-01 : f64, value_perm = array<i64: 0, 2, 1, 3>} : (tensor<2x24x4x64xbf16>, tensor<2x40x2x64xbf16>, tensor<2x40x2x64xbf16>) -> tensor<2x24x4x64xbf16>
// CHECK-NEXT: return %[[O]]
// OFF-LABEL: func.func @bshd
// OFF-COUNT-3: fusec.transpose
// OFF: fusec.attention %{{.*}} {causal, scale = 1.250000e-01 : f64}
// OFF: fusec.transpose
func.func @bshd(%q: tensor<2x24x4x64xbf16>, %k: tensor<2x40x2x64xbf16>, %v: tensor<2x40x2x64xbf16>) -> tensor<2x24x4x64xbf16> {
  %qt = fusec.transpose %q perm [0, 2, 1, 3] : tensor<2x24x4x64xbf16> -> tensor<2x4x24x64xbf16>
  %kt = fusec.transpose %k perm [0, 2, 1, 3] : tensor<2x40x2x64xbf16> -> tensor<2x2x40x64xbf16>
  %vt = fusec.transpose %v perm [0, 2, 1, 3] : tensor<2x40x2x64xbf16> -> tensor<2x2x40x64xbf16>
  %o = fusec.attention %qt, %kt, %vt {scale = 0.125 : f64, causal} : (tensor<2x4x24x64xbf16>, tensor<2x2x40x64xbf16>, tensor<2x2x40x64xbf16>) -> tensor<2x4x24x64xbf16>
  %ot = fusec.transpose %o perm [0, 2, 1, 3] : tensor<2x4x24x64xbf16> -> tensor<2x24x4x64xbf16>
  return %ot : tensor<2x24x4x64xbf16>
}

// Chains compose: Q as [S, B, H, D] through two transposes, V as [H, S, B, D],
// O stored as [S, H, B, D] through two. A layout may already be there.
// CHECK-LABEL: func.func @chains
// CHECK-NOT: fusec.transpose
// CHECK: fusec.attention %arg0, %arg1, %arg2 {key_perm = array<i64: 0, 2, 1, 3>, query_perm = array<i64: 1, 2, 0, 3>, result_perm = array<i64: 2, 1, 0, 3>, scale = 1.250000e-01 : f64, value_perm = array<i64: 2, 0, 1, 3>}
// CHECK-NEXT: return
func.func @chains(%q: tensor<24x2x4x64xf16>, %k: tensor<2x40x4x64xf16>, %v: tensor<4x40x2x64xf16>) -> tensor<24x4x2x64xf16> {
  %q1 = fusec.transpose %q perm [1, 0, 2, 3] : tensor<24x2x4x64xf16> -> tensor<2x24x4x64xf16>
  %q2 = fusec.transpose %q1 perm [0, 2, 1, 3] : tensor<2x24x4x64xf16> -> tensor<2x4x24x64xf16>
  %vt = fusec.transpose %v perm [2, 0, 1, 3] : tensor<4x40x2x64xf16> -> tensor<2x4x40x64xf16>
  %o = fusec.attention %q2, %k, %vt {scale = 0.125 : f64, key_perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x24x64xf16>, tensor<2x40x4x64xf16>, tensor<2x4x40x64xf16>) -> tensor<2x4x24x64xf16>
  %o1 = fusec.transpose %o perm [0, 2, 1, 3] : tensor<2x4x24x64xf16> -> tensor<2x24x4x64xf16>
  %o2 = fusec.transpose %o1 perm [1, 2, 0, 3] : tensor<2x24x4x64xf16> -> tensor<24x4x2x64xf16>
  return %o2 : tensor<24x4x2x64xf16>
}

// What stays: a transpose that moves the head dim; a transposed Q that is
// also returned (the attention reads %q in place, the transpose stays for
// its other use); a result with two uses.
// CHECK-LABEL: func.func @kept
// CHECK: %[[QT:.*]] = fusec.transpose %arg0 perm [0, 2, 1, 3]
// CHECK: %[[KT:.*]] = fusec.transpose %arg1 perm [0, 1, 3, 2]
// CHECK: %[[O:.*]] = fusec.attention %arg0, %[[KT]], %arg2 {query_perm = array<i64: 0, 2, 1, 3>, scale = 1.250000e-01 : f64}
// CHECK: fusec.transpose %[[O]] perm [0, 2, 1, 3]
// CHECK: return %[[QT]], %[[O]]
func.func @kept(%q: tensor<1x16x2x64xf16>, %k: tensor<1x2x64x16xf16>, %v: tensor<1x2x16x64xf16>) -> (tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x16x2x64xf16>) {
  %qt = fusec.transpose %q perm [0, 2, 1, 3] : tensor<1x16x2x64xf16> -> tensor<1x2x16x64xf16>
  %kt = fusec.transpose %k perm [0, 1, 3, 2] : tensor<1x2x64x16xf16> -> tensor<1x2x16x64xf16>
  %o = fusec.attention %qt, %kt, %v {scale = 0.125 : f64} : (tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>) -> tensor<1x2x16x64xf16>
  %ot = fusec.transpose %o perm [0, 2, 1, 3] : tensor<1x2x16x64xf16> -> tensor<1x16x2x64xf16>
  return %qt, %o, %ot : tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x16x2x64xf16>
}
