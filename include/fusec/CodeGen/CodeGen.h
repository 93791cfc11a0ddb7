//===- CodeGen.h - fusec.kernel to PTX --------------------------*- C++ -*-===//
//
// Lowers a fusec.kernel to a kernel in MLIR's LLVM and NVVM dialects, then
// through LLVM's NVPTX backend to PTX, in f32, bf16, f16, i32, i64 and i1:
// elementwise and broadcast kernels with several outputs, movement (reshape,
// transpose, slice, concat, gather as index maps), float reductions over the
// trailing dims (the row held in registers, or streamed with online softmax
// and Welford), over leading or middle dims (columns) and over dims apart
// (a warp per kept position, elements found by their coordinates), and
// float matmuls with their epilogues as a SIMT fallback (a thread per output
// element, an f32 fma loop over K). Attention and fp8 are refused with
// kUnimplemented.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_CODEGEN_CODEGEN_H
#define FUSEC_CODEGEN_CODEGEN_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>

namespace fusec {

class KernelOp;

struct PtxOptions {
  /// sm_90a (default), sm_100a or sm_80.
  std::string arch = "sm_90a";
  /// Cache-hinted loads where fusec.cache_hints asks (false: plain loads).
  bool aggressivePtx = true;
  /// The load for tensors read once ("stream"): "plain" (ld.global.v4),
  /// "no_allocate" (ld.global.nc.L1::no_allocate), "l2_256b" (... .L2::256B)
  /// or "evict_first" (... .L2::cache_hint with an evict-first policy).
  /// FUSEC_STREAM_LOAD overrides it. Plain is the default because it measured
  /// fastest on the H200 (bench/results/2026-11-30-h200-codegen-elementwise:
  /// 4.12 TB/s against 3.77-3.83 for the .nc variants).
  std::string streamLoad = "plain";
  /// The load for tensors re-read by many CTAs ("keep", e.g. layer_norm's
  /// gamma): "plain" (ld.global.v4, cached in L1), "evict_last"
  /// (ld.global.nc.L1::evict_last) or "nc" (ld.global.nc). FUSEC_KEEP_LOAD
  /// overrides it. Plain is the default: evict_last cost layer_norm 16% on
  /// the H200 (bench/results/2026-11-30-h200-rows-in-registers).
  std::string keepLoad = "plain";
  /// Row kernels held in registers: the 16-byte chunks a thread aims to
  /// hold per operand (the threads per row grow, up to 1024, until the row
  /// fits in that many). FUSEC_ROW_CHUNKS (1-16) overrides it.
  int rowChunks = 4;
};

struct GeneratedKernel {
  std::string entry;
  std::string ptx;
  /// The kernel in MLIR's LLVM/NVVM dialects, before translation.
  std::string llvmDialect;
  int64_t grid = 1, block = 256;
  /// How the kernel iterates: "elementwise"; "row_warp" / "row_cta" (a warp
  /// or a CTA per row, the row held in registers and read once);
  /// "row_stream" (a warp per row, one pass over the row per reduction, for
  /// rows too long for registers, or reduced dims apart); "column";
  /// "movement"; "matmul_simt" (a thread per output element; no tensor
  /// cores).
  std::string strategy = "elementwise";
};

/// Generates PTX for `kernel`; kUnimplemented for kernels of a kind not
/// generated yet, saying which op.
absl::StatusOr<GeneratedKernel> generateKernel(KernelOp kernel,
                                               const PtxOptions &options);

} // namespace fusec

#endif // FUSEC_CODEGEN_CODEGEN_H
