//===- attention_sm100.h - The Blackwell kernel's launch --------*- C++ -*-===//
//
// What attention_sm90.cu's forward() calls on a GPU of compute capability
// 10.x (B200): the Blackwell kernel of attention_sm100.cu, one CTA a tile of
// 128 query rows, with the tensor maps and parameters the Hopper side
// builds. Its object is compiled for sm_100a only; this was written and
// assembled without a Blackwell GPU and has not run.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_KERNELS_ATTENTION_SM100_H
#define FUSEC_RUNTIME_KERNELS_ATTENTION_SM100_H

#include "attention_common.cuh"

#include <cuda.h>
#include <cuda_runtime.h>

namespace fusec::attention::sm100 {

/// Query rows a tile (the Q map's box rows).
constexpr int kBlockRows = 128;
/// Key rows a K or V block (the K and V maps' box rows) at `headDim`.
constexpr int keyBlockRows(int headDim) { return headDim <= 128 ? 128 : 64; }

/// Launches the kernel for head dim 64, 128 or 256 on `stream`: grid
/// (kp.mBlocks, kp.bhCount), one CTA a tile. `fa4` takes the instance with
/// conditional rescaling and one exp2 in four by a polynomial (the two
/// FlashAttention-4 ideas together), else the plain one. The maps are 4-D
/// over [batch, heads, rows, D] (KernelParams' strides) with boxes of 64 x kBlockRows (Q) and 64 x
/// keyBlockRows (K, V), 128-byte swizzle.
cudaError_t launch(int headDim, bool f16, bool fa4, const CUtensorMap &q, const CUtensorMap &k,
                   const CUtensorMap &v, const KernelParams &kp, cudaStream_t stream);

} // namespace fusec::attention::sm100

#endif // FUSEC_RUNTIME_KERNELS_ATTENTION_SM100_H
