//===- Fusec.h - The fusec dialect and its ops ------------------*- C++ -*-===//
//
// The one header that users of the dialect include.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_IR_FUSEC_H
#define FUSEC_IR_FUSEC_H

#include "fusec/IR/Cost.h"
#include "fusec/Support/HostTensor.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace fusec {

/// The element types an elementwise op accepts.
enum class ElementClass { Float, Numeric, Logical };
/// How an elementwise op's operand and result types relate to its value type.
enum class ElementwiseKind { Plain, Compare, Select };

/// Returns true for the element types the dialect supports: f32, f16, bf16,
/// f8E4M3FN, f8E5M2, i32, i64 and i1.
bool isSupportedElementType(mlir::Type type);
/// The storage type of an element type or tensor type; nothing for types the
/// dialect does not store.
std::optional<DType> dtypeOf(mlir::Type type);
/// Bytes one element of `type` occupies in device memory (i1: one byte).
int64_t elementBytes(mlir::Type type);
/// Bytes a statically shaped tensor occupies; 0 if a dimension is dynamic.
int64_t tensorBytes(mlir::Type type);
/// Number of elements of a statically shaped tensor; 0 if dynamic.
int64_t tensorElements(mlir::Type type);

namespace detail {
OpCost elementwiseCost(mlir::Operation *op, int64_t flopsPerElement,
                       int64_t sfuPerElement);
mlir::LogicalResult verifyElementwise(mlir::Operation *op, ElementClass cls,
                                      ElementwiseKind kind);
mlir::ParseResult parseElementwise(mlir::OpAsmParser &parser,
                                   mlir::OperationState &result,
                                   unsigned arity, ElementwiseKind kind);
void printElementwise(mlir::OpAsmPrinter &p, mlir::Operation *op,
                      ElementwiseKind kind);
} // namespace detail

/// Sums the cost of every costed op in `region`'s ops, recursively.
OpCost sumBodyCost(mlir::Region &region);

/// Whether the byte size of `type` (a static tensor) fits in int64: its
/// dims' product times the element size, checked, never wrapped.
bool fitsInt64Bytes(mlir::Type type);

namespace trait {
/// An error at `op` for an operand or result whose byte size overflows
/// int64 (every size the cost model, the interpreter and codegen compute
/// is then in range).
mlir::LogicalResult verifyTensorSizes(mlir::Operation *op);
template <typename ConcreteType>
class SizedTensors : public mlir::OpTrait::TraitBase<ConcreteType, SizedTensors> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) { return verifyTensorSizes(op); }
};
} // namespace trait

} // namespace fusec

#include "fusec/IR/FusecDialect.h.inc"
#include "fusec/IR/FusecEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "fusec/IR/FusecAttrs.h.inc"
#include "fusec/IR/FusecInterfaces.h.inc"

#define GET_OP_CLASSES
#include "fusec/IR/FusecOps.h.inc"

namespace fusec {
/// The window of a conv or pool along its spatial dims, with the defaults
/// of empty attributes filled in (strides and dilations 1, pads 0); the
/// conv's kernel sizes are its filter's spatial dims.
struct Window {
  llvm::SmallVector<int64_t, 4> kernel, strides, dilations, padLow, padHigh;
};
Window windowOf(ConvOp op);
Window windowOf(PoolOp op);
} // namespace fusec

#endif // FUSEC_IR_FUSEC_H
