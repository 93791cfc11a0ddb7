// matmul_wgmma's swapped (decode) tile: with at most 32 rows (tokens), the
// rhs (the weights) is wgmma's A operand, 64 of its columns a consumer
// warpgroup, and the tokens, rounded up to 8, are wgmma's N. A stage holds
// 64 weight columns and the real tokens, so up to 16 stages fit, and the
// tile (64 or 128 columns) and split-K fill the SMs in one wave. The escape
// switch FUSEC_WGMMA_SWAP=0 keeps the 64-row tile; =1 forces the swap
// wherever the operands allow it (32-token tiles past 32 rows).
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: env FUSEC_WGMMA_SWAP=0 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=OFF
// RUN: env FUSEC_WGMMA_SWAP=1 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=FORCED
// RUN: env FUSEC_WGMMA_N=128 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=WIDE
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: env FUSEC_WGMMA_SWAP=1 fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s --check-prefix=DUAL
// RUN: rm -rf %t && mkdir -p %t %t/wide
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/decode.k0_matmul.ptx %t/llama_up.k0_matmul.ptx %t/weights_mn.k0_matmul_add.ptx %t/residual.k0_matmul_add.ptx
// RUN: env FUSEC_WGMMA_N=128 FUSEC_WGMMA_SWAP=1 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/wide" -o %t/wide/out.mlir
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/wide/decode.k0_matmul.ptx %t/wide/residual.k0_matmul_add.ptx %t/wide/swiglu.k0_matmul_mul.ptx
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=residual | FileCheck %s --check-prefix=SAME
// REQUIRES: ptxas

// 16 tokens by 4096 x 4096 K-major weights ([N, K]): 64 tiles of 64
// columns, split 2 along K, fill 128 of the 132 SMs in one wave.
// PLAN-LABEL: func.func @decode
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 128, block = 256, tile = [16, 64, 64], stages = 16, split = 2
// OFF-LABEL: func.func @decode
// OFF: #fusec.launch<strategy = matmul_wgmma, grid = 128, block = 256, tile = [64, 128, 64], stages = 8, split = 4
// WIDE-LABEL: func.func @decode
// WIDE: #fusec.launch<strategy = matmul_wgmma, grid = 128, block = 384, tile = [16, 128, 64], stages = {{[0-9]+}}, split = 4
// CHECK-LABEL: llvm.func @k0_matmul(
// CHECK-SAME: nvvm.maxntid = array<i32: 256>
// CHECK-NOT: nvvm.setmaxregister
// The producer prefetches both operands' tensor maps.
// CHECK: nvvm.prefetch tensormap
// CHECK: nvvm.prefetch tensormap
// The weights (K-major) are A, the tokens (K-major) B, 16 of them.
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 16, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// Split-K: the partials of 8 floats a thread, the tile's counter, and
// the last part's loads of both parts before their sums.
// CHECK: llvm.atomicrmw add
// CHECK: llvm.load volatile {{.*}} vector<4xf32>
// CHECK-NOT: llvm.fadd
// CHECK: llvm.load volatile {{.*}} vector<4xf32>
// CHECK-NOT: llvm.fadd
// CHECK: llvm.load volatile {{.*}} vector<4xf32>
// CHECK-NOT: llvm.fadd
// CHECK: llvm.load volatile {{.*}} vector<4xf32>
// CHECK: llvm.fadd
// Each element stored by itself (its neighbours are the next token's).
// CHECK: llvm.store {{.*}} : bf16, !llvm.ptr<1>
// CHECK-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: llvm.return
func.func @decode(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<16x4096xbf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<16x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<16x4096xbf16>
  return %0 : tensor<16x4096xbf16>
}

// Llama's up projection at 16 tokens: 64-column tiles (172) would take
// two waves, 128-column ones (86, two consumer warpgroups) take one,
// unsplit.
// PLAN-LABEL: func.func @llama_up
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 86, block = 384, tile = [16, 128, 64], stages = 12,
// OFF-LABEL: func.func @llama_up
// OFF: #fusec.launch<strategy = matmul_wgmma, grid = 86, block = 256, tile = [64, 128, 64], stages = 8,
// CHECK-LABEL: llvm.func @k0_matmul(
// CHECK-SAME: nvvm.maxntid = array<i32: 384>
// CHECK: nvvm.setmaxregister  increase 232
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 16, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NOT: llvm.atomicrmw
// CHECK: llvm.return
func.func @llama_up(%x: tensor<16x4096xbf16>, %w: tensor<11008x4096xbf16>) -> tensor<16x11008xbf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<16x4096xbf16>, tensor<11008x4096xbf16>) -> tensor<16x11008xbf16>
  return %0 : tensor<16x11008xbf16>
}

// MN-major weights ([K, N]) and 5 tokens: A is read transposed, N = 8.
// PLAN-LABEL: func.func @weights_mn
// PLAN: tile = [8, 64, 64]
// CHECK-LABEL: llvm.func @k0_matmul_add(
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 8, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <col>]
func.func @weights_mn(%x: tensor<5x264xbf16>, %w: tensor<264x520xbf16>, %b: tensor<520xbf16>) -> tensor<5x520xbf16> {
  %0 = fusec.matmul %x, %w : (tensor<5x264xbf16>, tensor<264x520xbf16>) -> tensor<5x520xbf16>
  %bb = fusec.broadcast %b dims [1] : tensor<520xbf16> -> tensor<5x520xbf16>
  %1 = fusec.add %0, %bb : tensor<5x520xbf16>
  return %1 : tensor<5x520xbf16>
}

// 48 tokens keep the 64-row tile unless forced (two 32-token tiles).
// PLAN-LABEL: func.func @residual
// PLAN: tile = [64, 64, 64]
// FORCED-LABEL: func.func @residual
// FORCED: tile = [32, 64, 64]
// SAME: PASS: fusec-pipeline{target=h200} keeps the graph's meaning
func.func @residual(%x: tensor<48x520xf16>, %w: tensor<200x520xf16>, %r: tensor<48x200xf16>) -> tensor<48x200xf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<48x520xf16>, tensor<200x520xf16>) -> tensor<48x200xf16>
  %1 = fusec.add %0, %r : tensor<48x200xf16>
  return %1 : tensor<48x200xf16>
}

// Two rhs sharing the lhs (SwiGLU's gate and up: a dual GEMM) swap only
// when forced (measured slower): then each rhs is the A of its own wgmma,
// both read the same tokens (B), each into its accumulator.
// PLAN-LABEL: func.func @swiglu
// PLAN: tile = [64, 64, 64]
// FORCED-LABEL: func.func @swiglu
// FORCED: tile = [16, 64, 64], stages = 12, split = 2
// DUAL-LABEL: llvm.func @k0_matmul_mul(
// DUAL: nvvm.wgmma.mma_async %{{[0-9]+}}, %[[B:[0-9]+]], %{{.*}} <m = 64, n = 16, k = 16>
// DUAL-NEXT: nvvm.wgmma.mma_async %{{[0-9]+}}, %[[B]], %{{.*}} <m = 64, n = 16, k = 16>
func.func @swiglu(%x: tensor<16x512xbf16>, %g: tensor<512x512xbf16>, %u: tensor<512x512xbf16>) -> tensor<16x512xbf16> {
  %0 = fusec.matmul %x, %g : (tensor<16x512xbf16>, tensor<512x512xbf16>) -> tensor<16x512xbf16>
  %1 = fusec.matmul %x, %u : (tensor<16x512xbf16>, tensor<512x512xbf16>) -> tensor<16x512xbf16>
  %2 = fusec.sigmoid %0 : tensor<16x512xbf16>
  %3 = fusec.mul %0, %2 : tensor<16x512xbf16>
  %4 = fusec.mul %3, %1 : tensor<16x512xbf16>
  return %4 : tensor<16x512xbf16>
}
