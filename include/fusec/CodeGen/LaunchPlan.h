//===- LaunchPlan.h - The one place a kernel's strategy is chosen -*- C++ -*-===//
//
// `planLaunch` decides how a fusec.kernel runs on a target: its strategy
// (#fusec.launch's enum), launch shape, vector width, chunks, tile and
// shared memory. fusec-tile writes its result on every kernel; code
// generation builds what the plan says, and plans a kernel that carries
// none with this same function.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_CODEGEN_LAUNCHPLAN_H
#define FUSEC_CODEGEN_LAUNCHPLAN_H

#include "fusec/IR/Fusec.h"

#include "llvm/ADT/SmallVector.h"

#include <string>

namespace fusec {

class Target;

struct PlanOptions {
  /// Row kernels held in registers: the 16-byte chunks a thread aims to
  /// hold per operand (RowPlan.h).
  int64_t rowChunks = 4;
  /// The architecture the plan is for ("" takes the target's): only
  /// strategies it runs are chosen (wgmma needs sm_90a, tcgen05 sm_100a).
  std::string arch;
};

/// What a kernel's body iterates over, shared by the plan and the code
/// generator: the domain (the shape of its full-shape values) and, for
/// kernels with reductions, how the reduced dims sit in it.
struct KernelShape {
  enum class Kind {
    Elementwise, ///< no reduction, no matmul (movement if it moves data)
    Rows,        ///< reductions over the trailing dims
    Columns,     ///< reductions over leading dims, or dims between an outer and an inner block
    RowsApart,   ///< reductions over dims that are not adjacent
    Matmul,      ///< a matmul with its prologue and epilogue
  };
  Kind kind = Kind::Elementwise;
  llvm::SmallVector<int64_t> domain;
  bool movement = false;
  /// Reductions: the reduced extent, the number of kept positions, and (for
  /// Columns) the extent after the reduced dims.
  int64_t rowLength = 0, rows = 0, columnInner = 1;
  /// RowsApart: the kept and the reduced dims of the domain, in order.
  llvm::SmallVector<int64_t> keptDims, reducedDims;
  llvm::SmallVector<ReduceOp> reductions;
  MatmulOp matmul;
};

/// The shape analysis of `kernel` (no legality check: code generation
/// refuses what it cannot build).
KernelShape analyzeKernel(KernelOp kernel);

/// Whether the tensor-core strategies take the matmul kernel `kernel` (its
/// operands read by TMA, its epilogue elementwise or written through
/// movement ops); the reason in `why` if not.
bool matmulOnTensorCores(KernelOp kernel, std::string *why = nullptr);

/// Whether `v` is a fusec.constant splat of +0 (or integer 0): all-zero
/// bytes, as a zeroed buffer holds (the padding a matmul's store skips).
bool isZeroSplat(mlir::Value v);

/// Whether the kernel reads an argument through a transpose that moves its
/// last dim in the form transpose_tiled takes (shared-memory tiles; any
/// architecture).
bool transposeTiled(KernelOp kernel);

/// Whether code generation for `arch` builds `strategy` (the tensor-core
/// strategies are architecture-specific).
bool strategyRunsOn(Strategy strategy, const std::string &arch);

/// The launch plan of `kernel` on `target`.
LaunchAttr planLaunch(KernelOp kernel, const Target &target,
                      const PlanOptions &options = {});

} // namespace fusec

#endif // FUSEC_CODEGEN_LAUNCHPLAN_H
