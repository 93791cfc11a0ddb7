//===- attention.h - The attention forward intrinsic ------------*- C++ -*-===//
//
// The host interface of runtime_kernels/attention_sm90.cu (and, for a few
// query rows, attention_decode.cuh and attention_splitkv.cuh; on a GPU of
// compute capability 10.x, attention_sm100.cu's kernel for every problem). Q [B, Hq, Sq, D],
// K and V [B, Hkv, Skv, D], O like Q (bf16 or f16, 16-byte aligned; each
// contiguous, or in any layout whose head dim is contiguous: Problem's
// strides), LSE [B, Hq, Sq] f32 (natural log; may be null), and an optional
// key padding mask [B, Skv] of bytes.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_KERNELS_ATTENTION_H
#define FUSEC_RUNTIME_KERNELS_ATTENTION_H

#include <cuda_runtime.h>

namespace fusec::attention {

enum Dtype { kBf16 = 0, kF16 = 1 };
/// FlashAttention-4-style options, measured one by one (bench/attention.py).
enum Flags {
  kCondRescale = 1, ///< rescale O only when the row max grows past 2^8
  kPolyExp2 = 2,    ///< exp2 of one column in four by a polynomial on the FMA units
  kPingPong = 4,    ///< the two consumer warpgroups take turns at the tensor cores
  kPipeline = 8,    ///< a warpgroup's S GEMM of block j+1 overlaps its PV GEMM of block j
  kAllFlags = 15,
  /// Never the decode kernel (attention_decode.cuh), which otherwise takes
  /// problems of at most kDecodeMaxRows query rows and kDecodeMaxKeys keys,
  /// nor the split-KV kernel (attention_splitkv.cuh), which takes the
  /// others of at most kSplitMaxRows query rows.
  kTiledOnly = 16,
  /// Launched with programmatic dependent launch allowed: the kernel may
  /// start while the kernel before it in the stream drains. Every kernel
  /// lets the next one launch at its start (griddepcontrol.launch_dependents)
  /// and waits for the one before (griddepcontrol.wait) before it touches
  /// global memory, with this flag or without.
  kProgrammatic = 32,
};
/// The decode kernel reads keys one a warp at a time: it beats the tiled
/// kernel's start-up on short key ranges only. On the H200 under graph
/// replay (bench/attention.py --decode), 384 heads of one row and one key
/// took 2.2 us against the tiled kernel's 12.9; at 128 keys 11.8 against
/// 10.9, and 4 rows of 128 keys 16.6 against 10.7.
constexpr int kDecodeMaxRows = 4;
constexpr int kDecodeMaxKeys = 64;
/// The split-KV kernel (flash-decoding: a query head group's rows packed,
/// the keys cut into chunks that fill the GPU, one launch with the combine
/// done by the chunk that finishes last) takes problems of at most this
/// many query rows beyond the decode kernel's. It keeps a workspace per
/// stream (grown, never freed while the process runs, because a captured
/// CUDA graph keeps its pointers; it may be allocated during a capture); if
/// it cannot be allocated, the kernel runs one chunk per CTA instead.
constexpr int kSplitMaxRows = 16;

/// Element strides of an operand's batch, head and sequence dims; its head
/// dim (D) is contiguous. All zero: the contiguous [B, H, S, D] layout.
/// (B, S, H, D) is {S·H·D, D, H·D}. Each stride is a positive multiple of 8
/// elements (16 bytes, for TMA and vector loads); O's must not overlap.
struct Strides {
  long long batch = 0, head = 0, seq = 0;
};

struct Problem {
  const void *q, *k, *v;
  void *o;
  float *lse;
  int batch, heads, kvHeads, sq, skv, headDim;
  float scale;
  bool causal;
  int dtype; ///< Dtype
  int flags; ///< Flags
  /// [batch, skv] bytes, nonzero where a key is visible (a padding mask,
  /// on top of `causal`); null: every key is. A query row that sees no key
  /// gets zeros (and an LSE of -inf).
  const void *keyMask = nullptr;
  /// The tiled kernel's grid (measurement and tests): 0 one CTA a tile; 1 a
  /// persistent grid of one CTA an SM, each CTA computing tiles blockIdx.x,
  /// + gridDim.x, ...; 2 a persistent grid whose CTAs take tiles past the
  /// first wave from an atomic counter (dynamic); -1 takes
  /// FUSEC_ATTENTION_PERSISTENT from the environment, and when that is unset
  /// the runtime's rule (dynamic when causal, else static).
  int persistent = -1;
  /// The tiled kernel's CTAs at most, when positive (tests: a few CTAs run
  /// many tiles each).
  int ctas = 0;
  /// Heads a section of tiles holds (attention_common.cuh, tileAt), when
  /// positive; 0 takes FUSEC_ATTENTION_HEAD_GROUP, else as many heads as
  /// keep their K and V within 24 MB of L2.
  int headGroup = 0;
  /// Q's, K's, V's and O's layouts (Strides; zero: contiguous).
  Strides qStrides, kStrides, vStrides, oStrides;
};

/// `s`, or the contiguous [B, heads, rows, d] layout's strides when it is
/// all zero.
inline Strides resolveStrides(Strides s, int heads, int rows, int d) {
  if (s.batch == 0 && s.head == 0 && s.seq == 0)
    return {static_cast<long long>(heads) * rows * d, static_cast<long long>(rows) * d, d};
  return s;
}

/// The flag set the runtime uses for a head dim, from the benchmark
/// (bench/results/2026-12-04-h200-attention-persistent): kPingPong |
/// kPipeline at head dims 64 and 128; none at 256, where the plain kernel
/// was 2-6% faster in both of that session's runs.
constexpr int defaultFlags(int headDim) { return headDim == 256 ? 0 : kPingPong | kPipeline; }

/// 0, or 1 with lastErrorMessage() saying what is wrong with the problem.
int validate(const Problem &problem);
/// Validates and launches on `stream`; 0 or 1 (lastErrorMessage()).
int forward(const Problem &problem, cudaStream_t stream);
const char *lastErrorMessage();

} // namespace fusec::attention

extern "C" {
/// The C entry point (ctypes, dlsym): returns 0, or 1 with
/// fusec_attention_last_error() saying why.
int fusec_attention_forward(const void *q, const void *k, const void *v, void *o, float *lse,
                            int batch, int heads, int kvHeads, int sq, int skv, int headDim,
                            float scale, int causal, int dtype, int flags, void *stream);
/// fusec_attention_forward with a key padding mask (Problem::keyMask).
int fusec_attention_forward_masked(const void *q, const void *k, const void *v, void *o,
                                   float *lse, int batch, int heads, int kvHeads, int sq, int skv,
                                   int headDim, float scale, int causal, int dtype, int flags,
                                   const void *keyMask, void *stream);
/// fusec_attention_forward_masked in any layout: `strides` holds 12 element
/// strides, (batch, head, seq) of Q, K, V and O in turn (Problem::Strides; a
/// triple of zeros: contiguous). Null: every operand contiguous.
int fusec_attention_forward_strided(const void *q, const void *k, const void *v, void *o,
                                    float *lse, int batch, int heads, int kvHeads, int sq,
                                    int skv, int headDim, float scale, int causal, int dtype,
                                    int flags, const void *keyMask, const long long *strides,
                                    void *stream);
const char *fusec_attention_last_error();
}

#endif // FUSEC_RUNTIME_KERNELS_ATTENTION_H
