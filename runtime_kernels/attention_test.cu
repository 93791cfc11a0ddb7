//===- attention_test.cu - The attention intrinsic against fp64 --*- CUDA -*-===//
//
// Runs fusec::attention::forward on fresh random inputs and compares O and
// the logsumexp with a float64 reference computed here on the CPU: head dims
// 64, 128 and 256, bf16 and f16, causal or not, GQA, ragged lengths (1, 127,
// 129, Sq > Skv with rows that see nothing), every FA4 flag. Also checks
// that bad problems are refused with a message. Layouts: Q, K, V and O
// contiguous, as (B, S, H, D), or in other orders with padded rows (the
// padding NaN, so a kernel that reads it fails). Exit 0 pass, 1 fail, 77 no
// GPU (ctest's skip code). `--quick` runs a few cases (for the sanitizers).
//
//===----------------------------------------------------------------------===//

#include "attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using fusec::attention::Problem;

struct Case {
  int batch, heads, kvHeads, sq, skv, d;
  bool causal;
  int dtype, flags;
  /// 0: no key mask; 1: random (about one key in four hidden, and batch 0's
  /// first 3); 2: padding (batch b hides its last 37 b keys, so most key
  /// blocks are wholly visible).
  int keyMask = 0;
  /// Launch inside a CUDA graph capture on a fresh stream, then replay.
  bool capture = false;
  /// The tiled kernel's grid (Problem::ctas, ::headGroup, ::persistent):
  /// with a few CTAs each runs many tiles of different lengths through one
  /// K/V ring and one Q buffer.
  int ctas = 0, headGroup = 0, persistent = -1;
  /// Operand layouts: 0 contiguous [B, H, S, D]; 1 every operand (B, S, H,
  /// D); 2 Q (S, B, H, D) with rows of D + 8, K (B, S, H, D) with D + 16,
  /// V (H, S, B, D), O (B, S, H, D) with D + 8 (Layout below).
  int layout = 0;
};

/// Where an operand's elements live: dims in memory order (outermost first;
/// 0 batch, 1 head, 2 seq) and rows of D + pad elements.
struct Layout {
  int order[3] = {0, 1, 2};
  int pad = 0;
};

Layout layoutOf(int kind, int operand) { // operand: 0 Q, 1 K, 2 V, 3 O
  if (kind == 1)
    return {{0, 2, 1}, 0};
  if (kind == 2) {
    const Layout ls[4] = {{{2, 0, 1}, 8}, {{0, 2, 1}, 16}, {{1, 2, 0}, 0}, {{0, 2, 1}, 8}};
    return ls[operand];
  }
  return {};
}

/// The strides (batch, head, seq) of `l` for dims {b, h, s} and head dim d,
/// and the elements its buffer spans.
fusec::attention::Strides stridesOf(const Layout &l, const int dims[3], int d, size_t *span) {
  long long st[3], step = d + l.pad;
  for (int i = 2; i >= 0; --i) {
    st[l.order[i]] = step;
    step *= dims[l.order[i]];
  }
  *span = static_cast<size_t>(step);
  return {st[0], st[1], st[2]};
}

/// Copies `logical` ([b][h][s][d] contiguous) into `buffer` (`st`), or back
/// when `toLogical`.
void relayout(std::vector<uint16_t> &logical, std::vector<uint16_t> &buffer,
              const fusec::attention::Strides &st, const int dims[3], int d, bool toLogical) {
  size_t i = 0;
  for (int b = 0; b < dims[0]; ++b)
    for (int h = 0; h < dims[1]; ++h)
      for (int r = 0; r < dims[2]; ++r)
        for (int e = 0; e < d; ++e, ++i) {
          uint16_t &x = buffer[b * st.batch + h * st.head + r * st.seq + e];
          if (toLogical)
            logical[i] = x;
          else
            x = logical[i];
        }
}

uint64_t rngState = 0x9E3779B97F4A7C15ull;
float uniform() { // [-1, 1)
  rngState = rngState * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<float>((rngState >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

uint16_t toBits(float x, int dtype) {
  if (dtype == fusec::attention::kBf16) {
    __nv_bfloat16 b = __float2bfloat16_rn(x);
    uint16_t u;
    std::memcpy(&u, &b, 2);
    return u;
  }
  __half h = __float2half_rn(x);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
float fromBits(uint16_t u, int dtype) {
  if (dtype == fusec::attention::kBf16) {
    __nv_bfloat16 b;
    std::memcpy(&b, &u, 2);
    return __bfloat162float(b);
  }
  __half h;
  std::memcpy(&h, &u, 2);
  return __half2float(h);
}

#define CHECK_CUDA(x)                                                                     \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      std::printf("FAIL: %s: %s\n", #x, cudaGetErrorString(e));                           \
      return false;                                                                       \
    }                                                                                     \
  } while (0)

bool run(const Case &c) {
  size_t nq = static_cast<size_t>(c.batch) * c.heads * c.sq * c.d;
  size_t nk = static_cast<size_t>(c.batch) * c.kvHeads * c.skv * c.d;
  std::vector<uint16_t> q(nq), k(nk), v(nk), o(nq);
  // Scores of a few units, so the softmax is neither flat nor one-hot.
  for (auto &x : q) x = toBits(2.0f * uniform(), c.dtype);
  for (auto &x : k) x = toBits(2.0f * uniform(), c.dtype);
  for (auto &x : v) x = toBits(uniform(), c.dtype);
  std::vector<float> lse(static_cast<size_t>(c.batch) * c.heads * c.sq);
  // About one key in four hidden, and batch 0's first 3 keys: with causal,
  // its first rows see nothing.
  std::vector<uint8_t> mask(static_cast<size_t>(c.batch) * c.skv, 1);
  if (c.keyMask == 1)
    for (size_t i = 0; i < mask.size(); ++i)
      mask[i] = (i < 3 || uniform() < -0.5f) ? 0 : 1;
  if (c.keyMask == 2)
    for (int b = 0; b < c.batch; ++b)
      for (int j = std::max(0, c.skv - 37 * b); j < c.skv; ++j)
        mask[static_cast<size_t>(b) * c.skv + j] = 0;
  void *dmask = nullptr;
  if (c.keyMask) {
    CHECK_CUDA(cudaMalloc(&dmask, mask.size()));
    CHECK_CUDA(cudaMemcpy(dmask, mask.data(), mask.size(), cudaMemcpyHostToDevice));
  }
  // Each operand in its layout, the padding NaN (0xFFFF).
  const int qDims[3] = {c.batch, c.heads, c.sq}, kDims[3] = {c.batch, c.kvHeads, c.skv};
  size_t span[4];
  fusec::attention::Strides st[4];
  const int *dimsOf[4] = {qDims, kDims, kDims, qDims};
  std::vector<uint16_t> *logical[4] = {&q, &k, &v, &o};
  std::vector<uint16_t> buffers[4];
  for (int i = 0; i < 4; ++i) {
    st[i] = stridesOf(layoutOf(c.layout, i), dimsOf[i], c.d, &span[i]);
    buffers[i].assign(span[i], 0xFFFF);
    if (i < 3)
      relayout(*logical[i], buffers[i], st[i], dimsOf[i], c.d, false);
  }
  const size_t no = span[3];
  void *dq, *dk, *dv, *dout;
  float *dlse;
  CHECK_CUDA(cudaMalloc(&dq, span[0] * 2));
  CHECK_CUDA(cudaMalloc(&dk, span[1] * 2));
  CHECK_CUDA(cudaMalloc(&dv, span[2] * 2));
  CHECK_CUDA(cudaMalloc(&dout, no * 2));
  CHECK_CUDA(cudaMalloc(&dlse, lse.size() * 4));
  CHECK_CUDA(cudaMemcpy(dq, buffers[0].data(), span[0] * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dk, buffers[1].data(), span[1] * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dv, buffers[2].data(), span[2] * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dout, 0xFF, no * 2)); // NaN: every element must be written
  float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  Problem p{dq, dk, dv, dout, dlse, c.batch, c.heads, c.kvHeads, c.sq, c.skv, c.d,
            scale, c.causal, c.dtype, c.flags, dmask};
  p.ctas = c.ctas;
  p.headGroup = c.headGroup;
  p.persistent = c.persistent;
  if (c.layout) {
    p.qStrides = st[0];
    p.kStrides = st[1];
    p.vStrides = st[2];
    p.oStrides = st[3];
  }
  if (c.capture) {
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    int rc = fusec::attention::forward(p, stream);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    if (rc != 0) {
      std::printf("FAIL: forward under capture: %s\n", fusec::attention::lastErrorMessage());
      return false;
    }
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    // Replayed three times, O reset to NaN before each: a replay that
    // found a scheduler's counters or a split workspace left dirty by the
    // one before would leave rows unwritten.
    for (int replay = 0; replay < 3; ++replay) {
      CHECK_CUDA(cudaMemsetAsync(dout, 0xFF, no * 2, stream));
      CHECK_CUDA(cudaGraphLaunch(exec, stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(stream));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  } else if (fusec::attention::forward(p, nullptr) != 0) {
    std::printf("FAIL: forward: %s\n", fusec::attention::lastErrorMessage());
    return false;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(buffers[3].data(), dout, no * 2, cudaMemcpyDeviceToHost));
  relayout(o, buffers[3], st[3], qDims, c.d, true);
  CHECK_CUDA(cudaMemcpy(lse.data(), dlse, lse.size() * 4, cudaMemcpyDeviceToHost));
  cudaFree(dq);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dout);
  cudaFree(dlse);

  // float64 reference; the tolerance is that of a bf16 / f16 output plus P
  // rounded to the input type (FlashAttention's own error).
  double tol = c.dtype == fusec::attention::kBf16 ? 2.5e-2 : 4e-3;
  double maxErr = 0, maxLseErr = 0;
  int offset = c.skv - c.sq;
  std::vector<double> s(c.skv);
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.heads; ++h) {
      int hk = h / (c.heads / c.kvHeads);
      const uint16_t *qh = &q[(static_cast<size_t>(b) * c.heads + h) * c.sq * c.d];
      const uint16_t *kh = &k[(static_cast<size_t>(b) * c.kvHeads + hk) * c.skv * c.d];
      const uint16_t *vh = &v[(static_cast<size_t>(b) * c.kvHeads + hk) * c.skv * c.d];
      const uint16_t *oh = &o[(static_cast<size_t>(b) * c.heads + h) * c.sq * c.d];
      for (int i = 0; i < c.sq; ++i) {
        int last = c.causal ? std::min(c.skv - 1, i + offset) : c.skv - 1;
        auto hidden = [&](int j) { return mask[static_cast<size_t>(b) * c.skv + j] == 0; };
        double m = -INFINITY;
        bool any = false;
        for (int j = 0; j <= last; ++j) {
          s[j] = -INFINITY;
          if (hidden(j))
            continue;
          any = true;
          double acc = 0;
          for (int e = 0; e < c.d; ++e)
            acc += static_cast<double>(fromBits(qh[i * c.d + e], c.dtype)) *
                   fromBits(kh[j * c.d + e], c.dtype);
          s[j] = acc * scale;
          m = std::max(m, s[j]);
        }
        double l = 0;
        for (int j = 0; j <= last; ++j) {
          s[j] = hidden(j) ? 0.0 : std::exp(s[j] - m);
          l += s[j];
        }
        for (int e = 0; e < c.d; ++e) {
          double ref = 0;
          for (int j = 0; j <= last; ++j)
            if (s[j] != 0.0)
              ref += s[j] / l * fromBits(vh[j * c.d + e], c.dtype);
          double got = fromBits(oh[i * c.d + e], c.dtype);
          double err = std::isnan(got) ? INFINITY : std::fabs(got - ref);
          maxErr = std::max(maxErr, err);
        }
        double refLse = any ? m + std::log(l) : -INFINITY;
        double gotLse = lse[(static_cast<size_t>(b) * c.heads + h) * c.sq + i];
        double lerr = (std::isinf(refLse) && refLse == gotLse) ? 0 : std::fabs(gotLse - refLse);
        if (std::isnan(lerr))
          lerr = INFINITY;
        maxLseErr = std::max(maxLseErr, lerr);
      }
    }
  bool ok = maxErr <= tol && maxLseErr <= 1e-3;
  std::printf("%s B=%d H=%d/%d Sq=%d Skv=%d D=%d %s%s%s %s flags=%d ctas=%d heads/section=%d "
              "persistent=%d layout=%d: max |O - ref| %.2e (tol %.1e), max |lse - ref| %.2e\n",
              ok ? "PASS" : "FAIL", c.batch, c.heads, c.kvHeads, c.sq, c.skv, c.d,
              c.causal ? "causal" : "full", c.keyMask ? "+keymask" : "",
              c.capture ? " captured" : "", c.dtype ? "f16" : "bf16", c.flags, c.ctas,
              c.headGroup, c.persistent, c.layout, maxErr, tol, maxLseErr);
  return ok;
}

bool refuses(Problem p, const char *expect) {
  bool ok = fusec::attention::forward(p, nullptr) != 0 &&
            std::strstr(fusec::attention::lastErrorMessage(), expect) != nullptr;
  std::printf("%s refuses: %s\n", ok ? "PASS" : "FAIL", fusec::attention::lastErrorMessage());
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device here\n");
    return 77;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  if (prop.major != 9 && prop.major != 10) {
    std::printf("SKIP: the attention kernels are built for sm_90a and sm_100a; this GPU is "
                "sm_%d%d\n",
                prop.major, prop.minor);
    return 77;
  }
  // On Blackwell every case runs the sm_100a kernel (one CTA a tile; the
  // grid, ping-pong and pipelining options are Hopper's): the same
  // comparisons with float64 and the same refusals. It has not run yet.
  if (prop.major == 10)
    std::printf("sm_%d%d: the Blackwell kernel (attention_sm100.cu) takes every case\n",
                prop.major, prop.minor);
  using namespace fusec::attention;
  std::vector<Case> cases;
  if (quick) {
    cases = {{1, 2, 1, 200, 333, 64, true, kBf16, kAllFlags},
             {1, 1, 1, 129, 129, 128, false, kBf16, 0},
             {1, 1, 1, 300, 250, 128, true, kBf16, kPingPong},
             {1, 1, 1, 100, 70, 256, true, kF16, kAllFlags},
             {2, 4, 2, 150, 150, 128, true, kF16, kPingPong | kPipeline, 1},
             {3, 4, 2, 400, 400, 64, true, kF16, kPingPong | kPipeline, 2},
             // The decode kernel (Sq <= kDecodeMaxRows), and the tiled one
             // on the same problem.
             {4, 4, 2, 3, 50, 128, true, kBf16, kPingPong | kPipeline, 1},
             {4, 4, 2, 3, 50, 128, true, kBf16, kPingPong | kPipeline | kTiledOnly, 1},
             // The split-KV kernel: GQA packed, several chunks combined.
             {2, 8, 2, 3, 1500, 128, true, kBf16, kPingPong | kPipeline, 1},
             {1, 4, 4, 16, 700, 64, false, kF16, kPingPong | kPipeline},
             {1, 4, 1, 2, 900, 256, true, kF16, kPingPong | kPipeline, 0, true},
             // Two CTAs run 3 x 3 x 3 tiles of 1-3 key blocks, sections
             // of two heads (the last one head).
             {3, 3, 1, 300, 300, 64, true, kBf16, kPingPong | kPipeline, 1, false, 2, 2},
             {3, 3, 1, 300, 300, 128, true, kF16, 0, 2, false, 2, 2},
             {2, 3, 3, 300, 300, 64, false, kBf16, kAllFlags, 0, true, 2, 1, 1},
             {2, 3, 3, 300, 300, 256, true, kBf16, kPingPong | kPipeline, 1, true, 3, 2, 2},
             // Layouts: (B, S, H, D), and other orders with padded rows, on
             // the tiled, decode and split-KV kernels.
             {2, 4, 2, 200, 260, 128, true, kBf16, kPingPong | kPipeline, 0, false, 0, 0, -1, 1},
             {2, 4, 2, 200, 260, 64, false, kF16, kPingPong | kPipeline, 1, false, 0, 0, -1, 2},
             {3, 4, 2, 3, 50, 128, true, kBf16, kPingPong | kPipeline, 1, false, 0, 0, -1, 2},
             {2, 8, 2, 5, 1500, 256, true, kF16, kPingPong | kPipeline, 0, false, 0, 0, -1, 2}};
  } else {
    for (int d : {64, 128, 256})
      for (bool causal : {false, true})
        for (int flags : {0, int(kCondRescale), int(kPolyExp2), int(kPingPong), int(kPipeline),
                          int(kPingPong | kPipeline), int(kAllFlags)}) {
          cases.push_back({1, 4, 2, 257, 257, d, causal, kBf16, flags});
          cases.push_back({2, 2, 2, 129, 300, d, causal, kF16, flags});
        }
    for (int d : {64, 128, 256}) {
      cases.push_back({1, 1, 1, 1, 1, d, false, kBf16, kAllFlags});
      cases.push_back({1, 2, 2, 127, 127, d, true, kBf16, kAllFlags});
      cases.push_back({1, 3, 1, 300, 50, d, true, kBf16, kAllFlags});    // rows that see nothing
      cases.push_back({1, 2, 1, 1, 1000, d, true, kF16, kAllFlags});     // decode-like
      cases.push_back({1, 2, 2, 1000, 1000, d, false, kBf16, kAllFlags});
      // A key padding mask (transformers' attention_mask), with and without
      // causal, every flag set the runtime uses.
      // Few query rows and keys: the decode kernel, and (kTiledOnly) the
      // tiled one.
      for (int tiled : {0, int(kTiledOnly)}) {
        const int flags = int(kPingPong | kPipeline) | tiled;
        cases.push_back({32, 4, 4, 1, 1, d, true, kF16, flags});     // one token, no cache
        cases.push_back({3, 6, 2, 1, 37, d, false, kBf16, flags, 1}); // GQA, a random mask
        cases.push_back({2, 4, 1, 4, 60, d, true, kF16, flags, 2});   // causal with an offset
        cases.push_back({1, 2, 2, 4, 64, d, true, kBf16, flags});     // the largest it takes
        cases.push_back({2, 2, 1, 2, 3, d, true, kBf16, flags, 1});   // rows that see nothing
      }
      // Up to kSplitMaxRows query rows beyond the decode kernel's: the
      // split-KV kernel (and, with kTiledOnly, the tiled one).
      for (int tiled : {0, int(kTiledOnly)}) {
        const int flags = int(kPingPong | kPipeline) | tiled;
        cases.push_back({2, 8, 2, 1, 4097, d, false, kBf16, flags});     // GQA 4, ragged keys
        cases.push_back({2, 4, 4, 16, 1000, d, true, kBf16, flags, 1});  // 16 rows, a mask
        cases.push_back({1, 16, 2, 16, 333, d, true, kF16, flags});      // 128 rows: 2 row tiles
        cases.push_back({2, 12, 4, 5, 777, d, true, kBf16, flags, 2});   // 15 rows, padding
        cases.push_back({2, 4, 2, 12, 8, d, true, kF16, flags, 1});      // rows that see nothing
        cases.push_back({1, 6, 6, 6, 30, d, false, kBf16, flags});       // few keys, one chunk
      }
      cases.push_back({1, 32, 8, 1, 16384, d, false, kF16, kPingPong | kPipeline}); // many chunks
      cases.push_back({1, 8, 1, 3, 70000, d, true, kBf16, kPingPong | kPipeline});  // long cache
      // Under stream capture on a stream with no workspace yet: allocated
      // then, its counters zeroed by a captured memset.
      cases.push_back({1, 8, 2, 1, 3000, d, false, kBf16, kPingPong | kPipeline, 0, true});
      // Launched with programmatic dependent launch allowed, each kernel
      // kind (tiled, decode, split-KV): each waits at its start for the
      // test's copies and kernels before it.
      const int pdl = int(kPingPong | kPipeline | kProgrammatic);
      cases.push_back({2, 4, 2, 300, 300, d, true, kF16, pdl, 1});
      cases.push_back({2, 4, 1, 4, 60, d, true, kF16, pdl, 2});
      cases.push_back({2, 4, 4, 16, 1000, d, true, kBf16, pdl, 1});
      // A persistent grid of a few CTAs, each running many tiles of
      // different lengths (causal, rows that see nothing, sections of heads
      // that do not divide the heads), against one CTA a tile.
      for (int flags : {0, int(kPingPong), int(kPingPong | kPipeline), int(kAllFlags)}) {
        cases.push_back({2, 5, 5, 700, 700, d, true, kBf16, flags, 2, false, 3, 3});
        cases.push_back({3, 4, 2, 300, 200, d, true, kF16, flags, 1, false, 5, 1});
        cases.push_back({1, 7, 7, 257, 513, d, false, kBf16, flags, 0, false, 4, 0});
      }
      // Each grid explicitly: one CTA a tile, static and dynamic persistent
      // (the dynamic scheduler's counters are reset by each launch's last
      // CTA: every case after the first reuses them).
      for (int persistent : {0, 1, 2}) {
        cases.push_back({2, 5, 5, 700, 700, d, true, kBf16, kPingPong | kPipeline, 2, false, 7, 0,
                         persistent});
        cases.push_back({1, 3, 1, 1000, 900, d, false, kF16, kPingPong | kPipeline, 0, false, 2, 2,
                         persistent});
      }
      cases.push_back({2, 6, 3, 600, 600, d, true, kF16, kPingPong | kPipeline, 0, true, 3, 4});
      // Every operand as (B, S, H, D), and in other orders with padded rows
      // (Case::layout), on each kernel kind and grid, GQA, masks, captured.
      for (int layout : {1, 2}) {
        for (int flags : {0, int(kPingPong | kPipeline), int(kAllFlags)})
          cases.push_back({2, 6, 3, 333, 333, d, true, kBf16, flags, 0, false, 0, 0, -1, layout});
        cases.push_back({3, 4, 4, 300, 700, d, false, kF16, kPingPong | kPipeline, 2, false, 0, 0,
                         1, layout});
        cases.push_back({2, 4, 2, 600, 600, d, true, kBf16, kPingPong | kPipeline, 1, true, 3, 2, 2,
                         layout});
        cases.push_back({3, 6, 2, 1, 37, d, false, kBf16, kPingPong | kPipeline, 1, false, 0, 0,
                         -1, layout}); // decode
        cases.push_back({2, 12, 4, 5, 777, d, true, kBf16, kPingPong | kPipeline, 2, false, 0, 0,
                         -1, layout}); // split-KV
        cases.push_back({1, 32, 8, 1, 16384, d, false, kF16, kPingPong | kPipeline, 0, false, 0, 0,
                         -1, layout}); // many chunks
      }
      for (int flags : {0, int(kPingPong | kPipeline), int(kAllFlags)}) {
        cases.push_back({2, 4, 2, 300, 300, d, true, kF16, flags, 1});
        cases.push_back({3, 2, 1, 129, 257, d, false, kBf16, flags, 1});
        cases.push_back({4, 2, 2, 520, 520, d, true, kF16, flags, 2});
        cases.push_back({3, 2, 1, 64, 700, d, false, kBf16, flags, 2});
      }
    }
  }
  int failed = 0;
  for (const Case &c : cases)
    failed += !run(c);
  char dummy[64] __attribute__((aligned(16)));
  Problem bad{dummy, dummy, dummy, dummy, nullptr, 1, 3, 2, 8, 8, 128, 0.1f, false, kBf16, 0};
  failed += !refuses(bad, "must divide query heads");
  bad.kvHeads = 1;
  bad.headDim = 96;
  failed += !refuses(bad, "head dim 96");
  bad.headDim = 128;
  bad.q = dummy + 2;
  failed += !refuses(bad, "16-byte aligned");
  bad.q = dummy;
  bad.flags = 64;
  failed += !refuses(bad, "flags 64");
  bad.flags = 0;
  bad.ctas = -2;
  failed += !refuses(bad, "ctas must be");
  bad.ctas = 0;
  bad.persistent = 3;
  failed += !refuses(bad, "persistent must be");
  bad.persistent = -1;
  bad.kStrides = {8 * 128, 128, 4};
  failed += !refuses(bad, "positive multiples of 8");
  bad.kStrides = {};
  bad.oStrides = {3 * 8 * 128, 128, 64}; // rows overlap (64 < D)
  failed += !refuses(bad, "O's strides overlap");
  std::printf("%s: %d of %zu cases failed\n", failed ? "FAIL" : "PASS", failed, cases.size() + 8);
  return failed ? 1 : 0;
}
