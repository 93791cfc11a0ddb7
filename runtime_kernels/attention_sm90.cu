//===- attention_sm90.cu - FlashAttention forward for Hopper ---*- CUDA -*-===//
//
// softmax(Q Kᵀ · scale) V for bf16 / fp16, head dims 64, 128 and 256,
// causal or not, grouped-query attention, any sequence lengths; writes O and
// the logsumexp (natural log) of every row. Layouts: Q [B, Hq, Sq, D], K and
// V [B, Hkv, Skv, D], O like Q, LSE [B, Hq, Sq] f32, all contiguous.
//
// A tile is 128 query rows of one head. A CTA runs one tile, or, in a
// persistent grid (one CTA an SM), several: blockIdx.x + k gridDim.x
// (static), or those an atomic counter hands out (dynamic); the producer
// loads the next tile's K, V and Q while the consumers finish this one.
// A CTA has three warpgroups:
//  * a producer warpgroup (its registers given back with setmaxnreg) whose
//    one thread issues TMA loads of Q once and of K and V blocks into a
//    ring of three stages (two for D = 256), each stage with a "full"
//    mbarrier (TMA bytes) and an "empty" mbarrier (the consumers are done
//    with it) per operand, so K is refilled as soon as S is computed;
//  * two consumer warpgroups of 64 rows each: S = Q Kᵀ by wgmma from shared
//    memory, the online softmax in registers, P converted in registers to
//    wgmma's A fragment, O += P V by wgmma with V read transposed from
//    shared memory. The two warpgroups run out of phase (ping-pong: named
//    barriers hand the tensor cores from one to the other, so one's softmax
//    overlaps the other's GEMMs) when Flags::pingPong is set.
// FlashAttention-4's ideas, each a flag measured on and off
// (bench/attention.py): conditional rescaling (the running max a row uses
// moves only when the true max passes it by more than 2^8, so most blocks
// skip rescaling O), and exp2 computed for one column in `polyEvery` by a
// polynomial on the FMA units instead of the SFU.
//
//===----------------------------------------------------------------------===//

#include "attention.h"
#include "attention_common.cuh"
#include "attention_decode.cuh"
#include "attention_splitkv.cuh"
#include "attention_sm100.h"
#include "sm90_ptx.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>
#include <string>
#include <utility>

namespace fusec::attention {
namespace {

using namespace fusec::ptx;

constexpr int kBlockM = 128;
constexpr int kThreads = 384;

template <int D> struct Config {
  static constexpr int kBlockN = D <= 128 ? 128 : 64;
  // Three stages where shared memory allows (D <= 128: 224 KiB), two for
  // D = 256.
  static constexpr int kStages = D <= 128 ? 3 : 2;
  static constexpr int kColBlocks = D / 64; // 64-element (128-byte) column blocks
  static constexpr int kQBytes = kBlockM * D * 2;
  static constexpr int kKVBytes = kBlockN * D * 2;
  static constexpr int kBarriers = 3 + 4 * kStages;
  static constexpr int kSmemBytes =
      1024 /* alignment slack */ + kQBytes + 2 * kStages * kKVBytes + 8 * kBarriers + 16;
};


template <int D, bool F16, bool CondRescale, int PolyEvery, bool PingPong, bool Pipelined>
__global__ void __launch_bounds__(kThreads, 1)
    attentionKernel(const __grid_constant__ CUtensorMap tmQ,
                    const __grid_constant__ CUtensorMap tmK,
                    const __grid_constant__ CUtensorMap tmV, const KernelParams p) {
  gridDependencyStart();
  using C = Config<D>;
  constexpr int BN = C::kBlockN;
  extern __shared__ uint8_t smemRaw[];
  uint8_t *smem = reinterpret_cast<uint8_t *>(
      (reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~static_cast<uintptr_t>(1023));
  uint8_t *sQ = smem;
  uint8_t *sK = sQ + C::kQBytes;
  uint8_t *sV = sK + C::kStages * C::kKVBytes;
  uint64_t *bars = reinterpret_cast<uint64_t *>(sV + C::kStages * C::kKVBytes);
  uint64_t *barQ = bars, *emptyQ = bars + 1, *tileReady = bars + 2;
  uint64_t *fullK = bars + 3, *fullV = bars + 3 + C::kStages,
           *emptyK = bars + 3 + 2 * C::kStages, *emptyV = bars + 3 + 3 * C::kStages;
  // The producer hands each tile's index to the consumers here (-1: no more
  // tiles), arriving on tileReady.
  volatile int *tileSlot = reinterpret_cast<volatile int *>(bars + C::kBarriers);

  const int wg = threadIdx.x / 128;
  const int t = threadIdx.x % 128;
  // The tiles this CTA runs: blockIdx.x first, then (one CTA a tile, or a
  // persistent grid) blockIdx.x + gridDim.x, ..., or those the dynamic
  // scheduler hands out. The K/V ring's stages are counted across them.
  const int nTiles = p.bhCount * p.mBlocks;

  if (threadIdx.x == 0) {
    mbarrierInit(barQ, 1);
    mbarrierInit(emptyQ, 256);
    mbarrierInit(tileReady, 1);
    for (int s = 0; s < C::kStages; ++s) {
      mbarrierInit(&fullK[s], 1);
      mbarrierInit(&fullV[s], 1);
      mbarrierInit(&emptyK[s], 256);
      mbarrierInit(&emptyV[s], 256);
    }
    fenceBarrierInit();
  }
  __syncthreads();

  if (wg == 0) {
    // Producer.
    setMaxRegsDec<40>();
    if (t == 0) {
      prefetchTensorMap(&tmQ);
      prefetchTensorMap(&tmK);
      prefetchTensorMap(&tmV);
      int g = 0; // K/V blocks loaded so far
      int tile = blockIdx.x;
      for (int local = 0;; ++local) {
        const bool none = tile >= nTiles;
        const TileSchedule ts = tileAt(p, none ? 0 : tile, kBlockM, BN);
        // Q goes into its one buffer once the consumers are done with the
        // previous tile's, and the tile's index is handed over then (it is
        // read at the tile's start, before Q is). The tile's first K block
        // is issued before that wait, so it loads while they finish.
        auto loadQ = [&] {
          if (local > 0)
            mbarrierWait(emptyQ, (local - 1) & 1);
          *tileSlot = none ? -1 : tile;
          mbarrierArrive(tileReady);
          if (none)
            return;
          mbarrierArriveExpectTx(barQ, C::kQBytes);
#pragma unroll
          for (int c = 0; c < C::kColBlocks; ++c)
            tmaLoad4d(sQ + c * kBlockM * 128, &tmQ, barQ, c * 64, ts.m0, ts.h, ts.b);
        };
        if (none) {
          loadQ();
          break;
        }
        if (ts.nBlocks == 0)
          loadQ();
        for (int it = 0; it < ts.nBlocks; ++it, ++g) {
          const int s = g % C::kStages;
          if (g >= C::kStages)
            mbarrierWait(&emptyK[s], ((g / C::kStages) - 1) & 1);
          mbarrierArriveExpectTx(&fullK[s], C::kKVBytes);
#pragma unroll
          for (int c = 0; c < C::kColBlocks; ++c)
            tmaLoad4d(sK + s * C::kKVBytes + c * BN * 128, &tmK, &fullK[s], c * 64, it * BN,
                      ts.hKv, ts.b);
          if (it == 0)
            loadQ();
          if (g >= C::kStages)
            mbarrierWait(&emptyV[s], ((g / C::kStages) - 1) & 1);
          mbarrierArriveExpectTx(&fullV[s], C::kKVBytes);
#pragma unroll
          for (int c = 0; c < C::kColBlocks; ++c)
            tmaLoad4d(sV + s * C::kKVBytes + c * BN * 128, &tmV, &fullV[s], c * 64, it * BN,
                      ts.hKv, ts.b);
        }
        tile = p.tileCounter ? static_cast<int>(gridDim.x) + atomicAdd(p.tileCounter, 1)
                             : tile + static_cast<int>(gridDim.x);
      }
      // Every CTA has taken its last index when the last one gets here: it
      // resets the counters for the next launch on the stream (which waits
      // for this grid to finish before it reads them).
      if (p.tileCounter && atomicAdd(p.tileCounter + 1, 1) == static_cast<int>(gridDim.x) - 1) {
        atomicExch(p.tileCounter, 0);
        atomicExch(p.tileCounter + 1, 0);
      }
    }
    return;
  }

  // Consumers.
  setMaxRegsInc<232>();
  const int cw = wg - 1; // 0 or 1: rows [cw * 64, cw * 64 + 64) of the tile
  const int warp = t / 32, lane = t % 32;
  // The current tile's head, first row, key blocks, and this thread's first
  // row (and + 8); the K/V ring's stage count at the tile's start.
  int bh = 0, m0 = 0, nBlocks = 0, batchIndex = 0, rowBase = 0, g0 = 0;
  auto stageOf = [&](int it) { return (g0 + it) % C::kStages; };
  auto phaseOf = [&](int it) { return static_cast<uint32_t>(((g0 + it) / C::kStages) & 1); };
  const float sl2 = p.scaleLog2;
  constexpr float kNegInf = -INFINITY;

  float o[D / 2];
  float rowMax[2], rowSum[2];

  // The wgmma descriptors of stage s, all computed before any wgmma is
  // issued (ptxas serializes wgmmas whose inputs, descriptors included, are
  // defined between the issue and the wait).
  struct Descriptors {
    uint64_t q[D / 16], k[D / 16], v[BN / 16];
  };
  auto descriptors = [&](int s) {
    Descriptors d;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const int c = kk / 4, within = kk % 4;
      d.q[kk] = matrixDescriptor(sQ + c * kBlockM * 128 + cw * 64 * 128 + within * 32, 16, 1024);
      d.k[kk] = matrixDescriptor(sK + s * C::kKVBytes + c * BN * 128 + within * 32, 16, 1024);
    }
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
      d.v[kk] = matrixDescriptor(sV + s * C::kKVBytes + kk * 16 * 128, BN * 128, 1024);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      asm volatile("" : "+l"(d.q[kk]), "+l"(d.k[kk]));
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
      asm volatile("" : "+l"(d.v[kk]));
    return d;
  };
  // S = Q K^T, issued (the caller commits and waits).
  auto issueS = [&](float (&sacc)[BN / 2], const Descriptors &d) {
    wgmmaFence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      wgmma_ss<BN, F16>(sacc, d.q[kk], d.k[kk], kk > 0 ? 1 : 0);
  };
  // O += P V, issued.
  auto issuePV = [&](const uint32_t (&pa)[BN / 16][4], const Descriptors &d) {
    wgmmaFence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
      wgmma_rs<D, F16>(o, pa[kk], d.v[kk], 1);
  };
  // The key mask of a block: a warp reads the block's mask bytes
  // coalesced, 32 at a time (loadMask), one block ahead, so the load's
  // latency hides behind the block before; hiddenKeys turns them, by
  // ballot, into one bit per column this thread holds (bit 2 j + e of
  // column 8 j + 2 (lane % 4) + e), 0 where every key of the block is
  // visible (or there is no mask).
  auto loadMask = [&](int it, uint8_t (&visible)[BN / 32]) {
#pragma unroll
    for (int b = 0; b < BN / 32; ++b)
      visible[b] = 1;
    if (!p.keyMask || it >= nBlocks)
      return;
    const uint8_t *keys = p.keyMask + static_cast<size_t>(batchIndex) * p.skv;
    const int n0 = it * BN;
#pragma unroll
    for (int b = 0; b < BN / 32; ++b) {
      const int col = n0 + 32 * b + lane;
      if (col < p.skv)
        visible[b] = __ldg(keys + col);
    }
  };
  auto hiddenKeys = [&](const uint8_t (&visible)[BN / 32]) -> uint32_t {
    if (!p.keyMask)
      return 0;
    uint32_t ballots[BN / 32], any = 0;
#pragma unroll
    for (int b = 0; b < BN / 32; ++b) {
      ballots[b] = __ballot_sync(0xffffffff, visible[b] == 0);
      any |= ballots[b];
    }
    if (any == 0)
      return 0;
    uint32_t bits = 0;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        bits |= ((ballots[j / 4] >> (8 * (j % 4) + 2 * (lane % 4) + e)) & 1u) << (2 * j + e);
    return bits;
  };
  // The online softmax of block `it`: masks S, moves the running max (or,
  // with CondRescale, only when it grows past 2^8), writes P to `pa` and
  // returns in `factor` what O must be multiplied by (`rescale` false when
  // no row of the warp needs it).
  auto softmax = [&](const float (&acc)[BN / 2], int it, uint32_t hidden,
                     uint32_t (&pa)[BN / 16][4], float (&factor)[2], bool &rescale) {
    const int n0 = it * BN;
    // Columns past Skv, or past the diagonal, are -inf. (A copy: the
    // accumulator registers are not written while a wgmma is in flight,
    // which would make ptxas serialize the pipeline.)
    float sacc[BN / 2];
#pragma unroll
    for (int x = 0; x < BN / 2; ++x)
      sacc[x] = acc[x];
    const bool needMask = hidden != 0 || n0 + BN > p.skv ||
                          (p.causal && n0 + BN - 1 > m0 + cw * 64 + p.offset);
    if (needMask) {
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            int col = n0 + 8 * j + 2 * (lane % 4) + e;
            int row = rowBase + 8 * i;
            if (masked(p, row, col) || ((hidden >> (2 * j + e)) & 1u))
              sacc[4 * j + 2 * i + e] = kNegInf;
          }
    }
    float blockMax[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        blockMax[i] = fmaxf(blockMax[i], fmaxf(sacc[4 * j + 2 * i], sacc[4 * j + 2 * i + 1]));
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      blockMax[i] = quadMax(blockMax[i]);
      factor[i] = 1.0f;
    }
    rescale = true;
    if constexpr (CondRescale) {
      // Values up to 2^8 above the reference max are exact enough in f32
      // sums and in bf16 P.
      bool need[2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        need[i] = blockMax[i] != kNegInf &&
                  (rowMax[i] == kNegInf || (blockMax[i] - rowMax[i]) * sl2 > kRescaleThreshold);
      rescale = __any_sync(0xffffffff, need[0] || need[1]);
      if (rescale) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          float m = need[i] ? fmaxf(rowMax[i], blockMax[i]) : rowMax[i];
          factor[i] = need[i] && rowMax[i] != kNegInf ? ex2((rowMax[i] - m) * sl2) : 1.0f;
          rowMax[i] = m;
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float m = fmaxf(rowMax[i], blockMax[i]);
        factor[i] = rowMax[i] == kNegInf ? 1.0f : ex2((rowMax[i] - m) * sl2);
        rowMax[i] = m;
      }
    }
    float negMaxScaled[2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
      negMaxScaled[i] = rowMax[i] == kNegInf ? 0.0f : -rowMax[i] * sl2;
    float partial[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float x0 = fmaf(sacc[4 * j + 2 * i], sl2, negMaxScaled[i]);
        float x1 = fmaf(sacc[4 * j + 2 * i + 1], sl2, negMaxScaled[i]);
        float e0, e1;
        if (PolyEvery > 0 && j % (PolyEvery > 0 ? PolyEvery : 1) == PolyEvery - 1) {
          e0 = ex2Poly(x0);
          e1 = ex2Poly(x1);
        } else {
          e0 = ex2(x0);
          e1 = ex2(x1);
        }
        partial[i] += e0 + e1;
        pa[j / 2][(j % 2) * 2 + i] = Elem<F16>::pack(e0, e1);
      }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
      rowSum[i] = rowSum[i] * factor[i] + partial[i];
  };
  auto rescaleO = [&](const float (&factor)[2]) {
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        o[4 * j + 2 * i] *= factor[i];
        o[4 * j + 2 * i + 1] *= factor[i];
      }
  };

  // Ping-pong: the two warpgroups take turns issuing GEMMs, consumer 0
  // first: each waits for its turn on barrier 1 + cw and hands the turn over
  // as soon as its GEMMs are issued, so one's softmax runs while the
  // other's GEMMs hold the tensor cores.
  auto myTurn = [&] {
    if constexpr (PingPong)
      namedBarrierSync(1 + cw, 256);
  };
  auto yourTurn = [&] {
    if constexpr (PingPong)
      namedBarrierArrive(1 + (1 - cw), 256);
  };
  if constexpr (PingPong) {
    if (cw == 1)
      namedBarrierArrive(1, 256);
  }

  for (int local = 0;; ++local) {
  mbarrierWait(tileReady, local & 1);
  const int tile = *tileSlot;
  if (tile < 0)
    break;
  {
    const TileSchedule ts = tileAt(p, tile, kBlockM, BN);
    bh = ts.bh;
    m0 = ts.m0;
    nBlocks = ts.nBlocks;
    batchIndex = ts.b;
    rowBase = m0 + cw * 64 + warp * 16 + lane / 4;
  }
#pragma unroll
  for (int i = 0; i < D / 2; ++i)
    o[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    rowMax[i] = kNegInf;
    rowSum[i] = 0.0f;
  }
  // The first block's mask loads while Q arrives.
  uint8_t maskBytes[BN / 32];
  loadMask(0, maskBytes);
  mbarrierWait(barQ, local & 1);
  if constexpr (!Pipelined) {
    // S, softmax, PV in sequence: overlap comes from the other warpgroup.
    for (int it = 0; it < nBlocks; ++it) {
      const int s = stageOf(it);
      const uint32_t phase = phaseOf(it);
      float sacc[BN / 2];
      uint32_t pa[BN / 16][4];
      float factor[2];
      bool rescale;
      mbarrierWait(&fullK[s], phase);
      Descriptors d = descriptors(s);
      myTurn();
      issueS(sacc, d);
      wgmmaCommit();
      yourTurn();
      const uint32_t hidden = hiddenKeys(maskBytes);
      loadMask(it + 1, maskBytes);
      wgmmaWait<0>();
      fenceRegisters(sacc);
      mbarrierArrive(&emptyK[s]);
      softmax(sacc, it, hidden, pa, factor, rescale);
      if (rescale)
        rescaleO(factor);
      mbarrierWait(&fullV[s], phase);
      fenceRegisters(o);
      fenceRegisters(pa);
      myTurn();
      issuePV(pa, d);
      wgmmaCommit();
      yourTurn();
      wgmmaWait<0>();
      fenceRegisters(o);
      mbarrierArrive(&emptyV[s]);
    }
  } else if (nBlocks > 0) {
    // FlashAttention-3's intra-warpgroup pipelining: block it's S GEMM and
    // block it-1's PV GEMM are issued together; block it's softmax runs
    // while the PV GEMM is in flight.
    uint32_t pa[BN / 16][4];
    {
      float sacc[BN / 2];
      float factor[2];
      bool rescale;
      const int s = stageOf(0);
      mbarrierWait(&fullK[s], phaseOf(0));
      Descriptors d = descriptors(s);
      myTurn();
      issueS(sacc, d);
      wgmmaCommit();
      yourTurn();
      const uint32_t hidden = hiddenKeys(maskBytes);
      loadMask(1, maskBytes);
      wgmmaWait<0>();
      fenceRegisters(sacc);
      mbarrierArrive(&emptyK[s]);
      softmax(sacc, 0, hidden, pa, factor, rescale);
    }
    for (int it = 1; it < nBlocks; ++it) {
      const int s = stageOf(it), prev = stageOf(it - 1);
      const uint32_t phase = phaseOf(it), prevPhase = phaseOf(it - 1);
      float sacc[BN / 2];
      uint32_t next[BN / 16][4];
      float factor[2];
      bool rescale;
      mbarrierWait(&fullK[s], phase);
      mbarrierWait(&fullV[prev], prevPhase);
      Descriptors d = descriptors(s), dPrev = descriptors(prev);
      // Read before the GEMMs are issued: anything computed while they
      // are in flight makes ptxas serialize them (C7513).
      const uint32_t hidden = hiddenKeys(maskBytes);
      loadMask(it + 1, maskBytes);
      fenceRegisters(o);
      fenceRegisters(pa);
      myTurn();
      issueS(sacc, d);
      wgmmaCommit();
      issuePV(pa, dPrev);
      wgmmaCommit();
      yourTurn();
      wgmmaWait<1>(); // S done; PV may still run
      mbarrierArrive(&emptyK[s]);
      softmax(sacc, it, hidden, next, factor, rescale);
      wgmmaWait<0>();
      fenceRegisters(o);
      // pa stays live until the PV GEMM that reads it is done, so the new P
      // cannot be written into its registers while that GEMM runs.
      fenceRegisters(pa);
      mbarrierArrive(&emptyV[prev]);
      if (rescale)
        rescaleO(factor);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          pa[kk][r] = next[kk][r];
    }
    const int last = stageOf(nBlocks - 1);
    mbarrierWait(&fullV[last], phaseOf(nBlocks - 1));
    Descriptors d = descriptors(last);
    fenceRegisters(o);
    fenceRegisters(pa);
    myTurn();
    issuePV(pa, d);
    wgmmaCommit();
    yourTurn();
    wgmmaWait<0>();
    fenceRegisters(o);
    mbarrierArrive(&emptyV[last]);
  }
  // Every GEMM that reads Q is done: the producer may load the next tile's.
  mbarrierArrive(emptyQ);
  g0 += nBlocks;

  // O / l, and the logsumexp.
  using T = typename Elem<F16>::T;
  // (The offset is computed here, not kept through the mainloop: a 64-bit
  // value live across it cost D = 256 spills.)
  T *out = static_cast<T *>(p.o) + rowOffset(p.os, batchIndex, bh - batchIndex * p.hq, 0);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float l = quadSum(rowSum[i]);
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    int row = rowBase + 8 * i;
    if (row < p.sq) {
      uint32_t *dst = reinterpret_cast<uint32_t *>(out + row * p.os.seq);
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        dst[(8 * j + 2 * (lane % 4)) / 2] =
            Elem<F16>::pack(o[4 * j + 2 * i] * inv, o[4 * j + 2 * i + 1] * inv);
      if (lane % 4 == 0 && p.lse)
        p.lse[static_cast<size_t>(bh) * p.sq + row] =
            l > 0.0f ? (rowMax[i] * sl2 + log2f(l)) * 0.69314718055994531f : kNegInf;
    }
  }
  } // tiles
  if constexpr (PingPong) {
    // Consumer 1's last hand-over has no turn after it: take it, so no
    // arrival is left pending on barrier 1.
    if (cw == 0)
      namedBarrierSync(1, 256);
  }
}

//===-- host side ---------------------------------------------------------===//

thread_local std::string lastError;
/// This forward()'s kProgrammatic: its launch may overlap the kernel before.
thread_local bool programmatic = false;

/// A launch's configuration, with programmatic dependent launch allowed
/// when the forward() call asks: `get()` (in the launch's own expression)
/// points the attribute list at this object's attribute.
struct LaunchConfig {
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attribute{};
  cudaLaunchConfig_t *get() {
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = programmatic ? &attribute : nullptr;
    config.numAttrs = programmatic ? 1 : 0;
    return &config;
  }
};
LaunchConfig launchConfig(dim3 grid, dim3 block, size_t smemBytes, cudaStream_t stream) {
  LaunchConfig c;
  c.config.gridDim = grid;
  c.config.blockDim = block;
  c.config.dynamicSmemBytes = smemBytes;
  c.config.stream = stream;
  return c;
}

int fail(const std::string &message) {
  lastError = message;
  return 1;
}

PFN_cuTensorMapEncodeTiled_v12000 encodeTiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void *f = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                         cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

/// The kernels' parameters for `pr`, with `mBlocks` row blocks.
KernelParams kernelParams(const Problem &pr, int mBlocks) {
  KernelParams kp;
  kp.o = pr.o;
  kp.lse = pr.lse;
  kp.sq = pr.sq;
  kp.skv = pr.skv;
  kp.hq = pr.heads;
  kp.hkv = pr.kvHeads;
  kp.groups = pr.heads / pr.kvHeads;
  kp.mBlocks = mBlocks;
  kp.bhCount = pr.batch * pr.heads;
  kp.headGroup = 1;
  kp.tileCounter = nullptr;
  kp.scaleLog2 = pr.scale * 1.4426950408889634f;
  kp.causal = pr.causal;
  kp.offset = pr.skv - pr.sq;
  kp.keyMask = static_cast<const uint8_t *>(pr.keyMask);
  kp.qs = resolveStrides(pr.qStrides, pr.heads, pr.sq, pr.headDim);
  kp.ks = resolveStrides(pr.kStrides, pr.kvHeads, pr.skv, pr.headDim);
  kp.vs = resolveStrides(pr.vStrides, pr.kvHeads, pr.skv, pr.headDim);
  kp.os = resolveStrides(pr.oStrides, pr.heads, pr.sq, pr.headDim);
  return kp;
}

/// A 4-D map over [batch, heads, rows, D] of element strides `st` (D
/// contiguous) with boxes of 64 x `boxRows`, 128-byte swizzle, zero fill
/// past the rows.
int makeMap(CUtensorMap *map, const void *base, bool f16, int d, int rows, int heads, int batch,
            const Strides &st, int boxRows, const char *what) {
  auto encode = encodeTiled();
  if (!encode)
    return fail("cuTensorMapEncodeTiled is not available from the driver");
  cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows),
                        static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  cuuint64_t strides[3] = {static_cast<cuuint64_t>(st.seq) * 2,
                           static_cast<cuuint64_t>(st.head) * 2,
                           static_cast<cuuint64_t>(st.batch) * 2};
  cuuint32_t box[4] = {64, static_cast<cuuint32_t>(boxRows), 1, 1};
  cuuint32_t elementStrides[4] = {1, 1, 1, 1};
  CUresult r = encode(map, f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                      4, const_cast<void *>(base), dims, strides, box, elementStrides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fail(std::string("cuTensorMapEncodeTiled failed for ") + what + " (CUresult " +
                std::to_string(static_cast<int>(r)) + ")");
  return 0;
}

/// Q's, K's and V's maps for a problem, with `qRows` and `kvRows` box rows.
int makeMaps(const Problem &pr, const KernelParams &kp, int qRows, int kvRows, CUtensorMap *q,
             CUtensorMap *k, CUtensorMap *v) {
  const bool f16 = pr.dtype == kF16;
  const int d = pr.headDim;
  return makeMap(q, pr.q, f16, d, pr.sq, pr.heads, pr.batch, kp.qs, qRows, "Q") ||
         makeMap(k, pr.k, f16, d, pr.skv, pr.kvHeads, pr.batch, kp.ks, kvRows, "K") ||
         makeMap(v, pr.v, f16, d, pr.skv, pr.kvHeads, pr.batch, kp.vs, kvRows, "V");
}

int smCount();

/// An integer from the environment, or `fallback` when it is unset or not
/// a number.
int envInt(const char *name, int fallback) {
  const char *e = std::getenv(name);
  if (!e || !*e)
    return fallback;
  char *end = nullptr;
  long v = std::strtol(e, &end, 10);
  return *end ? fallback : static_cast<int>(std::max(-1L, std::min(v, 1L << 30)));
}

/// The tiled kernel's grid: how many CTAs and how many heads a section of
/// tiles holds (tileAt).
struct TiledGrid {
  long long ctas;
  int headGroup;
  bool dynamic; // tiles past the first wave from an atomic counter
};

/// The L2 bytes the K and V of a section of heads may take: about half the
/// H200's and H100's 50 MB, so Q, O and the other section's tail fit too.
constexpr long long kL2SectionBytes = 24ll << 20;

/// The runtime's grid for a problem (Problem::persistent's values), from
/// bench/results/2026-12-04-h200-attention-persistent, where each grid ran
/// the same tensors:
///  * causal: the dynamic persistent grid (tiles of different lengths; the
///    next tile's loads overlap this one's end). It was the fastest or
///    within 3% on every causal shape, 1.02-1.27x one CTA a tile.
///  * not causal, at most 1024 keys: the static persistent grid. Short tiles
///    gain most from the overlap: 1.04-1.20x one CTA a tile.
///  * not causal, more keys: one CTA a tile, one head's row blocks after
///    another (headGroup 1; they share K and V in L2); the persistent grids
///    were 1-3% slower there.
int defaultPersistence(const Problem &pr) {
  if (pr.causal)
    return 2;
  return pr.skv <= 1024 ? 1 : 0;
}

TiledGrid tiledGrid(const Problem &pr, int mBlocks, int blockN) {
  TiledGrid tg;
  const long long bhCount = static_cast<long long>(pr.batch) * pr.heads;
  // Heads a section: as many as keep their K and V (shared by a GQA group
  // of query heads) within kL2SectionBytes, so each K/V block comes from HBM
  // about once however the row blocks of a head are spread in time.
  const long long keys = (static_cast<long long>(pr.skv) + blockN - 1) / blockN * blockN;
  const long long kvBytes = 2 * keys * pr.headDim * 2; // K and V of one KV head
  const long long groups = pr.heads / pr.kvHeads;
  long long heads = std::max(1ll, kL2SectionBytes * groups / std::max(1ll, kvBytes));
  if (pr.headGroup > 0)
    heads = pr.headGroup;
  else if (int forced = envInt("FUSEC_ATTENTION_HEAD_GROUP", 0); forced > 0)
    heads = forced;
  // Persistent (one CTA an SM, each running several tiles: the next tile's
  // K, V and Q load while this one finishes) or one CTA a tile.
  const long long tiles = bhCount * mBlocks;
  int persistent = pr.persistent >= 0 ? pr.persistent : envInt("FUSEC_ATTENTION_PERSISTENT", -1);
  if (persistent < 0 || persistent > 2) {
    persistent = defaultPersistence(pr);
    if (persistent == 0 && pr.headGroup <= 0 && envInt("FUSEC_ATTENTION_HEAD_GROUP", 0) <= 0)
      heads = 1;
  }
  tg.headGroup = static_cast<int>(std::min(heads, bhCount));
  long long ctas = persistent > 0 ? std::min<long long>(tiles, smCount()) : tiles;
  if (pr.ctas > 0)
    ctas = std::min<long long>(tiles, pr.ctas);
  tg.ctas = std::max(1ll, ctas);
  tg.dynamic = persistent == 2 && tg.ctas < tiles;
  return tg;
}

/// The dynamic scheduler's counters for a launch on `stream`, zero (each
/// launch leaves them zero), or null when none can be had (the launch then
/// runs the static schedule). Launches on a stream run in order, so they
/// share a pair; a launch being captured into a CUDA graph gets a pair of
/// its own, because the graph may be replayed on any stream beside other
/// graphs and launches. Never freed: a graph keeps the pointer.
std::mutex counterMutex;
std::map<std::pair<int, cudaStream_t>, int *> streamCounters;
struct CounterPool {
  int *base = nullptr;
  int used = 0, size = 0;
};
std::map<int, CounterPool> capturedCounters;

int *tileCounters(cudaStream_t stream) {
  int device = 0;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaStreamIsCapturing(stream, &capture) != cudaSuccess)
    return nullptr;
  std::lock_guard<std::mutex> lock(counterMutex);
  if (capture == cudaStreamCaptureStatusNone) {
    int *&c = streamCounters[{device, stream}];
    if (!c) {
      if (cudaMalloc(&c, 2 * sizeof(int)) != cudaSuccess) {
        c = nullptr;
        (void)cudaGetLastError();
        return nullptr;
      }
      if (cudaMemsetAsync(c, 0, 2 * sizeof(int), stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr; // kept: a later launch retries the memset
      }
    }
    return c;
  }
  CounterPool &pool = capturedCounters[device];
  if (pool.used == pool.size) {
    // cudaMalloc and a memset on a stream of our own are allowed while
    // another stream is captured in relaxed mode.
    constexpr int kPairs = 4096;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess)
      return nullptr;
    int *base = nullptr;
    cudaStream_t own = nullptr;
    bool ok = cudaMalloc(&base, kPairs * 2 * sizeof(int)) == cudaSuccess &&
              cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) == cudaSuccess &&
              cudaMemsetAsync(base, 0, kPairs * 2 * sizeof(int), own) == cudaSuccess &&
              cudaStreamSynchronize(own) == cudaSuccess;
    if (own)
      cudaStreamDestroy(own);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (!ok) {
      (void)cudaGetLastError();
      return nullptr; // (base, if allocated, is kept: freeing could disturb the capture)
    }
    pool = {base, 0, kPairs};
  }
  return pool.base + 2 * pool.used++;
}

template <int D, bool F16, bool CondRescale, int PolyEvery, bool PingPong, bool Pipelined>
int launch(const Problem &pr, cudaStream_t stream) {
  using C = Config<D>;
  auto kernel = attentionKernel<D, F16, CondRescale, PolyEvery, PingPong, Pipelined>;
  static std::once_flag once;
  static cudaError_t attrError = cudaSuccess;
  std::call_once(once, [&] {
    attrError = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     C::kSmemBytes);
  });
  if (attrError != cudaSuccess)
    return fail(std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(attrError));
  KernelParams kp = kernelParams(pr, (pr.sq + kBlockM - 1) / kBlockM);
  CUtensorMap tmQ, tmK, tmV;
  if (makeMaps(pr, kp, kBlockM, C::kBlockN, &tmQ, &tmK, &tmV))
    return 1;
  const TiledGrid tg = tiledGrid(pr, kp.mBlocks, C::kBlockN);
  kp.headGroup = tg.headGroup;
  if (tg.dynamic)
    kp.tileCounter = tileCounters(stream);
  dim3 grid(tg.ctas);
  cudaError_t launchError = cudaLaunchKernelEx(
      launchConfig(grid, kThreads, C::kSmemBytes, stream).get(), kernel, tmQ, tmK, tmV, kp);
  cudaError_t e = launchError != cudaSuccess ? launchError : cudaGetLastError();
  if (e != cudaSuccess)
    return fail(std::string("attention launch: ") + cudaGetErrorString(e));
  return 0;
}

template <int D, bool F16, int Flags> int launchFlags(const Problem &pr, cudaStream_t stream) {
  return launch<D, F16, (Flags & kCondRescale) != 0, (Flags & kPolyExp2) ? 4 : 0,
                (Flags & kPingPong) != 0, (Flags & kPipeline) != 0>(pr, stream);
}

/// One kernel per flag set (validate() keeps flags below kAllFlags + 1).
template <int D, bool F16, int... Fs>
int dispatchFlags(const Problem &pr, cudaStream_t stream, std::integer_sequence<int, Fs...>) {
  int rc = fail("unknown flags");
  ((pr.flags == Fs ? (rc = launchFlags<D, F16, Fs>(pr, stream), 0) : 0), ...);
  return rc;
}
template <int D, bool F16> int dispatchFlags(const Problem &pr, cudaStream_t stream) {
  return dispatchFlags<D, F16>(pr, stream, std::make_integer_sequence<int, kAllFlags + 1>{});
}

} // namespace

const char *lastErrorMessage() { return lastError.c_str(); }

namespace {
/// Why the operands' strides cannot be run (null: they can). Each layout is
/// zero (contiguous) or three positive multiples of 8 elements, below 2^39
/// (TMA's strides are multiples of 16 bytes, under 2^40), and O's dims do
/// not overlap: sorted by stride, each dim starts past the extent of the
/// ones below it (its head dim's D elements first).
const char *checkLayouts(const Problem &pr) {
  struct Operand {
    const Strides &s;
    int heads, rows;
  };
  const Operand operands[] = {{pr.qStrides, pr.heads, pr.sq},
                              {pr.kStrides, pr.kvHeads, pr.skv},
                              {pr.vStrides, pr.kvHeads, pr.skv},
                              {pr.oStrides, pr.heads, pr.sq}};
  for (const Operand &op : operands) {
    const long long st[3] = {op.s.batch, op.s.head, op.s.seq};
    if (st[0] == 0 && st[1] == 0 && st[2] == 0)
      continue;
    for (long long x : st)
      if (x <= 0 || x % 8 != 0 || x >= (1ll << 39))
        return "strides must be zero (contiguous) or positive multiples of 8 elements below "
               "2^39";
  }
  const Strides o = resolveStrides(pr.oStrides, pr.heads, pr.sq, pr.headDim);
  std::pair<long long, long long> dims[3] = {
      {o.batch, pr.batch}, {o.head, pr.heads}, {o.seq, pr.sq}};
  std::sort(std::begin(dims), std::end(dims));
  long long extent = pr.headDim; // elements the dims below span
  for (auto [stride, size] : dims) {
    if (size == 1)
      continue;
    if (stride < extent)
      return "O's strides overlap (each dim must start past the extent of the smaller ones)";
    extent = stride * size;
  }
  return nullptr;
}
} // namespace

int validate(const Problem &pr) {
  if (pr.dtype != kBf16 && pr.dtype != kF16)
    return fail("dtype must be bf16 or f16");
  if (pr.headDim != 64 && pr.headDim != 128 && pr.headDim != 256)
    return fail("head dim " + std::to_string(pr.headDim) + " is not 64, 128 or 256");
  if (pr.batch < 1 || pr.heads < 1 || pr.kvHeads < 1 || pr.sq < 1 || pr.skv < 1)
    return fail("batch, heads, kv heads and sequence lengths must be positive");
  if (pr.heads % pr.kvHeads != 0)
    return fail("kv heads (" + std::to_string(pr.kvHeads) + ") must divide query heads (" +
                std::to_string(pr.heads) + ")");
  if (static_cast<long long>(pr.batch) * pr.heads > 65535)
    return fail("batch x heads must be at most 65535");
  if (static_cast<long long>(pr.batch) * pr.heads * ((pr.sq + kBlockM - 1) / kBlockM) >
      (1ll << 31) - 1)
    return fail("batch x heads x row blocks of 128 must be below 2^31");
  if (pr.ctas < 0)
    return fail("ctas must be 0 (the rule) or positive");
  if (pr.persistent < -1 || pr.persistent > 2)
    return fail("persistent must be -1 (the rule), 0, 1 or 2");
  for (const void *ptr : {pr.q, pr.k, pr.v, static_cast<const void *>(pr.o)})
    if (!ptr || reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
      return fail("Q, K, V and O must be non-null and 16-byte aligned");
  if (const char *why = checkLayouts(pr))
    return fail(why);
  if (pr.flags < 0 || pr.flags > (kAllFlags | kTiledOnly | kProgrammatic))
    return fail("flags " + std::to_string(pr.flags) + " are not a set of attention::Flags");
  if (!(pr.scale > 0.0f) || !std::isfinite(pr.scale))
    return fail("scale must be positive and finite");
  return 0;
}

namespace {
template <int D, bool F16> int launchDecode(const Problem &pr, cudaStream_t stream) {
  KernelParams kp = kernelParams(pr, pr.sq);
  dim3 grid(pr.sq, pr.batch * pr.heads);
  cudaError_t launchError =
      cudaLaunchKernelEx(launchConfig(grid, kDecodeWarps * 32, 0, stream).get(),
                         decodeKernel<D, F16>, pr.q, pr.k, pr.v, kp);
  cudaError_t e = launchError != cudaSuccess ? launchError : cudaGetLastError();
  if (e != cudaSuccess)
    return fail(std::string("attention decode launch: ") + cudaGetErrorString(e));
  return 0;
}

/// The split-KV kernel's workspace of one stream: partial O, max and sum a
/// (unit, chunk), and a counter a unit. Grown, never shrunk or freed: a CUDA
/// graph captured with a launch keeps the pointers it was given, so a buffer
/// that is outgrown stays allocated (`retired`). One a stream, because two
/// streams' launches may run at once. It may be allocated while the stream
/// is being captured (cudaMalloc is not a stream operation; torch captures
/// on a stream of its own, so the first call there is often a capture): the
/// counters are zeroed by a memset on the stream, which a capture records
/// and a replay repeats (they are zero then anyway).
struct SplitWorkspace {
  float *partO = nullptr, *partML = nullptr;
  int *counters = nullptr;
  size_t partSlots = 0, units = 0; // (unit, chunk) slots; counters
  std::vector<void *> retired;
};

std::mutex workspaceMutex;
std::map<std::pair<int, cudaStream_t>, SplitWorkspace> workspaces;

/// Workspace for `slots` (unit, chunk) pairs (of up to 256 columns) and
/// `units` counters on `stream`, or null when it cannot be had (the caller
/// runs one chunk a CTA).
SplitWorkspace *splitWorkspace(cudaStream_t stream, size_t slots, size_t units) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess)
    return nullptr;
  std::lock_guard<std::mutex> lock(workspaceMutex);
  SplitWorkspace &w = workspaces[{device, stream}];
  if (w.partO && w.partSlots >= slots && w.units >= units)
    return &w;
  // Sized for D = 256, so a problem of another head dim reuses it.
  const size_t newSlots = std::max(slots, w.partSlots), newUnits = std::max(units, w.units);
  float *o = nullptr, *ml = nullptr;
  int *counters = nullptr;
  // A capture in global or thread-local mode forbids cudaMalloc from this
  // thread; in relaxed mode it is allowed (as torch's allocator does it).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess)
    return nullptr;
  bool ok = cudaMalloc(&o, newSlots * kSplitRows * 256 * sizeof(float)) == cudaSuccess &&
            cudaMalloc(&ml, newSlots * 2 * kSplitRows * sizeof(float)) == cudaSuccess &&
            cudaMalloc(&counters, newUnits * sizeof(int)) == cudaSuccess;
  if (!ok) {
    // Nothing was launched with these. cudaFree would synchronize a capture:
    // there they are kept.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) == cudaSuccess &&
        capture == cudaStreamCaptureStatusNone) {
      cudaFree(o);
      cudaFree(ml);
      cudaFree(counters);
    }
    (void)cudaGetLastError();
  }
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (!ok || cudaMemsetAsync(counters, 0, newUnits * sizeof(int), stream) != cudaSuccess)
    return nullptr;
  for (void *old : {static_cast<void *>(w.partO), static_cast<void *>(w.partML),
                    static_cast<void *>(w.counters)})
    if (old)
      w.retired.push_back(old);
  w.partO = o;
  w.partML = ml;
  w.counters = counters;
  w.partSlots = newSlots;
  w.units = newUnits;
  return &w;
}

int smCount() {
  static int sms = [] {
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
      n = 132;
    return n;
  }();
  return sms;
}

/// FUSEC_ATTENTION_SPLITS=n forces n key chunks (measurement; 0 or unset:
/// the rule in splitPlan).
int forcedSplits() {
  static int n = [] {
    const char *e = std::getenv("FUSEC_ATTENTION_SPLITS");
    return e ? std::max(0, std::atoi(e)) : 0;
  }();
  return n;
}

template <int D, bool F16> int launchSplit(const Problem &pr, cudaStream_t stream) {
  using C = SplitConfig<D>;
  auto kernel = splitKvKernel<D, F16>;
  static std::once_flag once;
  static cudaError_t attrError = cudaSuccess;
  static int perSm = 1;
  std::call_once(once, [&] {
    attrError = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     C::kSmemBytes);
    if (attrError == cudaSuccess &&
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, kSplitThreads,
                                                      C::kSmemBytes) != cudaSuccess)
      perSm = 1;
    perSm = std::max(perSm, 1);
  });
  if (attrError != cudaSuccess)
    return fail(std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(attrError));
  KernelParams kp = kernelParams(pr, 1);
  SplitParams sp{};
  sp.rows = pr.sq * kp.groups;
  sp.rowTiles = (sp.rows + kSplitRows - 1) / kSplitRows;
  const long long units = static_cast<long long>(pr.batch) * pr.kvHeads * sp.rowTiles;
  // Chunks: as many as keep the grid within one wave of CTAs (a second,
  // partial wave would cost a whole chunk's time), each of at least
  // kSplitMinKeys keys, and so few that the combine's reads (chunks x rows
  // x D floats, by the unit's last CTA) stay within one chunk's K/V bytes
  // (chunk x D x 4): chunks^2 x rows <= Skv.
  constexpr int kSplitMinKeys = 128;
  const int rowsPerCta = std::min(sp.rows, kSplitRows);
  const long long wave = static_cast<long long>(smCount()) * perSm;
  long long splits = units >= wave ? 1 : wave / units;
  splits = std::min<long long>(splits, (pr.skv + kSplitMinKeys - 1) / kSplitMinKeys);
  splits = std::min<long long>(
      splits, static_cast<long long>(std::sqrt(static_cast<double>(pr.skv) / rowsPerCta)));
  if (forcedSplits())
    splits = forcedSplits();
  splits = std::max<long long>(1, std::min<long long>(splits, kSplitMaxSlots / rowsPerCta));
  int chunk = static_cast<int>((pr.skv + splits - 1) / splits);
  chunk = (chunk + kSplitKeys - 1) / kSplitKeys * kSplitKeys;
  sp.chunk = chunk;
  sp.splits = (pr.skv + chunk - 1) / chunk;
  if (sp.splits > 1) {
    SplitWorkspace *w = splitWorkspace(stream, static_cast<size_t>(units) * sp.splits,
                                       static_cast<size_t>(units));
    if (w) {
      sp.partO = w->partO;
      sp.partML = w->partML;
      sp.counters = w->counters;
    } else {
      sp.splits = 1; // no workspace: one chunk a CTA
      sp.chunk = (pr.skv + kSplitKeys - 1) / kSplitKeys * kSplitKeys;
    }
  }
  if (units > 65535)
    return fail("batch x kv heads x row tiles must be at most 65535 for the split-KV kernel");
  dim3 grid(sp.splits, pr.batch * pr.kvHeads, sp.rowTiles);
  cudaError_t launchError =
      cudaLaunchKernelEx(launchConfig(grid, kSplitThreads, C::kSmemBytes, stream).get(), kernel,
                         pr.q, pr.k, pr.v, kp, sp);
  cudaError_t e = launchError != cudaSuccess ? launchError : cudaGetLastError();
  if (e != cudaSuccess)
    return fail(std::string("attention split-KV launch: ") + cudaGetErrorString(e));
  return 0;
}

/// Which kernel runs a problem (forward's choice by its size).
enum class Kernel { decode, splitKv, tiled };

template <int D, bool F16>
int launchKernel(Kernel kernel, const Problem &pr, cudaStream_t stream) {
  switch (kernel) {
  case Kernel::decode:
    return launchDecode<D, F16>(pr, stream);
  case Kernel::splitKv:
    return launchSplit<D, F16>(pr, stream);
  default:
    return dispatchFlags<D, F16>(pr, stream);
  }
}

/// The compute capability's major number of the current device (0 if it
/// cannot be had).
int deviceMajor() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return major;
}

/// Blackwell (compute capability 10.x): the sm_100a kernel, one CTA a tile
/// for every problem (the decode, split-KV and persistent kernels are
/// sm_90a code). Ping-pong and pipelining are Hopper's; kCondRescale or
/// kPolyExp2 take the instance with both FlashAttention-4 ideas.
int launchBlackwell(const Problem &pr, cudaStream_t stream) {
  const bool f16 = pr.dtype == kF16;
  const int d = pr.headDim;
  KernelParams kp = kernelParams(pr, (pr.sq + sm100::kBlockRows - 1) / sm100::kBlockRows);
  CUtensorMap tmQ, tmK, tmV;
  if (makeMaps(pr, kp, sm100::kBlockRows, sm100::keyBlockRows(d), &tmQ, &tmK, &tmV))
    return 1;
  cudaError_t e = sm100::launch(d, f16, (pr.flags & (kCondRescale | kPolyExp2)) != 0, tmQ, tmK,
                                tmV, kp, stream);
  if (e != cudaSuccess)
    return fail(std::string("attention launch (sm_100a): ") + cudaGetErrorString(e));
  return 0;
}

} // namespace

int forward(const Problem &prIn, cudaStream_t stream) {
  if (validate(prIn))
    return 1;
  if (deviceMajor() == 10)
    return launchBlackwell(prIn, stream);
  Problem pr = prIn;
  const bool tiledOnly = (pr.flags & kTiledOnly) != 0;
  programmatic = (pr.flags & kProgrammatic) != 0;
  pr.flags &= kAllFlags;
  const Kernel kernel = !tiledOnly && pr.sq <= kDecodeMaxRows && pr.skv <= kDecodeMaxKeys
                            ? Kernel::decode
                        : !tiledOnly && pr.sq <= kSplitMaxRows ? Kernel::splitKv
                                                                : Kernel::tiled;
  const bool f16 = pr.dtype == kF16;
  switch (pr.headDim) {
  case 64:
    return f16 ? launchKernel<64, true>(kernel, pr, stream)
               : launchKernel<64, false>(kernel, pr, stream);
  case 128:
    return f16 ? launchKernel<128, true>(kernel, pr, stream)
               : launchKernel<128, false>(kernel, pr, stream);
  default:
    return f16 ? launchKernel<256, true>(kernel, pr, stream)
               : launchKernel<256, false>(kernel, pr, stream);
  }
}

} // namespace fusec::attention

extern "C" int fusec_attention_forward(const void *q, const void *k, const void *v, void *o,
                                       float *lse, int batch, int heads, int kvHeads, int sq,
                                       int skv, int headDim, float scale, int causal, int dtype,
                                       int flags, void *stream) {
  fusec::attention::Problem pr{q,     k,   v,       o,    lse,   batch, heads, kvHeads,
                               sq,    skv, headDim, scale, causal != 0, dtype, flags};
  return fusec::attention::forward(pr, static_cast<cudaStream_t>(stream));
}

extern "C" int fusec_attention_forward_masked(const void *q, const void *k, const void *v, void *o,
                                              float *lse, int batch, int heads, int kvHeads,
                                              int sq, int skv, int headDim, float scale,
                                              int causal, int dtype, int flags,
                                              const void *keyMask, void *stream) {
  fusec::attention::Problem pr{q,     k,   v,       o,    lse,   batch, heads, kvHeads,
                               sq,    skv, headDim, scale, causal != 0, dtype, flags, keyMask};
  return fusec::attention::forward(pr, static_cast<cudaStream_t>(stream));
}

extern "C" int fusec_attention_forward_strided(const void *q, const void *k, const void *v,
                                               void *o, float *lse, int batch, int heads,
                                               int kvHeads, int sq, int skv, int headDim,
                                               float scale, int causal, int dtype, int flags,
                                               const void *keyMask, const long long *strides,
                                               void *stream) {
  fusec::attention::Problem pr{q,     k,   v,       o,    lse,   batch, heads, kvHeads,
                               sq,    skv, headDim, scale, causal != 0, dtype, flags, keyMask};
  if (strides) {
    fusec::attention::Strides *layouts[] = {&pr.qStrides, &pr.kStrides, &pr.vStrides,
                                            &pr.oStrides};
    for (int i = 0; i < 4; ++i)
      *layouts[i] = {strides[3 * i], strides[3 * i + 1], strides[3 * i + 2]};
  }
  return fusec::attention::forward(pr, static_cast<cudaStream_t>(stream));
}

extern "C" const char *fusec_attention_last_error() {
  return fusec::attention::lastErrorMessage();
}
