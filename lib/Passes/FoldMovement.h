//===- FoldMovement.h - Movement kernels into matmul kernels ----*- C++ -*-===//
//
// fusec-fuse's last step (FoldMovement.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_PASSES_FOLDMOVEMENT_H
#define FUSEC_LIB_PASSES_FOLDMOVEMENT_H

#include "fusec/IR/Fusec.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace fusec {

/// At most this many inputs and outputs a kernel (each a pointer
/// parameter): LLVM's CodeGenPrepare and straight-line strength reduction
/// take time super-linear in a kernel's parameters (a 1,000-input concat
/// compiled in 9.3 s, 86-97% of it there; a sum of 1,000 arguments in 4.7
/// s, 77% in SLSR), and below PTX ISA 8.1 a kernel's parameters take at
/// most 4,352 bytes. fusec-decompose splits a wider concat into concats of
/// at most 128 parts (SplitWideConcat). Fusion and the folds below keep to
/// it.
constexpr size_t kMaxKernelParams = 256;

/// Folds slice and transpose kernels next to matmul kernels into the
/// matmul's store (outputs written through the movement) or its operand load
/// (a transposed operand read through its tensor map), where the
/// tensor-core strategies take the result.
void foldMovementIntoMatmuls(mlir::func::FuncOp func);

/// Folds each concat or slice kernel (elementwise ops beside allowed) whose
/// result only one elementwise kernel reads into that kernel's loads.
void foldMovementIntoConsumers(mlir::func::FuncOp func);

/// fusec-fuse's first step (Decompose.cpp): each fusec.conv (but a
/// transposed one) and fusec.pool becomes the primitives the GPU runs, its
/// im2col or window chain formed into a kernel of its own. After precision
/// lowering, so the kernels' types are final.
mlir::LogicalResult lowerWindowOps(mlir::func::FuncOp func);

} // namespace fusec

#endif // FUSEC_LIB_PASSES_FOLDMOVEMENT_H
