// matmul_wgmma: the Hopper tensor-core GEMM, read at the LLVM/NVVM dialect
// and assembled by ptxas with no spill and no wgmma serialization warning.
// FUSEC_WGMMA_PINGPONG=0 keeps the cooperative schedule these checks
// describe (matmul-wgmma-pingpong.mlir covers ping-pong).
// RUN: env FUSEC_WGMMA_PINGPONG=0 fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: env FUSEC_WGMMA_PINGPONG=0 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FUSEC_WGMMA_PINGPONG=0 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=ATTRS < %t/out.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t/gelu_bias.k0_matmul_cast.ptx
// RUN: FileCheck %s --check-prefix=ODD < %t/lm_head.k0_matmul.ptx
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/gelu_bias.k0_matmul_cast.ptx %t/linear.k0_matmul.ptx %t/batched_t.k0_matmul.ptx %t/lm_head.k0_matmul.ptx %t/qkv_heads.k0_matmul.ptx %t/residual_f32.k0_matmul_add.ptx
// The escape switch: FUSEC_TMA_STORE=0 stores pairs from the registers
// (and plans no buffers for it).
// RUN: env FUSEC_TMA_STORE=0 FUSEC_WGMMA_PINGPONG=0 fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s --check-prefix=NOTMA
// REQUIRES: ptxas

// gelu(x W + b) in bf16, W row-major [K, N] (MN-major B).
// PLAN-LABEL: func.func @gelu_bias
// 4 stages of 48 KB and the TMA store's 32 KB: two 8 KB pieces (64 rows x
// 64 columns) per consumer warpgroup.
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 256, 64], stages = 4, smem = 230480, regs = 232>
// ATTRS-LABEL: func.func @gelu_bias
// ATTRS: fusec.shared = 230480
// ATTRS-SAME: fusec.strategy = #fusec<strategy matmul_wgmma>
// The result (slot 3) is the third tensor map: boxes of 64 columns x 64 rows.
// ATTRS-SAME: fusec.tensor_maps = [#fusec.tensor_map<slot = 1, element_bytes = 2, dims = [1024, 2048], strides = [2048], box = [64, 128], swizzle = 128>, #fusec.tensor_map<slot = 2, element_bytes = 2, dims = [4096, 1024], strides = [8192], box = [64, 64], swizzle = 128>, #fusec.tensor_map<slot = 3, element_bytes = 2, dims = [4096, 2048], strides = [8192], box = [64, 64], swizzle = 128>]
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
// The epilogue on the accumulator, a 64-column group at a time: the
// warpgroup's leader waits until the stores that last read the group's
// piece are done, the warpgroup syncs, evaluates bias and gelu (erf) and
// writes bf16 pairs into the piece (128-byte swizzle); then a proxy fence,
// the warpgroup's barrier, and the leader stores the piece by TMA, one bulk
// group. Later groups wait for all but the newest group (two pieces).
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.barrier id
// CHECK: llvm.extractvalue
// CHECK: llvm.fadd
// CHECK: llvm.store {{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta {{.*}} box[{{.*}}, {{.*}}] : !llvm.ptr, <3>
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK: nvvm.cp.async.bulk.wait_group 1 {read}
// No global store from the registers.
// CHECK-NOT: vector<2xbf16>, !llvm.ptr<1>
// Before the CTA ends, its last stores have read their pieces.
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: llvm.br
// CHECK: llvm.return
//
// NOTMA-LABEL: llvm.func @k0_matmul_cast(
// NOTMA-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// NOTMA: llvm.store {{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
// NOTMA-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// NOTMA: llvm.return
//
// PTX: .maxntid 384
// PTX: setmaxnreg.dec.sync.aligned.u32 40
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: setmaxnreg.inc.sync.aligned.u32 232
// PTX: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PTX: wgmma.wait_group.sync.aligned 1
// PTX: wgmma.wait_group.sync.aligned 0
// PTX: cp.async.bulk.wait_group.read 0;
// PTX: st.shared.b32
// PTX: fence.proxy.async.shared::cta;
// PTX: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// PTX: cp.async.bulk.commit_group;
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
// f32 pairs: 8 bytes into one of a group's two 32-column pieces.
// CHECK: llvm.store {{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta
func.func @linear(%x: tensor<4096x1024xf16>, %w: tensor<3072x1024xf16>) -> tensor<4096x3072xf32> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<4096x1024xf16>, tensor<3072x1024xf16>) -> tensor<4096x3072xf32>
  return %0 : tensor<4096x3072xf32>
}

// Batched, lhs transposed (MN-major A: two boxes of 64 M x 64 K), ragged M
// and N (TMA clips the stores at the edges): 3-D tensor maps with the batch
// outer, the result's too.
// PLAN-LABEL: func.func @batched_t
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 36, block = 384, tile = [128, 128, 64], stages = 6
// ATTRS-LABEL: func.func @batched_t
// ATTRS: fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [200, 136, 6], strides = [400, 54400], box = [64, 64, 1], swizzle = 128>, #fusec.tensor_map<slot = 1, element_bytes = 2, dims = [264, 136, 6], strides = [528, 71808], box = [64, 64, 1], swizzle = 128>, #fusec.tensor_map<slot = 2, element_bytes = 2, dims = [264, 200, 6], strides = [528, 105600], box = [64, 64, 1], swizzle = 128>]
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

// A QKV projection written head-major: Q, K and V are slices of the
// [B S, 3 H D] result, reshaped to [B, S, H, D] and transposed to
// [B, H, S, D]. Each is stored by TMA through a 4-D map (d, h, s, b): a
// piece of 64 columns is one head's 64 d by 64 rows of s; K's and V's maps
// start 768 and 1536 columns in (a piece outside an output's slice is not
// stored). Three 8 KB pieces a warpgroup: one set, 48 KB, 4 stages.
// PLAN-LABEL: func.func @qkv_heads
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 192, 64], stages = 4, smem = 214096
// ATTRS-LABEL: func.func @qkv_heads
// ATTRS: #fusec.tensor_map<slot = 2, element_bytes = 2, dims = [64, 12, 1024, 4], strides = [131072, 128, 1572864], box = [64, 1, 64, 1], swizzle = 128>, #fusec.tensor_map<slot = 3, element_bytes = 2, dims = [64, 12, 1024, 4], strides = [131072, 128, 1572864], box = [64, 1, 64, 1], swizzle = 128>, #fusec.tensor_map<slot = 4, element_bytes = 2, dims = [64, 12, 1024, 4], strides = [131072, 128, 1572864], box = [64, 1, 64, 1], swizzle = 128>]
// CHECK-LABEL: llvm.func @k0_matmul(
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta {{.*}} box[{{.*}}, {{.*}}, {{.*}}, {{.*}}] : !llvm.ptr, <3>
// CHECK-NOT: llvm.store {{.*}} !llvm.ptr<1>
// CHECK: llvm.return
func.func @qkv_heads(%x: tensor<4096x768xf16>, %w: tensor<768x2304xf16>) -> (tensor<4x12x1024x64xf16>, tensor<4x12x1024x64xf16>, tensor<4x12x1024x64xf16>) {
  %0 = fusec.matmul %x, %w : (tensor<4096x768xf16>, tensor<768x2304xf16>) -> tensor<4096x2304xf16>
  %r = fusec.reshape %0 : tensor<4096x2304xf16> -> tensor<4x1024x2304xf16>
  %q = fusec.slice %r offsets [0, 0, 0] strides [1, 1, 1] : tensor<4x1024x2304xf16> -> tensor<4x1024x768xf16>
  %k = fusec.slice %r offsets [0, 0, 768] strides [1, 1, 1] : tensor<4x1024x2304xf16> -> tensor<4x1024x768xf16>
  %v = fusec.slice %r offsets [0, 0, 1536] strides [1, 1, 1] : tensor<4x1024x2304xf16> -> tensor<4x1024x768xf16>
  %q4 = fusec.reshape %q : tensor<4x1024x768xf16> -> tensor<4x1024x12x64xf16>
  %k4 = fusec.reshape %k : tensor<4x1024x768xf16> -> tensor<4x1024x12x64xf16>
  %v4 = fusec.reshape %v : tensor<4x1024x768xf16> -> tensor<4x1024x12x64xf16>
  %qt = fusec.transpose %q4 perm [0, 2, 1, 3] : tensor<4x1024x12x64xf16> -> tensor<4x12x1024x64xf16>
  %kt = fusec.transpose %k4 perm [0, 2, 1, 3] : tensor<4x1024x12x64xf16> -> tensor<4x12x1024x64xf16>
  %vt = fusec.transpose %v4 perm [0, 2, 1, 3] : tensor<4x1024x12x64xf16> -> tensor<4x12x1024x64xf16>
  return %qt, %kt, %vt : tensor<4x12x1024x64xf16>, tensor<4x12x1024x64xf16>, tensor<4x12x1024x64xf16>
}

// A residual kept in f16 and f32 (GPT-2's second projection, where
// LayerNorm reads the f32; written here as the kernel fusion forms): one
// 8 KB and one 16 KB piece set a warpgroup (48 KB), both stored by TMA.
// PLAN-LABEL: func.func @residual_f32
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 128, block = 384, tile = [128, 192, 64], stages = 4, smem = 214096
// ATTRS-LABEL: func.func @residual_f32
// ATTRS: #fusec.tensor_map<slot = 3, element_bytes = 2, dims = [768, 4096], strides = [1536], box = [64, 64], swizzle = 128>, #fusec.tensor_map<slot = 4, element_bytes = 4, dims = [768, 4096], strides = [3072], box = [32, 64], swizzle = 128>]
// CHECK-LABEL: llvm.func @k0_matmul_add(
// CHECK: llvm.store {{.*}} : vector<2xf16>, !llvm.ptr<3>
// CHECK: llvm.store {{.*}} : vector<2xf32>, !llvm.ptr<3>
// CHECK-COUNT-3: nvvm.cp.async.bulk.tensor.global.shared.cta
func.func @residual_f32(%h: tensor<4096x3072xf16>, %w: tensor<3072x768xf16>, %r: tensor<4096x768xf16>) -> (tensor<4096x768xf16>, tensor<4096x768xf32>) {
  %0:2 = fusec.kernel "k0_matmul_add"(%h, %w, %r) {fusec.matmul_epilogue} : (tensor<4096x3072xf16>, tensor<3072x768xf16>, tensor<4096x768xf16>) -> (tensor<4096x768xf16>, tensor<4096x768xf32>) {
  ^bb0(%a: tensor<4096x3072xf16>, %b: tensor<3072x768xf16>, %c: tensor<4096x768xf16>):
    %1 = fusec.matmul %a, %b : (tensor<4096x3072xf16>, tensor<3072x768xf16>) -> tensor<4096x768xf16>
    %2 = fusec.add %c, %1 : tensor<4096x768xf16>
    %3 = fusec.cast %2 : tensor<4096x768xf16> to tensor<4096x768xf32>
    fusec.yield %2, %3 : tensor<4096x768xf16>, tensor<4096x768xf32>
  }
  return %0#0, %0#1 : tensor<4096x768xf16>, tensor<4096x768xf32>
}
