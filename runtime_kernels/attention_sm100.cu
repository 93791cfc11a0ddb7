//===- attention_sm100.cu - FlashAttention forward for Blackwell -*- CUDA -*-===//
//
// The attention forward kernel for sm_100a (B200) on the fifth-generation
// tensor core. It is ASSEMBLED by CI (ptxas -arch=sm_100a) but has NOT RUN:
// there is no Blackwell GPU here. It shares with the Hopper kernel
// (attention_sm90.cu) the problem, the tile schedule, the mask, the TMA
// loads into a 128-byte-swizzled ring with mbarriers, the online softmax
// and FlashAttention-4's two ideas (conditional rescaling, exp2 partly on the
// FMA units); what differs is where the matrices live:
//
//  * S = Q Kᵀ and O accumulate in tensor memory (TMEM), one lane per query
//    row, issued by a single thread with tcgen05.mma (M = 128) from shared
//    memory, completion signalled by tcgen05.commit on an mbarrier;
//  * P is written to TMEM by the softmax threads (bf16 pairs) and is the A
//    operand of O += P V straight from TMEM (the .kind::f16 [a_tmem] form);
//  * the softmax warpgroup has one thread per row (no shuffles): it loads
//    its row of S with tcgen05.ld, and rescales its row of O in TMEM only
//    when the running max moves (conditional rescaling), after the PV MMA
//    that reads O is done;
//  * S of block j+1 is issued before the PV MMA of block j, so the tensor
//    core computes it while the softmax of block j runs.
//
// Warps: 0 TMA producer, 1 MMA issuer, 2 TMEM allocator, 3 idle, 4-7 the
// softmax warpgroup (row = thread). One CTA per 128 query rows.
//
// Its host side (sm100::launch, attention_sm100.h) is linked into the
// runtime beside the Hopper kernel; attention::forward takes it on a GPU of
// compute capability 10.x.
//
//===----------------------------------------------------------------------===//

#include "attention_sm100.h"
#include "sm100_ptx.cuh"

#include <cuda.h>

#include <mutex>

namespace fusec::attention::sm100 {

using namespace fusec::ptx;

constexpr int kBlockM = kBlockRows;
constexpr int kThreads = 256;

template <int D> struct Config {
  static constexpr int kBlockN = keyBlockRows(D);
  static constexpr int kStages = 2;
  static constexpr int kColBlocks = D / 64;
  static constexpr int kQBytes = kBlockM * D * 2;
  static constexpr int kKVBytes = kBlockN * D * 2;
  // TMEM columns: S (f32), P (bf16 pairs), O (f32).
  static constexpr int kTmemS = 0, kTmemP = kBlockN, kTmemO = kBlockN + kBlockN / 2;
  static constexpr int kTmemColumns = 512;
  static_assert(kTmemO + D <= kTmemColumns, "S, P and O must fit in TMEM");
  // barQ, fullK[2], fullV[2], emptyK[2], emptyV[2], sFull, sFree, pFull, oDone.
  static constexpr int kBarriers = 1 + 4 * kStages + 4;
  static constexpr int kSmemBytes =
      1024 + kQBytes + 2 * kStages * kKVBytes + 8 * kBarriers + 16;
};

template <int D, bool F16, bool CondRescale, int PolyEvery>
__global__ void __launch_bounds__(kThreads, 1)
    attentionKernel(const __grid_constant__ CUtensorMap tmQ,
                    const __grid_constant__ CUtensorMap tmK,
                    const __grid_constant__ CUtensorMap tmV, const KernelParams p) {
  using C = Config<D>;
  constexpr int BN = C::kBlockN;
  extern __shared__ uint8_t smemRaw[];
  uint8_t *smem = reinterpret_cast<uint8_t *>(
      (reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~static_cast<uintptr_t>(1023));
  uint8_t *sQ = smem;
  uint8_t *sK = sQ + C::kQBytes;
  uint8_t *sV = sK + C::kStages * C::kKVBytes;
  uint64_t *bars = reinterpret_cast<uint64_t *>(sV + C::kStages * C::kKVBytes);
  uint64_t *barQ = bars, *fullK = bars + 1, *fullV = fullK + C::kStages,
           *emptyK = fullV + C::kStages, *emptyV = emptyK + C::kStages;
  uint64_t *sFull = emptyV + C::kStages, *sFree = sFull + 1, *pFull = sFree + 1,
           *oDone = pFull + 1;
  uint32_t *tmemBase = reinterpret_cast<uint32_t *>(oDone + 1);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const TileSchedule tile = scheduleTile(p, kBlockM, BN);
  const int nBlocks = tile.nBlocks;

  if (threadIdx.x == 0) {
    mbarrierInit(barQ, 1);
    for (int s = 0; s < C::kStages; ++s) {
      mbarrierInit(&fullK[s], 1);
      mbarrierInit(&fullV[s], 1);
      mbarrierInit(&emptyK[s], 1); // tcgen05.commit arrives once
      mbarrierInit(&emptyV[s], 1);
    }
    mbarrierInit(sFull, 1);
    mbarrierInit(oDone, 1);
    mbarrierInit(sFree, 128); // every softmax thread
    mbarrierInit(pFull, 128);
    fenceBarrierInit();
  }
  if (warp == 2) {
    tmemAlloc(tmemBase, C::kTmemColumns);
    tmemRelinquishAllocPermit();
  }
  tcgen05FenceBeforeSync();
  __syncthreads();
  tcgen05FenceAfterSync();
  const uint32_t tmem = *tmemBase;

  if (warp == 0 && lane == 0) {
    // TMA producer: Q once, then K and V blocks into the ring.
    mbarrierArriveExpectTx(barQ, C::kQBytes);
    for (int c = 0; c < C::kColBlocks; ++c)
      tmaLoad4d(sQ + c * kBlockM * 128, &tmQ, barQ, c * 64, tile.m0, tile.h, tile.b);
    for (int it = 0; it < nBlocks; ++it) {
      int s = it % C::kStages;
      if (it >= C::kStages)
        mbarrierWait(&emptyK[s], ((it / C::kStages) - 1) & 1);
      mbarrierArriveExpectTx(&fullK[s], C::kKVBytes);
      for (int c = 0; c < C::kColBlocks; ++c)
        tmaLoad4d(sK + s * C::kKVBytes + c * BN * 128, &tmK, &fullK[s], c * 64, it * BN,
                  tile.hKv, tile.b);
      if (it >= C::kStages)
        mbarrierWait(&emptyV[s], ((it / C::kStages) - 1) & 1);
      mbarrierArriveExpectTx(&fullV[s], C::kKVBytes);
      for (int c = 0; c < C::kColBlocks; ++c)
        tmaLoad4d(sV + s * C::kKVBytes + c * BN * 128, &tmV, &fullV[s], c * 64, it * BN,
                  tile.hKv, tile.b);
    }
  } else if (warp == 1 && lane == 0 && nBlocks > 0) {
    // MMA issuer.
    constexpr uint32_t idescS = ummaInstrDescriptor(F16, false, kBlockM, BN);
    constexpr uint32_t idescO = ummaInstrDescriptor(F16, true, kBlockM, D);
    auto issueS = [&](int it) {
      const int s = it % C::kStages;
      mbarrierWait(&fullK[s], (it / C::kStages) & 1);
      tcgen05FenceAfterSync();
      for (int kk = 0; kk < D / 16; ++kk) {
        const int c = kk / 4, within = kk % 4;
        ummaSS(tmem + C::kTmemS,
               ummaDescriptor(sQ + c * kBlockM * 128 + within * 32, 16, 1024),
               ummaDescriptor(sK + s * C::kKVBytes + c * BN * 128 + within * 32, 16, 1024),
               idescS, kk > 0);
      }
      ummaCommit(sFull);
      ummaCommit(&emptyK[s]);
    };
    mbarrierWait(barQ, 0);
    issueS(0);
    for (int it = 0; it < nBlocks; ++it) {
      const int s = it % C::kStages;
      if (it + 1 < nBlocks) {
        mbarrierWait(sFree, it & 1); // the softmax has read S(it)
        issueS(it + 1);
      }
      mbarrierWait(pFull, it & 1);
      mbarrierWait(&fullV[s], (it / C::kStages) & 1);
      tcgen05FenceAfterSync();
      for (int kk = 0; kk < BN / 16; ++kk)
        ummaTS(tmem + C::kTmemO, tmem + C::kTmemP + kk * 8,
               ummaDescriptor(sV + s * C::kKVBytes + kk * 16 * 128, BN * 128, 1024), idescO,
               it > 0 || kk > 0);
      ummaCommit(&emptyV[s]);
      ummaCommit(oDone);
    }
  } else if (warp >= 4) {
    // Softmax: thread r owns query row r (TMEM lane r).
    const int r = threadIdx.x - 128;
    const int row = tile.m0 + r;
    const uint32_t laneBase = static_cast<uint32_t>((warp - 4) * 32) << 16;
    const float sl2 = p.scaleLog2;
    constexpr float kNegInf = -INFINITY;
    float rowMax = kNegInf, rowSum = 0.0f;
    for (int it = 0; it < nBlocks; ++it) {
      const int n0 = it * BN;
      mbarrierWait(sFull, it & 1);
      tcgen05FenceAfterSync();
      float sv[BN];
      #pragma unroll
      for (int c = 0; c < BN / 32; ++c) {
        uint32_t regs[32];
        tmemLoad32x32b_x32(tmem + laneBase + C::kTmemS + c * 32, regs);
        tmemWaitLoad();
        #pragma unroll
        for (int i = 0; i < 32; ++i)
          sv[c * 32 + i] = __uint_as_float(regs[i]);
      }
      tcgen05FenceBeforeSync();
      mbarrierArrive(sFree);

      float blockMax = kNegInf;
      #pragma unroll
      for (int j = 0; j < BN; ++j) {
        if (masked(p, row, n0 + j) || hiddenKey(p, tile.bh / p.hq, n0 + j))
          sv[j] = kNegInf;
        blockMax = fmaxf(blockMax, sv[j]);
      }
      float factor = 1.0f;
      bool need;
      if constexpr (CondRescale)
        need = blockMax != kNegInf &&
               (rowMax == kNegInf || (blockMax - rowMax) * sl2 > kRescaleThreshold);
      else
        need = blockMax > rowMax;
      if (need) {
        float m = fmaxf(rowMax, blockMax);
        factor = rowMax == kNegInf ? 1.0f : ex2((rowMax - m) * sl2);
        rowMax = m;
      }
      const float negMax = rowMax == kNegInf ? 0.0f : -rowMax * sl2;
      uint32_t packed[BN / 2];
      float partial = 0.0f;
      #pragma unroll
      for (int j = 0; j < BN; j += 2) {
        float x0 = fmaf(sv[j], sl2, negMax), x1 = fmaf(sv[j + 1], sl2, negMax);
        bool poly = PolyEvery > 0 && (j / 2) % (PolyEvery > 0 ? PolyEvery : 1) == 0;
        float e0 = poly ? ex2Poly(x0) : ex2(x0), e1 = poly ? ex2Poly(x1) : ex2(x1);
        partial += e0 + e1;
        packed[j / 2] = Elem<F16>::pack(e0, e1);
      }
      rowSum = rowSum * factor + partial;

      // P(it) and O's rescale wait for the PV MMA of block it - 1.
      if (it > 0) {
        mbarrierWait(oDone, (it - 1) & 1);
        tcgen05FenceAfterSync();
      }
      #pragma unroll
      for (int c = 0; c < BN / 64; ++c) {
        uint32_t chunk[32];
        #pragma unroll
        for (int i = 0; i < 32; ++i)
          chunk[i] = packed[c * 32 + i];
        tmemStore32x32b_x32(tmem + laneBase + C::kTmemP + c * 32, chunk);
      }
      // Warp-uniform: rescale O only if a row of this warp moved its max.
      if (it > 0 && __any_sync(0xffffffff, need && factor != 1.0f)) {
        #pragma unroll
        for (int c = 0; c < D / 32; ++c) {
          uint32_t chunk[32];
          tmemLoad32x32b_x32(tmem + laneBase + C::kTmemO + c * 32, chunk);
          tmemWaitLoad();
          #pragma unroll
          for (int i = 0; i < 32; ++i)
            chunk[i] = __float_as_uint(__uint_as_float(chunk[i]) * factor);
          tmemStore32x32b_x32(tmem + laneBase + C::kTmemO + c * 32, chunk);
        }
      }
      tmemWaitStore();
      tcgen05FenceBeforeSync();
      mbarrierArrive(pFull);
    }

    // O / l and the logsumexp, row by row.
    using T = typename Elem<F16>::T;
    float l = rowSum;
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    if (nBlocks > 0) {
      mbarrierWait(oDone, (nBlocks - 1) & 1);
      tcgen05FenceAfterSync();
    }
    T *out = static_cast<T *>(p.o) + rowOffset(p.os, tile.b, tile.h, row);
    #pragma unroll
    for (int c = 0; c < D / 32; ++c) {
      uint32_t chunk[32];
      if (nBlocks > 0) {
        tmemLoad32x32b_x32(tmem + laneBase + C::kTmemO + c * 32, chunk);
        tmemWaitLoad();
      } else {
        #pragma unroll
        for (int i = 0; i < 32; ++i)
          chunk[i] = 0;
      }
      if (row < p.sq) {
        uint32_t *dst = reinterpret_cast<uint32_t *>(out + c * 32);
        #pragma unroll
        for (int i = 0; i < 16; ++i)
          dst[i] = Elem<F16>::pack(__uint_as_float(chunk[2 * i]) * inv,
                                   __uint_as_float(chunk[2 * i + 1]) * inv);
      }
    }
    if (row < p.sq && p.lse)
      p.lse[static_cast<size_t>(tile.bh) * p.sq + row] =
          l > 0.0f ? (rowMax * sl2 + log2f(l)) * 0.69314718055994531f : kNegInf;
  }

  tcgen05FenceBeforeSync();
  __syncthreads();
  if (warp == 2)
    tmemDealloc(tmem, C::kTmemColumns);
}

// The kernels CI assembles for sm_100a: every head dim and element type,
// with and without each FlashAttention-4 idea.
#define FUSEC_SM100_INSTANTIATE(D, F16)                                                    \
  template __global__ void attentionKernel<D, F16, false, 0>(                             \
      const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,           \
      const __grid_constant__ CUtensorMap, const KernelParams);                           \
  template __global__ void attentionKernel<D, F16, true, 4>(                              \
      const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,           \
      const __grid_constant__ CUtensorMap, const KernelParams);
FUSEC_SM100_INSTANTIATE(64, false)
FUSEC_SM100_INSTANTIATE(128, false)
FUSEC_SM100_INSTANTIATE(256, false)
FUSEC_SM100_INSTANTIATE(64, true)
FUSEC_SM100_INSTANTIATE(128, true)
FUSEC_SM100_INSTANTIATE(256, true)

namespace {

template <int D, bool F16, bool CondRescale, int PolyEvery>
cudaError_t launchOne(const CUtensorMap &q, const CUtensorMap &k, const CUtensorMap &v,
                      const KernelParams &kp, cudaStream_t stream) {
  using C = Config<D>;
  auto kernel = attentionKernel<D, F16, CondRescale, PolyEvery>;
  static std::once_flag once;
  static cudaError_t attrError = cudaSuccess;
  std::call_once(once, [&] {
    attrError = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     C::kSmemBytes);
  });
  if (attrError != cudaSuccess)
    return attrError;
  kernel<<<dim3(kp.mBlocks, kp.bhCount), kThreads, C::kSmemBytes, stream>>>(q, k, v, kp);
  return cudaGetLastError();
}

template <int D, bool F16>
cudaError_t launchDim(bool fa4, const CUtensorMap &q, const CUtensorMap &k, const CUtensorMap &v,
                      const KernelParams &kp, cudaStream_t stream) {
  return fa4 ? launchOne<D, F16, true, 4>(q, k, v, kp, stream)
             : launchOne<D, F16, false, 0>(q, k, v, kp, stream);
}

} // namespace

cudaError_t launch(int headDim, bool f16, bool fa4, const CUtensorMap &q, const CUtensorMap &k,
                   const CUtensorMap &v, const KernelParams &kp, cudaStream_t stream) {
  switch (headDim) {
  case 64:
    return f16 ? launchDim<64, true>(fa4, q, k, v, kp, stream)
               : launchDim<64, false>(fa4, q, k, v, kp, stream);
  case 128:
    return f16 ? launchDim<128, true>(fa4, q, k, v, kp, stream)
               : launchDim<128, false>(fa4, q, k, v, kp, stream);
  case 256:
    return f16 ? launchDim<256, true>(fa4, q, k, v, kp, stream)
               : launchDim<256, false>(fa4, q, k, v, kp, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace fusec::attention::sm100
