//===- Roofline.h - The roofline model and its report -----------*- C++ -*-===//
//
// The one C++ API through which passes ask the cost model: how long an op or
// kernel takes on a target, which roof binds it, and how far each other roof
// is. A kernel's time on each roof:
//
//   hbm    = (bytes read + bytes written at its boundary) / HBM bandwidth
//   tensor = sum over matmul/attention ops of FLOPs / tensor rate(operand type)
//   fp32   = sum over the other ops of FLOPs / FP32 rate
//   sfu    = SFU ops / (ex2 per clock per SM x SMs x clock)
//
//   predicted = max(hbm, tensor, fp32, sfu) + launch
//
// The roofs overlap perfectly (the max) because a well-built kernel keeps
// loads, tensor cores, FMA pipes and SFUs busy at once; the launch cost is
// what a kernel boundary adds. docs/Roofline.md has the report's schema.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TARGET_ROOFLINE_H
#define FUSEC_TARGET_ROOFLINE_H

#include "fusec/IR/Cost.h"
#include "fusec/Target/Target.h"

#include "absl/status/statusor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Block;
class Operation;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace fusec {

/// The roofs a kernel can be bound by.
enum class Roof { Hbm, Tensor, Fp32, Sfu };
const char *roofName(Roof roof);

/// The model's view of one kernel (a fusec.kernel, or any other op run as a
/// kernel of its own).
struct KernelAnalysis {
  std::string name;     ///< kernel name, or the op's name
  std::string location; ///< file:line:col
  int ops = 1;          ///< primitive ops it contains
  OpCost cost;          ///< boundary bytes for a fusec.kernel
  int64_t tensorFlops = 0;
  double hbmSeconds = 0, tensorSeconds = 0, fp32Seconds = 0, sfuSeconds = 0;
  double launchSeconds = 0;
  Roof bound = Roof::Hbm;
  double predictedSeconds = 0; ///< max of the roofs + launch
  double measuredSeconds = 0;  ///< a measured time, if one was given (else 0)

  double roofSeconds(Roof r) const;
  /// How many times `r`'s work could grow before it binds (inf if none).
  double headroom(Roof r) const;
};

/// Analyzes one op as the model sees it: a fusec.kernel by its boundary, any
/// other op as a kernel of its own.
KernelAnalysis analyzeOp(mlir::Operation *op, const Target &target);

/// A tensor-core GEMM kernel's epilogue: the issued instructions per output
/// element it costs the consumer warpgroups (its ops as the code generator
/// expands them, a full-shape input's load, each output's store), for the
/// kernel body `block` holding the matmul(s).
double matmulEpilogueInstructions(mlir::Block &block);

struct GraphTotals {
  int kernels = 0;
  int64_t flops = 0;
  int64_t bytes = 0;
  int64_t sfuOps = 0;
  double predictedSeconds = 0;
  /// Peak bytes of tensors alive at once, running the kernels in order
  /// (inputs and outputs included).
  int64_t peakBytes = 0;
};

struct GraphAnalysis {
  std::string function;
  std::vector<KernelAnalysis> kernels; ///< as the graph is now
  GraphTotals totals;
  std::vector<KernelAnalysis> unfused; ///< every primitive op its own kernel
  GraphTotals unfusedTotals;
};

/// The graph as it stands (top-level fusec.kernels and ops) and the same
/// graph unfused (every op inside a kernel pulled out as its own kernel).
/// Zero-cost ops (constants, reshapes) are not kernels.
GraphAnalysis analyzeFunction(mlir::func::FuncOp func, const Target &target);

/// Attaches measured kernel times to the analyses. `json` is what
/// `fusec-run --json` prints for a GPU run (an object with "function" and
/// "kernels": [{"name", "median_ms"}]), or an array of such objects, or an
/// array of {"function", "kernel" (optional when the function has one
/// kernel), "median_ms"}. Returns how many kernels got a time; an error for
/// malformed JSON or a measurement that names no kernel of the graphs.
absl::StatusOr<int> applyMeasurements(std::vector<GraphAnalysis> &graphs,
                                      const std::string &json);

std::string formatReportJson(const std::vector<GraphAnalysis> &graphs,
                             const Target &target);
std::string formatReportText(const std::vector<GraphAnalysis> &graphs,
                             const Target &target);
/// A log-log roofline of `target` with each kernel as a labelled point
/// coloured by its binding roof and the unfused ops as faint points.
std::string formatRooflineSvg(const std::vector<GraphAnalysis> &graphs,
                              const Target &target);

/// Loads the target `name` for the pass `pass`; on failure emits
/// "<pass>: <why>" at `op` and returns nothing.
std::optional<Target> loadTargetFor(mlir::Operation *op, llvm::StringRef pass,
                                    llvm::StringRef name);

/// Emits a remark at `op` saying `decision` and why, in the model's numbers:
/// "<decision>: hbm-bound, 12.6 MB in 2.97 us at 4.24 TB/s; fp32 0.02 us
/// (190x headroom), ...".
void emitRooflineRemark(mlir::Operation *op, const Target &target,
                        const llvm::Twine &decision);

} // namespace fusec

#endif // FUSEC_TARGET_ROOFLINE_H
