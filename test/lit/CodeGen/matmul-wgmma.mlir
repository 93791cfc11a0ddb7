// matmul_wgmma: the Hopper tensor-core GEMM, read at the LLVM/NVVM dialect
// and assembled by ptxas with no spill and no wgmma serialization warning.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=ATTRS < %t/out.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t/gelu_bias.k0_matmul_cast.ptx
// RUN: FileCheck %s --check-prefix=ODD < %t/lm_head.k0_matmul.ptx
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/gelu_bias.k0_matmul_cast.ptx %t/linear.k0_matmul.ptx %t/batched_t.k0_matmul.ptx %t/lm_head.k0_matmul.ptx
// REQUIRES: ptxas

// gelu(x W + b) in bf16, W row-major [K, N] (MN-major B).
// PLAN-LABEL: func.func @gelu_bias
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 256, 64], stages = 4, smem = 197712, regs = 232>
// ATTRS-LABEL: func.func @gelu_bias
// ATTRS: fusec.shared = 197712
// ATTRS-SAME: fusec.strategy = #fusec<strategy matmul_wgmma>
// ATTRS-SAME: fusec.tensor_maps = [#fusec.tensor_map<slot = 1, element_bytes = 2, dims = [1024, 2048], strides = [2048], box = [64, 128], swizzle = 128>, #fusec.tensor_map<slot = 2, element_bytes = 2, dims = [4096, 1024], strides = [8192], box = [64, 64], swizzle = 128>]
//
// CHECK: llvm.mlir.global external @__fusec_dynamic_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @k0_matmul_cast(
// The operands and result, then the tensor-map table.
// CHECK-SAME: %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %[[TABLE:.*]]: !llvm.ptr<1> {llvm.noalias})
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 384>, nvvm.minctasm = 1 : i32
// 4 stages: a "full" barrier for one arrival (and the TMA bytes) and an
// "empty" one for the 256 consumer threads, each.
// CHECK-COUNT-4: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier0
// The producer warpgroup gives registers back, then one thread loads.
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx
// A: one box of 64 K x 128 rows; B: four boxes of 64 columns x 64 K.
// CHECK-COUNT-5: nvvm.cp.async.bulk.tensor.shared.cluster.global
// The consumers take registers and run the wgmmas: 64 x 256 x 16, bf16,
// A K-major ("row"), B MN-major ("row": the transpose bit).
// CHECK: nvvm.setmaxregister increase 232
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// In the k loop: one group stays in flight; the previous stage is released.
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 1;"
// CHECK: nvvm.mbarrier.arrive
// CHECK: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 0;"
// A fence keeps ptxas from hoisting the bias loads into the wgmma pipeline
// (which would serialize the wgmmas: ptxas_clean fails on C7514).
// CHECK: nvvm.memory.barrier <cta>
// The epilogue on the accumulator: bias, gelu (erf), bf16 pairs stored.
// CHECK: llvm.extractvalue
// CHECK: llvm.fadd
// CHECK: llvm.store {{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
//
// PTX: .maxntid 384
// PTX: setmaxnreg.dec.sync.aligned.u32 40
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: setmaxnreg.inc.sync.aligned.u32 232
// PTX: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PTX: wgmma.wait_group.sync.aligned 1
// PTX: wgmma.wait_group.sync.aligned 0
func.func @gelu_bias(%x: tensor<2048x1024xbf16>, %w: tensor<1024x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<2048x4096xbf16> {
  %0 = fusec.matmul %x, %w : (tensor<2048x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<2048x4096xbf16>
  %bb = fusec.broadcast %b dims [1] : tensor<4096xbf16> -> tensor<2048x4096xbf16>
  %1 = fusec.add %0, %bb : tensor<2048x4096xbf16>
  %2 = fusec.gelu %1 : tensor<2048x4096xbf16>
  return %2 : tensor<2048x4096xbf16>
}

// A PyTorch Linear: W [N, K] (transpose_rhs, K-major B: one box of 64 K x
// 256 rows); f16 in, f32 out.
// PLAN-LABEL: func.func @linear
// PLAN: #fusec.launch<strategy = matmul_wgmma
// CHECK-LABEL: llvm.func @k0_matmul(
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.wgmma.mma_async {{.*}} A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK: llvm.store {{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<1>
func.func @linear(%x: tensor<4096x1024xf16>, %w: tensor<3072x1024xf16>) -> tensor<4096x3072xf32> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<4096x1024xf16>, tensor<3072x1024xf16>) -> tensor<4096x3072xf32>
  return %0 : tensor<4096x3072xf32>
}

// Batched, lhs transposed (MN-major A: two boxes of 64 M x 64 K), odd N
// (each element stored by itself): 3-D tensor maps with the batch outer.
// PLAN-LABEL: func.func @batched_t
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 36, block = 384, tile = [128, 128, 64], stages = 7
// ATTRS-LABEL: func.func @batched_t
// ATTRS: fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [200, 136, 6], strides = [400, 54400], box = [64, 64, 1], swizzle = 128>, #fusec.tensor_map<slot = 1, element_bytes = 2, dims = [264, 136, 6], strides = [528, 71808], box = [64, 64, 1], swizzle = 128>]
// CHECK-LABEL: llvm.func @k0_matmul(
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[{{.*}}, {{.*}}, {{.*}}]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
func.func @batched_t(%a: tensor<6x136x200xbf16>, %b: tensor<6x136x264xbf16>) -> tensor<6x200x264xbf16> {
  %0 = fusec.matmul %a, %b {transpose_lhs} : (tensor<6x136x200xbf16>, tensor<6x136x264xbf16>) -> tensor<6x200x264xbf16>
  return %0 : tensor<6x200x264xbf16>
}

// GPT-2's LM head: N = 50257 is odd, so a pair of columns is not aligned.
// The epilogue stages each warp's 8 rows x 64 columns in shared memory
// (one element at a time, rows 144 bytes apart), then stores them a row
// per warp instruction: lane l writes column l (and l + 32) of each row.
// PLAN-LABEL: func.func @lm_head
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 256, 64], stages = 4, smem = 206928
// CHECK-LABEL: llvm.func @k0_matmul(
// CHECK: nvvm.memory.barrier <cta>
// CHECK: llvm.store {{.*}} {alignment = 2 : i64} : f16, !llvm.ptr<3>
// CHECK: nvvm.bar.warp.sync
// CHECK: llvm.load {{.*}} {alignment = 2 : i64} : !llvm.ptr<3> -> i16
// CHECK: llvm.store {{.*}} {alignment = 2 : i64} : i16, !llvm.ptr<1>
// CHECK: nvvm.bar.warp.sync
// ODD: membar.cta
// ODD: st.shared.b16
// ODD: bar.warp.sync
// ODD: ld.shared.b16
// ODD: st.global.b16
func.func @lm_head(%x: tensor<2048x768xf16>, %w: tensor<50257x768xf16>) -> tensor<2048x50257xf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<2048x768xf16>, tensor<50257x768xf16>) -> tensor<2048x50257xf16>
  return %0 : tensor<2048x50257xf16>
}

// Rows that are not a multiple of 16 bytes cannot be TMA boxes: the SIMT
// fallback takes them.
// PLAN-LABEL: func.func @unaligned
// PLAN: #fusec.launch<strategy = matmul_simt
func.func @unaligned(%a: tensor<33x17xbf16>, %b: tensor<17x17xbf16>) -> tensor<33x17xbf16> {
  %0 = fusec.matmul %a, %b : (tensor<33x17xbf16>, tensor<17x17xbf16>) -> tensor<33x17xbf16>
  return %0 : tensor<33x17xbf16>
}
