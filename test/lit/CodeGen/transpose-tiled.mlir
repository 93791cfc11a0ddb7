// transpose_tiled: a transpose that moves the last dim goes through 64 x 64
// tiles of shared memory (rows padded to 65), read along the argument's last
// dim and written along the output's; a transpose that keeps the last dim,
// or a tiny side, stays on the plain movement walk.
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/matrix.k0_transpose.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/scaled_cast.k1_cast_mul.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/bools.k0_transpose.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=matrix %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=scaled_cast %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=batched %s | FileCheck %s --check-prefix=SAME
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SAME: PASS

// PLAN-LABEL: func.func @matrix
// PLAN: strategy = transpose_tiled, grid = 6, block = 256
// PLAN-LABEL: func.func @scaled_cast
// PLAN: fusec.kernel "k1_cast_mul"(%arg1, %arg0){{.*}}strategy = transpose_tiled
// PLAN-NOT: fusec.kernel
// PLAN-LABEL: func.func @batched
// PLAN: strategy = transpose_tiled
// PLAN-LABEL: func.func @bools
// PLAN: strategy = transpose_tiled
// PLAN-LABEL: func.func @keeps_last
// PLAN: strategy = movement
// PLAN-LABEL: func.func @narrow
// PLAN: strategy = movement
// PLAN-LABEL: func.func @read_twice
// PLAN: "k0_transpose"{{.*}}strategy = transpose_tiled
// PLAN: "k1_add"{{.*}}strategy = elementwise

// A [100, 130] f32 transpose: 2 x 3 tiles (ragged on both sides); 16 loads a
// thread before the stores to shared memory, a barrier, 16 reads of it and
// guarded stores, a barrier before the next tile.
// CHECK: llvm.mlir.global internal @__fusec_tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4160 x f32>
// CHECK-LABEL: llvm.func @k0_transpose(
// CHECK-COUNT-16: llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-COUNT-16: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<1>
// CHECK: nvvm.barrier0
func.func @matrix(%x: tensor<130x100xf32>) -> tensor<100x130xf32> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<130x100xf32> -> tensor<100x130xf32>
  return %0 : tensor<100x130xf32>
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
