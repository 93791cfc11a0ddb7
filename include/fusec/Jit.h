//===- Jit.h - Embedding fusec: compile a graph, run it ---------*- C++ -*-===//
//
// The API a C++ program embeds. `fusec::Jit` compiles a graph (fusec dialect
// text) into an `Executable` that runs on device buffers on a stream.
// Compiled kernels are cached in memory and on disk (KernelCache.h), and a
// second compile of the same graph with the same options returns the same
// Executable without parsing anything.
//
// Until fusec's own code generation lands, every op of the graph's function
// must sit in a `fusec.kernel` that carries its PTX:
//
//   %r = fusec.kernel "vadd" (%a, %b) {fusec.ptx = "...", fusec.entry = "vadd",
//                                      fusec.grid = array<i64: 4096>,
//                                      fusec.block = array<i64: 256>}
//        : (tensor<1048576xf32>, tensor<1048576xf32>) -> tensor<1048576xf32> {...}
//
// The kernel's parameters are the device pointers of its operands, then of its
// results. `fusec.constant`s outside kernels are uploaded once, at compile
// time. This API does not change when code generation arrives.
//
// Public headers use abseil types only, no LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_JIT_H
#define FUSEC_JIT_H

#include "fusec/IR/Cost.h"
#include "fusec/Runtime/KernelCache.h"
#include "fusec/Runtime/Runtime.h"
#include "fusec/Support/HostTensor.h"

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fusec {

struct JitOptions {
  /// "sm_90a", "sm_100a", ...; empty: the GPU present (sm_90a without one).
  std::string target;
  /// The function to compile; empty: the module's only public function.
  std::string function;
  /// Allow aggressive PTX (cache-hinted loads); part of the cache key.
  bool aggressivePtx = true;
  /// Programmatic dependent launch between the kernels of a run (sm_90 on):
  /// each kernel starts while the one before it drains, and a matmul loads
  /// its first stages of weights (inputs, constants) before it waits.
  /// In the tools (fusec-run), FUSEC_PDL=0 in the environment turns it off
  /// too (codeGenOverridesFromEnvironment).
  bool pdl = true;
  /// The loads of tensors read once and of tensors re-read by many CTAs
  /// (--fusec-codegen's stream-load and keep-load); empty: the target's
  /// measured choice. Part of the cache key.
  std::string streamLoad, keepLoad;
  /// Rows held in registers: the 16-byte chunks a thread aims to hold
  /// (1-16); 0: the default (4).
  int64_t rowChunks = 0;
  /// The roofline target each kernel's predicted time is taken from
  /// (KernelStats::predictedSeconds): a name (h200-measured, h200, b200, ...)
  /// or a target file; empty: h200-measured for sm_90, b200 for sm_100,
  /// none otherwise.
  std::string rooflineTarget;
  /// Storage precision of the graph's float tensors: "" or "fp32" (as
  /// written), "bf16" or "fp16": fusec-lower-precision lowers f32 tensors
  /// where its error bound (maxRelError) allows. Part of the cache key.
  std::string precision;
  double maxRelError = 0.05;
  /// Replay repeated runs as CUDA graphs (Executable::run).
  bool graphReplay = true;
  rt::KernelCacheOptions cache;
};

/// The type of an input or output.
struct TensorSpec {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t bytes() const { return elementCount(shape) * dtypeBytes(dtype); }
};

/// One kernel of an Executable, with its roofline cost.
struct KernelStats {
  std::string name;
  OpCost cost;
  /// How the generated kernel iterates (fusec.strategy): elementwise,
  /// row_warp, row_cta, row_stream, ...; empty for hand-written PTX.
  std::string strategy;
  /// The roofline model's time for the kernel on JitOptions::rooflineTarget,
  /// launch included, and its binding roof (0 and empty without a target).
  double predictedSeconds = 0;
  std::string bound;
};

/// A compiled graph. run() may be called from any thread, on any stream;
/// runs of one Executable are serialized (it owns its intermediate buffers):
/// on the host by a lock, on the device by an event each run's stream waits
/// for, recorded at the end of the run before.
class Executable {
public:
  ~Executable();
  const std::vector<TensorSpec> &inputs() const;
  const std::vector<TensorSpec> &outputs() const;
  const std::vector<KernelStats> &kernels() const;
  const std::string &target() const;
  /// The compiled function's name (without '@').
  const std::string &function() const;

  /// Enqueues the graph on `stream`: reads `inputs`, writes `outputs` (each
  /// at least as large as its spec). Returns when enqueued, not when done.
  /// With JitOptions::graphReplay, a run whose buffers are those of the run
  /// before captures its launches as a CUDA graph, and every later run with
  /// those buffers replays it with one launch (up to four buffer sets are
  /// kept); other runs launch kernel by kernel. The graph reads the buffers'
  /// contents at replay time, as direct launches do.
  absl::Status run(absl::Span<const rt::DeviceBuffer *const> inputs,
                   absl::Span<rt::DeviceBuffer *const> outputs,
                   const rt::Stream &stream);
  /// Device-to-device copies into the outputs at the end of each run: an
  /// output the kernels cannot write in place (a returned argument or
  /// constant, a value returned twice). A returned reshape of a kernel's
  /// result is written in place.
  int outputCopies() const;
  /// Runs served by a CUDA graph so far, and why replay was turned off (a
  /// capture that failed; empty while it is on).
  int64_t graphLaunches() const;
  std::string graphReplayError() const;
  /// Kernel launches made with programmatic dependent launch allowed (each
  /// overlapping the kernel before it; a captured graph's count once, when
  /// it is captured).
  int64_t programmaticLaunches() const;
  /// Runs to completion, timing each kernel with CUDA events:
  /// (*kernelMs)[i] is kernels()[i]'s time in milliseconds.
  absl::Status runTimed(absl::Span<const rt::DeviceBuffer *const> inputs,
                        absl::Span<rt::DeviceBuffer *const> outputs,
                        const rt::Stream &stream, std::vector<float> *kernelMs);

  struct Impl;
  explicit Executable(std::unique_ptr<Impl> impl);

private:
  absl::Status runLocked(absl::Span<const rt::DeviceBuffer *const> inputs,
                         absl::Span<rt::DeviceBuffer *const> outputs, const rt::Stream &stream);
  std::unique_ptr<Impl> impl;
};

class Jit {
public:
  static absl::StatusOr<std::unique_ptr<Jit>> create(JitOptions options = {});
  ~Jit();

  /// Compiles `mlirText` (a module in the fusec dialect). Errors carry the
  /// source location within `sourceName`. Thread-safe; concurrent compiles of
  /// one graph compile it once, and a failed compile is not cached.
  absl::StatusOr<std::shared_ptr<Executable>>
  compile(absl::string_view mlirText, absl::string_view sourceName = "<graph>");

  /// Imports an ONNX model (a file, or its serialized bytes) and compiles
  /// it for the given input shapes, which bind dynamic dims (batch,
  /// sequence); an input with a dynamic dim and no shape is an error naming
  /// it. Inputs and outputs are the graph's, in order (Executable::inputs).
  /// One Executable per model and shapes: a second call with the same
  /// shapes is a hit, another shape compiles once more.
  using InputShapes = std::map<std::string, std::vector<int64_t>>;
  absl::StatusOr<std::shared_ptr<Executable>> compileOnnxFile(const std::string &path,
                                                              const InputShapes &shapes = {});
  absl::StatusOr<std::shared_ptr<Executable>> compileOnnx(absl::string_view modelBytes,
                                                          const InputShapes &shapes = {},
                                                          const std::string &baseDir = "");

  /// Kernel binary cache counters, and how many compile() calls were served
  /// by an Executable already built.
  rt::KernelCacheStats cacheStats() const;
  int64_t executableHits() const;
  const JitOptions &options() const;

  struct Impl;

private:
  explicit Jit(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace fusec

#endif // FUSEC_JIT_H
