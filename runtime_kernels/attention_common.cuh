//===- attention_common.cuh - What both attention kernels share -*- CUDA -*-===//
//
// The parts of the attention forward kernel that do not depend on the
// tensor-core generation: the launch parameters, which tile a CTA computes
// and how many key blocks it visits, the mask, the element type's packing,
// and FlashAttention-4's conditional-rescale threshold. attention_sm90.cu
// (Hopper, wgmma) and attention_sm100.cu (Blackwell, tcgen05) include it.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_KERNELS_ATTENTION_COMMON_CUH
#define FUSEC_RUNTIME_KERNELS_ATTENTION_COMMON_CUH

#include "attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace fusec::attention {

/// What every CTA needs besides the tensor maps.
struct KernelParams {
  void *o;
  float *lse;
  int sq, skv, hq, groups; // groups = Hq / Hkv
  int hkv, mBlocks;
  /// The tiled kernel's tiles: bhCount = B x Hq heads of mBlocks row
  /// blocks, numbered by tileAt in sections of headGroup heads.
  int bhCount, headGroup;
  /// A persistent grid's dynamic scheduler: [0] counts the tiles handed out
  /// past the first wave, [1] the CTAs that are done; the last CTA resets
  /// both to 0 for the next launch. Null: static (tiles blockIdx.x,
  /// + gridDim.x, ...).
  int *tileCounter;
  float scaleLog2; // softmax scale * log2(e)
  int causal;
  int offset; // Skv - Sq: row i sees columns j <= i + offset
  /// [B, Skv] bytes, nonzero where a key is visible (a padding mask); null:
  /// every key is.
  const uint8_t *keyMask;
  /// Element strides of Q, K, V and O (resolved: never all zero).
  Strides qs, ks, vs, os;
};

/// The element offset of row `row` of head `h` of batch `b` in a tensor of
/// strides `s`.
__device__ __forceinline__ long long rowOffset(const Strides &s, int b, int h, int row) {
  return b * s.batch + h * s.head + row * s.seq;
}

/// Programmatic dependent launch, at a kernel's start: the next kernel in
/// the stream may launch now (its CTAs take SMs as ours leave), and ours
/// waits until the kernel before it has finished and its writes are
/// visible, before any access to global memory. Without the launch
/// attribute both are no-ops in effect.
__device__ __forceinline__ void gridDependencyStart() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// A CTA's tile: `blockM` query rows of one head, the longest (causal)
/// tiles first, and the key blocks of `blockN` it must visit.
struct TileSchedule {
  int bh, bhKv, m0, nBlocks;
  int b, h, hKv; // bh = b x Hq + h; bhKv = b x Hkv + hKv
};

__device__ __forceinline__ TileSchedule scheduleTile(const KernelParams &p, int blockM,
                                                     int blockN) {
  TileSchedule s;
  const int mBlock = p.mBlocks - 1 - static_cast<int>(blockIdx.x);
  s.bh = blockIdx.y;
  s.b = s.bh / p.hq;
  s.h = s.bh % p.hq;
  s.hKv = s.h / p.groups;
  s.bhKv = s.b * p.hkv + s.hKv;
  s.m0 = mBlock * blockM;
  int nEnd = p.skv;
  if (p.causal)
    nEnd = min(nEnd, s.m0 + blockM + p.offset);
  s.nBlocks = nEnd > 0 ? (nEnd + blockN - 1) / blockN : 0;
  return s;
}

/// Tile `tile` of the tiled kernel's launch (a CTA of a persistent grid
/// runs tiles blockIdx.x, + gridDim.x, ...). Tiles are numbered in sections
/// of `headGroup` heads (the caller picks as many as keep their K and V in
/// L2); within a section, the longest (causal) row blocks of every head come
/// first, so the CTAs that start last run the shortest tiles. headGroup = 1
/// is one head's row blocks after another, longest first.
__device__ __forceinline__ TileSchedule tileAt(const KernelParams &p, int tile, int blockM,
                                               int blockN) {
  TileSchedule s;
  const int perSection = p.headGroup * p.mBlocks;
  const int section = tile / perSection;
  const int first = section * p.headGroup;
  const int heads = min(p.headGroup, p.bhCount - first);
  const int within = tile - section * perSection;
  const int rank = within / heads;
  s.bh = first + (within - rank * heads);
  s.b = s.bh / p.hq;
  s.h = s.bh % p.hq;
  s.hKv = s.h / p.groups;
  s.bhKv = s.b * p.hkv + s.hKv;
  s.m0 = (p.mBlocks - 1 - rank) * blockM;
  int nEnd = p.skv;
  if (p.causal)
    nEnd = min(nEnd, s.m0 + blockM + p.offset);
  s.nBlocks = nEnd > 0 ? (nEnd + blockN - 1) / blockN : 0;
  return s;
}

/// Whether key column `col` is hidden from query row `row` by the causal
/// mask or the key length (the key mask is each kernel's own: hiddenKey).
__device__ __forceinline__ bool masked(const KernelParams &p, int row, int col) {
  return col >= p.skv || (p.causal && col > row + p.offset);
}

/// Whether the key mask hides key column `col` (< Skv) of batch `b`.
__device__ __forceinline__ bool hiddenKey(const KernelParams &p, int b, int col) {
  return p.keyMask && !__ldg(p.keyMask + static_cast<size_t>(b) * p.skv + col);
}

/// The max and the sum over the 4 lanes of a quad (lane ^ 1, lane ^ 2): the
/// lanes that hold one row of an mma accumulator.
__device__ __forceinline__ float quadMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffff, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffff, x, 2));
}
__device__ __forceinline__ float quadSum(float x) {
  x += __shfl_xor_sync(0xffffffff, x, 1);
  return x + __shfl_xor_sync(0xffffffff, x, 2);
}

/// FlashAttention-4's conditional rescaling: the reference max of a row
/// moves only when the block's max passes it by more than this (log2
/// units), so P stays below 2^8.
constexpr float kRescaleThreshold = 8.0f;

template <bool F16> struct Elem;
template <> struct Elem<false> {
  using T = __nv_bfloat16;
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
  }
};
template <> struct Elem<true> {
  using T = __half;
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
  }
};

} // namespace fusec::attention

#endif // FUSEC_RUNTIME_KERNELS_ATTENTION_COMMON_CUH
