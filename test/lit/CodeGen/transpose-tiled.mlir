// transpose_tiled: a transpose that moves the last dim goes through 64 x 64
// tiles of shared memory (rows padded to 65), read along the argument's last
// dim and written along the output's, a thread `vector` consecutive elements
// on either side (16 bytes of 1- and 4-byte elements, halved until it
// divides both sides; 2- and 8-byte elements and booleans one); a transpose
// that keeps the last dim, or a tiny side, stays on the plain movement walk.
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/matrix.k0_transpose.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/scaled_cast.k1_cast_mul.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/bools.k0_transpose.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/matrix_wide.k0_transpose.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/matrix_fp8.k0_transpose.ptx -o %t/e.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/narrow_heads.k0_transpose.ptx -o %t/f.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: FileCheck %s --check-prefix=WIDE < %t/matrix_wide.k0_transpose.ptx
// RUN: env FUSEC_TRANSPOSE_NARROW=0 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=SQUARE
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=narrow_heads %s | FileCheck %s --check-prefix=SAME
// RUN: env FUSEC_TRANSPOSE_NARROW=0 fusec-run --verify-pipeline=fusec-pipeline --function=narrow_heads %s | FileCheck %s --check-prefix=SAME
// RUN: env FUSEC_TRANSPOSE_VECTOR=1 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=ONE
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=matrix_wide %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=matrix_fp8 %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=matrix %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=scaled_cast %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=batched %s | FileCheck %s --check-prefix=SAME
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SAME: PASS

// PLAN-LABEL: func.func @matrix
// PLAN: strategy = transpose_tiled, grid = 6, block = 256, vector = 2,
// PLAN-LABEL: func.func @matrix_wide
// PLAN: strategy = transpose_tiled, grid = 12, block = 256, vector = 4,
// PLAN-LABEL: func.func @matrix_fp8
// PLAN: strategy = transpose_tiled, grid = 8, block = 256, vector = 16,
// PLAN-LABEL: func.func @narrow_heads
// PLAN: strategy = transpose_tiled, grid = 192, block = 256, smem = 16512,
// PLAN-LABEL: func.func @matrix_bf16
// PLAN: strategy = transpose_tiled, grid = 12, block = 256, smem
// SQUARE-LABEL: func.func @narrow_heads
// SQUARE: strategy = transpose_tiled, grid = 768, block = 256, smem = 16640,
// PLAN-LABEL: func.func @scaled_cast
// PLAN: fusec.kernel "k1_cast_mul"(%arg1, %arg0){{.*}}strategy = transpose_tiled, grid = 4, block = 256, smem
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
// ONE-LABEL: func.func @matrix_wide
// ONE: strategy = transpose_tiled, grid = 12, block = 256, smem
func.func @matrix(%x: tensor<130x100xf32>) -> tensor<100x130xf32> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<130x100xf32> -> tensor<100x130xf32>
  return %0 : tensor<100x130xf32>
}

// f32, [136, 200] -> [200, 136] (4 x 3 tiles, ragged): 4 lanes a thread, one
// 16-byte load a pass (4 passes) and one 16-byte store a pass.
// WIDE-COUNT-4: ld.global{{.*}}.v4.u32
// WIDE-NOT: ld.global
// WIDE: bar.sync
// WIDE-COUNT-4: st.global.v4.b32
// WIDE-NOT: st.global
func.func @matrix_wide(%x: tensor<136x200xf32>) -> tensor<200x136xf32> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<136x200xf32> -> tensor<200x136xf32>
  return %0 : tensor<200x136xf32>
}

// fp8: 16 lanes (one pass of 16 bytes).
func.func @matrix_fp8(%x: tensor<128x256xf8E4M3FN>) -> tensor<256x128xf8E4M3FN> {
  %0 = fusec.transpose %x perm [1, 0] : tensor<128x256xf8E4M3FN> -> tensor<256x128xf8E4M3FN>
  return %0 : tensor<256x128xf8E4M3FN>
}

// [B, S, H, D] -> [B, D, S, H] with 16 heads: the output's last dim is 16.
// The tile is 16 wide and 256 long (one tile a (B, S) position; rows
// padded by 2, since a warp writes two rows of 16), not 64 x 64 with three
// quarters of its threads past the edge (4 tiles a position), which
// FUSEC_TRANSPOSE_NARROW=0 keeps (SQUARE).
func.func @narrow_heads(%x: tensor<2x96x16x256xbf16>) -> tensor<2x256x96x16xbf16> {
  %0 = fusec.transpose %x perm [0, 3, 1, 2] : tensor<2x96x16x256xbf16> -> tensor<2x256x96x16xbf16>
  return %0 : tensor<2x256x96x16xbf16>
}

// bf16: an element a thread (vectors of 8 measured slower).
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
