// matmul_tcgen05: the Blackwell tensor-core GEMM (accumulators in tensor
// memory), read at the LLVM/NVVM dialect and assembled by ptxas for sm_100a
// with no spill, no stack and no advisory. There is no Blackwell GPU to run
// it on: these checks are what CI can see.
// RUN: fusec-opt %s --fusec-pipeline="target=b200" | FileCheck %s --check-prefix=PLAN
// RUN: fusec-opt %s --fusec-pipeline="target=b200" --fusec-codegen="arch=sm_100a emit=llvm" | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline="target=b200" --fusec-codegen="arch=sm_100a dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=ATTRS < %t/out.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t/gelu_bias.k0_matmul_cast.ptx
// RUN: FileCheck %s --check-prefix=PTX-SPLIT < %t/decode_split.k0_matmul_cast.ptx
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_100a 255 %t/gelu_bias.k0_matmul_cast.ptx %t/linear.k0_matmul.ptx %t/batched_t.k0_matmul.ptx %t/lm_head.k0_matmul.ptx %t/swiglu.k0_matmul_mul.ptx %t/decode_split.k0_matmul_cast.ptx %t/swiglu_decode.k0_matmul_mul.ptx
// The same graphs planned for the H200 take matmul_wgmma:
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=HOPPER
// REQUIRES: ptxas

// gelu(x W + b) in bf16, W row-major [K, N] (MN-major B).
// PLAN-LABEL: func.func @gelu_bias
// PLAN: #fusec.launch<strategy = matmul_tcgen05, grid = 148, block = 256, tile = [128, 256, 64], stages = 4
// HOPPER-LABEL: func.func @gelu_bias
// HOPPER: strategy = matmul_wgmma
// ATTRS-LABEL: func.func @gelu_bias
// ATTRS: fusec.strategy = #fusec<strategy matmul_tcgen05>
// ATTRS-SAME: fusec.tensor_maps = [#fusec.tensor_map<slot = 1, element_bytes = 2, dims = [1024, 2048], strides = [2048], box = [64, 128], swizzle = 128>, #fusec.tensor_map<slot = 2, element_bytes = 2, dims = [4096, 1024], strides = [8192], box = [64, 64], swizzle = 128>]
//
// CHECK-LABEL: llvm.func @k0_matmul_cast(
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 256>, nvvm.minctasm = 1 : i32
// 4 stages x (full, empty), then two accumulator buffers x (full, empty).
// CHECK-COUNT-12: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// Warp 1 allocates 512 TMEM columns: two buffers of 256.
// CHECK: nvvm.tcgen05.alloc %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.tcgen05.relinquish_alloc_permit
// CHECK: nvvm.tcgen05.fence <before>
// CHECK-NEXT: nvvm.barrier0
// CHECK: nvvm.tcgen05.fence <after>
// The producer: TMA into the ring (A: one box, B: four).
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK-COUNT-5: nvvm.cp.async.bulk.tensor.shared.cluster.global
// The MMA thread: waits for a free accumulator buffer, then per k-block
// four MMAs of K = 16 and a commit that frees the stage; a commit after the
// unit's last k-block marks the accumulator full.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.tcgen05.mma {{.*}}kind = #nvvm.tcgen05_mma_kind<f16>
// CHECK-COUNT-3: nvvm.tcgen05.mma
// CHECK: nvvm.tcgen05.commit
// CHECK: nvvm.tcgen05.commit
// The epilogue warpgroup: waits for the accumulator, loads 16 columns of
// its row a time, evaluates the bias and gelu, stores 16 bytes at a time,
// and hands the buffer back.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.tcgen05.ld {{.*}}shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>{{.*}} : vector<16xi32>
// CHECK: nvvm.tcgen05.wait <load>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// CHECK: nvvm.tcgen05.fence <before>
// CHECK: nvvm.mbarrier.arrive
// At the end warp 1 frees TMEM.
// CHECK: nvvm.tcgen05.dealloc
//
// The instruction descriptor: f32 D (1 << 4), bf16 A and B (1 << 7, 1 << 10),
// B transposed (MN-major, 1 << 16), N = 256 (32 << 17), M = 128 (8 << 24):
// 0x08410490 = 138478736.
// PTX: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
// PTX: mov.b32 {{.*}}138478736
// PTX: tcgen05.mma.cta_group::1.kind::f16
// PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
// PTX: tcgen05.ld.sync.aligned.32x32b.x16.b32
// PTX: tcgen05.wait::ld.sync.aligned
// PTX: tcgen05.dealloc.cta_group::1.sync.aligned.b32
func.func @gelu_bias(%x: tensor<2048x1024xbf16>, %w: tensor<1024x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<2048x4096xbf16> {
  %0 = fusec.matmul %x, %w : (tensor<2048x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<2048x4096xbf16>
  %bb = fusec.broadcast %b dims [1] : tensor<4096xbf16> -> tensor<2048x4096xbf16>
  %1 = fusec.add %0, %bb : tensor<2048x4096xbf16>
  %2 = fusec.gelu %1 : tensor<2048x4096xbf16>
  return %2 : tensor<2048x4096xbf16>
}

// A PyTorch Linear: W [N, K] (K-major B, not transposed), f32 out.
// PLAN-LABEL: func.func @linear
// PLAN: strategy = matmul_tcgen05
func.func @linear(%x: tensor<4096x1024xf16>, %w: tensor<3072x1024xf16>) -> tensor<4096x3072xf32> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<4096x1024xf16>, tensor<3072x1024xf16>) -> tensor<4096x3072xf32>
  return %0 : tensor<4096x3072xf32>
}

// Batched, lhs transposed (MN-major A), ragged edges: the guarded epilogue.
// PLAN-LABEL: func.func @batched_t
// PLAN: strategy = matmul_tcgen05
func.func @batched_t(%a: tensor<6x136x200xbf16>, %b: tensor<6x136x264xbf16>) -> tensor<6x200x264xbf16> {
  %0 = fusec.matmul %a, %b {transpose_lhs} : (tensor<6x136x200xbf16>, tensor<6x136x264xbf16>) -> tensor<6x200x264xbf16>
  return %0 : tensor<6x200x264xbf16>
}

// Odd N: each element stored by itself.
// PLAN-LABEL: func.func @lm_head
// PLAN: strategy = matmul_tcgen05
func.func @lm_head(%x: tensor<2048x768xf16>, %w: tensor<50257x768xf16>) -> tensor<2048x50257xf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<2048x768xf16>, tensor<50257x768xf16>) -> tensor<2048x50257xf16>
  return %0 : tensor<2048x50257xf16>
}

// SwiGLU's gate and up projections share x: one GEMM, two accumulators in
// TMEM (2 x 128 columns a buffer, two buffers).
// PLAN-LABEL: func.func @swiglu
// PLAN: strategy = matmul_tcgen05{{.*}}tile = [128, 128, 64]
func.func @swiglu(%x: tensor<1024x512xbf16>, %wg: tensor<1408x512xbf16>, %wu: tensor<1408x512xbf16>) -> tensor<1024x1408xbf16> {
  %g = fusec.matmul %x, %wg {transpose_rhs} : (tensor<1024x512xbf16>, tensor<1408x512xbf16>) -> tensor<1024x1408xbf16>
  %u = fusec.matmul %x, %wu {transpose_rhs} : (tensor<1024x512xbf16>, tensor<1408x512xbf16>) -> tensor<1024x1408xbf16>
  %s = fusec.silu %g : tensor<1024x1408xbf16>
  %y = fusec.mul %s, %u : tensor<1024x1408xbf16>
  return %y : tensor<1024x1408xbf16>
}

// Decode: 16 tokens by a 4096 x 4096 projection with a bias and SiLU. Its
// 32 tiles of 128 x 128 fill a fifth of the SMs: K (64 k-blocks) splits
// into 4 parts of 16, 128 units. Each part's accumulators go from TMEM to
// the workspace (rows inside M only); the buffer is handed back; one
// thread bumps the tile's counter; the last part sums the 4 partials in
// part order and runs the epilogue.
// PLAN-LABEL: func.func @decode_split
// PLAN: strategy = matmul_tcgen05, grid = 128, block = 256, tile = [128, 128, 64], stages = 7, split = 4
// ATTRS-LABEL: func.func @decode_split
// The workspace (32 tiles x 4 parts x 128 x 128 floats) and 32 counters.
// ATTRS: fusec.scratch = array<i64: 8388608, 128>
// CHECK-LABEL: llvm.func @k0_matmul_cast(
// CHECK: nvvm.tcgen05.mma
// CHECK: nvvm.tcgen05.commit
// The epilogue: the partial to the workspace, 16 bytes at a time.
// CHECK: nvvm.tcgen05.ld
// CHECK: nvvm.tcgen05.wait <load>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: nvvm.tcgen05.fence <before>
// CHECK: nvvm.mbarrier.arrive
// CHECK: llvm.fence syncscope("device") acq_rel
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: llvm.atomicrmw add %{{.*}} syncscope("device") acq_rel
// The last part: the 4 parts' 16 columns loaded (volatile), then summed.
// CHECK: llvm.fence syncscope("device") acq_rel
// CHECK-COUNT-16: llvm.load volatile %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: llvm.fadd
// PTX-SPLIT: tcgen05.ld.sync.aligned.32x32b.x16.b32
// PTX-SPLIT: st.global.v2.b64
// PTX-SPLIT: fence.acq_rel.gpu
// PTX-SPLIT: bar.sync {{.*}}1, 128
// PTX-SPLIT: atom.global.add.u32
// PTX-SPLIT: ld.volatile.global.v4.b32
func.func @decode_split(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<16x4096xbf16> {
  %0 = fusec.matmul %x, %w {transpose_rhs} : (tensor<16x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<16x4096xbf16>
  %bb = fusec.broadcast %b dims [1] : tensor<4096xbf16> -> tensor<16x4096xbf16>
  %1 = fusec.add %0, %bb : tensor<16x4096xbf16>
  %2 = fusec.silu %1 : tensor<16x4096xbf16>
  return %2 : tensor<16x4096xbf16>
}

// SwiGLU at decode: 44 tiles of 128 x 128 (two accumulators), K split in 3.
// PLAN-LABEL: func.func @swiglu_decode
// PLAN: strategy = matmul_tcgen05{{.*}}tile = [128, 128, 64]{{.*}}split = 3
func.func @swiglu_decode(%x: tensor<8x2048xbf16>, %wg: tensor<5632x2048xbf16>, %wu: tensor<5632x2048xbf16>) -> tensor<8x5632xbf16> {
  %g = fusec.matmul %x, %wg {transpose_rhs} : (tensor<8x2048xbf16>, tensor<5632x2048xbf16>) -> tensor<8x5632xbf16>
  %u = fusec.matmul %x, %wu {transpose_rhs} : (tensor<8x2048xbf16>, tensor<5632x2048xbf16>) -> tensor<8x5632xbf16>
  %s = fusec.silu %g : tensor<8x5632xbf16>
  %y = fusec.mul %s, %u : tensor<8x5632xbf16>
  return %y : tensor<8x5632xbf16>
}
