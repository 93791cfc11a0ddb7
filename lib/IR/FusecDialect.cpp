//===- FusecDialect.cpp - The fusec dialect: ops, verifiers, costs -*- C++ -*-===//
//
// Everything about the fusec ops that is not in ODS: verifiers whose
// diagnostics name the operand and give the expected and actual values, the
// short elementwise syntax, folders, and the cost of each op.
//
//===----------------------------------------------------------------------===//

#include "fusec/IR/Fusec.h"

#include <algorithm>
#include <limits>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace fusec;

#include "fusec/IR/FusecDialect.cpp.inc"
#include "fusec/IR/FusecEnums.cpp.inc"
#include "fusec/IR/FusecInterfaces.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "fusec/IR/FusecAttrs.cpp.inc"

void FusecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "fusec/IR/FusecOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fusec/IR/FusecAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult LaunchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 Strategy strategy, int64_t grid, int64_t block,
                                 int64_t vector, int64_t chunks, int64_t rows,
                                 ArrayRef<int64_t> tile, int64_t stages,
                                 int64_t cluster, int64_t split, int64_t smem, int64_t regs,
                                 int64_t resident, int64_t unsplit, int64_t streamk) {
  if (grid < 1 || grid > (int64_t(1) << 31) - 1)
    return emitError() << "grid " << grid << " is not in [1, 2^31 - 1]";
  if (block < 1 || block > 1024)
    return emitError() << "block " << block << " is not in [1, 1024]";
  if (vector < 1 || vector > 16 || (vector & (vector - 1)))
    return emitError() << "vector " << vector << " is not a power of two up to 16";
  if (chunks < 1 || chunks > 64)
    return emitError() << "chunks " << chunks << " is not in [1, 64]";
  if (rows < 0 || (rows && block % rows))
    return emitError() << "rows " << rows << " does not divide the block of " << block;
  if (!tile.empty() && (tile.size() != 3 || llvm::any_of(tile, [](int64_t t) { return t < 1; })))
    return emitError() << "tile must be three positive sizes (M, N, K)";
  bool matmulTiled = strategy == Strategy::matmul_wgmma || strategy == Strategy::matmul_tcgen05;
  if (matmulTiled && (tile.empty() || stages < 1))
    return emitError() << "strategy " << stringifyStrategy(strategy)
                       << " needs a tile and at least one stage";
  if (stages < 0 || stages > 16)
    return emitError() << "stages " << stages << " is not in [0, 16]";
  if (cluster < 1 || cluster > 16)
    return emitError() << "cluster " << cluster << " is not in [1, 16]";
  if (split < 1 || split > 64)
    return emitError() << "split " << split << " is not in [1, 64]";
  if (smem < 0 || smem > 232448)
    return emitError() << "smem " << smem << " bytes is not in [0, 227 KiB]";
  if (regs < 0 || regs > 255)
    return emitError() << "regs " << regs << " is not in [0, 255]";
  if (resident < 0 || resident > 64)
    return emitError() << "resident " << resident << " is not in [0, 64] k-blocks";
  if (resident && (strategy != Strategy::matmul_wgmma || split != 1))
    return emitError() << "resident k-blocks are for an unsplit matmul_wgmma plan";
  if (unsplit < 0 || unsplit > (int64_t(1) << 31) - 1)
    return emitError() << "unsplit " << unsplit << " is not in [0, 2^31 - 1] tiles";
  if (unsplit && (strategy != Strategy::matmul_wgmma || split == 1))
    return emitError() << "unsplit tiles are for a matmul_wgmma plan that splits K";
  if (streamk != 0 && streamk != 1)
    return emitError() << "streamk " << streamk << " is not 0 or 1";
  if (streamk && (strategy != Strategy::matmul_wgmma || split != 1 || resident))
    return emitError() << "stream-K is for a matmul_wgmma plan without split or resident tiles";
  return success();
}

LogicalResult TensorMapAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                    int64_t slot, int64_t elementBytes,
                                    ArrayRef<int64_t> dims, ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> box, int64_t swizzle,
                                    ArrayRef<int64_t> lower, ArrayRef<int64_t> upper,
                                    ArrayRef<int64_t> elementStrides) {
  if (slot < 0)
    return emitError() << "slot " << slot << " is negative";
  if (elementBytes != 1 && elementBytes != 2 && elementBytes != 4 && elementBytes != 8)
    return emitError() << "element_bytes " << elementBytes << " is not 1, 2, 4 or 8";
  if (dims.empty() || dims.size() > 5)
    return emitError() << "a tensor map has 1 to 5 dims, not " << dims.size();
  if (strides.size() + 1 != dims.size())
    return emitError() << "a tensor map of " << dims.size() << " dims needs "
                       << dims.size() - 1 << " strides, not " << strides.size();
  if (box.size() != dims.size())
    return emitError() << "box has " << box.size() << " sizes for " << dims.size() << " dims";
  for (int64_t d : dims)
    if (d < 1 || d > (int64_t(1) << 32))
      return emitError() << "dim " << d << " is not in [1, 2^32]";
  for (int64_t s : strides)
    if (s < 16 || s % 16 || s >= (int64_t(1) << 40))
      return emitError() << "stride " << s << " bytes is not a multiple of 16 below 2^40";
  for (int64_t b : box)
    if (b < 1 || b > 256)
      return emitError() << "box size " << b << " is not in [1, 256]";
  if ((box[0] * elementBytes) % 16)
    return emitError() << "the box's inner extent (" << box[0] * elementBytes
                       << " bytes) is not a multiple of 16";
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitError() << "swizzle " << swizzle << " is not 0, 32, 64 or 128";
  if (swizzle && box[0] * elementBytes > swizzle)
    return emitError() << "the box's inner extent (" << box[0] * elementBytes
                       << " bytes) exceeds the swizzle span of " << swizzle;
  if (!elementStrides.empty()) {
    if (elementStrides.size() != dims.size())
      return emitError() << "element_strides has " << elementStrides.size() << " entries for "
                         << dims.size() << " dims";
    for (int64_t s : elementStrides)
      if (s < 1 || s > 8)
        return emitError() << "element stride " << s << " is not in [1, 8]";
  }
  if (lower.empty() && upper.empty())
    return success();
  // im2col: [C, spatial..., N], a corner per spatial dim.
  int64_t rank = static_cast<int64_t>(dims.size());
  if (rank < 3)
    return emitError() << "an im2col tensor map has 3 to 5 dims, not " << rank;
  if (static_cast<int64_t>(lower.size()) != rank - 2 ||
      static_cast<int64_t>(upper.size()) != rank - 2)
    return emitError() << "an im2col tensor map of " << rank << " dims needs " << rank - 2
                       << " lower and upper corners, not " << lower.size() << " and "
                       << upper.size();
  // The driver's ranges: 16-bit corners for 3 dims, 8-bit for 4, 5-bit
  // for 5.
  int64_t bound = rank == 3 ? 32768 : rank == 4 ? 128 : 16;
  for (ArrayRef<int64_t> corner : {lower, upper})
    for (int64_t c : corner)
      if (c < -bound || c >= bound)
        return emitError() << "im2col corner " << c << " is not in [" << -bound << ", "
                           << bound - 1 << "]";
  for (int64_t i = 2; i < rank; ++i)
    if (box[i] != 1)
      return emitError() << "an im2col box is [channels, pixels, 1...], not " << box[i]
                         << " in dim " << i;
  return success();
}

/// The discardable `fusec.*` attributes, each checked where it appears.
LogicalResult FusecDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto kernel = dyn_cast<KernelOp>(op);
  auto onKernel = [&]() -> LogicalResult {
    if (!kernel)
      return op->emitError() << "'" << name << "' belongs on a fusec.kernel";
    return success();
  };
  auto positiveDims = [&]() -> LogicalResult {
    auto dims = dyn_cast<DenseI64ArrayAttr>(value);
    if (!dims || dims.empty() || dims.size() > 3)
      return op->emitError() << "'" << name << "' must be array<i64: x[, y[, z]]>";
    for (int64_t d : dims.asArrayRef())
      if (d < 1 || d > (int64_t(1) << 31) - 1)
        return op->emitError() << "'" << name << "' has size " << d
                               << ", not in [1, 2^31 - 1]";
    return success();
  };
  if (name == "fusec.launch") {
    if (failed(onKernel()))
      return failure();
    if (!isa<LaunchAttr>(value))
      return op->emitError() << "'fusec.launch' must be a #fusec.launch<...>";
    return success();
  }
  if (name == "fusec.ptx" || name == "fusec.entry") {
    if (failed(onKernel()))
      return failure();
    auto s = dyn_cast<StringAttr>(value);
    if (!s || s.getValue().empty())
      return op->emitError() << "'" << name << "' must be a non-empty string";
    return success();
  }
  if (name == "fusec.grid" || name == "fusec.block")
    return failed(onKernel()) ? failure() : positiveDims();
  if (name == "fusec.shared") {
    if (failed(onKernel()))
      return failure();
    auto i = dyn_cast<IntegerAttr>(value);
    if (!i || i.getInt() < 0 || i.getInt() > 232448)
      return op->emitError() << "'fusec.shared' must be an integer of bytes in [0, 227 KiB]";
    return success();
  }
  if (name == "fusec.strategy") {
    if (failed(onKernel()))
      return failure();
    if (!isa<StrategyAttr>(value))
      return op->emitError() << "'fusec.strategy' must be a #fusec<strategy ...>";
    return success();
  }
  if (name == "fusec.cache_hints") {
    if (failed(onKernel()))
      return failure();
    auto hints = dyn_cast<ArrayAttr>(value);
    if (!hints || !llvm::all_of(hints, [](Attribute a) { return isa<CacheHintAttr>(a); }))
      return op->emitError() << "'fusec.cache_hints' must be an array of #fusec<cache_hint ...>";
    if (hints.size() != kernel.getInputs().size())
      return op->emitError() << "'fusec.cache_hints' has " << hints.size()
                             << " entries for " << kernel.getInputs().size() << " operands";
    return success();
  }
  if (name == "fusec.tensor_maps") {
    if (failed(onKernel()))
      return failure();
    auto maps = dyn_cast<ArrayAttr>(value);
    if (!maps || !llvm::all_of(maps, [](Attribute a) { return isa<TensorMapAttr>(a); }))
      return op->emitError() << "'fusec.tensor_maps' must be an array of #fusec.tensor_map<...>";
    int64_t slots = kernel.getInputs().size() + kernel.getNumResults();
    for (Attribute a : maps) {
      auto m = cast<TensorMapAttr>(a);
      if (m.getSlot() >= slots)
        return op->emitError() << "a tensor map names slot " << m.getSlot()
                               << " of a kernel with " << slots << " operands and results";
      // Built ones too (a parsed one was checked when parsed).
      if (failed(TensorMapAttr::verify([&] { return op->emitError(); }, m.getSlot(),
                                       m.getElementBytes(), m.getDims(), m.getStrides(),
                                       m.getBox(), m.getSwizzle(), m.getLower(),
                                       m.getUpper(), m.getElementStrides())))
        return failure();
    }
    return success();
  }
  if (name == "fusec.scratch") {
    if (failed(onKernel()))
      return failure();
    auto sizes = dyn_cast<DenseI64ArrayAttr>(value);
    if (!sizes || llvm::any_of(sizes.asArrayRef(), [](int64_t b) { return b < 1; }))
      return op->emitError() << "'fusec.scratch' must be array<i64: bytes, ...> of positive sizes";
    return success();
  }
  if (name == "fusec.zero_init") {
    if (failed(onKernel()))
      return failure();
    auto indices = dyn_cast<DenseI64ArrayAttr>(value);
    int64_t results = static_cast<int64_t>(op->getNumResults());
    if (!indices || llvm::any_of(indices.asArrayRef(),
                                 [&](int64_t i) { return i < 0 || i >= results; }))
      return op->emitError() << "'fusec.zero_init' must be array<i64: result, ...> of the "
                                "kernel's result indices (0 to "
                             << results - 1 << ")";
    return success();
  }
  if (name == "fusec.pdl") {
    if (failed(onKernel()))
      return failure();
    if (!isa<UnitAttr>(value))
      return op->emitError() << "'fusec.pdl' is a unit attribute";
    return success();
  }
  if (name == "fusec.pdl_inputs") {
    if (failed(onKernel()))
      return failure();
    auto indices = dyn_cast<DenseI64ArrayAttr>(value);
    int64_t operands = static_cast<int64_t>(op->getNumOperands());
    if (!indices || llvm::any_of(indices.asArrayRef(),
                                 [&](int64_t i) { return i < 0 || i >= operands; }))
      return op->emitError() << "'fusec.pdl_inputs' must be array<i64: operand, ...> of the "
                                "kernel's operand indices (0 to "
                             << operands - 1 << ")";
    return success();
  }
  if (name == "fusec.matmul_epilogue") {
    if (failed(onKernel()))
      return failure();
    if (!isa<UnitAttr>(value))
      return op->emitError() << "'fusec.matmul_epilogue' is a unit attribute";
    return success();
  }
  if (name == "fusec.source") {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(value))
      return op->emitError() << "'fusec.source' names the kernel a generated module "
                                "comes from: a string on a builtin.module";
    return success();
  }
  if (name == "fusec.cost" || name == "fusec.total_cost") {
    if (!isa<DictionaryAttr>(value))
      return op->emitError() << "'" << name << "' must be a dictionary of figures";
    return success();
  }
  if (name == "fusec.error_bound") {
    auto bounds = dyn_cast<ArrayAttr>(value);
    if (!bounds || !llvm::all_of(bounds, [](Attribute a) { return isa<FloatAttr>(a); }))
      return op->emitError() << "'fusec.error_bound' must be an array of floats, one per result";
    return success();
  }
  if (name == "fusec.abs_error_bound") {
    auto dict = dyn_cast<DictionaryAttr>(value);
    auto bounds = dict ? dict.getAs<ArrayAttr>("bounds") : nullptr;
    auto magnitude = dict ? dict.getAs<FloatAttr>("input_magnitude") : nullptr;
    if (!bounds || !magnitude ||
        !llvm::all_of(bounds, [](Attribute a) { return isa<FloatAttr>(a); }))
      return op->emitError() << "'fusec.abs_error_bound' must be a dictionary of `bounds` (an "
                                "array of floats, one per result) and `input_magnitude` (a float)";
    return success();
  }
  return op->emitError() << "unknown attribute '" << name
                         << "' (the fusec dialect declares fusec.launch, fusec.ptx, "
                            "fusec.entry, fusec.grid, fusec.block, fusec.shared, "
                            "fusec.strategy, fusec.cache_hints, fusec.tensor_maps, fusec.scratch, "
                            "fusec.zero_init, fusec.pdl, fusec.pdl_inputs, fusec.matmul_epilogue, fusec.source, "
                            "fusec.cost, fusec.total_cost, "
                            "fusec.error_bound and fusec.abs_error_bound)";
}

Operation *FusecDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

bool fusec::isSupportedElementType(Type type) {
  if (type.isF32() || type.isF16() || type.isBF16() ||
      isa<Float8E4M3FNType, Float8E5M2Type>(type))
    return true;
  return type.isSignlessInteger(32) || type.isSignlessInteger(64) ||
         type.isSignlessInteger(1);
}

std::optional<DType> fusec::dtypeOf(Type type) {
  Type e = getElementTypeOrSelf(type);
  if (e.isF32())
    return DType::F32;
  if (e.isF16())
    return DType::F16;
  if (e.isBF16())
    return DType::BF16;
  if (isa<Float8E4M3FNType>(e))
    return DType::F8E4M3FN;
  if (isa<Float8E5M2Type>(e))
    return DType::F8E5M2;
  if (e.isSignlessInteger(32))
    return DType::I32;
  if (e.isSignlessInteger(64))
    return DType::I64;
  if (e.isSignlessInteger(1))
    return DType::I1;
  return std::nullopt;
}

int64_t fusec::elementBytes(Type type) {
  if (type.isSignlessInteger(1))
    return 1;
  return (type.getIntOrFloatBitWidth() + 7) / 8;
}

int64_t fusec::tensorElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return shaped.getNumElements();
}

bool fusec::fitsInt64Bytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return true;
  int64_t bytes = shaped.getElementType().isIntOrFloat() ? elementBytes(shaped.getElementType())
                                                         : 8;
  for (int64_t d : shaped.getShape())
    if (d != 0 && bytes > std::numeric_limits<int64_t>::max() / d)
      return false;
    else
      bytes *= d;
  return true;
}

LogicalResult fusec::trait::verifyTensorSizes(Operation *op) {
  for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if (!fitsInt64Bytes(t))
      return op->emitOpError() << "has a tensor of type " << t
                               << " whose size in bytes overflows int64";
  return success();
}

int64_t fusec::tensorBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return shaped.getNumElements() * elementBytes(shaped.getElementType());
}

/// Saturating arithmetic for costs (non-negative operands): a valid graph's
/// figures may pass int64 (the FLOPs of a matmul of huge tensors, the bytes
/// of two operands near 2^62 each); they stop at INT64_MAX, never wrap.
static int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
static int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

static int64_t operandBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value v : op->getOperands())
    bytes = satAdd(bytes, tensorBytes(v.getType()));
  return bytes;
}

static int64_t resultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value v : op->getResults())
    bytes = satAdd(bytes, tensorBytes(v.getType()));
  return bytes;
}

/// Moves data without arithmetic: read every operand, write every result.
static OpCost movementCost(Operation *op) {
  OpCost cost;
  cost.bytesRead = operandBytes(op);
  cost.bytesWritten = resultBytes(op);
  return cost;
}

static RankedTensorType withElementType(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

static bool isI1(Type t) { return t.isSignlessInteger(1); }

//===----------------------------------------------------------------------===//
// Diagnostics helpers
//===----------------------------------------------------------------------===//

/// "operand #1 ('rhs')"
static std::string operandName(unsigned index, StringRef name) {
  std::string s = "operand #" + std::to_string(index);
  if (!name.empty())
    s += " ('" + name.str() + "')";
  return s;
}

static LogicalResult checkSupported(Operation *op, Type type, unsigned index,
                                    StringRef name) {
  Type element = getElementTypeOrSelf(type);
  if (isSupportedElementType(element))
    return success();
  return op->emitOpError()
         << operandName(index, name) << " has element type " << element
         << ", expected one of f32, f16, bf16, f8E4M3FN, f8E5M2, i32, i64, i1";
}

static LogicalResult checkFloat(Operation *op, Type type, unsigned index,
                                StringRef name) {
  Type element = getElementTypeOrSelf(type);
  if (isa<FloatType>(element))
    return checkSupported(op, type, index, name);
  return op->emitOpError() << operandName(index, name) << " has element type "
                           << element << ", expected a float type";
}

static LogicalResult checkResultType(Operation *op, Type expected) {
  Type actual = op->getResult(0).getType();
  if (actual == expected)
    return success();
  return op->emitOpError() << "result has type " << actual << ", expected "
                           << expected;
}

static LogicalResult checkSameElementType(Operation *op, Type operandType,
                                          unsigned index, StringRef name) {
  Type expected = getElementTypeOrSelf(operandType);
  Type actual = getElementTypeOrSelf(op->getResult(0).getType());
  if (expected == actual)
    return success();
  return op->emitOpError() << "result has element type " << actual
                           << ", expected " << expected << " (the element type of "
                           << operandName(index, name) << ")";
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
  }
  return s + "]";
}

static LogicalResult checkResultShape(Operation *op,
                                      ArrayRef<int64_t> expected) {
  auto actual = cast<ShapedType>(op->getResult(0).getType()).getShape();
  if (actual == expected)
    return success();
  return op->emitOpError() << "result has shape " << shapeString(actual)
                           << ", expected " << shapeString(expected);
}

static LogicalResult checkDimInRange(Operation *op, StringRef attr,
                                     int64_t dim, int64_t rank) {
  if (dim >= 0 && dim < rank)
    return success();
  return op->emitOpError() << "'" << attr << "' has dimension " << dim
                           << ", expected a value in [0, " << rank << ")";
}

//===----------------------------------------------------------------------===//
// Elementwise ops: syntax, verifier, cost
//===----------------------------------------------------------------------===//

static StringRef elementwiseOperandName(unsigned arity, ElementwiseKind kind,
                                        unsigned index) {
  if (kind == ElementwiseKind::Select) {
    static const char *names[] = {"condition", "on_true", "on_false"};
    return names[index];
  }
  if (arity == 1)
    return "input";
  return index == 0 ? "lhs" : "rhs";
}

/// The operand whose type every other type of the op derives from.
static unsigned valueOperandIndex(ElementwiseKind kind) {
  return kind == ElementwiseKind::Select ? 1 : 0;
}

static Type expectedOperandType(Type valueType, ElementwiseKind kind,
                                unsigned index) {
  if (kind == ElementwiseKind::Select && index == 0)
    return withElementType(valueType, IntegerType::get(valueType.getContext(), 1));
  return valueType;
}

static Type expectedResultType(Type valueType, ElementwiseKind kind) {
  if (kind == ElementwiseKind::Compare)
    return withElementType(valueType, IntegerType::get(valueType.getContext(), 1));
  return valueType;
}

LogicalResult fusec::detail::verifyElementwise(Operation *op, ElementClass cls,
                                               ElementwiseKind kind) {
  unsigned arity = op->getNumOperands();
  unsigned vi = valueOperandIndex(kind);
  Type valueType = op->getOperand(vi).getType();
  StringRef valueName = elementwiseOperandName(arity, kind, vi);
  Type element = getElementTypeOrSelf(valueType);

  if (failed(checkSupported(op, valueType, vi, valueName)))
    return failure();
  switch (cls) {
  case ElementClass::Float:
    if (failed(checkFloat(op, valueType, vi, valueName)))
      return failure();
    break;
  case ElementClass::Numeric:
    if (isI1(element))
      return op->emitOpError()
             << operandName(vi, valueName)
             << " has element type i1, expected a float or i32/i64 type";
    break;
  case ElementClass::Logical:
    if (!isI1(element))
      return op->emitOpError() << operandName(vi, valueName)
                               << " has element type " << element
                               << ", expected i1";
    break;
  }

  for (unsigned i = 0; i < arity; ++i) {
    Type expected = expectedOperandType(valueType, kind, i);
    Type actual = op->getOperand(i).getType();
    if (actual == expected)
      continue;
    auto diag = op->emitOpError()
                << operandName(i, elementwiseOperandName(arity, kind, i))
                << " has type " << actual << ", expected " << expected;
    if (i != vi)
      diag << " (from " << operandName(vi, valueName) << "; broadcast "
           << "explicitly with fusec.broadcast)";
    return diag;
  }
  return checkResultType(op, expectedResultType(valueType, kind));
}

ParseResult fusec::detail::parseElementwise(OpAsmParser &parser,
                                            OperationState &result,
                                            unsigned arity,
                                            ElementwiseKind kind) {
  if (kind == ElementwiseKind::Compare) {
    StringRef keyword;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&keyword) || parser.parseComma())
      return failure();
    std::optional<ComparePredicate> pred = symbolizeComparePredicate(keyword);
    if (!pred)
      return parser.emitError(loc)
             << "unknown comparison predicate '" << keyword
             << "', expected one of eq, ne, lt, le, gt, ge";
    result.addAttribute(
        "predicate", ComparePredicateAttr::get(parser.getContext(), *pred));
  }

  SmallVector<OpAsmParser::UnresolvedOperand, 3> operands;
  SMLoc operandsLoc = parser.getCurrentLocation();
  if (parser.parseOperandList(operands, arity) ||
      parser.parseOptionalAttrDict(result.attributes) || parser.parseColon())
    return failure();

  SmallVector<Type, 3> operandTypes;
  Type resultType;
  if (succeeded(parser.parseOptionalLParen())) {
    // Long form: `(T0, T1) -> R`, for types that do not follow the short rule.
    if (parser.parseTypeList(operandTypes) || parser.parseRParen() ||
        parser.parseArrow() || parser.parseType(resultType))
      return failure();
  } else {
    Type valueType;
    SMLoc typeLoc = parser.getCurrentLocation();
    if (parser.parseType(valueType))
      return failure();
    if (!isa<RankedTensorType>(valueType))
      return parser.emitError(typeLoc)
             << "expected a ranked tensor type, got " << valueType;
    for (unsigned i = 0; i < arity; ++i)
      operandTypes.push_back(expectedOperandType(valueType, kind, i));
    resultType = expectedResultType(valueType, kind);
  }
  result.addTypes(resultType);
  return parser.resolveOperands(operands, operandTypes, operandsLoc,
                                result.operands);
}

void fusec::detail::printElementwise(OpAsmPrinter &p, Operation *op,
                                     ElementwiseKind kind) {
  p << ' ';
  if (kind == ElementwiseKind::Compare)
    p << stringifyComparePredicate(cast<CompareOp>(op).getPredicate()) << ", ";
  p << op->getOperands();
  p.printOptionalAttrDict(op->getAttrs(), /*elidedAttrs=*/{"predicate"});
  p << " : ";

  Type valueType = op->getOperand(valueOperandIndex(kind)).getType();
  bool shortForm = expectedResultType(valueType, kind) ==
                   op->getResult(0).getType();
  for (unsigned i = 0; i < op->getNumOperands() && shortForm; ++i)
    shortForm = op->getOperand(i).getType() ==
                expectedOperandType(valueType, kind, i);
  if (shortForm) {
    p << valueType;
    return;
  }
  p << '(' << op->getOperandTypes() << ") -> " << op->getResult(0).getType();
}

OpCost fusec::detail::elementwiseCost(Operation *op, int64_t flopsPerElement,
                                      int64_t sfuPerElement) {
  int64_t n = tensorElements(op->getResult(0).getType());
  OpCost cost = movementCost(op);
  cost.flops = satMul(n, flopsPerElement);
  cost.sfuOps = satMul(n, sfuPerElement);
  return cost;
}

//===----------------------------------------------------------------------===//
// Custom directive `UnaryTypes`: `: T` when the result has the input's type,
// else `: T -> R`.
//===----------------------------------------------------------------------===//

static ParseResult parseUnaryTypes(OpAsmParser &parser, Type &inputType,
                                   Type &resultType) {
  if (parser.parseColon() || parser.parseType(inputType))
    return failure();
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(resultType);
  resultType = inputType;
  return success();
}

static void printUnaryTypes(OpAsmPrinter &p, Operation *, Type inputType,
                            Type resultType) {
  p << ": " << inputType;
  if (resultType != inputType)
    p << " -> " << resultType;
}

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

/// Folds a binary op of two splat constants, or one with an identity operand.
template <typename FloatFn, typename IntFn>
static OpFoldResult foldBinary(Operation *op, ArrayRef<Attribute> operands,
                               FloatFn floatFn, IntFn intFn) {
  auto lhs = dyn_cast_or_null<SplatElementsAttr>(operands[0]);
  auto rhs = dyn_cast_or_null<SplatElementsAttr>(operands[1]);
  if (!lhs || !rhs)
    return {};
  auto type = cast<ShapedType>(op->getResult(0).getType());
  Type element = type.getElementType();
  if (auto ft = dyn_cast<FloatType>(element)) {
    APFloat a = lhs.getSplatValue<APFloat>();
    APFloat b = rhs.getSplatValue<APFloat>();
    std::optional<APFloat> r = floatFn(a, b);
    if (!r)
      return {};
    return DenseElementsAttr::get(type, *r);
  }
  if (isI1(element))
    return {};
  APInt a = lhs.getSplatValue<APInt>();
  APInt b = rhs.getSplatValue<APInt>();
  std::optional<APInt> r = intFn(a, b);
  if (!r)
    return {};
  return DenseElementsAttr::get(type, *r);
}

/// Returns true if `attr` is a splat float or integer constant equal to one.
static bool isSplatOne(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type element = splat.getElementType();
  if (isa<FloatType>(element))
    return splat.getSplatValue<APFloat>().isExactlyValue(1.0);
  if (element.isSignlessInteger() && !isI1(element))
    return splat.getSplatValue<APInt>().isOne();
  return false;
}

static std::optional<APFloat> apply(APFloat a, const APFloat &b,
                                    APFloat::opStatus (APFloat::*fn)(
                                        const APFloat &, APFloat::roundingMode)) {
  (a.*fn)(b, APFloat::rmNearestTiesToEven);
  return a;
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getOperands(),
      [](APFloat a, APFloat b) { return apply(a, b, &APFloat::add); },
      [](APInt a, APInt b) -> std::optional<APInt> { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getOperands(),
      [](APFloat a, APFloat b) { return apply(a, b, &APFloat::subtract); },
      [](APInt a, APInt b) -> std::optional<APInt> { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOne(adaptor.getRhs()))
    return getLhs();
  if (isSplatOne(adaptor.getLhs()))
    return getRhs();
  return foldBinary(
      *this, adaptor.getOperands(),
      [](APFloat a, APFloat b) { return apply(a, b, &APFloat::multiply); },
      [](APInt a, APInt b) -> std::optional<APInt> { return a * b; });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOne(adaptor.getRhs()))
    return getLhs();
  return foldBinary(
      *this, adaptor.getOperands(),
      [](APFloat a, APFloat b) { return apply(a, b, &APFloat::divide); },
      [](APInt a, APInt b) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        return a.sdiv(b);
      });
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

OpFoldResult NotOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NotOp>())
    return inner.getInput();
  return {};
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // cast(cast(x: A -> B): B -> C) is cast(x: A -> C) when B holds every
  // value of A exactly (bf16 -> f32, f16 -> f64, fp8 -> bf16; B a float
  // with infinities): the conversion to C then sees the same value. The
  // round trip (C = A) is x itself.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    auto a = dyn_cast<FloatType>(getElementTypeOrSelf(inner.getInput().getType()));
    auto b = dyn_cast<FloatType>(getElementTypeOrSelf(inner.getType()));
    if (a && b && (b.isF16() || b.isBF16() || b.isF32() || b.isF64()) &&
        llvm::APFloatBase::isRepresentableBy(a.getFloatSemantics(), b.getFloatSemantics())) {
      if (inner.getInput().getType() == getType())
        return inner.getInput();
      getInputMutable().assign(inner.getInput());
      return getResult();
    }
  }
  return {};
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() &&
      llvm::equal(getDims(), llvm::seq<int64_t>(0, getType().getRank())))
    return getInput();
  // broadcast(reshape(x)) -> broadcast(x) when the reshape only adds or
  // drops size-1 dims and x has none (keepdims reductions, as ONNX writes
  // them): the reshape would otherwise sit between a reduction and its
  // consumers and split the kernel.
  if (auto r = getInput().getDefiningOp<ReshapeOp>()) {
    auto src = cast<RankedTensorType>(r.getInput().getType()).getShape();
    auto mid = cast<RankedTensorType>(r.getType()).getShape();
    if (llvm::is_contained(src, 1))
      return {};
    SmallVector<int64_t> nonUnit, dims;
    for (auto [j, d] : llvm::enumerate(mid))
      if (d != 1) {
        nonUnit.push_back(d);
        dims.push_back(getDims()[j]);
      }
    if (ArrayRef<int64_t>(nonUnit) != src)
      return {};
    getInputMutable().assign(r.getInput());
    setDims(dims);
    return getResult();
  }
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) -> reshape(x)
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  // transpose(transpose(x, p), q) -> transpose(x, p o q)
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    getInputMutable().assign(inner.getInput());
    setPermutation(composed);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return getInput();
    return getResult();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Verifiers and costs of the other ops
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  if (failed(checkSupported(*this, getInput().getType(), 0, "input")))
    return failure();
  Type resultElement = getType().getElementType();
  if (!isSupportedElementType(resultElement))
    return emitOpError() << "result has element type " << resultElement
                         << ", expected one of f32, f16, bf16, f8E4M3FN, "
                            "f8E5M2, i32, i64, i1";
  return checkResultShape(*this, getInput().getType().getShape());
}

OpCost CastOp::getCost() { return movementCost(*this); }

LogicalResult ConstantOp::verify() {
  return checkSupported(*this, getType(), 0, "value");
}

OpCost ConstantOp::getCost() { return {}; }

LogicalResult BroadcastOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (failed(checkSupported(*this, in, 0, "input")) ||
      failed(checkSameElementType(*this, in, 0, "input")))
    return failure();
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != in.getRank())
    return emitOpError() << "'dims' has " << dims.size()
                         << " entries, expected " << in.getRank()
                         << " (the rank of operand #0 ('input'))";
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (failed(checkDimInRange(*this, "dims", d, out.getRank())))
      return failure();
    if (i > 0 && d <= dims[i - 1])
      return emitOpError() << "'dims' must be strictly increasing, got "
                           << shapeString(dims);
    int64_t src = in.getDimSize(i), dst = out.getDimSize(d);
    if (src != 1 && src != dst && !ShapedType::isDynamic(src) &&
        !ShapedType::isDynamic(dst))
      return emitOpError() << "operand #0 ('input') dimension " << i
                           << " has size " << src << ", expected 1 or " << dst
                           << " (result dimension " << d << ")";
  }
  return success();
}

OpCost BroadcastOp::getCost() { return movementCost(*this); }

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (failed(checkSupported(*this, in, 0, "input")) ||
      failed(checkSameElementType(*this, in, 0, "input")))
    return failure();
  if (in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "result has " << out.getNumElements()
                         << " elements, expected " << in.getNumElements()
                         << " (the elements of operand #0 ('input'))";
  return success();
}

OpCost ReshapeOp::getCost() { return {}; }

LogicalResult TransposeOp::verify() {
  RankedTensorType in = getInput().getType();
  if (failed(checkSupported(*this, in, 0, "input")) ||
      failed(checkSameElementType(*this, in, 0, "input")))
    return failure();
  ArrayRef<int64_t> perm = getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError() << "'permutation' has " << perm.size()
                         << " entries, expected " << in.getRank();
  llvm::SmallSet<int64_t, 8> seen;
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (failed(checkDimInRange(*this, "permutation", p, in.getRank())))
      return failure();
    if (!seen.insert(p).second)
      return emitOpError() << "'permutation' " << shapeString(perm)
                           << " names dimension " << p << " twice";
    expected.push_back(in.getDimSize(p));
  }
  return checkResultShape(*this, expected);
}

OpCost TransposeOp::getCost() { return movementCost(*this); }

LogicalResult SliceOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (failed(checkSupported(*this, in, 0, "input")) ||
      failed(checkSameElementType(*this, in, 0, "input")))
    return failure();
  int64_t rank = in.getRank();
  if (out.getRank() != rank)
    return emitOpError() << "result has rank " << out.getRank()
                         << ", expected " << rank;
  if (static_cast<int64_t>(getOffsets().size()) != rank ||
      static_cast<int64_t>(getStrides().size()) != rank)
    return emitOpError() << "'offsets' and 'strides' need " << rank
                         << " entries each, got " << getOffsets().size()
                         << " and " << getStrides().size();
  for (int64_t i = 0; i < rank; ++i) {
    int64_t off = getOffsets()[i], stride = getStrides()[i];
    int64_t size = out.getDimSize(i), limit = in.getDimSize(i);
    if (off < 0 || stride < 1)
      return emitOpError() << "dimension " << i << " has offset " << off
                           << " and stride " << stride
                           << ", expected offset >= 0 and stride >= 1";
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(limit))
      continue;
    // Checked: a stride near 2^63 wrapped the last index below the limit,
    // and the op then read before its input (found by an audit).
    if (size <= 0)
      continue;
    int64_t last = 0;
    bool wraps = __builtin_mul_overflow(size - 1, stride, &last) ||
                 __builtin_add_overflow(off, last, &last);
    if (wraps || last >= limit) {
      InFlightDiagnostic d = emitOpError() << "dimension " << i << " reads index ";
      if (wraps)
        d << off << " + " << size - 1 << " * " << stride << " (past 2^63)";
      else
        d << last;
      return d << ", expected an index below " << limit << " (the size of operand #0 ('input'))";
    }
  }
  return success();
}

OpCost SliceOp::getCost() {
  OpCost cost;
  cost.bytesRead = tensorBytes(getType());
  cost.bytesWritten = tensorBytes(getType());
  return cost;
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one operand";
  RankedTensorType first = cast<RankedTensorType>(getInputs()[0].getType());
  if (failed(checkSupported(*this, first, 0, "inputs")))
    return failure();
  int64_t rank = first.getRank();
  if (failed(checkDimInRange(*this, "dim", getDim(), rank)))
    return failure();
  SmallVector<int64_t> expected(first.getShape());
  expected[getDim()] = 0;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() != first.getElementType())
      return emitOpError() << operandName(i, "inputs") << " has element type "
                           << t.getElementType() << ", expected "
                           << first.getElementType();
    if (t.getRank() != rank)
      return emitOpError() << operandName(i, "inputs") << " has rank "
                           << t.getRank() << ", expected " << rank;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == getDim())
        continue;
      if (t.getDimSize(d) != first.getDimSize(d))
        return emitOpError() << operandName(i, "inputs") << " has shape "
                             << shapeString(t.getShape()) << ", expected size "
                             << first.getDimSize(d) << " in dimension " << d;
    }
    if (ShapedType::isDynamic(t.getDimSize(getDim())) ||
        ShapedType::isDynamic(expected[getDim()]))
      expected[getDim()] = ShapedType::kDynamic;
    else if (__builtin_add_overflow(expected[getDim()], t.getDimSize(getDim()),
                                    &expected[getDim()]))
      return emitOpError() << "the inputs' sizes in dimension " << getDim()
                           << " add up past 2^63";
  }
  if (failed(checkSameElementType(*this, first, 0, "inputs")))
    return failure();
  return checkResultShape(*this, expected);
}

OpCost ConcatOp::getCost() { return movementCost(*this); }

LogicalResult GatherOp::verify() {
  RankedTensorType table = getTable().getType(), idx = getIndices().getType();
  if (failed(checkSupported(*this, table, 0, "table")) ||
      failed(checkSameElementType(*this, table, 0, "table")))
    return failure();
  Type ie = idx.getElementType();
  if (!ie.isSignlessInteger(32) && !ie.isSignlessInteger(64))
    return emitOpError() << "operand #1 ('indices') has element type " << ie
                         << ", expected i32 or i64";
  if (failed(checkDimInRange(*this, "axis", getAxis(), table.getRank())))
    return failure();
  SmallVector<int64_t> expected(table.getShape().take_front(getAxis()));
  llvm::append_range(expected, idx.getShape());
  llvm::append_range(expected, table.getShape().drop_front(getAxis() + 1));
  return checkResultShape(*this, expected);
}

OpCost GatherOp::getCost() {
  OpCost cost;
  cost.bytesRead = satAdd(tensorBytes(getIndices().getType()), tensorBytes(getType()));
  cost.bytesWritten = tensorBytes(getType());
  return cost;
}

LogicalResult ReduceOp::verify() {
  RankedTensorType in = getInput().getType();
  if (failed(checkSupported(*this, in, 0, "input")) ||
      failed(checkSameElementType(*this, in, 0, "input")))
    return failure();
  if (isI1(in.getElementType()))
    return emitOpError() << "operand #0 ('input') has element type i1, "
                            "expected a float or i32/i64 type";
  if (getKind() == ReduceKind::mean && !isa<FloatType>(in.getElementType()))
    return emitOpError() << "'mean' needs a float operand, got element type "
                         << in.getElementType();
  ArrayRef<int64_t> dims = getDims();
  if (dims.empty())
    return emitOpError() << "'dims' is empty, expected at least one dimension";
  llvm::SmallSet<int64_t, 8> reduced;
  for (int64_t d : dims) {
    if (failed(checkDimInRange(*this, "dims", d, in.getRank())))
      return failure();
    if (!reduced.insert(d).second)
      return emitOpError() << "'dims' " << shapeString(dims)
                           << " names dimension " << d << " twice";
  }
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!reduced.contains(d))
      expected.push_back(in.getDimSize(d));
  return checkResultShape(*this, expected);
}

OpCost ReduceOp::getCost() {
  OpCost cost = movementCost(*this);
  cost.flops = tensorElements(getInput().getType());
  if (getKind() == ReduceKind::mean)
    cost.flops = satAdd(cost.flops, tensorElements(getType()));
  return cost;
}

/// Matmul dimensions after the transposes: [batch..., M, K] x [.., K, N].
struct MatmulDims {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

static MatmulDims matmulDims(MatmulOp op) {
  auto lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  MatmulDims d;
  d.m = lhs.getDimSize(op.getTransposeLhs() ? lr - 1 : lr - 2);
  d.k = lhs.getDimSize(op.getTransposeLhs() ? lr - 2 : lr - 1);
  d.n = rhs.getDimSize(op.getTransposeRhs() ? rr - 2 : rr - 1);
  for (int64_t i = 0; i + 2 < lr; ++i)
    d.batch *= lhs.getDimSize(i);
  return d;
}

LogicalResult MatmulOp::verify() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType();
  if (failed(checkFloat(*this, lhs, 0, "lhs")))
    return failure();
  if (rhs.getElementType() != lhs.getElementType())
    return emitOpError() << "operand #1 ('rhs') has element type "
                         << rhs.getElementType() << ", expected "
                         << lhs.getElementType() << " (that of operand #0 ('lhs'))";
  if (failed(checkFloat(*this, getType(), 0, "result")))
    return failure();
  if (lhs.getRank() < 2)
    return emitOpError() << "operand #0 ('lhs') has rank " << lhs.getRank()
                         << ", expected at least 2";
  if (rhs.getRank() != 2 && rhs.getRank() != lhs.getRank())
    return emitOpError() << "operand #1 ('rhs') has rank " << rhs.getRank()
                         << ", expected 2 or " << lhs.getRank()
                         << " (the rank of operand #0 ('lhs'))";
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  int64_t rhsK = rhs.getDimSize(getTransposeRhs() ? rr - 1 : rr - 2);
  MatmulDims d = matmulDims(*this);
  if (d.k != rhsK && !ShapedType::isDynamic(d.k) && !ShapedType::isDynamic(rhsK))
    return emitOpError() << "operand #1 ('rhs') has contraction size " << rhsK
                         << ", expected " << d.k
                         << " (the contraction size of operand #0 ('lhs'))";
  SmallVector<int64_t> expected(lhs.getShape().take_front(lr - 2));
  if (rr == lr)
    for (int64_t i = 0; i + 2 < lr; ++i)
      if (rhs.getDimSize(i) != lhs.getDimSize(i))
        return emitOpError() << "operand #1 ('rhs') has batch dimension " << i
                             << " of size " << rhs.getDimSize(i)
                             << ", expected " << lhs.getDimSize(i);
  expected.push_back(d.m);
  expected.push_back(d.n);
  return checkResultShape(*this, expected);
}

OpCost MatmulOp::getCost() {
  MatmulDims d = matmulDims(*this);
  OpCost cost = movementCost(*this);
  cost.flops = satMul(satMul(satMul(satMul(2, d.batch), d.m), d.n), d.k);
  return cost;
}

static std::optional<ArrayRef<int64_t>> attentionPermAttr(AttentionOp op, unsigned i) {
  switch (i) {
  case 0:
    return op.getQueryPerm();
  case 1:
    return op.getKeyPerm();
  case 2:
    return op.getValuePerm();
  default:
    return op.getResultPerm();
  }
}

SmallVector<int64_t, 4> AttentionOp::layoutPerm(unsigned i) {
  if (auto perm = attentionPermAttr(*this, i))
    return SmallVector<int64_t, 4>(*perm);
  return {0, 1, 2, 3};
}

SmallVector<int64_t, 4> AttentionOp::logicalShape(unsigned i) {
  ArrayRef<int64_t> dims =
      cast<RankedTensorType>(i < 3 ? getOperand(i).getType() : getType()).getShape();
  SmallVector<int64_t, 4> perm = layoutPerm(i), shape(dims);
  if (dims.size() != 4)
    return shape;
  for (unsigned j = 0; j < 4; ++j) {
    // An operand is read as transpose(x, perm); the result is stored as
    // transpose(O, perm).
    if (i < 3)
      shape[j] = dims[perm[j]];
    else
      shape[perm[j]] = dims[j];
  }
  return shape;
}

SmallVector<int64_t, 4> AttentionOp::logicalStrides(unsigned i) {
  ArrayRef<int64_t> dims =
      cast<RankedTensorType>(i < 3 ? getOperand(i).getType() : getType()).getShape();
  SmallVector<int64_t, 4> stored(dims.size(), 1), perm = layoutPerm(i), strides(4, 1);
  for (int64_t j = static_cast<int64_t>(dims.size()) - 2; j >= 0; --j)
    stored[j] = satMul(stored[j + 1], dims[j + 1]);
  if (dims.size() != 4)
    return stored;
  for (unsigned j = 0; j < 4; ++j) {
    if (i < 3)
      strides[j] = stored[perm[j]];
    else
      strides[perm[j]] = stored[j];
  }
  return strides;
}

LogicalResult AttentionOp::verify() {
  const char *names[] = {"query", "key", "value", "result"};
  const char *permNames[] = {"query_perm", "key_perm", "value_perm", "result_perm"};
  for (unsigned i = 0; i < 4; ++i) {
    auto perm = attentionPermAttr(*this, i);
    if (!perm)
      continue;
    SmallVector<int64_t, 4> sorted(*perm);
    llvm::sort(sorted);
    if (perm->size() != 4 || !llvm::equal(sorted, llvm::seq<int64_t>(0, 4)) || (*perm)[3] != 3)
      return emitOpError() << "'" << permNames[i] << "' (" << names[i]
                           << ") must permute [0, 1, 2] and keep 3 last";
  }
  RankedTensorType types[] = {getQuery().getType(), getKey().getType(), getValue().getType()};
  for (unsigned i = 0; i < 3; ++i) {
    if (failed(checkFloat(*this, types[i], i, names[i])))
      return failure();
    if (types[i].getRank() != 4)
      return emitOpError() << operandName(i, names[i]) << " has rank "
                           << types[i].getRank()
                           << ", expected 4 ([batch, heads, seq, head_dim])";
    if (types[i].getElementType() != types[0].getElementType())
      return emitOpError() << operandName(i, names[i]) << " has element type "
                           << types[i].getElementType() << ", expected "
                           << types[0].getElementType();
  }
  // The shapes below are [B, H, S, D], each operand read through its
  // permutation.
  struct Logical {
    SmallVector<int64_t, 4> shape;
    int64_t getDimSize(unsigned d) const { return shape[d]; }
  };
  Logical q{logicalShape(0)}, k{logicalShape(1)}, v{logicalShape(2)};
  auto mismatch = [&](unsigned i, StringRef what, int64_t actual,
                      int64_t expected) {
    return emitOpError() << operandName(i, names[i]) << " has " << what
                         << " " << actual << ", expected " << expected;
  };
  if (k.getDimSize(0) != q.getDimSize(0))
    return mismatch(1, "batch", k.getDimSize(0), q.getDimSize(0));
  if (v.getDimSize(0) != q.getDimSize(0))
    return mismatch(2, "batch", v.getDimSize(0), q.getDimSize(0));
  if (k.getDimSize(3) != q.getDimSize(3))
    return mismatch(1, "head_dim", k.getDimSize(3), q.getDimSize(3));
  if (v.getDimSize(1) != k.getDimSize(1))
    return mismatch(2, "heads", v.getDimSize(1), k.getDimSize(1));
  if (v.getDimSize(2) != k.getDimSize(2))
    return mismatch(2, "sequence length", v.getDimSize(2), k.getDimSize(2));
  int64_t hq = q.getDimSize(1), hkv = k.getDimSize(1);
  if (hkv <= 0 || hq % hkv != 0)
    return emitOpError() << "operand #1 ('key') has " << hkv
                         << " heads, expected a divisor of " << hq
                         << " (the heads of operand #0 ('query'))";
  if (!std::isfinite(getScale().convertToDouble()) ||
      getScale().convertToDouble() == 0.0)
    return emitOpError() << "'scale' is " << getScale().convertToDouble()
                         << ", expected a finite non-zero value";
  if (Value mask = getKeyMask()) {
    auto m = cast<RankedTensorType>(mask.getType());
    if (!m.getElementType().isSignlessInteger(1) || m.getRank() != 2 ||
        m.getDimSize(0) != q.getDimSize(0) || m.getDimSize(1) != k.getDimSize(2))
      return emitOpError() << "operand #3 ('mask') has type " << m << ", expected tensor<"
                           << q.getDimSize(0) << "x" << k.getDimSize(2)
                           << "xi1> ([batch, key sequence length])";
  }
  if (failed(checkFloat(*this, getType(), 0, "result")))
    return failure();
  if (getType().getRank() != 4)
    return emitOpError() << "result has rank " << getType().getRank() << ", expected 4";
  SmallVector<int64_t, 4> expected = {q.getDimSize(0), hq, q.getDimSize(2), v.getDimSize(3)};
  // Stored through result_perm.
  SmallVector<int64_t, 4> perm = layoutPerm(3), stored(4);
  for (unsigned j = 0; j < 4; ++j)
    stored[j] = expected[perm[j]];
  return checkResultShape(*this, stored);
}

/// Number of (query, key) pairs attention computes: all of them, or those on
/// and below the causal diagonal (aligned to the bottom right).
static int64_t attentionPairs(int64_t sq, int64_t skv, bool causal) {
  if (!causal)
    return satMul(sq, skv);
  // Query i sees clamp(i + off, 0, skv) keys, off = skv - sq + 1: none before
  // i0, an arithmetic series up to i1, then all skv (closed form: a long
  // sequence costs no time to price).
  __int128 off = static_cast<__int128>(skv) - sq + 1;
  __int128 i0 = std::clamp<__int128>(1 - off, 0, sq);
  __int128 i1 = std::clamp<__int128>(skv - off, i0, sq);
  __int128 pairs = (i1 > i0 ? ((i0 + off) + (i1 - 1 + off)) * (i1 - i0) / 2 : 0) +
                   (static_cast<__int128>(sq) - i1) * skv;
  return pairs > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
                                                     : static_cast<int64_t>(pairs);
}

OpCost AttentionOp::getCost() {
  SmallVector<int64_t, 4> q = logicalShape(0), v = logicalShape(2);
  OpCost cost = movementCost(*this);
  if (q.size() != 4 || v.size() != 4)
    return cost;
  int64_t bh = satMul(q[0], q[1]);
  int64_t pairs = satMul(bh, attentionPairs(q[2], v[2], getCausal()));
  cost.flops = satMul(satMul(2, pairs), q[3] + v[3]);
  cost.sfuOps = pairs;
  return cost;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

static Window makeWindow(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                         ArrayRef<int64_t> dilations, ArrayRef<int64_t> padLow,
                         ArrayRef<int64_t> padHigh) {
  size_t n = kernel.size();
  auto fill = [n](ArrayRef<int64_t> a, int64_t dflt) {
    return a.empty() ? SmallVector<int64_t, 4>(n, dflt) : SmallVector<int64_t, 4>(a);
  };
  return {SmallVector<int64_t, 4>(kernel), fill(strides, 1), fill(dilations, 1),
          fill(padLow, 0), fill(padHigh, 0)};
}

Window fusec::windowOf(ConvOp op) {
  ArrayRef<int64_t> filter = op.getFilter().getType().getShape();
  return makeWindow(filter.size() > 2 ? filter.drop_front(2) : ArrayRef<int64_t>{},
                    op.getStrides(), op.getDilations(), op.getPadLow(), op.getPadHigh());
}

Window fusec::windowOf(PoolOp op) {
  return makeWindow(op.getKernel(), op.getStrides(), op.getDilations(), op.getPadLow(),
                    op.getPadHigh());
}

/// Checks the window attributes of a conv or pool with `spatial` spatial
/// dims: each array empty or of that size, strides and dilations at least 1,
/// pads at least 0, sizes small enough that no output-size formula wraps.
static LogicalResult verifyWindowAttrs(Operation *op, size_t spatial,
                                       ArrayRef<std::pair<StringRef, ArrayRef<int64_t>>> attrs) {
  for (auto [name, values] : attrs) {
    bool kernel = name == "kernel";
    if ((!values.empty() || kernel) && values.size() != spatial)
      return op->emitOpError() << "'" << name << "' has " << values.size()
                               << " values, expected " << spatial
                               << (kernel ? "" : " (one per spatial dim) or none");
    bool pad = name.starts_with("pad");
    for (int64_t v : values)
      if (v < (pad ? 0 : 1) || v > (int64_t(1) << 32))
        return op->emitOpError() << "'" << name << "' holds " << v << ", expected a value in ["
                                 << (pad ? 0 : 1) << ", 2^32]";
  }
  return success();
}

/// The extent one window covers: dilation·(k - 1) + 1, saturating at
/// INT64_MAX (a dilation of 2^32 over a filter dim of 2^32 + 1 wrapped to
/// an extent of 1); a saturated extent is larger than any padded input.
static int64_t windowExtent(const Window &w, size_t i) {
  return satAdd(satMul(w.dilations[i], w.kernel[i] - 1), 1);
}

LogicalResult ConvOp::verify() {
  RankedTensorType in = getInput().getType(), filter = getFilter().getType();
  if (failed(checkFloat(*this, in, 0, "input")) || failed(checkFloat(*this, filter, 1, "filter")) ||
      failed(checkFloat(*this, getType(), 0, "result")))
    return failure();
  if (filter.getElementType() != in.getElementType())
    return emitOpError() << "operand #1 ('filter') has element type " << filter.getElementType()
                         << ", expected " << in.getElementType()
                         << " (that of operand #0 ('input'))";
  if (in.getRank() < 3)
    return emitOpError() << "operand #0 ('input') has rank " << in.getRank()
                         << ", expected at least 3 ([N, C, spatial...])";
  if (filter.getRank() != in.getRank())
    return emitOpError() << "operand #1 ('filter') has rank " << filter.getRank() << ", expected "
                         << in.getRank() << " (that of operand #0 ('input'))";
  if (!in.hasStaticShape() || !filter.hasStaticShape())
    return emitOpError() << "needs static shapes";
  size_t spatial = in.getRank() - 2;
  if (failed(verifyWindowAttrs(*this, spatial,
                               {{"strides", getStrides()},
                                {"dilations", getDilations()},
                                {"pad_low", getPadLow()},
                                {"pad_high", getPadHigh()}})))
    return failure();
  int64_t groups = getGroups(), channels = in.getDimSize(1);
  if (groups < 1 || channels % groups)
    return emitOpError() << "'groups' is " << groups << ", expected a divisor of the "
                         << channels << " input channels";
  for (size_t i = 0; i < spatial; ++i)
    if (filter.getDimSize(i + 2) < 1)
      return emitOpError() << "operand #1 ('filter') has an empty kernel dim " << i + 2;
  Window w = windowOf(*this);
  SmallVector<int64_t> expected = {in.getDimSize(0)};
  if (!getTransposed()) {
    if (filter.getDimSize(1) * groups != channels)
      return emitOpError() << "operand #1 ('filter') has " << filter.getDimSize(1)
                           << " channels a group, expected " << channels / groups << " ("
                           << channels << " input channels in " << groups << " groups)";
    if (filter.getDimSize(0) % groups)
      return emitOpError() << "operand #1 ('filter') has " << filter.getDimSize(0)
                           << " output channels, expected a multiple of the " << groups
                           << " groups";
    expected.push_back(filter.getDimSize(0));
    for (size_t i = 0; i < spatial; ++i) {
      int64_t span = in.getDimSize(i + 2) + w.padLow[i] + w.padHigh[i] - windowExtent(w, i);
      if (span < 0)
        return emitOpError() << "spatial dim " << i << " of the padded input ("
                             << in.getDimSize(i + 2) + w.padLow[i] + w.padHigh[i]
                             << ") is smaller than the window (" << windowExtent(w, i) << ")";
      expected.push_back(span / w.strides[i] + 1);
    }
    return checkResultShape(*this, expected);
  }
  if (filter.getDimSize(0) != channels)
    return emitOpError() << "operand #1 ('filter') has " << filter.getDimSize(0)
                         << " input channels, expected " << channels
                         << " (a transposed filter is [C, K/groups, kernel...])";
  expected.push_back(filter.getDimSize(1) * groups);
  ArrayRef<int64_t> result = getType().getShape();
  for (size_t i = 0; i < spatial; ++i) {
    int64_t base = satAdd(satMul(in.getDimSize(i + 2) - 1, w.strides[i]) - w.padLow[i] -
                              w.padHigh[i],
                          windowExtent(w, i));
    int64_t extra = static_cast<int64_t>(result.size()) == in.getRank() ? result[i + 2] - base : 0;
    if (extra < 0 || extra >= std::max(w.strides[i], w.dilations[i]))
      extra = 0;
    if (base < 1)
      return emitOpError() << "spatial dim " << i << " of the result would have size " << base
                           << ", expected at least 1 (the pads remove more than the input)";
    expected.push_back(satAdd(base, extra));
  }
  return checkResultShape(*this, expected);
}

OpCost ConvOp::getCost() {
  RankedTensorType in = getInput().getType(), filter = getFilter().getType();
  int64_t taps = 1;
  for (int64_t d = 2; d < filter.getRank(); ++d)
    taps = satMul(taps, filter.getDimSize(d));
  // Multiply-adds: each (output, filter tap, channel of the group) forward;
  // each (input, filter tap, output channel of the group) transposed.
  int64_t macs = getTransposed()
                     ? satMul(satMul(tensorElements(in), filter.getDimSize(1)), taps)
                     : satMul(satMul(tensorElements(getType()), filter.getDimSize(1)), taps);
  OpCost cost = movementCost(*this);
  cost.flops = satMul(2, macs);
  return cost;
}

LogicalResult PoolOp::verify() {
  RankedTensorType in = getInput().getType();
  if (failed(checkFloat(*this, in, 0, "input")) || failed(checkResultType(*this, getType().clone(in.getElementType()))))
    return failure();
  if (getKind() != ReduceKind::max && getKind() != ReduceKind::mean)
    return emitOpError() << "kind '" << stringifyReduceKind(getKind())
                         << "', expected 'max' or 'mean'";
  if (in.getRank() < 3)
    return emitOpError() << "operand #0 ('input') has rank " << in.getRank()
                         << ", expected at least 3 ([N, C, spatial...])";
  if (!in.hasStaticShape())
    return emitOpError() << "needs a static shape";
  size_t spatial = in.getRank() - 2;
  if (failed(verifyWindowAttrs(*this, spatial,
                               {{"kernel", getKernel()},
                                {"strides", getStrides()},
                                {"dilations", getDilations()},
                                {"pad_low", getPadLow()},
                                {"pad_high", getPadHigh()}})))
    return failure();
  Window w = windowOf(*this);
  // Every output visits each tap of its window: at most 2^31 of them (four
  // kernel dims of 2^16 made 2^64 taps, which wrapped to none).
  int64_t taps = 1;
  for (int64_t k : w.kernel)
    taps = satMul(taps, k);
  if (taps > (int64_t(1) << 31))
    return emitOpError() << "'kernel' spans " << (taps == std::numeric_limits<int64_t>::max() ? "more than 2^63" : std::to_string(taps))
                         << " taps, expected at most 2^31";
  ArrayRef<int64_t> result = getType().getShape();
  SmallVector<int64_t> expected = {in.getDimSize(0), in.getDimSize(1)};
  for (size_t i = 0; i < spatial; ++i) {
    if (w.padLow[i] >= windowExtent(w, i) || w.padHigh[i] >= windowExtent(w, i))
      return emitOpError() << "spatial dim " << i << " has a pad of at least the window ("
                           << windowExtent(w, i) << "): a window would see only padding";
    int64_t span = in.getDimSize(i + 2) + w.padLow[i] + w.padHigh[i] - windowExtent(w, i);
    if (span < 0)
      return emitOpError() << "spatial dim " << i << " of the padded input ("
                           << in.getDimSize(i + 2) + w.padLow[i] + w.padHigh[i]
                           << ") is smaller than the window (" << windowExtent(w, i) << ")";
    int64_t floorSize = span / w.strides[i] + 1, ceilSize = floorSize;
    if (span % w.strides[i] && floorSize * w.strides[i] < in.getDimSize(i + 2) + w.padLow[i])
      ceilSize = floorSize + 1; // ceil mode: the last window starts inside input or low pad
    bool ceil = static_cast<int64_t>(result.size()) == in.getRank() && result[i + 2] == ceilSize;
    expected.push_back(ceil ? ceilSize : floorSize);
  }
  return checkResultShape(*this, expected);
}

OpCost PoolOp::getCost() {
  Window w = windowOf(*this);
  int64_t taps = 1;
  for (int64_t k : w.kernel)
    taps = satMul(taps, k);
  OpCost cost = movementCost(*this);
  cost.flops = satMul(tensorElements(getType()), taps);
  return cost;
}

/// Shared checks of the normalizations: a float input, per-feature operands
/// of the last dimension's size and a result of the input's type.
static LogicalResult verifyNorm(Operation *op, ArrayRef<StringRef> names) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  if (failed(checkFloat(op, in, 0, names[0])))
    return failure();
  if (in.getRank() < 1)
    return op->emitOpError() << "operand #0 ('input') has rank 0, expected "
                                "at least 1";
  int64_t features = in.getShape().back();
  for (unsigned i = 1; i < op->getNumOperands(); ++i) {
    auto t = cast<RankedTensorType>(op->getOperand(i).getType());
    if (failed(checkFloat(op, t, i, names[i])))
      return failure();
    if (t.getRank() != 1 || t.getDimSize(0) != features)
      return op->emitOpError()
             << operandName(i, names[i]) << " has shape "
             << shapeString(t.getShape()) << ", expected [" << features
             << "] (the last dimension of operand #0 ('input'))";
  }
  return checkResultType(op, in);
}

LogicalResult LayerNormOp::verify() {
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError() << "'epsilon' is " << getEpsilon().convertToDouble()
                         << ", expected a value >= 0";
  return verifyNorm(*this, {"input", "scale", "bias"});
}

/// Cost of a row normalization over the last dimension.
static OpCost normCost(Operation *op, int64_t flopsPerElement,
                       int64_t flopsPerRow) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t n = tensorElements(in);
  int64_t rows = in.getShape().back() ? n / in.getShape().back() : 0;
  OpCost cost = movementCost(op);
  cost.flops = satAdd(satMul(n, flopsPerElement), satMul(rows, flopsPerRow));
  cost.sfuOps = rows; // one rsqrt a row
  return cost;
}

OpCost LayerNormOp::getCost() { return normCost(*this, 7, 3); }

LogicalResult RMSNormOp::verify() {
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError() << "'epsilon' is " << getEpsilon().convertToDouble()
                         << ", expected a value >= 0";
  return verifyNorm(*this, {"input", "scale"});
}

OpCost RMSNormOp::getCost() { return normCost(*this, 4, 2); }

LogicalResult SoftmaxOp::verify() {
  RankedTensorType in = getInput().getType();
  if (failed(checkFloat(*this, in, 0, "input")) ||
      failed(checkDimInRange(*this, "dim", getDim(), in.getRank())))
    return failure();
  return checkResultType(*this, in);
}

OpCost SoftmaxOp::getCost() {
  RankedTensorType in = getInput().getType();
  int64_t n = tensorElements(in);
  int64_t len = in.getDimSize(getDim());
  OpCost cost = movementCost(*this);
  // max, subtract, exp prescale, sum, scale by 1/sum: five FLOPs and one ex2
  // an element, one rcp a row.
  cost.flops = satMul(5, n);
  cost.sfuOps = satAdd(n, len ? n / len : 0);
  return cost;
}

LogicalResult GeluOp::verify() {
  if (failed(checkFloat(*this, getInput().getType(), 0, "input")))
    return failure();
  return checkResultType(*this, getInput().getType());
}

OpCost GeluOp::getCost() {
  // erf form: scale, erf (14 FLOPs, rcp and ex2 on the SFU), +1, ·x, ·0.5.
  // tanh form: x³, fma, scale, tanh (4 FLOPs, ex2 and rcp), +1, ·x, ·0.5.
  return detail::elementwiseCost(*this, getTanh() ? 12 : 18, 2);
}

LogicalResult SiluOp::verify() {
  if (failed(checkFloat(*this, getInput().getType(), 0, "input")))
    return failure();
  return checkResultType(*this, getInput().getType());
}

OpCost SiluOp::getCost() { return detail::elementwiseCost(*this, 4, 2); }

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments, expected " << getInputs().size()
                         << " (one per operand)";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs()))) {
    auto [argType, input] = pair;
    if (argType != input.getType())
      return emitOpError() << "body argument #" << i << " has type " << argType
                           << ", expected " << input.getType()
                           << " (the type of operand #" << i << ")";
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end with fusec.yield";
  if (yield.getValues().size() != getNumResults())
    return yield.emitOpError()
           << "yields " << yield.getValues().size() << " values, expected "
           << getNumResults() << " (the results of the enclosing fusec.kernel)";
  for (auto [i, pair] : llvm::enumerate(
           llvm::zip(yield.getValues().getTypes(), getResultTypes()))) {
    auto [actual, expected] = pair;
    if (actual != expected)
      return yield.emitOpError()
             << "operand #" << i << " has type " << actual << ", expected "
             << expected << " (result #" << i << " of the enclosing fusec.kernel)";
  }
  return success();
}

OpCost fusec::sumBodyCost(Region &region) {
  OpCost total;
  region.walk([&](Operation *op) {
    if (auto costed = dyn_cast<CostOpInterface>(op)) {
      if (!isa<KernelOp>(op)) {
        OpCost c = costed.getCost();
        total.flops = satAdd(total.flops, c.flops);
        total.bytesRead = satAdd(total.bytesRead, c.bytesRead);
        total.bytesWritten = satAdd(total.bytesWritten, c.bytesWritten);
        total.sfuOps = satAdd(total.sfuOps, c.sfuOps);
      }
    }
  });
  return total;
}

OpCost KernelOp::getCost() {
  OpCost body = sumBodyCost(getBody());
  OpCost cost = movementCost(*this);
  cost.flops = body.flops;
  cost.sfuOps = body.sfuOps;
  // An operand the kernel reads only as gathers' table costs the rows they
  // take, at most its size (an embedding reads 16k rows of a 50k-row table;
  // counting the whole table predicted twice the time measured).
  for (BlockArgument a : getBody().front().getArguments()) {
    if (a.use_empty())
      continue;
    int64_t taken = 0;
    bool gathered = llvm::all_of(a.getUses(), [&](OpOperand &use) {
      auto g = dyn_cast<GatherOp>(use.getOwner());
      if (!g || use.getOperandNumber() != 0)
        return false;
      taken = satAdd(taken, tensorBytes(g.getType()));
      return true;
    });
    int64_t whole = tensorBytes(a.getType());
    if (gathered && taken < whole)
      cost.bytesRead -= whole - taken;
  }
  return cost;
}

#define GET_OP_CLASSES
#include "fusec/IR/FusecOps.cpp.inc"
