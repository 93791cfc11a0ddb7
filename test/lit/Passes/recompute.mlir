// RUN: fusec-opt %s --fusec-fuse --fusec-recompute=remarks=true -o - 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: fusec-run --verify-pipeline=fusec-fuse,fusec-recompute --function=square_twice %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-fuse,fusec-recompute --function=six_readers --trials=1 %s | FileCheck %s --check-prefix=SAME
// SAME: PASS

// The seeds' x*x feeds two reductions that cannot share a kernel: storing it
// (4 MiB written, 8 MiB read back) costs more than squaring twice.
// CHECK-LABEL: func.func @square_twice
// CHECK-NEXT: fusec.kernel "{{.*}}"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fusec.mul
// CHECK-NEXT: fusec.reduce sum {{.*}} dims [0]
// CHECK: fusec.kernel "{{.*}}"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fusec.mul
// CHECK-NEXT: fusec.reduce sum {{.*}} dims [1]
// REMARK: recompute.mlir:[[@LINE+4]]:8: remark: recompute (faster than storing and reloading): 1-op slice into 1 kernel(s): 6.623 us -> 5.749 us predicted, +1048576 FLOPs, 4194304 bytes no longer stored
func.func @square_twice(%x: tensor<1024x1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>) {
  %y = fusec.mul %x, %x : tensor<1024x1024xf32>
  %a = fusec.reduce sum %y dims [1] : tensor<1024x1024xf32> -> tensor<1024xf32>
  %b = fusec.reduce sum %y dims [0] : tensor<1024x1024xf32> -> tensor<1024xf32>
  return %a, %b : tensor<1024xf32>, tensor<1024xf32>
}

// a + b read by six transposes: recomputing would read both a and b six
// times (48 bytes an element) instead of storing the sum once (12 + 6 x 8).
// CHECK-LABEL: func.func @six_readers
// CHECK: %[[S:.*]] = fusec.kernel "{{.*}}add"(%arg0, %arg1)
// CHECK-COUNT-6: fusec.kernel "{{.*}}transpose"(%[[S]])
// REMARK: remark: materialize (cheaper than recomputing): 1-op slice into 6 kernel(s)
func.func @six_readers(%a: tensor<32x32x32x64xf32>, %b: tensor<32x32x32x64xf32>) -> (tensor<32x32x32x64xf32>, tensor<32x32x64x32xf32>, tensor<32x64x32x32xf32>, tensor<64x32x32x32xf32>, tensor<32x32x32x64xf32>, tensor<32x64x32x32xf32>) {
  %s = fusec.add %a, %b : tensor<32x32x32x64xf32>
  %0 = fusec.transpose %s perm [1, 0, 2, 3] : tensor<32x32x32x64xf32> -> tensor<32x32x32x64xf32>
  %1 = fusec.transpose %s perm [0, 1, 3, 2] : tensor<32x32x32x64xf32> -> tensor<32x32x64x32xf32>
  %2 = fusec.transpose %s perm [0, 3, 2, 1] : tensor<32x32x32x64xf32> -> tensor<32x64x32x32xf32>
  %3 = fusec.transpose %s perm [3, 1, 2, 0] : tensor<32x32x32x64xf32> -> tensor<64x32x32x32xf32>
  %4 = fusec.transpose %s perm [2, 1, 0, 3] : tensor<32x32x32x64xf32> -> tensor<32x32x32x64xf32>
  %5 = fusec.transpose %s perm [1, 3, 0, 2] : tensor<32x32x32x64xf32> -> tensor<32x64x32x32xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<32x32x32x64xf32>, tensor<32x32x64x32xf32>, tensor<32x64x32x32xf32>, tensor<64x32x32x32xf32>, tensor<32x32x32x64xf32>, tensor<32x64x32x32xf32>
}

// A cheap producer of a matmul operand (a rotary embedding before q·kᵀ) is
// not recomputed inside the matmul's kernel: the tensor-core matmul reads
// its operands from memory, so it stays its own kernel and the matmul keeps
// matmul_wgmma.
// CHECK-LABEL: func.func @rotary_scores
// CHECK: %[[X:.*]] = fusec.kernel "k0_mul_add"(
// CHECK: fusec.kernel "k1_matmul"(%[[X]], %arg4)
func.func @rotary_scores(%q: tensor<256x64xbf16>, %r: tensor<256x64xbf16>, %cos: tensor<256x64xbf16>, %sin: tensor<256x64xbf16>, %k: tensor<64x256xbf16>) -> tensor<256x256xbf16> {
  %a = fusec.mul %q, %cos : tensor<256x64xbf16>
  %b = fusec.mul %r, %sin : tensor<256x64xbf16>
  %x = fusec.add %a, %b : tensor<256x64xbf16>
  %0 = fusec.matmul %x, %k : (tensor<256x64xbf16>, tensor<64x256xbf16>) -> tensor<256x256xbf16>
  return %0 : tensor<256x256xbf16>
}
