//===- sm90_ptx_test.cu - One test per wrapper of sm90_ptx.cuh --*- CUDA -*-===//
//
// fusec-sm90-ptx-tests: each inline-PTX wrapper the runtime kernels use, on
// the GPU, against values computed here: ex2 and ex2Poly; an mbarrier's two
// phases; a TMA box load with its 128-byte swizzle and zero fill; wgmma with
// both operands in shared memory (K-major, the descriptor advanced along K)
// and with A in registers and B transposed; setmaxnreg with named barriers
// handing turns between two warpgroups. Exit 0 pass, 1 fail, 77 no Hopper GPU.
//
//===----------------------------------------------------------------------===//

#include "sm90_ptx.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace fusec::ptx;

namespace {

int failures = 0;
void check(bool ok, const char *what, const char *detail = "") {
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, *detail ? ": " : "", detail);
  failures += !ok;
}

#define CUDA_OK(x)                                                                        \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::printf("FAIL %s: %s\n", #x, cudaGetErrorString(e_));                           \
      ++failures;                                                                         \
      return;                                                                             \
    }                                                                                     \
  } while (0)

/// Byte offset of element (row, col) of a tile of 128-byte rows in the
/// 128-byte swizzle: the 16-byte chunk index XOR the row within its 8-row atom.
__host__ __device__ int swizzled(int row, int col) {
  int byte = col * 2;
  return row * 128 + ((((byte / 16) ^ (row % 8)) * 16) | (byte % 16));
}

//===-- ex2 ---------------------------------------------------------------===//

__global__ void ex2Kernel(const float *x, float *sfu, float *poly, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    sfu[i] = ex2(x[i]);
    poly[i] = ex2Poly(x[i]);
  }
}

void testEx2() {
  std::vector<float> x;
  for (float v = -130.0f; v <= 20.0f; v += 0.01171875f)
    x.push_back(v);
  int n = static_cast<int>(x.size());
  float *dx, *ds, *dp;
  CUDA_OK(cudaMalloc(&dx, n * 4));
  CUDA_OK(cudaMalloc(&ds, n * 4));
  CUDA_OK(cudaMalloc(&dp, n * 4));
  CUDA_OK(cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice));
  ex2Kernel<<<(n + 255) / 256, 256>>>(dx, ds, dp, n);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> s(n), p(n);
  CUDA_OK(cudaMemcpy(s.data(), ds, n * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(p.data(), dp, n * 4, cudaMemcpyDeviceToHost));
  double worstS = 0, worstP = 0;
  bool underflow = true;
  for (int i = 0; i < n; ++i) {
    double want = std::exp2(static_cast<double>(x[i]));
    if (x[i] < -127.0f) {
      underflow &= p[i] == 0.0f;
      continue;
    }
    if (x[i] < -126.0f) // ftz: ex2.approx flushes subnormal results
      continue;
    worstS = std::max(worstS, std::fabs(s[i] / want - 1));
    worstP = std::max(worstP, std::fabs(p[i] / want - 1));
  }
  char buf[160];
  std::snprintf(buf, sizeof(buf), "max relative error %.2e over %d points", worstS, n);
  check(worstS < 4e-7, "ex2 (SFU)", buf);
  std::snprintf(buf, sizeof(buf), "max relative error %.2e (bf16 needs < 3.9e-3)", worstP);
  check(worstP < 2e-4, "ex2Poly (FMA units)", buf);
  check(underflow, "ex2Poly below -127 is 0");
  cudaFree(dx);
  cudaFree(ds);
  cudaFree(dp);
}

//===-- mbarrier ----------------------------------------------------------===//

__global__ void mbarrierKernel(int *out) {
  __shared__ uint64_t bar;
  __shared__ int slots[128];
  if (threadIdx.x == 0) {
    mbarrierInit(&bar, 128);
    fenceBarrierInit();
  }
  __syncthreads();
  int t = threadIdx.x;
  // Phase 0: every thread writes its slot, arrives; after the wait each
  // sees every slot.
  slots[t] = t + 1;
  mbarrierArrive(&bar);
  mbarrierWait(&bar, 0);
  int sum = 0;
  for (int i = 0; i < 128; ++i)
    sum += slots[i];
  __syncthreads();
  // Phase 1: again, with new values.
  slots[t] = 2 * (t + 1);
  mbarrierArrive(&bar);
  mbarrierWait(&bar, 1);
  int sum2 = 0;
  for (int i = 0; i < 128; ++i)
    sum2 += slots[i];
  out[t] = sum == 128 * 129 / 2 && sum2 == 128 * 129 ? 1 : 0;
}

void testMbarrier() {
  int *d;
  CUDA_OK(cudaMalloc(&d, 128 * 4));
  mbarrierKernel<<<1, 128>>>(d);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<int> h(128);
  CUDA_OK(cudaMemcpy(h.data(), d, 128 * 4, cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int v : h)
    ok &= v == 1;
  check(ok, "mbarrier: two phases, every arrival's writes visible after the wait");
  cudaFree(d);
}

//===-- TMA ---------------------------------------------------------------===//

__global__ void tmaKernel(const __grid_constant__ CUtensorMap map, uint16_t *out) {
  __shared__ __align__(1024) uint8_t tile[128 * 128];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) {
    mbarrierInit(&bar, 1);
    fenceBarrierInit();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrierArriveExpectTx(&bar, sizeof(tile));
    tmaLoad3d(tile, &map, &bar, 0, 50, 1); // rows 50..177 of head 1
  }
  mbarrierWait(&bar, 0);
  for (int i = threadIdx.x; i < 128 * 64; i += blockDim.x) {
    int r = i / 64, c = i % 64;
    out[i] = *reinterpret_cast<const uint16_t *>(tile + swizzled(r, c));
  }
}

void testTma() {
  const int heads = 3, rows = 100, cols = 64;
  std::vector<uint16_t> h(heads * rows * cols);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = static_cast<uint16_t>(i % 65521 + 1);
  uint16_t *dsrc, *dout;
  CUDA_OK(cudaMalloc(&dsrc, h.size() * 2));
  CUDA_OK(cudaMalloc(&dout, 128 * 64 * 2));
  CUDA_OK(cudaMemcpy(dsrc, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                           cudaEnableDefault, &q));
  auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  CUtensorMap map;
  cuuint64_t dims[3] = {cols, rows, heads};
  cuuint64_t strides[2] = {cols * 2, static_cast<cuuint64_t>(rows) * cols * 2};
  cuuint32_t box[3] = {64, 128, 1}, es[3] = {1, 1, 1};
  CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dsrc, dims, strides, box, es,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  check(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled");
  tmaKernel<<<1, 128>>>(map, dout);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<uint16_t> got(128 * 64);
  CUDA_OK(cudaMemcpy(got.data(), dout, got.size() * 2, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int rr = 0; rr < 128; ++rr)
    for (int c = 0; c < 64; ++c) {
      int row = 50 + rr;
      uint16_t want = row < rows ? h[(1 * rows + row) * cols + c] : 0;
      bad += got[rr * 64 + c] != want;
    }
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%d of 8192 elements wrong", bad);
  check(bad == 0, "TMA 3-D box load, 128-byte swizzle, zero fill past the rows", buf);
  cudaFree(dsrc);
  cudaFree(dout);
}

//===-- wgmma -------------------------------------------------------------===//

// D[64x64] = A[64x64] B[64x64] (K = 64 in four k16 steps). SS: A and Bᵀ
// (B stored N x K) K-major in shared memory. RS: A in registers in the
// accumulator layout; B stored K x N (MN-major, transposed by wgmma).
template <bool RS> __global__ void wgmmaKernel(const float *a, const float *b, float *d) {
  __shared__ __align__(1024) uint8_t sA[64 * 128];
  __shared__ __align__(1024) uint8_t sB[64 * 128];
  int t = threadIdx.x;
  for (int i = t; i < 64 * 64; i += 128) {
    int r = i / 64, c = i % 64;
    *reinterpret_cast<__nv_bfloat16 *>(sA + swizzled(r, c)) = __float2bfloat16(a[r * 64 + c]);
    // SS: row n of Bᵀ holds B[:, n]; RS: row k of B.
    float bv = RS ? b[r * 64 + c] : b[c * 64 + r];
    *reinterpret_cast<__nv_bfloat16 *>(sB + swizzled(r, c)) = __float2bfloat16(bv);
  }
  fenceProxyAsyncShared();
  __syncthreads();
  int warp = t / 32, lane = t % 32;
  float acc[32];
  for (int i = 0; i < 32; ++i)
    acc[i] = 0.0f;
  wgmmaFence();
  if constexpr (!RS) {
    for (int kk = 0; kk < 4; ++kk)
      wgmma_ss<64, false>(acc, matrixDescriptor(sA + kk * 32, 16, 1024),
                          matrixDescriptor(sB + kk * 32, 16, 1024), kk > 0);
  } else {
    uint32_t frag[4][4];
    int r0 = warp * 16 + lane / 4, k0 = 2 * (lane % 4);
    auto pack = [&](int r, int k) {
      __nv_bfloat162 v = __floats2bfloat162_rn(a[r * 64 + k], a[r * 64 + k + 1]);
      return *reinterpret_cast<uint32_t *>(&v);
    };
    for (int kk = 0; kk < 4; ++kk) {
      frag[kk][0] = pack(r0, 16 * kk + k0);
      frag[kk][1] = pack(r0 + 8, 16 * kk + k0);
      frag[kk][2] = pack(r0, 16 * kk + k0 + 8);
      frag[kk][3] = pack(r0 + 8, 16 * kk + k0 + 8);
    }
    fenceRegisters(frag);
    wgmmaFence();
    for (int kk = 0; kk < 4; ++kk)
      wgmma_rs<64, false>(acc, frag[kk], matrixDescriptor(sB + kk * 16 * 128, 64 * 128, 1024), 1);
  }
  wgmmaCommit();
  wgmmaWait<0>();
  fenceRegisters(acc);
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 2; ++i)
      for (int e = 0; e < 2; ++e) {
        int row = warp * 16 + lane / 4 + 8 * i, col = 8 * j + 2 * (lane % 4) + e;
        d[row * 64 + col] = acc[4 * j + 2 * i + e];
      }
}

template <bool RS> void testWgmma() {
  std::vector<float> a(64 * 64), b(64 * 64), want(64 * 64, 0.0);
  for (int i = 0; i < 64 * 64; ++i) {
    a[i] = static_cast<float>((i * 7 + 3) % 9 - 4);  // small integers: exact in bf16
    b[i] = static_cast<float>((i * 5 + 1) % 7 - 3);
  }
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c)
      for (int k = 0; k < 64; ++k)
        want[r * 64 + c] += a[r * 64 + k] * b[k * 64 + c];
  float *da, *db, *dd;
  CUDA_OK(cudaMalloc(&da, a.size() * 4));
  CUDA_OK(cudaMalloc(&db, b.size() * 4));
  CUDA_OK(cudaMalloc(&dd, want.size() * 4));
  CUDA_OK(cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  wgmmaKernel<RS><<<1, 128>>>(da, db, dd);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> got(want.size());
  CUDA_OK(cudaMemcpy(got.data(), dd, got.size() * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    bad += got[i] != want[i];
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%d of 4096 elements wrong", bad);
  check(bad == 0,
        RS ? "wgmma m64n64k16, A in registers, B transposed (MN-major) in shared memory"
           : "wgmma m64n64k16, A and B K-major in shared memory, descriptor advanced along K",
        buf);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
}

//===-- setmaxnreg and named barriers -------------------------------------===//

__global__ void __launch_bounds__(384, 1) turnsKernel(int *order) {
  __shared__ int next;
  if (threadIdx.x == 0)
    next = 0;
  __syncthreads();
  int wg = threadIdx.x / 128;
  if (wg == 0) {
    setMaxRegsDec<40>();
    return;
  }
  setMaxRegsInc<232>();
  int me = wg - 1;
  // Consumer 0 goes first (1 arrives for it); each hands the turn to the
  // other, 8 turns each.
  if (me == 1)
    namedBarrierArrive(1, 256);
  for (int turn = 0; turn < 8; ++turn) {
    namedBarrierSync(1 + me, 256);
    if (threadIdx.x % 128 == 0)
      order[next++] = me;
    __threadfence_block();
    namedBarrierArrive(1 + (1 - me), 256);
  }
  if (me == 0)
    namedBarrierSync(1, 256);
}

void testTurns() {
  int *d;
  CUDA_OK(cudaMalloc(&d, 16 * 4));
  CUDA_OK(cudaMemset(d, 0xFF, 16 * 4));
  turnsKernel<<<1, 384>>>(d);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<int> h(16);
  CUDA_OK(cudaMemcpy(h.data(), d, 16 * 4, cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int i = 0; i < 16; ++i)
    ok &= h[i] == i % 2;
  check(ok, "setmaxnreg (40 / 232) and named barriers: 16 turns, alternating");
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device here\n");
    return 77;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  if (prop.major != 9) {
    std::printf("SKIP: these wrappers are sm_90a; this GPU is sm_%d%d\n", prop.major,
                prop.minor);
    return 77;
  }
  testEx2();
  testMbarrier();
  testTma();
  testWgmma<false>();
  testWgmma<true>();
  testTurns();
  std::printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
