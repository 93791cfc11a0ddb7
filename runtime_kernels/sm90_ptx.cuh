//===- sm90_ptx.cuh - The PTX the hand-written kernels use -----*- CUDA -*-===//
//
// One small header for every instruction the runtime kernels reach by
// inline PTX: mbarriers, TMA tensor loads, wgmma (descriptors, fence,
// commit, wait, the mma itself), setmaxnreg, and ex2 on the SFU or by a
// polynomial on the FMA units. runtime_kernels/test_sm90_ptx.cu tests each
// on the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_KERNELS_SM90_PTX_CUH
#define FUSEC_RUNTIME_KERNELS_SM90_PTX_CUH

#include "fusec/Support/TensorCoreEncoding.h"

#include <cstdint>
#include <cuda.h>

namespace fusec::ptx {

__device__ __forceinline__ uint32_t smemAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

//===-- mbarrier ----------------------------------------------------------===//

__device__ __forceinline__ void mbarrierInit(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddress(bar)), "r"(count));
}

/// Makes barrier initialization visible to the async proxy (TMA).
__device__ __forceinline__ void fenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbarrierArrive(uint64_t *bar) {
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}"
               ::"r"(smemAddress(bar)) : "memory");
}

/// Arrives and announces `bytes` of transactions (TMA) for this phase.
__device__ __forceinline__ void mbarrierArriveExpectTx(uint64_t *bar, uint32_t bytes) {
  asm volatile("{\n.reg .b64 state;\n"
               "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}"
               ::"r"(smemAddress(bar)), "r"(bytes) : "memory");
}

/// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrierWait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n.reg .pred done;\n"
               "WAIT_%=:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra WAIT_%=;\n}"
               ::"r"(smemAddress(bar)), "r"(parity) : "memory");
}

/// Makes this thread's generic-proxy writes to shared memory (st.shared)
/// visible to the async proxy (wgmma and TMA read through it).
__device__ __forceinline__ void fenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

//===-- TMA ---------------------------------------------------------------===//

__device__ __forceinline__ void prefetchTensorMap(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

/// Loads the box at (c0, c1, c2) of a 3-D tensor map into shared memory;
/// completion is counted in bytes on `bar`. Out-of-bounds elements are zero.
__device__ __forceinline__ void tmaLoad3d(void *dst, const CUtensorMap *map, uint64_t *bar,
                                          int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];"
               ::"r"(smemAddress(dst)), "l"(reinterpret_cast<uint64_t>(map)),
               "r"(smemAddress(bar)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

/// tmaLoad3d for a 4-D tensor map, at (c0, c1, c2, c3).
__device__ __forceinline__ void tmaLoad4d(void *dst, const CUtensorMap *map, uint64_t *bar,
                                          int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6}], [%2];"
               ::"r"(smemAddress(dst)), "l"(reinterpret_cast<uint64_t>(map)),
               "r"(smemAddress(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

//===-- wgmma -------------------------------------------------------------===//

/// A shared-memory matrix descriptor in the 128-byte swizzle (the layout
/// TMA writes with CU_TENSOR_MAP_SWIZZLE_128B: rows of 128 bytes, 8-row
/// atoms of 1024 bytes). K-major operands: `sbo` steps between 8-row atoms,
/// `lbo` is unused. MN-major (transposed) operands: `lbo` steps between
/// 64-element column blocks, `sbo` between 8-row atoms.
/// The bit layout is fusec/Support/TensorCoreEncoding.h's (tested on the CPU).
__device__ __forceinline__ uint64_t matrixDescriptor(const void *p, uint32_t lbo, uint32_t sbo) {
  return encoding::wgmmaDescriptor(smemAddress(p), lbo, sbo);
}

/// Orders register writes (accumulators, A fragments) before wgmma reads.
__device__ __forceinline__ void wgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/// Pins registers in place: reads of accumulators stay after a wgmma wait,
/// and writes of wgmma inputs (an O rescale, a P fragment) stay before the
/// wgmmas are issued (ptxas serializes wgmmas whose input registers are
/// written between issue and wait).
template <int N> __device__ __forceinline__ void fenceRegisters(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+f"(d[i])::"memory");
}

template <int M, int N>
__device__ __forceinline__ void fenceRegisters(uint32_t (&r)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int j = 0; j < N; ++j)
      asm volatile("" : "+r"(r[i][j])::"memory");
}

template <int N, bool F16>
__device__ void wgmma_ss(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int scale_d);
template <int N, bool F16>
__device__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                         int scale_d);
#include "wgmma_sm90.inc"

//===-- registers and named barriers --------------------------------------===//

template <int Regs> __device__ __forceinline__ void setMaxRegsInc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
}
template <int Regs> __device__ __forceinline__ void setMaxRegsDec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
}

/// bar.sync / bar.arrive on a named barrier for `threads` threads.
__device__ __forceinline__ void namedBarrierSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void namedBarrierArrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

//===-- exp2 --------------------------------------------------------------===//

/// 2^x on the SFU (MUFU.EX2).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// 2^x on the FMA and integer units (FlashAttention-4's emulation): round x
/// to the nearest integer j with the 1.5 * 2^23 trick, a cubic for 2^f on
/// [-0.5, 0.5] (relative error 1e-4, below bf16's 4e-3), and j added to the
/// exponent field. x below -126 gives 0 (as ex2.approx.ftz does).
__device__ __forceinline__ float ex2Poly(float x) {
  x = fmaxf(x, -127.0f);
  const float shifter = 12582912.0f; // 1.5 * 2^23
  float t = x + shifter;
  float j = t - shifter;
  float f = x - j;
  float p = fmaf(fmaf(fmaf(0.0558382829f, f, 0.242639479f), f, 0.693136734f), f, 0.999924557f);
  int bits = __float_as_int(p) + ((__float_as_int(t) - 0x4B400000) << 23);
  return x <= -127.0f ? 0.0f : __int_as_float(bits);
}

} // namespace fusec::ptx

#endif // FUSEC_RUNTIME_KERNELS_SM90_PTX_CUH
