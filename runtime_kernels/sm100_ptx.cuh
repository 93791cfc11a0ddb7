//===- sm100_ptx.cuh - The Blackwell PTX of the runtime kernels -*- CUDA -*-===//
//
// tcgen05 (the fifth-generation tensor core: tensor memory, TMEM) for
// sm_100a: TMEM allocation, the MMA with operands in shared memory or A in
// TMEM, its commit to an mbarrier, TMEM loads and stores, and the fences
// that order them with thread barriers. mbarriers, TMA and exp2 are shared
// with Hopper (sm90_ptx.cuh). Assembled by CI (ptxas -arch=sm_100a); no
// Blackwell GPU has run it yet.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_KERNELS_SM100_PTX_CUH
#define FUSEC_RUNTIME_KERNELS_SM100_PTX_CUH

#include "sm90_ptx.cuh"

namespace fusec::ptx {

//===-- TMEM allocation ---------------------------------------------------===//

/// One warp allocates `columns` (a power of two, 32-512) TMEM columns of
/// all 128 lanes; the TMEM address lands in shared memory at `dst`.
__device__ __forceinline__ void tmemAlloc(uint32_t *dst, uint32_t columns) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
               ::"r"(smemAddress(dst)), "r"(columns) : "memory");
}
__device__ __forceinline__ void tmemRelinquishAllocPermit() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void tmemDealloc(uint32_t taddr, uint32_t columns) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;"
               ::"r"(taddr), "r"(columns) : "memory");
}

/// TMEM addresses: lane in the high 16 bits, column in the low 16.
__device__ __forceinline__ uint32_t tmemAddress(uint32_t base, uint32_t lane, uint32_t column) {
  return encoding::tmemAddress(base, lane, column);
}

//===-- fences ------------------------------------------------------------===//

__device__ __forceinline__ void tcgen05FenceBeforeSync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void tcgen05FenceAfterSync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void tmemWaitLoad() {
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void tmemWaitStore() {
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
}

//===-- MMA ---------------------------------------------------------------===//

/// A shared-memory matrix descriptor for tcgen05 in the 128-byte swizzle:
/// the Hopper fields (start, LBO, SBO, as in matrixDescriptor), the
/// descriptor version 1 at bit 46, and the layout SWIZZLE_128B (2) in bits
/// 61-63 (fusec/Support/TensorCoreEncoding.h, tested on the CPU).
__device__ __forceinline__ uint64_t ummaDescriptor(const void *p, uint32_t lbo, uint32_t sbo) {
  return encoding::tcgen05Descriptor(smemAddress(p), lbo, sbo);
}

/// The instruction descriptor of kind::f16 with an f32 accumulator: A and B
/// bf16 (or f16), A K-major, B K-major or MN-major, M x N.
__host__ __device__ constexpr uint32_t ummaInstrDescriptor(bool f16, bool bMnMajor, int m,
                                                           int n) {
  return encoding::tcgen05F16InstrDescriptor(!f16, /*transposeA=*/false, bMnMajor, m, n);
}

/// D[tmem] (+)= A[smem] * B[smem]; issued by one thread.
__device__ __forceinline__ void ummaSS(uint32_t dTmem, uint64_t aDesc, uint64_t bDesc,
                                       uint32_t idesc, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
               "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}"
               ::"r"(dTmem), "l"(aDesc), "l"(bDesc), "r"(idesc), "r"(accumulate)
               : "memory");
}

/// D[tmem] (+)= A[tmem] * B[smem]; issued by one thread.
__device__ __forceinline__ void ummaTS(uint32_t dTmem, uint32_t aTmem, uint64_t bDesc,
                                       uint32_t idesc, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
               "tcgen05.mma.cta_group::1.kind::f16 [%0], [%1], %2, %3, p;\n}"
               ::"r"(dTmem), "r"(aTmem), "l"(bDesc), "r"(idesc), "r"(accumulate)
               : "memory");
}

/// Arrives once on `bar` when every MMA this thread issued before completes.
__device__ __forceinline__ void ummaCommit(uint64_t *bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
               ::"r"(smemAddress(bar)) : "memory");
}

//===-- TMEM loads and stores ---------------------------------------------===//

#include "tcgen05_sm100.inc"

} // namespace fusec::ptx

#endif // FUSEC_RUNTIME_KERNELS_SM100_PTX_CUH
