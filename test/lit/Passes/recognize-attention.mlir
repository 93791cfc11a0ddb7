// RUN: fusec-opt %s --fusec-recognize-attention | FileCheck %s
// Each rewrite keeps the graph's meaning (interpreter, before and after):
// RUN: fusec-run %s --function=scaled --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=causal_additive --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=causal_select --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=exported --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
// RUN: fusec-run %s --function=vit_eager --verify-pipeline=fusec-recognize-attention | FileCheck %s --check-prefix=SAME
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

// What torch.export writes for transformers' SDPA (Llama, GQA): q and kᵀ
// each scaled by d^-1/4, kᵀ through a merged batch dim, K and V repeated
// from 2 to 4 heads, a mask select(causal and key padding, 0, -inf)
// broadcast over heads, and a guard that zeroes rows that see no key.
// CHECK-LABEL: func.func @exported
// CHECK: %[[M:.*]] = fusec.reshape %{{.*}} : tensor<2x1x1x8xi1> -> tensor<2x8xi1>
// CHECK: fusec.attention %arg0, %arg1, %arg2 mask %[[M]] : tensor<2x8xi1> {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NOT: fusec.softmax
// CHECK-NOT: fusec.matmul
func.func @exported(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>,
                    %pad: tensor<2x8xi1>) -> tensor<2x4x8x16xf32> {
  %kr = fusec.broadcast %k dims [0, 1, 3, 4] : tensor<2x2x8x16xf32> -> tensor<2x2x2x8x16xf32>
  %vr = fusec.broadcast %v dims [0, 1, 3, 4] : tensor<2x2x8x16xf32> -> tensor<2x2x2x8x16xf32>
  %v4 = fusec.reshape %vr : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %k3 = fusec.reshape %kr : tensor<2x2x2x8x16xf32> -> tensor<8x8x16xf32>
  %kt3 = fusec.transpose %k3 perm [0, 2, 1] : tensor<8x8x16xf32> -> tensor<8x16x8xf32>
  %kt = fusec.reshape %kt3 : tensor<8x16x8xf32> -> tensor<2x4x16x8xf32>
  %cq = fusec.constant dense<0.5> : tensor<2x4x8x16xf32>
  %qs = fusec.mul %q, %cq : tensor<2x4x8x16xf32>
  %ck = fusec.constant dense<0.5> : tensor<2x4x16x8xf32>
  %ks = fusec.mul %kt, %ck : tensor<2x4x16x8xf32>
  %s = fusec.matmul %qs, %ks : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %tri = fusec.constant dense<[[[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]]]]> : tensor<1x1x8x8xi1>
  %trib = fusec.broadcast %tri dims [0, 1, 2, 3] : tensor<1x1x8x8xi1> -> tensor<2x1x8x8xi1>
  %pad4 = fusec.reshape %pad : tensor<2x8xi1> -> tensor<2x1x1x8xi1>
  %padb = fusec.broadcast %pad4 dims [0, 1, 2, 3] : tensor<2x1x1x8xi1> -> tensor<2x1x8x8xi1>
  %keep = fusec.and %trib, %padb : tensor<2x1x8x8xi1>
  %zero = fusec.constant dense<0.0> : tensor<2x1x8x8xf32>
  %ninf = fusec.constant dense<0xFF800000> : tensor<2x1x8x8xf32>
  %bias = fusec.select %keep, %zero, %ninf : tensor<2x1x8x8xf32>
  %biasb = fusec.broadcast %bias dims [0, 1, 2, 3] : tensor<2x1x8x8xf32> -> tensor<2x4x8x8xf32>
  %u = fusec.add %s, %biasb : tensor<2x4x8x8xf32>
  %p = fusec.softmax %u dim 3 : tensor<2x4x8x8xf32>
  %nan = fusec.compare ne, %p, %p : tensor<2x4x8x8xf32>
  %z = fusec.constant dense<0.0> : tensor<2x4x8x8xf32>
  %pg = fusec.select %nan, %z, %p : tensor<2x4x8x8xf32>
  %o = fusec.matmul %pg, %v4 : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// An encoder's mask (BERT, torch.export): no causal part, an all-true
// constant and the key padding, filled with finfo.min.
// CHECK-LABEL: func.func @encoder_padding
// CHECK: %[[M:.*]] = fusec.reshape %{{.*}} : tensor<2x1x1x8xi1> -> tensor<2x8xi1>
// CHECK: fusec.attention %arg0, %arg1, %arg2 mask %[[M]] : tensor<2x8xi1> {scale = 2.500000e-01 : f64}
func.func @encoder_padding(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                           %pad: tensor<2x8xi1>) -> tensor<2x4x8x16xf32> {
  %s = fusec.matmul %q, %k {transpose_rhs} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %c = fusec.constant dense<0.25> : tensor<2x4x8x8xf32>
  %t = fusec.mul %s, %c : tensor<2x4x8x8xf32>
  %all = fusec.constant dense<true> : tensor<1x1x8x1xi1>
  %allb = fusec.broadcast %all dims [0, 1, 2, 3] : tensor<1x1x8x1xi1> -> tensor<2x1x8x8xi1>
  %pad4 = fusec.reshape %pad : tensor<2x8xi1> -> tensor<2x1x1x8xi1>
  %padb = fusec.broadcast %pad4 dims [0, 1, 2, 3] : tensor<2x1x1x8xi1> -> tensor<2x1x8x8xi1>
  %keep = fusec.and %allb, %padb : tensor<2x1x8x8xi1>
  %zero = fusec.constant dense<0.0> : tensor<2x1x8x8xf32>
  %min = fusec.constant dense<-3.40282347E+38> : tensor<2x1x8x8xf32>
  %bias = fusec.select %keep, %zero, %min : tensor<2x1x8x8xf32>
  %biasb = fusec.broadcast %bias dims [0, 1, 2, 3] : tensor<2x1x8x8xf32> -> tensor<2x4x8x8xf32>
  %u = fusec.add %t, %biasb : tensor<2x4x8x8xf32>
  %p = fusec.softmax %u dim 3 : tensor<2x4x8x8xf32>
  %o = fusec.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// ViT as TorchScript exports transformers' eager attention in f16: Q, K
// and V in [B, S, H, D] (K read as Kᵀ through one [0, 2, 3, 1] transpose),
// a mask of zeros (no mask), and softmax's result cast to f32 and back (an
// exact round trip). K becomes a [0, 2, 1, 3] transpose of its own, and
// all three transposes fold into the attention's layouts: it reads the
// [B, S, H, D] arguments in place.
// CHECK-LABEL: func.func @vit_eager
// CHECK-NOT: fusec.transpose
// CHECK: fusec.attention %arg0, %arg1, %arg2 {key_perm = array<i64: 0, 2, 1, 3>, query_perm = array<i64: 0, 2, 1, 3>, scale = 1.250000e-01 : f64, value_perm = array<i64: 0, 2, 1, 3>}
// CHECK-NOT: fusec.softmax
// CHECK-NOT: fusec.cast
// CHECK: return
func.func @vit_eager(%q: tensor<2x5x2x64xf16>, %k: tensor<2x5x2x64xf16>, %v: tensor<2x5x2x64xf16>) -> tensor<2x2x5x64xf16> {
  %qh = fusec.transpose %q perm [0, 2, 1, 3] : tensor<2x5x2x64xf16> -> tensor<2x2x5x64xf16>
  %kt = fusec.transpose %k perm [0, 2, 3, 1] : tensor<2x5x2x64xf16> -> tensor<2x2x64x5xf16>
  %vh = fusec.transpose %v perm [0, 2, 1, 3] : tensor<2x5x2x64xf16> -> tensor<2x2x5x64xf16>
  %s = fusec.matmul %qh, %kt : (tensor<2x2x5x64xf16>, tensor<2x2x64x5xf16>) -> tensor<2x2x5x5xf16>
  %c = fusec.constant dense<1.250000e-01> : tensor<2x2x5x5xf16>
  %t = fusec.mul %s, %c : tensor<2x2x5x5xf16>
  %z = fusec.constant dense<0.000000e+00> : tensor<2x1x5x5xf16>
  %zb = fusec.broadcast %z dims [0, 1, 2, 3] : tensor<2x1x5x5xf16> -> tensor<2x2x5x5xf16>
  %m = fusec.add %t, %zb : tensor<2x2x5x5xf16>
  %p = fusec.softmax %m dim 3 : tensor<2x2x5x5xf16>
  %p32 = fusec.cast %p : tensor<2x2x5x5xf16> to tensor<2x2x5x5xf32>
  %p16 = fusec.cast %p32 : tensor<2x2x5x5xf32> to tensor<2x2x5x5xf16>
  %o = fusec.matmul %p16, %vh : (tensor<2x2x5x5xf16>, tensor<2x2x5x64xf16>) -> tensor<2x2x5x64xf16>
  return %o : tensor<2x2x5x64xf16>
}
