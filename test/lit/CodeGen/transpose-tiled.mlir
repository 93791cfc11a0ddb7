// transpose_tiled: a transpose that moves the last dim goes through 64 x 64
// tiles of shared memory (rows padded to 65), read along the argument's last
// dim and written along the output's, a thread `vector` consecutive elements
// on either side (up to 16 bytes of the argument, halved until it divides
// both sides; booleans one); a transpose that keeps the last dim, or a tiny
// side, stays on the plain movement walk.
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/matrix.k0_transpose.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/scaled_cast.k1_cast_mul.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/bools.k0_transpose.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/matrix_bf16.k0_transpose.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: FileCheck %s --check-prefix=WIDE < %t/matrix_bf16.k0_transpose.ptx
// RUN: env FUSEC_TRANSPOSE_VECTOR=1 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=ONE
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=matrix_bf16 %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=matrix %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=scaled_cast %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=batched %s | FileCheck %s --check-prefix=SAME
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SAME: PASS

// PLAN-LABEL: func.func @matrix
// PLAN: strategy = transpose_tiled, grid = 6, block = 256, vector = 2,
// PLAN-LABEL: func.func @matrix_bf16
// PLAN: strategy = transpose_tiled, grid = 12, block = 256, vector = 8,
// PLAN-LABEL: func.func @scaled_cast
// PLAN: fusec.kernel "k1_cast_mul"(%arg1, %arg0){{.*}}strategy = transpose_tiled, grid = 4, block = 256, vector = 2,
// PLAN-NOT: fusec.kernel
// PLAN-LABEL: func.func @batched
// PLAN: strategy = transpose_tiled, grid = 6, block = 256, smem
// PLAN-LABEL: func.func @bools
// PLAN: strategy = transpose_tiled, grid = 1, block = 256, smem
// PLAN-LABEL: func.func @keeps_last
// PLAN: strategy = movement
// PLAN-LABEL: func.func @narrow
// PLAN: strategy = movement
// PLAN-LABEL: func.func @read_twice
// PLAN: "k0_transpose"{{.*}}strategy = transpose_tiled
// PLAN: "k1_add"{{.*}}strategy = elementwise

// A [100, 130] f32 transpose: 2 x 3 tiles (ragged on both sides); 130 is
// not a multiple of 4, so 2 lanes a thread: 8 loads of two a thread before
// the 16 stores to shared memory, a barrier, two reads of it for each
// guarded store of two, a barrier before the next tile.
// CHECK: llvm.mlir.global internal @__fusec_tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4160 x f32>
// CHECK-LABEL: llvm.func @k0_transpose(
// CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<1> -> vector<2xf32>
// CHECK-COUNT-16: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-COUNT-2: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<1>
// CHECK: nvvm.barrier0
// ONE-LABEL: func.func @matrix
// ONE: strategy = transpose_tiled, grid = 6, block = 256, smem
// ONE-LABEL: func.func @matrix_bf16
// ONE: strategy = transpose_tiled, grid = 12, block = 256, smem
func.func @matrix(%x: tensor<130x100xf32>) -> tensor<100x130xf32> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<130x100xf32> -> tensor<100x130xf32>
  return %0 : tensor<100x130xf32>
}

// bf16, [136, 200] -> [200, 136] (4 x 3 tiles, ragged): 8 lanes a thread, one
// 16-byte load a pass (2 passes) and one 16-byte store a pass.
// WIDE-COUNT-2: ld.global{{.*}}.v4.u32
// WIDE-NOT: ld.global
// WIDE: bar.sync
// WIDE-COUNT-2: st.global.v4.b32
// WIDE-NOT: st.global
func.func @matrix_bf16(%x: tensor<136x200xbf16>) -> tensor<200x136xbf16> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<136x200xbf16> -> tensor<200x136xbf16>
  return %0 : tensor<200x136xbf16>
}

// bf16 in, scaled, f32 out: one kernel (the transpose folds into its
// consumer, which then runs as transpose_tiled); the other operand (full
// shape) is read at the output's index, the cast and the mul join the
// tile's second phase.
func.func @scaled_cast(%x: tensor<70x90xbf16>, %s: tensor<90x70xf32>) -> tensor<90x70xf32> {
  %t = fusec.transpose %x perm [1, 0] : tensor<70x90xbf16> -> tensor<90x70xbf16>
  %c = fusec.cast %t : tensor<90x70xbf16> to tensor<90x70xf32>
  %y = fusec.mul %c, %s : tensor<90x70xf32>
  return %y : tensor<90x70xf32>
}

// [B, H, S, D] -> [B, D, S, H]: the tile plane is (D, H); B and S are
// tile positions.
func.func @batched(%x: tensor<2x20x3x33xf16>) -> tensor<2x33x3x20xf16> {
  %0 = fusec.transpose %x perm [0, 3, 2, 1] : tensor<2x20x3x33xf16> -> tensor<2x33x3x20xf16>
  return %0 : tensor<2x33x3x20xf16>
}

// Booleans cross shared memory as i32.
// CHECK-LABEL: llvm.func @k0_transpose(
// CHECK: llvm.zext %{{.*}} : i1 to i32
// CHECK: llvm.trunc %{{.*}} : i32 to i1
func.func @bools(%x: tensor<40x50xi1>) -> tensor<50x40xi1> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<40x50xi1> -> tensor<50x40xi1>
  return %0 : tensor<50x40xi1>
}

func.func @keeps_last(%x: tensor<4x64x8x32xbf16>) -> tensor<4x8x64x32xbf16> {
  %0 = fusec.transpose %x perm [0, 2, 1, 3] : tensor<4x64x8x32xbf16> -> tensor<4x8x64x32xbf16>
  return %0 : tensor<4x8x64x32xbf16>
}

func.func @narrow(%x: tensor<4096x2xf32>) -> tensor<2x4096xf32> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<4096x2xf32> -> tensor<2x4096xf32>
  return %0 : tensor<2x4096xf32>
}

// The argument is also read directly: fusion keeps the transpose a kernel
// of its own (tiled), then the add; a kernel written with both reads in it
// is not tiled.
// PLAN-LABEL: func.func @read_twice_kernel
// PLAN: strategy = movement
func.func @read_twice(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
  %1 = fusec.add %0, %x : tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}

func.func @read_twice_kernel(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = fusec.kernel "k0_transpose_add"(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
  ^bb0(%a: tensor<64x64xf32>):
    %t = fusec.transpose %a perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %s = fusec.add %t, %a : tensor<64x64xf32>
    fusec.yield %s : tensor<64x64xf32>
  }
  return %0 : tensor<64x64xf32>
}
