// Integer reductions: accumulated in their own type (exact; sums wrap),
// identities of the type (0, INT_MIN, INT_MAX), i64 shuffled as two i32
// halves, cross-warp and column partials 8 bytes wide.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/row_i64.k0_reduce.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/col_max_i32.k0_reduce.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// A CTA a row: i64 partials in shared memory; the butterfly moves the low
// and the high word of each partial.
// CHECK: llvm.mlir.global internal @__fusec_partials() {{.*}} : !llvm.array<64 x i64>
// CHECK-LABEL: llvm.func @k0_reduce(
// CHECK: %[[LO:.*]] = llvm.trunc %[[V:.*]] : i64 to i32
// CHECK: nvvm.shfl.sync  bfly %{{.*}}, %[[LO]], %{{.*}}, %{{.*}} : i32 -> i32
// CHECK: llvm.lshr %[[V]], %{{.*}} : i64
// CHECK: nvvm.shfl.sync  bfly {{.*}} : i32 -> i32
// CHECK: llvm.store %{{.*}}, %{{.*}} : i64, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-NOT: llvm.fadd
// CHECK: llvm.return
func.func @row_i64(%y: tensor<40x600xi64>) -> tensor<40xi64> {
  %0 = fusec.reduce sum %y dims [1] : tensor<40x600xi64> -> tensor<40xi64>
  return %0 : tensor<40xi64>
}

// A column max in i32: starts at INT32_MIN, combines with smax, partials
// widened to i64 in shared memory and narrowed back.
// CHECK-LABEL: llvm.func @k0_reduce(
// CHECK: llvm.mlir.constant(-2147483648 : i32) : i32
// CHECK: llvm.intr.smax(%{{.*}}, %{{.*}}) : (i32, i32) -> i32
// CHECK: llvm.sext %{{.*}} : i32 to i64
// CHECK: llvm.store %{{.*}}, %{{.*}} : i64, !llvm.ptr<3>
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> i64
// CHECK: llvm.trunc %{{.*}} : i64 to i32
func.func @col_max_i32(%x: tensor<900x37xi32>) -> tensor<37xi32> {
  %0 = fusec.reduce max %x dims [0] : tensor<900x37xi32> -> tensor<37xi32>
  return %0 : tensor<37xi32>
}
