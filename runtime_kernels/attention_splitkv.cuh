//===- attention_splitkv.cuh - Split-KV attention for decode ----*- CUDA -*-===//
//
// Attention for a few query rows against many keys (decode with a KV cache:
// 1 to 16 new tokens a sequence, thousands of cached keys), in the manner of
// flash-decoding. The tiled kernel gives each query head a 128-row tile of
// its own, so at Sq = 1 it computes 127 rows of nothing and reads each key
// head once per query head; with few heads it also leaves most SMs idle.
// Here:
//
// - **GQA packed.** A CTA takes the query rows of every head of one KV head
//   together: row r of the CTA is query row r % Sq of head r / Sq of the
//   group, Sq x groups rows in all (64 a CTA; more rows take more CTAs,
//   which read the same keys, mostly from L2). K and V are read once for
//   the group.
// - **Split KV.** The keys are cut into `splits` chunks, one a CTA, chosen
//   so that the grid fills the GPU. Each CTA writes its rows' unnormalized
//   O (f32), running max and sum to a workspace; the CTA of a (head, rows)
//   that finishes last (an atomic counter, as the GEMM's split-K does)
//   combines the chunks in chunk order (the result does not depend on
//   which chunk finished last), writes O and the logsumexp, and resets the
//   counter for the next launch. One launch, no combine kernel.
// - **Tensor cores without wgmma.** Four warps, each an m16 tile of rows
//   and a share of each stage's 16-key steps: S = Q K^T and O += P V by
//   `mma.sync.m16n8k16` (f32 accumulators), operands from shared memory by
//   `ldmatrix` (V transposed by `ldmatrix.trans`); the S accumulators
//   become P's A fragments in registers. Online softmax in log2 units.
// - **Loads.** K and V by `cp.async` (16 bytes a thread, zero-filled past
//   the chunk) into a ring of stages of 64 keys, rows XOR-swizzled by 16-byte
//   chunk so that ldmatrix's eight rows fall in distinct banks.
//
// Causal masking (row i sees keys j <= i + Skv - Sq), the key padding mask,
// O and the logsumexp (natural log, -inf and zeros for a row that sees no
// key) are as in the other kernels.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_KERNELS_ATTENTION_SPLITKV_CUH
#define FUSEC_RUNTIME_KERNELS_ATTENTION_SPLITKV_CUH

#include "attention_common.cuh"

namespace fusec::attention {

constexpr int kSplitWarps = 4;
constexpr int kSplitThreads = kSplitWarps * 32;
/// Query rows a CTA (4 warps x m16).
constexpr int kSplitRows = 64;
/// Keys a stage (4 steps of 16).
constexpr int kSplitKeys = 64;
/// The combine's (chunk, row) pairs, two floats each in shared memory.
constexpr int kSplitMaxSlots = 4096;

template <int D> struct SplitConfig {
  /// D = 64: 16 KB a stage, 3 CTAs an SM; 128: 32 KB, 2 CTAs; 256: 64 KB, 1.
  static constexpr int kStages = D == 256 ? 3 : D == 128 ? 3 : 4;
  static constexpr int kRowBytes = D * 2;
  static constexpr int kStageBytes = 2 * kSplitKeys * kRowBytes; // K, then V
  static constexpr int kQBytes = kSplitRows * kRowBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + kQBytes;
  static_assert(D % 64 == 0, "rows of at least 8 chunks of 16 bytes (the swizzle)");
  static_assert((2 * kSplitMaxSlots + kSplitRows) * 4 <= kStages * kStageBytes,
                "the combine's weights fit the stages");
};

/// What the split kernel needs besides KernelParams.
struct SplitParams {
  int splits;     ///< key chunks (splits x rows a CTA at most kSplitMaxSlots)
  int chunk;      ///< keys a chunk (a multiple of kSplitKeys)
  int rows;       ///< Sq x groups: the packed rows of one KV head
  int rowTiles;   ///< ceil(rows / kSplitRows)
  float *partO;   ///< [unit][split][kSplitRows][D] (splits > 1)
  float *partML;  ///< [unit][split][2][kSplitRows]: max (log2 units), sum
  int *counters;  ///< [unit], zero between launches
};

namespace splitkv {

__device__ __forceinline__ uint32_t shared(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// The byte offset of 16-byte chunk `c` of row `r` (rows of `rowBytes`).
__device__ __forceinline__ uint32_t swizzled(int r, int c, int rowBytes) {
  return r * rowBytes + ((c ^ (r & 7)) << 4);
}

__device__ __forceinline__ void cpAsync16(uint32_t dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix4Trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// d += a b for one m16n8k16 tile, f32 accumulators.
template <bool F16>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  if constexpr (F16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

} // namespace splitkv

/// Grid (splits, B * Hkv, rowTiles), kSplitThreads threads,
/// SplitConfig<D>::kSmemBytes of dynamic shared memory.
template <int D, bool F16>
__global__ void __launch_bounds__(kSplitThreads)
    splitKvKernel(const void *q, const void *k, const void *v, const KernelParams p,
                  const SplitParams sp) {
  gridDependencyStart();
  using namespace splitkv;
  using C = SplitConfig<D>;
  constexpr int kChunks = D / 8; // 16-byte chunks a row
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t *sQ = smem + C::kStages * C::kStageBytes;

  const int split = blockIdx.x, bhKv = blockIdx.y, rowTile = blockIdx.z;
  const int b = bhKv / p.hkv, hKv = bhKv % p.hkv;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int row0 = rowTile * kSplitRows; // the CTA's first packed row
  const int rowsHere = min(kSplitRows, sp.rows - row0);
  const int kBegin = split * sp.chunk;
  // Causal: the CTA's last row sees keys up to its query row + offset.
  int kEnd = min(p.skv, kBegin + sp.chunk);
  if (p.causal) {
    int lastI = 0; // the largest query row among the CTA's rows
    for (int r = row0; r < row0 + rowsHere; ++r)
      lastI = max(lastI, r % p.sq);
    kEnd = min(kEnd, lastI + p.offset + 1);
  }
  const int nTiles = kEnd > kBegin ? (kEnd - kBegin + kSplitKeys - 1) / kSplitKeys : 0;

  const uint16_t *kRows = static_cast<const uint16_t *>(k) + rowOffset(p.ks, b, hKv, 0);
  const uint16_t *vRows = static_cast<const uint16_t *>(v) + rowOffset(p.vs, b, hKv, 0);
  auto loadTile = [&](int t) {
    if (t >= nTiles)
      return;
    uint8_t *sK = smem + (t % C::kStages) * C::kStageBytes;
    const uint32_t kBase = shared(sK), vBase = kBase + kSplitKeys * C::kRowBytes;
    const int key0 = kBegin + t * kSplitKeys;
#pragma unroll
    for (int i = tid; i < kSplitKeys * kChunks; i += kSplitThreads) {
      const int r = i / kChunks, c = i % kChunks;
      const int key = key0 + r;
      const bool valid = key < kEnd;
      const long long at = valid ? key : 0;
      const uint32_t dst = swizzled(r, c, C::kRowBytes);
      cpAsync16(kBase + dst, kRows + at * p.ks.seq + c * 8, valid);
      cpAsync16(vBase + dst, vRows + at * p.vs.seq + c * 8, valid);
    }
  };
#pragma unroll
  for (int s = 0; s < C::kStages - 1; ++s) {
    loadTile(s);
    cpAsyncCommit();
  }

  // Q: the CTA's packed rows, zeros past them.
  const uint16_t *qAll = static_cast<const uint16_t *>(q);
  for (int i = tid; i < kSplitRows * kChunks; i += kSplitThreads) {
    const int r = i / kChunks, c = i % kChunks;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r < rowsHere) {
      const int pr = row0 + r, g = pr / p.sq, qi = pr % p.sq;
      const int h = hKv * p.groups + g;
      val = *reinterpret_cast<const uint4 *>(qAll + rowOffset(p.qs, b, h, qi) + c * 8);
    }
    *reinterpret_cast<uint4 *>(sQ + swizzled(r, c, C::kRowBytes)) = val;
  }

  // Warp layout: m16 tiles of rows x groups of key steps.
  const int mTiles = rowsHere > 32 ? 4 : rowsHere > 16 ? 2 : 1;
  const int keyGroups = kSplitWarps / mTiles;
  const int mTile = warp / keyGroups, keyGroup = warp % keyGroups;
  // This thread's two rows of the tile (the accumulator layout): g and g + 8.
  const int rA = mTile * 16 + lane / 4, rB = rA + 8;
  const int qiA = (row0 + rA) % p.sq, qiB = (row0 + rB) % p.sq;
  const int lastA = p.causal ? qiA + p.offset : p.skv - 1;
  const int lastB = p.causal ? qiB + p.offset : p.skv - 1;
  const uint8_t *keys = p.keyMask ? p.keyMask + static_cast<size_t>(b) * p.skv : nullptr;

  float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
    o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

  const uint32_t qBase = shared(sQ);
  for (int t = 0; t < nTiles; ++t) {
    cpAsyncWait<C::kStages - 2>();
    __syncthreads();
    loadTile(t + C::kStages - 1);
    cpAsyncCommit();
    const uint32_t kBase = shared(smem + (t % C::kStages) * C::kStageBytes);
    const uint32_t vBase = kBase + kSplitKeys * C::kRowBytes;
    const int key0 = kBegin + t * kSplitKeys;
    for (int step = keyGroup; step < kSplitKeys / 16; step += keyGroups) {
      const int kr = step * 16; // the step's first key row in the stage
      if (key0 + kr >= kEnd)
        break;
      // S = Q K^T: two n8 tiles of 8 keys.
      float s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t a[4], bk[4];
        ldmatrix4(a, qBase + swizzled(mTile * 16 + (lane % 8) + ((lane / 8) % 2) * 8,
                                      kk * 2 + lane / 16, C::kRowBytes));
        ldmatrix4(bk, kBase + swizzled(kr + (lane % 8) + (lane / 16) * 8,
                                       kk * 2 + (lane / 8) % 2, C::kRowBytes));
        mma<F16>(s[0], a, bk[0], bk[1]);
        mma<F16>(s[1], a, bk[2], bk[3]);
      }
      // Scale to log2 units; mask keys past the chunk, the causal diagonal
      // and the padding mask.
      const int keyStep = key0 + kr;
      const bool edge = keys || keyStep + 16 > kEnd ||
                        (p.causal && keyStep + 15 > min(lastA, lastB));
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[j][e] * p.scaleLog2;
          if (edge) {
            const int key = keyStep + j * 8 + (lane % 4) * 2 + (e & 1);
            const int last = e < 2 ? lastA : lastB;
            if (key >= kEnd || key > last || (keys && !__ldg(keys + key)))
              x = -INFINITY;
          }
          s[j][e] = x;
        }
      const float maxA = quadMax(fmaxf(fmaxf(s[0][0], s[0][1]), fmaxf(s[1][0], s[1][1])));
      const float maxB = quadMax(fmaxf(fmaxf(s[0][2], s[0][3]), fmaxf(s[1][2], s[1][3])));
      const float newA = fmaxf(mA, maxA), newB = fmaxf(mB, maxB);
      // A row that has seen no key yet keeps max -inf: its p are 0.
      const float refA = newA == -INFINITY ? 0.0f : newA;
      const float refB = newB == -INFINITY ? 0.0f : newB;
      const float corrA = exp2f(mA - refA), corrB = exp2f(mB - refB);
      mA = newA;
      mB = newB;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        s[j][0] = exp2f(s[j][0] - refA);
        s[j][1] = exp2f(s[j][1] - refA);
        s[j][2] = exp2f(s[j][2] - refB);
        s[j][3] = exp2f(s[j][3] - refB);
      }
      lA = lA * corrA + s[0][0] + s[0][1] + s[1][0] + s[1][1];
      lB = lB * corrB + s[0][2] + s[0][3] + s[1][2] + s[1][3];
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][0] *= corrA;
        o[n][1] *= corrA;
        o[n][2] *= corrB;
        o[n][3] *= corrB;
      }
      // P as the A fragment (m16 x k16 keys) in the input type.
      const uint32_t pa[4] = {Elem<F16>::pack(s[0][0], s[0][1]), Elem<F16>::pack(s[0][2], s[0][3]),
                              Elem<F16>::pack(s[1][0], s[1][1]), Elem<F16>::pack(s[1][2], s[1][3])};
#pragma unroll
      for (int dd = 0; dd < D / 16; ++dd) {
        uint32_t bv[4];
        ldmatrix4Trans(bv, vBase + swizzled(kr + (lane % 8) + ((lane / 8) % 2) * 8,
                                            dd * 2 + lane / 16, C::kRowBytes));
        mma<F16>(o[2 * dd], pa, bv[0], bv[1]);
        mma<F16>(o[2 * dd + 1], pa, bv[2], bv[3]);
      }
    }
  }
  cpAsyncWait<0>();
  __syncthreads(); // the stages are free: they hold the warps' partials now

  // Combine the key groups of each m16 tile: per warp its 16 rows' max, sum
  // and O (f32) in shared memory.
  float *sO = reinterpret_cast<float *>(smem);                  // [warp][16][D]
  float *sM = sO + kSplitWarps * 16 * D, *sL = sM + kSplitWarps * 16; // [warp][16]
  static_assert(kSplitWarps * 16 * (D + 2) * 4 <= C::kStages * C::kStageBytes, "partials fit");
  lA = quadSum(lA);
  lB = quadSum(lB);
  if (lane % 4 == 0) {
    sM[warp * 16 + lane / 4] = mA;
    sM[warp * 16 + lane / 4 + 8] = mB;
    sL[warp * 16 + lane / 4] = lA;
    sL[warp * 16 + lane / 4 + 8] = lB;
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + (lane % 4) * 2;
    float *ra = sO + (warp * 16 + lane / 4) * D + col, *rb = ra + 8 * D;
    ra[0] = o[n][0];
    ra[1] = o[n][1];
    rb[0] = o[n][2];
    rb[1] = o[n][3];
  }
  __syncthreads();

  const int unit = bhKv * sp.rowTiles + rowTile;
  float *wsO = sp.partO + (static_cast<size_t>(unit) * sp.splits + split) * kSplitRows * D;
  float *wsML = sp.partML + (static_cast<size_t>(unit) * sp.splits + split) * 2 * kSplitRows;
  const bool single = sp.splits == 1;
  // Each thread takes pairs of columns of the CTA's rows.
  for (int i = tid; i < rowsHere * (D / 2); i += kSplitThreads) {
    const int r = i / (D / 2), col = (i % (D / 2)) * 2;
    const int mt = r / 16, rr = r % 16;
    float big = -INFINITY;
    for (int g = 0; g < keyGroups; ++g)
      big = fmaxf(big, sM[(mt * keyGroups + g) * 16 + rr]);
    float sum = 0.0f, x0 = 0.0f, x1 = 0.0f;
    for (int g = 0; g < keyGroups; ++g) {
      const int w = mt * keyGroups + g;
      const float m = sM[w * 16 + rr];
      if (m == -INFINITY)
        continue; // a key group that saw no key for this row
      const float f = exp2f(m - big);
      sum = fmaf(sL[w * 16 + rr], f, sum);
      x0 = fmaf(sO[(w * 16 + rr) * D + col], f, x0);
      x1 = fmaf(sO[(w * 16 + rr) * D + col + 1], f, x1);
    }
    if (single) {
      const int pr = row0 + r, g = pr / p.sq, qi = pr % p.sq;
      const size_t orow = (static_cast<size_t>(b) * p.hq + hKv * p.groups + g) * p.sq + qi;
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      *reinterpret_cast<uint32_t *>(static_cast<uint16_t *>(p.o) +
                                    rowOffset(p.os, b, hKv * p.groups + g, qi) + col) =
          Elem<F16>::pack(x0 * inv, x1 * inv);
      if (col == 0 && p.lse)
        p.lse[orow] = sum > 0.0f ? (big + log2f(sum)) * 0.69314718055994531f : -INFINITY;
    } else {
      __stcg(reinterpret_cast<float2 *>(wsO + r * D + col), make_float2(x0, x1));
      if (col == 0) {
        __stcg(wsML + r, big);
        __stcg(wsML + kSplitRows + r, sum);
      }
    }
  }
  if (single)
    return;

  // The last chunk of this (KV head, rows) to finish combines them all.
  __shared__ int isLast;
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    const int done = atomicAdd(sp.counters + unit, 1);
    isLast = done == sp.splits - 1;
  }
  __syncthreads();
  if (!isLast)
    return;
  __threadfence();
  // The combine reads splits x rows x D floats from L2: laid out so that
  // each thread has many independent loads in flight.
  // 1. Every chunk's max and sum of every row, into shared memory.
  const float *allO = sp.partO + static_cast<size_t>(unit) * sp.splits * kSplitRows * D;
  const float *allML = sp.partML + static_cast<size_t>(unit) * sp.splits * 2 * kSplitRows;
  float *cW = reinterpret_cast<float *>(smem); // [split][rowsHere]: max, then weight
  float *cL = cW + sp.splits * rowsHere;       // [split][rowsHere]: sum
  float *rowInv = cL + sp.splits * rowsHere;   // [rowsHere]
#pragma unroll 4
  for (int i = tid; i < sp.splits * rowsHere; i += kSplitThreads) {
    const int sIdx = i / rowsHere, r = i % rowsHere;
    cW[i] = __ldcg(allML + sIdx * 2 * kSplitRows + r);
    cL[i] = __ldcg(allML + sIdx * 2 * kSplitRows + kSplitRows + r);
  }
  __syncthreads();
  // 2. Each row's max and sum over the chunks (in chunk order); a chunk's
  // weight exp2(m - max) replaces its max.
  for (int r = tid; r < rowsHere; r += kSplitThreads) {
    float big = -INFINITY;
    for (int c = 0; c < sp.splits; ++c)
      big = fmaxf(big, cW[c * rowsHere + r]);
    float sum = 0.0f;
    for (int c = 0; c < sp.splits; ++c) {
      const float m = cW[c * rowsHere + r];
      const float f = m == -INFINITY ? 0.0f : exp2f(m - big);
      cW[c * rowsHere + r] = f;
      sum = fmaf(cL[c * rowsHere + r], f, sum);
    }
    rowInv[r] = sum > 0.0f ? 1.0f / sum : 0.0f;
    const int pr = row0 + r, g = pr / p.sq, qi = pr % p.sq;
    if (p.lse)
      p.lse[(static_cast<size_t>(b) * p.hq + hKv * p.groups + g) * p.sq + qi] =
          sum > 0.0f ? (big + log2f(sum)) * 0.69314718055994531f : -INFINITY;
  }
  __syncthreads();
  // 3. O: a thread takes 4 columns of every (128 / (D / 4))-th row and
  // loads 8 chunks' partials at a time.
  constexpr int kCols4 = D / 4, kRowLanes = kSplitThreads / kCols4;
  const int col = (tid % kCols4) * 4;
  for (int r = tid / kCols4; r < rowsHere; r += kRowLanes) {
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int c0 = 0; c0 < sp.splits; c0 += 8) {
      float4 x[8];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        x[u] = c0 + u < sp.splits
                   ? __ldcg(reinterpret_cast<const float4 *>(
                         allO + (static_cast<size_t>(c0 + u) * kSplitRows + r) * D + col))
                   : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const float f = c0 + u < sp.splits ? cW[(c0 + u) * rowsHere + r] : 0.0f;
        acc.x = fmaf(x[u].x, f, acc.x);
        acc.y = fmaf(x[u].y, f, acc.y);
        acc.z = fmaf(x[u].z, f, acc.z);
        acc.w = fmaf(x[u].w, f, acc.w);
      }
    }
    const float inv = rowInv[r];
    const int pr = row0 + r, g = pr / p.sq, qi = pr % p.sq;
    *reinterpret_cast<uint2 *>(static_cast<uint16_t *>(p.o) +
                               rowOffset(p.os, b, hKv * p.groups + g, qi) + col) =
        make_uint2(Elem<F16>::pack(acc.x * inv, acc.y * inv),
                   Elem<F16>::pack(acc.z * inv, acc.w * inv));
  }
  if (tid == 0)
    sp.counters[unit] = 0; // for the next launch
}

} // namespace fusec::attention

#endif // FUSEC_RUNTIME_KERNELS_ATTENTION_SPLITKV_CUH
