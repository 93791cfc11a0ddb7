//===- attention_decode.cuh - Attention for a few query rows ----*- CUDA -*-===//
//
// Attention for few query rows (decode: one new token a sequence) without
// tensor cores. The tiled kernel computes a 128-row tile however few rows
// there are, and its CTAs (384 threads, a ring of TMA stages, one a
// multiprocessor) cost microseconds each to start: at Sq = 1 it takes 17 us
// for 384 heads that need almost no work. Here a CTA of four warps takes one
// query row of one head; each warp takes every fourth key:
//
// - lane l holds D / 32 consecutive elements of q (scaled to log2 units),
//   of the key row and of its share of O;
// - a key's score is the lanes' partial dot products summed by shuffles;
// - each warp keeps its own running max, sum and O (online softmax), and
//   the four are combined through shared memory at the end.
//
// Causal masking, the key padding mask, grouped-query heads, O and the
// logsumexp are as in the tiled kernel (attention_common.cuh).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_KERNELS_ATTENTION_DECODE_CUH
#define FUSEC_RUNTIME_KERNELS_ATTENTION_DECODE_CUH

#include "attention_common.cuh"

namespace fusec::attention {

constexpr int kDecodeWarps = 4;

/// Loads N consecutive 16-bit elements at `src` (aligned to 2 N bytes) as
/// floats.
template <bool F16, int N>
__device__ __forceinline__ void loadRow(const void *src, float (&out)[N]) {
  using T = typename Elem<F16>::T;
  static_assert(N % 2 == 0, "pairs");
  const T *s = static_cast<const T *>(src);
  if constexpr (N == 8) {
    uint4 raw = *reinterpret_cast<const uint4 *>(s);
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      T pair[2];
      memcpy(pair, &w[i], 4);
      out[2 * i] = static_cast<float>(pair[0]);
      out[2 * i + 1] = static_cast<float>(pair[1]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      uint32_t w = reinterpret_cast<const uint32_t *>(s)[i];
      T pair[2];
      memcpy(pair, &w, 4);
      out[2 * i] = static_cast<float>(pair[0]);
      out[2 * i + 1] = static_cast<float>(pair[1]);
    }
  }
}

/// Grid (Sq, B * Hq), kDecodeWarps * 32 threads.
template <int D, bool F16>
__global__ void __launch_bounds__(kDecodeWarps * 32)
    decodeKernel(const void *q, const void *k, const void *v, const KernelParams p) {
  gridDependencyStart();
  constexpr int kPer = D / 32;
  const int row = blockIdx.x, bh = blockIdx.y;
  const int b = bh / p.hq, h = bh % p.hq;
  const int hKv = h / p.groups;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  float qv[kPer];
  loadRow<F16>(static_cast<const uint16_t *>(q) + rowOffset(p.qs, b, h, row) + lane * kPer, qv);
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    qv[i] *= p.scaleLog2;
  int nEnd = p.skv;
  if (p.causal)
    nEnd = min(nEnd, row + p.offset + 1);
  const uint16_t *kRows = static_cast<const uint16_t *>(k) + rowOffset(p.ks, b, hKv, 0);
  const uint16_t *vRows = static_cast<const uint16_t *>(v) + rowOffset(p.vs, b, hKv, 0);
  const uint8_t *keys = p.keyMask ? p.keyMask + static_cast<size_t>(b) * p.skv : nullptr;

  float m = -INFINITY, l = 0.0f, o[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    o[i] = 0.0f;
  for (int j = warp; j < nEnd; j += kDecodeWarps) {
    if (keys && !__ldg(keys + j)) // the same key for the whole warp
      continue;
    float kv[kPer], vv[kPer];
    loadRow<F16>(kRows + j * p.ks.seq + lane * kPer, kv);
    loadRow<F16>(vRows + j * p.vs.seq + lane * kPer, vv);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      s = fmaf(qv[i], kv[i], s);
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
      s += __shfl_xor_sync(0xffffffff, s, off);
    const float mNew = fmaxf(m, s);
    const float corr = m == -INFINITY ? 0.0f : exp2f(m - mNew);
    const float pj = exp2f(s - mNew);
    l = l * corr + pj;
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      o[i] = fmaf(o[i], corr, pj * vv[i]);
    m = mNew;
  }

  // The warps' partial results, combined by warp 0.
  __shared__ float sMax[kDecodeWarps], sSum[kDecodeWarps], sO[kDecodeWarps][D];
  if (lane == 0) {
    sMax[warp] = m;
    sSum[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    sO[warp][lane * kPer + i] = o[i];
  __syncthreads();
  if (warp != 0)
    return;
  float big = -INFINITY;
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w)
    big = fmaxf(big, sMax[w]);
  float sum = 0.0f, acc[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    acc[i] = 0.0f;
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w) {
    if (sMax[w] == -INFINITY)
      continue; // a warp that saw no key
    const float f = exp2f(sMax[w] - big);
    sum = fmaf(sSum[w], f, sum);
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      acc[i] = fmaf(sO[w][lane * kPer + i], f, acc[i]);
  }
  // A row that sees no key gets zeros and an LSE of -inf.
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  uint32_t *out = reinterpret_cast<uint32_t *>(static_cast<uint16_t *>(p.o) +
                                               rowOffset(p.os, b, h, row) + lane * kPer);
#pragma unroll
  for (int i = 0; i < kPer / 2; ++i)
    out[i] = Elem<F16>::pack(acc[2 * i] * inv, acc[2 * i + 1] * inv);
  if (lane == 0 && p.lse)
    p.lse[static_cast<size_t>(bh) * p.sq + row] =
        sum > 0.0f ? (big + log2f(sum)) * 0.69314718055994531f : -INFINITY;
}

} // namespace fusec::attention

#endif // FUSEC_RUNTIME_KERNELS_ATTENTION_DECODE_CUH
