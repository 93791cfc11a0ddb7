//===- Kernels.h - PTX micro-kernels that measure a GPU's roofs -*- C++ -*-===//
//
// Each generator returns a PTX module with one entry. The kernels keep their
// data in registers (or shared memory for wgmma) so that one unit is the
// limit, and write one value at the end so that nothing is optimized away.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TOOLS_CALIBRATE_KERNELS_H
#define FUSEC_TOOLS_CALIBRATE_KERNELS_H

#include <string>

namespace fusec::calibrate {

/// The 16-byte loads the code generator can use for tensors read once, and
/// for tensors many CTAs re-read (fusec/CodeGen/CodeGen.h); their names are
/// the target file's codegen choices.
enum class StreamVariant { Plain, NoAllocate, L2_256B, EvictFirst };
enum class KeepVariant { Plain, EvictLast, NC };
const char *streamVariantName(StreamVariant v);
const char *keepVariantName(KeepVariant v);

/// copy(src, dst, n16): dst[i] = src[i] for i < n16 16-byte vectors,
/// grid-stride, four loads in flight per thread, each with `load`.
std::string copyPtx(StreamVariant load = StreamVariant::Plain);

/// keep(src, g, dst, n16, mask): dst[i] = src[i] + g[i & mask] as u32 words;
/// g's loads use `load`.
std::string keepPtx(KeepVariant load);

/// fma(out, iters): kChains independent fma.rn.f32 chains per thread,
/// `iters` steps each: 2 * kChains * iters FLOPs a thread.
std::string fmaPtx();
constexpr int kFmaChains = 8;

/// ex2(out, iters): kChains independent ex2.approx.ftz.f32 chains per thread:
/// kChains * iters SFU ops a thread.
std::string ex2Ptx();
constexpr int kEx2Chains = 8;

/// wgmma(out, iters): each 128-thread warpgroup issues `iters` x kWgmmaUnroll
/// wgmma.mma_async m64n256k16 bf16 -> f32 from shared memory:
/// 2*64*256*16 FLOPs each. sm_90a.
std::string wgmmaPtx();
constexpr int kWgmmaUnroll = 4;
constexpr double kWgmmaFlops = 2.0 * 64 * 256 * 16;

/// empty(): returns at once (launch gaps).
std::string emptyPtx();

} // namespace fusec::calibrate

#endif // FUSEC_TOOLS_CALIBRATE_KERNELS_H
