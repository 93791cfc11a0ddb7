//===- Strategies.h - One file per code-generation strategy -----*- C++ -*-===//
//
// Each strategy builds a kernel's llvm.func as its #fusec.launch says. To add
// one: a case in the Strategy enum (FusecAttrs.td), its rule in planLaunch
// (Plan.cpp), a file here with its emitter, and its line in CodeGen.cpp's
// dispatch.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CODEGEN_STRATEGIES_STRATEGIES_H
#define FUSEC_LIB_CODEGEN_STRATEGIES_STRATEGIES_H

#include "../Emitter.h"
#include "fusec/CodeGen/LaunchPlan.h"

namespace fusec::codegen {

/// What every strategy gets.
struct StrategyInput {
  KernelOp kernel;
  LaunchAttr launch;
  const KernelShape &shape;
  const PtxOptions &options;
  mlir::ModuleOp module;
};

/// elementwise, movement (Elementwise.cpp).
absl::Status emitElementwise(const StrategyInput &in);
/// transpose_tiled (Transpose.cpp): a kernel that reads argument `source`
/// through `op`, a transpose that moves the argument's last dim to the
/// output's dim `inner`, tiled through shared memory.
struct TiledTranspose {
  TransposeOp op;
  mlir::BlockArgument source;
  int64_t inner = 0;
  /// The tile: tileJ along the output's dim `inner` (the argument's last
  /// dim), tileL along the output's last dim. 64 x 64, or (unless
  /// FUSEC_TRANSPOSE_NARROW=0) where the output's last dim is 16 or 32 or
  /// less, that many wide and up to 4096 / that long (a head transpose to
  /// [B, D, S, H] with 16 heads).
  int64_t tileJ = 64, tileL = 64;
  /// Shared memory's row pitch (slots; a row per position along L):
  /// padded so that neither phase has bank conflicts at one lane a thread.
  int64_t pitch() const { return tileJ + (tileL < 32 ? 32 / tileL : 1); }
  /// The lanes a thread takes on either side, at most `wanted` (a power
  /// of two): halved until they divide both sides of the plane and both
  /// phases' passes fit the tile.
  int64_t lanes(llvm::ArrayRef<int64_t> domain, int64_t wanted) const;
};
/// The kernel's tiled transpose over `domain`, if the strategy takes it:
/// one transpose of an argument read by nothing else, moving its last dim,
/// both sides of the tile at least 16, every output of the domain's shape,
/// no other movement, reduction or matmul.
std::optional<TiledTranspose> tiledTransposeOf(KernelOp kernel, llvm::ArrayRef<int64_t> domain);
absl::Status emitTransposeTiled(const StrategyInput &in);
/// matmul_simt (MatmulSimt.cpp).
absl::Status emitMatmulSimt(const StrategyInput &in);
/// row_warp, row_cta (RowsInRegisters.cpp).
absl::Status emitRowsInRegisters(const StrategyInput &in);
/// row_stream (RowStream.cpp).
absl::Status emitRowStream(const StrategyInput &in);
/// column (Columns.cpp).
/// Returns the kernel's scratch buffers (a split's workspace and counters).
absl::StatusOr<llvm::SmallVector<int64_t>> emitColumns(const StrategyInput &in);
/// What a tensor-core kernel needs from the JIT: the TMA descriptors of its
/// table, and zeroed scratch buffers (bytes), passed after the table.
struct TensorCoreKernel {
  llvm::SmallVector<TensorMapAttr> maps;
  llvm::SmallVector<int64_t> scratch;
};
/// matmul_wgmma (MatmulWgmma.cpp).
absl::StatusOr<TensorCoreKernel> emitMatmulWgmma(const StrategyInput &in);
/// matmul_tcgen05 (MatmulTcgen05.cpp).
absl::StatusOr<TensorCoreKernel> emitMatmulTcgen05(const StrategyInput &in);

/// The grid-stride loop over 16-byte chunks that elementwise, movement and
/// SIMT matmul kernels share: a full chunk loads each full-shape operand with
/// one vector load, computes every output lane by lane and stores vectors;
/// the last, partial chunk goes element by element, each guarded.
class ElementwiseEmitter : public KernelEmitter {
public:
  ElementwiseEmitter(const StrategyInput &in);
  absl::Status build() override;

protected:
  mlir::Value argument(mlir::BlockArgument arg, mlir::Value index, int lane) override;

  const KernelShape &shape;
  int64_t vector = 1;
  /// On the full-chunk path: each lane's flat index, and the loaded lanes of
  /// the full-shape operands (an operand read at another index, as through
  /// a transpose, is loaded by itself).
  bool vectorPath = false;
  llvm::SmallVector<mlir::Value> laneIndex;
  llvm::DenseMap<unsigned, llvm::SmallVector<mlir::Value>> lanes;
};

} // namespace fusec::codegen

#endif // FUSEC_LIB_CODEGEN_STRATEGIES_STRATEGIES_H
