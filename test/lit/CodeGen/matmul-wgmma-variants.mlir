// matmul_wgmma tile variants: the narrow (decode) tile, split-K, the dual
// GEMM that shares one lhs (SwiGLU) and 192-column tiles, each assembled by
// ptxas without spills.
// FUSEC_WGMMA_PINGPONG=0 and FUSEC_WGMMA_SWAP=0 keep the cooperative
// schedule and the unswapped decode tile these checks describe
// (matmul-wgmma-pingpong.mlir and matmul-wgmma-swap.mlir cover the others).
// RUN: env FUSEC_WGMMA_PINGPONG=0 FUSEC_WGMMA_SWAP=0 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: env FUSEC_WGMMA_PINGPONG=0 FUSEC_WGMMA_SWAP=0 fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FUSEC_WGMMA_PINGPONG=0 FUSEC_WGMMA_SWAP=0 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=ATTRS < %t/out.mlir
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/decode.k0_matmul.ptx %t/split_k.k0_matmul.ptx %t/swiglu.k0_matmul_mul.ptx %t/qkv.k0_matmul_add.ptx %t/proj_odd.k0_matmul_add.ptx %t/decode_short_k.k0_matmul_add.ptx
// REQUIRES: ptxas

// Decode: 16 rows. A 64-row tile with one consumer warpgroup (256 threads,
// no register reallocation), 128 columns so that 86 blocks fill the SMs.
// PLAN-LABEL: func.func @decode
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 86, block = 256, tile = [64, 128, 64], stages = 8
// CHECK-LABEL: llvm.func @k0_matmul(
// CHECK-SAME: nvvm.maxntid = array<i32: 256>
// CHECK-NOT: nvvm.setmaxregister
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NOT: llvm.atomicrmw
// CHECK: llvm.return
func.func @decode(%x: tensor<16x4096xbf16>, %w: tensor<11008x4096xbf16>) -> tensor<16x11008xbf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<16x4096xbf16>, tensor<11008x4096xbf16>) -> tensor<16x11008xbf16>
  return %0 : tensor<16x11008xbf16>
}

// 16 tiles of 128 x 128 over a K of 8192 would need split-K to fill the
// SMs: 32 tiles of 128 x 64 instead, K split four ways. Each split writes its
// f32 partial tile into a scratch workspace, and the last split to arrive at
// the tile's counter (an acq_rel atomic, fenced) sums the partials in split
// order and runs the epilogue.
// PLAN-LABEL: func.func @split_k
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 128, block = 384, tile = [128, 64, 64], stages = 8, split = 4
// ATTRS-LABEL: func.func @split_k
// ATTRS: fusec.scratch = array<i64: 4194304, 128>
// CHECK-LABEL: llvm.func @k0_matmul(
// The operands, the result, the workspace and the counters, the table.
// CHECK-SAME: %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias})
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: llvm.fence syncscope("device") acq_rel
// CHECK: llvm.atomicrmw add {{.*}} syncscope("device") acq_rel : !llvm.ptr<1>, i32
// CHECK: llvm.fence syncscope("device") acq_rel
func.func @split_k(%a: tensor<512x8192xbf16>, %b: tensor<8192x512xbf16>) -> tensor<512x512xbf16> {
  %0 = fusec.matmul %a, %b : (tensor<512x8192xbf16>, tensor<8192x512xbf16>) -> tensor<512x512xbf16>
  return %0 : tensor<512x512xbf16>
}

// silu(x Wg^T) * (x Wu^T): one kernel, two accumulators. Each k step loads
// one A box and both B boxes, and every A descriptor feeds two wgmmas.
// PLAN-LABEL: func.func @swiglu
// PLAN-COUNT-1: fusec.kernel
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 128, 64], stages = 4
// PLAN-NOT: fusec.kernel
// CHECK-LABEL: llvm.func @k0_matmul_mul(
// CHECK-COUNT-3: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: %[[G:.*]] = nvvm.wgmma.mma_async %[[A:.*]], %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>]
// CHECK-NEXT: nvvm.wgmma.mma_async %[[A]], %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>]
// CHECK-NEXT: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[G]], <m = 64, n = 128, k = 16>, D[<f32>, <one>]
func.func @swiglu(%x: tensor<4096x2048xbf16>, %wg: tensor<5632x2048xbf16>, %wu: tensor<5632x2048xbf16>) -> tensor<4096x5632xbf16> {
  %g = fusec.matmul %x, %wg {transpose_rhs} : (tensor<4096x2048xbf16>, tensor<5632x2048xbf16>) -> tensor<4096x5632xbf16>
  %u = fusec.matmul %x, %wu {transpose_rhs} : (tensor<4096x2048xbf16>, tensor<5632x2048xbf16>) -> tensor<4096x5632xbf16>
  %s = fusec.silu %g : tensor<4096x5632xbf16>
  %y = fusec.mul %s, %u : tensor<4096x5632xbf16>
  return %y : tensor<4096x5632xbf16>
}

// GPT-2's QKV projection (4096 x 2304, K 768, a bias): 288 tiles of 256
// columns are 2.2 waves on 132 SMs, 384 of 192 are 2.9; waves x columns
// picks 192 (wgmma n = 192, three 64-column boxes of B a stage).
// PLAN-LABEL: func.func @qkv
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 192, 64], stages = 4
// CHECK-LABEL: llvm.func @k0_matmul_add(
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 192, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
func.func @qkv(%x: tensor<4096x768xf16>, %w: tensor<2304x768xf16>, %b: tensor<2304xf16>) -> tensor<4096x2304xf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<4096x768xf16>, tensor<2304x768xf16>) -> tensor<4096x2304xf16>
  %bb = fusec.broadcast %b dims [1] : tensor<2304xf16> -> tensor<4096x2304xf16>
  %1 = fusec.add %0, %bb : tensor<4096x2304xf16>
  return %1 : tensor<4096x2304xf16>
}

// 192 columns with an odd N, a residual and an f32 output: the staged
// epilogue's 32-column pieces (six a tile).
// PLAN-LABEL: func.func @proj_odd
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 128, block = 384, tile = [128, 192, 64], stages = 5
// CHECK-LABEL: llvm.func @k0_matmul_add(
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 192, k = 16>
// CHECK: llvm.store {{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<3>
// CHECK: nvvm.bar.warp.sync
// CHECK: llvm.load {{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK: llvm.store {{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
func.func @proj_odd(%x: tensor<4096x3072xbf16>, %w: tensor<767x3072xbf16>, %r: tensor<4096x767xf32>) -> tensor<4096x767xf32> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<4096x3072xbf16>, tensor<767x3072xbf16>) -> tensor<4096x767xf32>
  %1 = fusec.add %0, %r : tensor<4096x767xf32>
  return %1 : tensor<4096x767xf32>
}

// Decode with a short K (GPT-2's QKV at 32 tokens, K = 768): 64-column
// tiles, 36 of them each split in 3 along K, so 108 CTAs stream the
// weights; at K = 4096 (@decode above) the 128-column tile stays.
// PLAN-LABEL: func.func @decode_short_k
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 108, block = 256, tile = [64, 64, 64], stages = 8, split = 3
// CHECK-LABEL: llvm.func @k0_matmul_add(
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
func.func @decode_short_k(%x: tensor<32x768xbf16>, %w: tensor<2304x768xbf16>, %b: tensor<2304xbf16>) -> tensor<32x2304xbf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<32x768xbf16>, tensor<2304x768xbf16>) -> tensor<32x2304xbf16>
  %bb = fusec.broadcast %b dims [1] : tensor<2304xbf16> -> tensor<32x2304xbf16>
  %1 = fusec.add %0, %bb : tensor<32x2304xbf16>
  return %1 : tensor<32x2304xbf16>
}
