// column: reductions over leading or middle dims.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/column_sum.k0_reduce.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/middle.k0_reduce.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s --check-prefix=SPLIT
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen | FileCheck %s --check-prefix=SCRATCH
// RUN: %ptxas -arch=sm_90a -v %t/bias_grad.k0_reduce.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/bn_stats_nhwc.k0_cast_reduce.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,PAIRREGS
// RUN: %ptxas -arch=sm_90a -v %t/bn_stats_nhwc_wide.k0_cast_reduce.ptx -o %t/e.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDEREGS
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s --check-prefix=PAIR
// RUN: FUSEC_COLUMN_SHIFTED=0 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=UNSHIFTED
// REQUIRES: ptxas
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PAIRREGS: Used {{([1-9][0-9]?|1[0-9][0-9])}} registers
// WIDEREGS: Used {{[1-9][0-9]?}} registers

// A sum over 64 rows of 256 f32 columns: 4 columns a thread (one 16-byte
// load a row). The columns are few (8 tiles for 132 SMs), so a CTA is 8
// groups x 32 slices: rows 32 apart, four a trip, added in f32 and widened
// once to f64 (then one at a time); each warp's 4 slices combined by
// butterfly shuffles (8 and 16 lanes apart, both halves of each f64), the
// 8 warps' partials in shared memory (f64, two parities), one barrier.
// CHECK: llvm.mlir.global internal @__fusec_partials() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<512 x f64>
// CHECK-LABEL: llvm.func @k0_reduce(
// CHECK: ^{{.*}}(%[[TILE:.*]]: i64, %[[PARITY:.*]]: i64):
// CHECK-COUNT-4: llvm.inline_asm "ld.global.v4.u32
// CHECK-COUNT-12: llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4: llvm.fpext %{{.*}} : f32 to f64
// CHECK: ^[[ROWS:bb[0-9]+]](%[[R:.*]]: i64, %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
// CHECK: llvm.inline_asm "ld.global.v4.u32
// CHECK-COUNT-4: llvm.fpext %{{.*}} : f32 to f64
// CHECK: llvm.br ^[[ROWS]]
// CHECK-COUNT-16: nvvm.shfl.sync  bfly
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} : f64, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-COUNT-8: llvm.load %{{.*}} : !llvm.ptr<3> -> f64
// CHECK: llvm.fptrunc %{{.*}} : f64 to f32
// CHECK: llvm.xor %[[PARITY]]
func.func @column_sum(%x: tensor<64x256xf32>) -> tensor<256xf32> {
  %0 = fusec.reduce sum %x dims [0] : tensor<64x256xf32> -> tensor<256xf32>
  return %0 : tensor<256xf32>
}

// The reduced dim between an outer and an inner block: each column starts at
// (c / inner) * rows * inner + c % inner. bf16: 8 columns a thread.
// CHECK: llvm.mlir.global internal @__fusec_partials() {{.*}} : !llvm.array<1024 x f64>
// CHECK-LABEL: llvm.func @k0_reduce(
// CHECK-DAG: llvm.udiv %{{.*}}, %{{.*}} : i64
// CHECK-DAG: llvm.urem %{{.*}}, %{{.*}} : i64
// CHECK: nvvm.barrier0
func.func @middle(%x: tensor<6x37x40xbf16>) -> tensor<6x40xbf16> {
  %0 = fusec.reduce sum %x dims [1] : tensor<6x37x40xbf16> -> tensor<6x40xbf16>
  return %0 : tensor<6x40xbf16>
}

// A bias gradient's shape: 128 tiles of 32 columns (8 groups of 4 f32)
// for 132 SMs. The 16384 rows split into 4 parts (512 CTAs, four an SM, one
// wave); each part writes its partials to the workspace, and in the CTA of
// the last to arrive (an atomic counter) helper y < 8 sums parts y, y + 8,
// ... (one round here: its 4 lanes' loads issued before the sums), then the
// first slice sums the 8 helpers' sums in order and stores.
// PLAN-LABEL: func.func @bias_grad
// PLAN: #fusec.launch<strategy = column, grid = 512, block = 256, vector = 4, chunks = 4, rows = 32, split = 4
// SPLIT: llvm.func @k0_reduce(%{{[^:]*}}: !llvm.ptr<1> {llvm.noalias}, %{{[^:]*}}: !llvm.ptr<1> {llvm.noalias}, %{{[^:]*}}: !llvm.ptr<1> {llvm.noalias}, %{{[^:]*}}: !llvm.ptr<1> {llvm.noalias})
// SPLIT: llvm.fence syncscope("device") acq_rel
// SPLIT: nvvm.barrier0
// SPLIT: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("device") acq_rel
// SPLIT: nvvm.barrier0
// SPLIT: llvm.load volatile
// SPLIT-NOT: llvm.fadd
// SPLIT: llvm.load volatile
// SPLIT-NOT: llvm.fadd
// SPLIT: llvm.load volatile
// SPLIT-NOT: llvm.fadd
// SPLIT: llvm.load volatile
// SPLIT-NOT: llvm.load volatile
// SPLIT: nvvm.barrier0
// SCRATCH-LABEL: func.func @bias_grad
// SCRATCH: fusec.scratch = array<i64: 131072, 512>
func.func @bias_grad(%x: tensor<16384x4096xf32>) -> tensor<4096xf32> {
  %0 = fusec.reduce sum %x dims [0] : tensor<16384x4096xf32> -> tensor<4096xf32>
  return %0 : tensor<4096xf32>
}

// BatchNorm statistics, channels last: a mean and the variance about it.
// One pass takes both as sums shifted by the column's first element,
// S1 = sum(x - s) and S2 = sum((x - s)^2) (f32 for four rows, then f64),
// which combine like sums, so the 25,088 rows split into parts (the variance
// no longer waits for the mean); the last part gives mean = s + S1 / n and
// var = S2 / n - (S1 / n)^2, not below 0. FUSEC_COLUMN_SHIFTED=0: the groups
// of fusec-decompose (two kernels). The warps' partials are summed a lane a
// thread: 128 registers at 8 groups of 8 lanes (255 when every thread summed
// every lane). 32 groups (1 tile of 49 parts) would not fill the SMs: 8.
// PLAN-LABEL: func.func @bn_stats_nhwc
// PLAN: fusec.kernel "k0_cast_reduce"(%arg0) {{.*}}#fusec.launch<strategy = column, grid = 98, block = 256, vector = 8, chunks = 8, rows = 32, split = 49
// PLAN-NOT: fusec.kernel
// PLAN: return
// PAIR-LABEL: llvm.func @k0_cast_reduce(
// PAIR: llvm.fsub %{{.*}}, %[[S:.*]] : f32
// PAIR-NEXT: llvm.fmul %[[D:.*]], %[[D]] : f32
// PAIR: llvm.atomicrmw add
// PAIR: llvm.fdiv %{{.*}}, %{{.*}} : f64
// PAIR: llvm.fdiv %{{.*}}, %{{.*}} : f64
// PAIR: llvm.fmul %[[Q:.*]], %[[Q]] : f64
// PAIR: llvm.fcmp "olt" %{{.*}}, %{{.*}} : f64
// PAIR: llvm.return
// UNSHIFTED-LABEL: func.func @bn_stats_nhwc
// UNSHIFTED: fusec.reshape
// UNSHIFTED-COUNT-2: fusec.kernel
func.func @bn_stats_nhwc(%x: tensor<32x28x28x128xbf16>) -> (tensor<128xf32>, tensor<128xf32>) {
  %xf = fusec.cast %x : tensor<32x28x28x128xbf16> to tensor<32x28x28x128xf32>
  %m = fusec.reduce mean %xf dims [0, 1, 2] : tensor<32x28x28x128xf32> -> tensor<128xf32>
  %mb = fusec.broadcast %m dims [3] : tensor<128xf32> -> tensor<32x28x28x128xf32>
  %d = fusec.sub %xf, %mb : tensor<32x28x28x128xf32>
  %sq = fusec.mul %d, %d : tensor<32x28x28x128xf32>
  %v = fusec.reduce mean %sq dims [0, 1, 2] : tensor<32x28x28x128xf32> -> tensor<128xf32>
  return %m, %v : tensor<128xf32>, tensor<128xf32>
}

// The same at 512 channels: 32 groups of 4 lanes (a warp a row), 4 tiles of
// 49 parts, under 100 registers.
// PLAN-LABEL: func.func @bn_stats_nhwc_wide
// PLAN: fusec.kernel "k0_cast_reduce"(%arg0) {{.*}}#fusec.launch<strategy = column, grid = 196, block = 256, vector = 4, chunks = 8, rows = 8, split = 49
// PLAN-NOT: fusec.kernel
// PLAN: return
func.func @bn_stats_nhwc_wide(%x: tensor<32x28x28x512xbf16>) -> (tensor<512xf32>, tensor<512xf32>) {
  %xf = fusec.cast %x : tensor<32x28x28x512xbf16> to tensor<32x28x28x512xf32>
  %m = fusec.reduce mean %xf dims [0, 1, 2] : tensor<32x28x28x512xf32> -> tensor<512xf32>
  %mb = fusec.broadcast %m dims [3] : tensor<512xf32> -> tensor<32x28x28x512xf32>
  %d = fusec.sub %xf, %mb : tensor<32x28x28x512xf32>
  %sq = fusec.mul %d, %d : tensor<32x28x28x512xf32>
  %v = fusec.reduce mean %sq dims [0, 1, 2] : tensor<32x28x28x512xf32> -> tensor<512xf32>
  return %m, %v : tensor<512xf32>, tensor<512xf32>
}
