// fusec-fuse folds a concat or slice kernel (elementwise ops beside it
// allowed) into the one elementwise kernel that reads it: rotary
// embedding's x * cos + rotate_half(x) * sin, rotate_half(x) =
// concat(-x2, x1), is one kernel that reads x, cos and sin (it was the
// slices, the concat and the elementwise kernel). A concat that is read
// elsewhere too, or that its consumer broadcasts, stays a kernel of its own.
// A transpose that keeps the last dim (a head transpose) folds the same way;
// one that moves the last dim folds only where the consumer then runs as
// transpose_tiled (shared-memory tiles), else it stays a kernel.
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=rope | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=shared | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=broadcast | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=head_transpose | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=last_dim_transpose | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=transpose_and_direct | FileCheck %s --check-prefix=SAME
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="dump-dir=%t/sm_90a" -o /dev/null
// RUN: %python %S/../CodeGen/Inputs/ptxas_all.py %ptxas %t 9
// REQUIRES: ptxas
// SAME: PASS

// x is one operand (the slices and the consumer read the same tensor).
// CHECK-LABEL: func.func @rope
// CHECK: fusec.kernel "{{.*}}"(%arg1, %arg2, %arg0)
// CHECK: fusec.concat
// CHECK: fusec.yield
// CHECK-NOT: fusec.kernel
// CHECK: return
func.func @rope(%x: tensor<2x4x128x64xf16>, %cos: tensor<128x64xf16>, %sin: tensor<128x64xf16>) -> tensor<2x4x128x64xf16> {
  %x1 = fusec.slice %x offsets [0, 0, 0, 0] strides [1, 1, 1, 1] : tensor<2x4x128x64xf16> -> tensor<2x4x128x32xf16>
  %x2 = fusec.slice %x offsets [0, 0, 0, 32] strides [1, 1, 1, 1] : tensor<2x4x128x64xf16> -> tensor<2x4x128x32xf16>
  %n = fusec.neg %x2 : tensor<2x4x128x32xf16>
  %r = fusec.concat %n, %x1 dim 3 : (tensor<2x4x128x32xf16>, tensor<2x4x128x32xf16>) -> tensor<2x4x128x64xf16>
  %cb = fusec.broadcast %cos dims [2, 3] : tensor<128x64xf16> -> tensor<2x4x128x64xf16>
  %sb = fusec.broadcast %sin dims [2, 3] : tensor<128x64xf16> -> tensor<2x4x128x64xf16>
  %a = fusec.mul %x, %cb : tensor<2x4x128x64xf16>
  %b = fusec.mul %r, %sb : tensor<2x4x128x64xf16>
  %o = fusec.add %a, %b : tensor<2x4x128x64xf16>
  return %o : tensor<2x4x128x64xf16>
}

// The concat is also a result of the function: it stays a kernel.
// CHECK-LABEL: func.func @shared
// CHECK: %[[C:.*]] = fusec.kernel "{{.*}}concat"
// CHECK: fusec.kernel "{{.*}}"({{.*}}%[[C]]
// CHECK: return %[[C]]
func.func @shared(%a: tensor<64x32xf32>, %b: tensor<64x32xf32>, %s: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %c = fusec.concat %a, %b dim 1 : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x64xf32>
  %m = fusec.mul %c, %s : tensor<64x64xf32>
  %n = fusec.tanh %m : tensor<64x64xf32>
  return %c, %n : tensor<64x64xf32>, tensor<64x64xf32>
}

// A concat its consumer broadcasts over 256 rows: folded, each of its
// elements would be gathered 256 times; the concat kernel stays.
// CHECK-LABEL: func.func @broadcast
// CHECK: %[[C:.*]] = fusec.kernel "{{.*}}"(%arg0, %arg1)
// CHECK: fusec.concat
// CHECK: fusec.kernel "{{.*}}"({{.*}}%[[C]]
// CHECK: return
func.func @broadcast(%a: tensor<32xf32>, %b: tensor<32xf32>, %s: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %c = fusec.concat %a, %b dim 0 : (tensor<32xf32>, tensor<32xf32>) -> tensor<64xf32>
  %bb = fusec.broadcast %c dims [1] : tensor<64xf32> -> tensor<256x64xf32>
  %m = fusec.mul %bb, %s : tensor<256x64xf32>
  return %m : tensor<256x64xf32>
}

// [B, S, H, D] -> [B, H, S, D] times a scale: one kernel that reads x
// through the transpose's map (16-byte vectors along D).
// CHECK-LABEL: func.func @head_transpose
// CHECK: fusec.kernel "{{.*}}"(%arg0)
// CHECK-SAME: strategy = movement
// CHECK-SAME: vector = 8
// CHECK: fusec.transpose
// CHECK: fusec.mul
// CHECK-NOT: fusec.kernel
// CHECK: return
func.func @head_transpose(%x: tensor<2x64x4x128xbf16>) -> tensor<2x4x64x128xbf16> {
  %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<2x64x4x128xbf16> -> tensor<2x4x64x128xbf16>
  %s = fusec.constant dense<0.125> : tensor<2x4x64x128xbf16>
  %r = fusec.mul %t, %s : tensor<2x4x64x128xbf16>
  return %r : tensor<2x4x64x128xbf16>
}

// A transpose of the last dim folds into its consumer, which runs as
// transpose_tiled (read along x's rows, tanh and the store along the
// result's rows).
// CHECK-LABEL: func.func @last_dim_transpose
// CHECK: fusec.kernel "{{.*}}tanh"(%arg0){{.*}}strategy = transpose_tiled
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fusec.transpose
// CHECK-NEXT: fusec.tanh
// CHECK-NOT: fusec.kernel
// CHECK: return
func.func @last_dim_transpose(%x: tensor<64x96xf32>) -> tensor<96x64xf32> {
  %t = fusec.transpose %x perm [1, 0] : tensor<64x96xf32> -> tensor<96x64xf32>
  %r = fusec.tanh %t : tensor<96x64xf32>
  return %r : tensor<96x64xf32>
}

// The consumer also reads x directly (at the result's index): its tiles
// cannot take that, so the transpose stays a kernel of its own.
// CHECK-LABEL: func.func @transpose_and_direct
// CHECK: %[[T:.*]] = fusec.kernel "{{.*}}transpose"(%arg0)
// CHECK: fusec.kernel "{{.*}}"(%[[T]]
// CHECK: return
func.func @transpose_and_direct(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %t = fusec.transpose %x perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
  %r = fusec.mul %t, %x : tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
