//===- Matmul.h - What the tensor-core matmul strategies take ---*- C++ -*-===//
//
// The plan (Plan.cpp) and the tensor-core strategies share one reading of a
// matmul kernel: its operands as the kernel's own arguments (TMA reads them
// from global memory), M, N, K, batch dims with their broadcasts, transposes,
// the element type, and whether the rest of the body is an epilogue on the
// matmul's result (elementwise, at the result's own index). A kernel the
// reading refuses runs on matmul_simt.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CODEGEN_MATMUL_H
#define FUSEC_LIB_CODEGEN_MATMUL_H

#include "fusec/CodeGen/LaunchPlan.h"

#include <optional>
#include <string>

namespace fusec::codegen {

struct MatmulLayout {
  MatmulOp op;
  mlir::BlockArgument lhs, rhs;
  int64_t m = 0, n = 0, k = 0;
  /// The result's batch dims (outer first) and each operand's (aligned
  /// from the right with the result's; a 1 broadcasts).
  llvm::SmallVector<int64_t> batch, lhsBatch, rhsBatch;
  bool transposeLhs = false, transposeRhs = false;
  /// bf16 or f16 (both operands).
  mlir::Type element;
  int64_t batchCount() const {
    int64_t b = 1;
    for (int64_t d : batch)
      b *= d;
    return b;
  }
};

/// The tensor-core reading of a Matmul kernel, or nothing with the reason in
/// `why`.
std::optional<MatmulLayout> analyzeMatmul(KernelOp kernel, const KernelShape &shape,
                                          std::string *why = nullptr);

/// The wgmma strategy's configuration menu.
struct WgmmaTile {
  int64_t m = 128, n = 256, k = 64, stages = 4;
  /// Bytes of one pipeline stage and of the whole dynamic shared memory.
  int64_t stageBytes() const { return (m + n) * k * 2; }
};
/// Chooses the tile, stages and grid for `layout` on a target with `sms`
/// SMs and `smemBytes` of shared memory per SM.
WgmmaTile chooseWgmmaTile(const MatmulLayout &layout, int64_t sms, int64_t smemBytes);
/// Dynamic shared memory of a wgmma kernel: 1 KiB alignment slack, the
/// stages, two mbarriers a stage.
inline int64_t wgmmaSharedBytes(const WgmmaTile &t) {
  return 1024 + t.stages * t.stageBytes() + 16 * t.stages;
}

} // namespace fusec::codegen

#endif // FUSEC_LIB_CODEGEN_MATMUL_H
