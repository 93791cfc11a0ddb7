//===- Interpreter.h - Reference interpreter for fusec graphs ---*- C++ -*-===//
//
// Executes any fusec graph on the CPU. Every op computes in f64 (reductions,
// matmul and attention accumulate in f64) and rounds its results to their
// storage type as the GPU would (fusec/Support/HostTensor.h). Tests run graphs
// through it before and after each pass; `fusec-run --reference` exposes it.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_INTERPRETER_INTERPRETER_H
#define FUSEC_INTERPRETER_INTERPRETER_H

#include "fusec/Support/HostTensor.h"

#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include <memory>
#include <vector>

namespace mlir {
class Attribute;
class ModuleOp;
class Type;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace fusec {

/// The storage type and shape of a ranked tensor type; an error for dynamic
/// shapes or unsupported element types.
absl::StatusOr<std::pair<DType, std::vector<int64_t>>>
tensorTypeInfo(mlir::Type type);

/// The values of a dense elements attribute (a fusec.constant's value).
absl::StatusOr<HostTensor> elementsToHostTensor(mlir::Attribute value);

/// How `interpret` evaluates.
struct InterpretOptions {
  /// Monte Carlo arithmetic (0: off): every float value an op computes is
  /// multiplied by 1 + d before it is rounded to its type, d uniform in
  /// [-perturbation, perturbation] and drawn afresh per element. Runs with
  /// perturbations of a type's unit roundoff show how far roundings of that
  /// size can move each result: the graph's conditioning at the data.
  double perturbation = 0;
  /// The perturbations' random stream.
  uint64_t seed = 0;
};

/// Runs `func` on `inputs` (one per argument, of the argument's type) and
/// returns its results. Errors name the op and its source location.
absl::StatusOr<std::vector<HostTensor>>
interpret(mlir::func::FuncOp func, absl::Span<const HostTensor> inputs,
          const InterpretOptions &options = {});
/// `interpret` on shared tensors: neither the inputs nor the results are
/// copied (the importer's folding passes masks of megabytes through it).
absl::StatusOr<std::vector<std::shared_ptr<const HostTensor>>>
interpretShared(mlir::func::FuncOp func,
                absl::Span<const std::shared_ptr<const HostTensor>> inputs);

/// Seeded random inputs for `func`'s arguments (HostTensor.h's
/// `randomTensor`). Integer arguments used as gather indices are drawn from
/// the valid index range of the table they index.
absl::StatusOr<std::vector<HostTensor>> randomInputs(mlir::func::FuncOp func,
                                                     uint64_t seed);

/// The function to run: the one named `name`, or, with an empty name, the
/// module's only public function (an error if there are several).
absl::StatusOr<mlir::func::FuncOp> findFunction(mlir::ModuleOp module,
                                                absl::string_view name);

/// Runs `function` (see findFunction) on seeded random inputs, applies the
/// textual pass `pipeline` to a clone of `module`, runs the result on the same
/// inputs and compares each output within the tolerance of its element type.
/// This is how every pass is tested to keep the graph's meaning.
absl::StatusOr<std::vector<Comparison>>
checkPipelinePreservesSemantics(mlir::ModuleOp module,
                                absl::string_view pipeline,
                                absl::string_view function, uint64_t seed);

/// The judgement of checkPipelinePreservesSemantics: runs `before` and
/// `after` (a transformed copy of it, with the same arguments; an argument
/// stored narrower is given the same values, rounded) on seeded random
/// inputs and compares each result:
/// - with `fusec.error_bound` on `after` (precision lowering), by relative
///   L2 error against the recorded first-order bound, widened by the data's
///   conditioning where the data cancel;
/// - otherwise elementwise at the tolerance of the least precise type that
///   held the result or anything it depends on, before or after. An element
///   past it passes when roundings of that type's size move it as far in
///   `before` (Monte Carlo arithmetic, InterpretOptions::perturbation: the
///   largest distance over 8 perturbed runs, times 4).
absl::StatusOr<std::vector<Comparison>>
compareFunctions(mlir::func::FuncOp before, mlir::func::FuncOp after, uint64_t seed);

/// The tolerance that judges result `index` of `func` computed by fusec
/// (the JIT's kernels) against the interpreter's: that of the least precise
/// float type among the values it depends on (a value that passed through
/// bf16 keeps bf16's rounding whatever its final type), widened where it
/// depends on `fusec.attention`: the intrinsic rounds the probabilities to
/// its input type before P·V, and each output averages values of both
/// signs, so its error is a few roundings of the input type relative to V
/// rather than to the output (the intrinsic's own tests' bound: 2.5e-2
/// for bf16, 4e-3 for f16, absolute and relative).
Tolerance resultTolerance(mlir::func::FuncOp func, unsigned index);

} // namespace fusec

#endif // FUSEC_INTERPRETER_INTERPRETER_H
