//===- CodeGen.h - fusec.kernel to PTX --------------------------*- C++ -*-===//
//
// Code generation builds each fusec.kernel as an llvm.func in MLIR's LLVM and
// NVVM dialects with OpBuilder, following the kernel's launch plan
// (#fusec.launch, written by fusec-tile), then translates it through LLVM's
// NVPTX backend to PTX. docs/CodeGen.md describes the layers and each
// strategy.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_CODEGEN_CODEGEN_H
#define FUSEC_CODEGEN_CODEGEN_H

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class ModuleOp;
template <typename OpTy>
class OwningOpRef;
} // namespace mlir

namespace fusec {

class KernelOp;
class LaunchAttr;

/// The load of tensors read once (cache hint `stream`).
enum class StreamLoad {
  Plain,      ///< ld.global.v4.u32
  NoAllocate, ///< ld.global.nc.L1::no_allocate.v4.u32
  L2_256B,    ///< ld.global.nc.L1::no_allocate.L2::256B.v4.u32
  EvictFirst, ///< ... .L2::cache_hint with an evict-first createpolicy
};
/// The load of tensors re-read by many CTAs (cache hint `keep`).
enum class KeepLoad {
  Plain,     ///< ld.global.v4.u32 (cached in L1)
  EvictLast, ///< ld.global.nc.L1::evict_last.v4.u32
  NC,        ///< ld.global.nc.v4.u32
};
std::optional<StreamLoad> parseStreamLoad(absl::string_view name);
std::optional<KeepLoad> parseKeepLoad(absl::string_view name);
const char *streamLoadName(StreamLoad load);
const char *keepLoadName(KeepLoad load);

struct PtxOptions {
  /// sm_90a (default), sm_100a or sm_80.
  std::string arch = "sm_90a";
  /// Cache-hinted loads where fusec.cache_hints asks (false: plain loads).
  bool aggressivePtx = true;
  StreamLoad streamLoad = StreamLoad::Plain;
  KeepLoad keepLoad = KeepLoad::Plain;
  /// The target (name or file) that plans a kernel carrying no
  /// fusec.launch, and whose SM count and shared memory size the launch.
  std::string target = "h200";
  /// Row kernels held in registers: the 16-byte chunks a thread aims to hold
  /// per operand, for kernels planned here.
  int64_t rowChunks = 4;
  /// Programmatic dependent launch (sm_90a, sm_100a): every kernel lets the
  /// next one launch at its start (griddepcontrol.launch_dependents) and
  /// waits for the previous one (griddepcontrol.wait) before it touches
  /// memory another kernel writes; a TMA matmul's producer first issues the
  /// loads of its first stages of operands no kernel writes (the inputs and
  /// constants listed in fusec.pdl_inputs). The JIT launches such kernels
  /// (fusec.pdl) with the overlap allowed.
  bool pdl = true;
};

/// Settings the tools take from the environment, read once at start-up
/// (`codeGenOverridesFromEnvironment`) and applied over pass options:
/// FUSEC_DISABLE_AGGRESSIVE_PTX, FUSEC_STREAM_LOAD, FUSEC_KEEP_LOAD,
/// FUSEC_ROW_CHUNKS, FUSEC_PDL. Passes never read the environment themselves.
struct CodeGenOverrides {
  bool disableAggressivePtx = false;
  bool disablePdl = false;
  std::optional<StreamLoad> streamLoad;
  std::optional<KeepLoad> keepLoad;
  std::optional<int64_t> rowChunks;
};
/// Parses the variables; an error names a variable with a bad value.
absl::StatusOr<CodeGenOverrides> codeGenOverridesFromEnvironment();
/// The process's overrides (set once by a tool's main; none by default).
const CodeGenOverrides &codeGenOverrides();
void setCodeGenOverrides(const CodeGenOverrides &overrides);

struct GeneratedKernel {
  std::string entry;
  std::string ptx;
};

/// Generates PTX for `kernel` by its fusec.launch plan (or a plan made with
/// `options.target` when it has none); kUnimplemented for kernels of a kind
/// not generated yet, naming the op.
absl::StatusOr<GeneratedKernel> generateKernel(KernelOp kernel,
                                               const PtxOptions &options);

/// The kernel as a module of LLVM and NVVM dialect ops (what generateKernel
/// translates), for reading and testing.
absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildKernelModule(KernelOp kernel, const PtxOptions &options);

} // namespace fusec

#endif // FUSEC_CODEGEN_CODEGEN_H
