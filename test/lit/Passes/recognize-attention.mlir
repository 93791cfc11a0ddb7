// RUN: fusec-opt %s --fusec-recognize-attention | FileCheck %s
// Each rewrite keeps the graph's meaning (interpreter, before and after):
// RUN: fusec-run %s --function=scaled --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=causal_additive --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=causal_select --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// SAME: PASS: fusec-recognize-attention keeps the graph's meaning
// The pipeline forms attention before decomposing softmax, only where the
// attention intrinsic runs it (bf16/f16, head dim 64, 128 or 256): the f32
// graphs here stay written out.
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: fusec-opt %s --fusec-recognize-attention=intrinsic-only=true | FileCheck %s --check-prefix=ONLY
// PIPE-LABEL: func.func @scaled
// PIPE-NOT: fusec.attention
// PIPE-LABEL: func.func @bf16_causal
// PIPE: fusec.attention
// ONLY-LABEL: func.func @scaled
// ONLY-NOT: fusec.attention
// ONLY-LABEL: func.func @bf16_causal
// ONLY: fusec.attention %arg0, %arg1, %arg2 {causal, scale = 1.250000e-01 : f64}

// CHECK-LABEL: func.func @scaled
// CHECK-NEXT: %[[O:.*]] = fusec.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @scaled(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = fusec.matmul %q, %k {transpose_rhs} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %c = fusec.constant dense<0.125> : tensor<1x2x8x8xf32>
  %t = fusec.mul %s, %c : tensor<1x2x8x8xf32>
  %p = fusec.softmax %t dim 3 : tensor<1x2x8x8xf32>
  %o = fusec.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// A transposed K, a division by sqrt(d) and an additive causal mask (0 on
// and below the diagonal, -inf above), broadcast over batch and heads.
// CHECK-LABEL: func.func @causal_additive
// CHECK: fusec.attention %arg0, %arg1, %arg2 {causal, scale = 2.500000e-01 : f64}
// CHECK-NOT: fusec.softmax
func.func @causal_additive(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %kt = fusec.transpose %k perm [0, 1, 3, 2] : tensor<1x1x4x16xf32> -> tensor<1x1x16x4xf32>
  %s = fusec.matmul %q, %kt : (tensor<1x1x4x16xf32>, tensor<1x1x16x4xf32>) -> tensor<1x1x4x4xf32>
  %d = fusec.constant dense<4.0> : tensor<1x1x4x4xf32>
  %t = fusec.div %s, %d : tensor<1x1x4x4xf32>
  %m = fusec.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %mb = fusec.broadcast %m dims [2, 3] : tensor<4x4xf32> -> tensor<1x1x4x4xf32>
  %u = fusec.add %t, %mb : tensor<1x1x4x4xf32>
  %p = fusec.softmax %u dim 3 : tensor<1x1x4x4xf32>
  %o = fusec.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// The select form of the mask, with fewer queries than keys (the causal
// diagonal is offset by Skv - Sq).
// CHECK-LABEL: func.func @causal_select
// CHECK: fusec.attention %arg0, %arg1, %arg2 {causal, scale = 1.000000e+00 : f64}
func.func @causal_select(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x3x8xf32>, %v: tensor<1x1x3x8xf32>) -> tensor<1x1x2x8xf32> {
  %s = fusec.matmul %q, %k {transpose_rhs} : (tensor<1x1x2x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x1x2x3xf32>
  %c = fusec.constant dense<[[true, true, false], [true, true, true]]> : tensor<2x3xi1>
  %cb = fusec.broadcast %c dims [2, 3] : tensor<2x3xi1> -> tensor<1x1x2x3xi1>
  %ninf = fusec.constant dense<-1.0e9> : tensor<1x1x2x3xf32>
  %u = fusec.select %cb, %s, %ninf : tensor<1x1x2x3xf32>
  %p = fusec.softmax %u dim 3 : tensor<1x1x2x3xf32>
  %o = fusec.matmul %p, %v : (tensor<1x1x2x3xf32>, tensor<1x1x3x8xf32>) -> tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// Not attention: a mask that is not causal, and scores used twice.
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: fusec.attention
// CHECK: fusec.softmax
func.func @not_causal(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %s = fusec.matmul %q, %k {transpose_rhs} : (tensor<1x1x2x8xf32>, tensor<1x1x2x8xf32>) -> tensor<1x1x2x2xf32>
  %m = fusec.constant dense<[[[[0xFF800000, 0.0], [0.0, 0.0]]]]> : tensor<1x1x2x2xf32>
  %u = fusec.add %s, %m : tensor<1x1x2x2xf32>
  %p = fusec.softmax %u dim 3 : tensor<1x1x2x2xf32>
  %o = fusec.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// CHECK-LABEL: func.func @scores_escape
// CHECK-NOT: fusec.attention
func.func @scores_escape(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> (tensor<1x1x2x8xf32>, tensor<1x1x2x2xf32>) {
  %s = fusec.matmul %q, %k {transpose_rhs} : (tensor<1x1x2x8xf32>, tensor<1x1x2x8xf32>) -> tensor<1x1x2x2xf32>
  %p = fusec.softmax %s dim 3 : tensor<1x1x2x2xf32>
  %o = fusec.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32>
  return %o, %s : tensor<1x1x2x8xf32>, tensor<1x1x2x2xf32>
}

// bf16, head dim 64, causal by select: what the intrinsic runs.
// CHECK-LABEL: func.func @bf16_causal
// CHECK: fusec.attention %arg0, %arg1, %arg2 {causal, scale = 1.250000e-01 : f64}
func.func @bf16_causal(%q: tensor<1x4x8x64xbf16>, %k: tensor<1x4x8x64xbf16>, %v: tensor<1x4x8x64xbf16>) -> tensor<1x4x8x64xbf16> {
  %s = fusec.matmul %q, %k {transpose_rhs} : (tensor<1x4x8x64xbf16>, tensor<1x4x8x64xbf16>) -> tensor<1x4x8x8xbf16>
  %c = fusec.constant dense<0.125> : tensor<1x4x8x8xbf16>
  %t = fusec.mul %s, %c : tensor<1x4x8x8xbf16>
  %keep = fusec.constant dense<[[true, false, false, false, false, false, false, false],
                                 [true, true, false, false, false, false, false, false],
                                 [true, true, true, false, false, false, false, false],
                                 [true, true, true, true, false, false, false, false],
                                 [true, true, true, true, true, false, false, false],
                                 [true, true, true, true, true, true, false, false],
                                 [true, true, true, true, true, true, true, false],
                                 [true, true, true, true, true, true, true, true]]> : tensor<8x8xi1>
  %kb = fusec.broadcast %keep dims [2, 3] : tensor<8x8xi1> -> tensor<1x4x8x8xi1>
  %ninf = fusec.constant dense<0xFF80> : tensor<1x4x8x8xbf16>
  %m = fusec.select %kb, %t, %ninf : tensor<1x4x8x8xbf16>
  %p = fusec.softmax %m dim 3 : tensor<1x4x8x8xbf16>
  %o = fusec.matmul %p, %v : (tensor<1x4x8x8xbf16>, tensor<1x4x8x64xbf16>) -> tensor<1x4x8x64xbf16>
  return %o : tensor<1x4x8x64xbf16>
}
