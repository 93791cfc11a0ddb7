//===- CodeGen.cpp - fusec.kernel to PTX ------------------------*- C++ -*-===//
//
// An elementwise kernel becomes one llvm.func with the nvvm.kernel attribute:
// a grid-stride loop over chunks of `vector` elements (16 bytes of the widest
// boundary type); a full chunk loads each full-shape operand with one 16-byte
// vector load (cache-hinted per fusec.cache_hints), computes every output
// lane by lane in f32 (or the integer type) and stores vectors; the last,
// partial chunk does the same element by element. Operands of other shapes
// (broadcast sources) are read element by element at their remapped index.
//
// Fast math, explicitly: exp, exp2, log, pow, sigmoid and tanh use the SFU's
// ex2.approx.ftz / lg2.approx.ftz (max error ~2 ulp of f32), rsqrt uses
// rsqrt.approx.ftz; erf is the Abramowitz-Stegun 7.1.26 polynomial (1.5e-7
// absolute); division and sqrt are IEEE. Narrow float results (bf16, f16)
// are rounded after every op, as the reference interpreter does.
//
// All inline PTX lives in Writer::ptxUnary() (SFU math), vectorLoadInstr()
// (16-byte loads with their cache policy) and unpack() (a register move that
// keeps a later pass from reusing an earlier pass's values).
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/CodeGen/RowPlan.h"
#include "fusec/IR/Fusec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <functional>
#include <map>
#include <mutex>
#include <optional>

using namespace mlir;

namespace fusec {

namespace {

absl::Status unimplemented(Operation *op, const std::string &why) {
  std::string where;
  if (auto fl = op->getLoc()->findInstanceOf<FileLineColLoc>())
    where = absl::StrCat(fl.getFilename().getValue().str(), ":", fl.getLine(),
                         ":", fl.getColumn(), ": ");
  return absl::UnimplementedError(absl::StrCat(
      where, "'", op->getName().getStringRef().str(), "': ", why));
}

/// The LLVM type a tensor element is stored as, and computed in.
struct ElemTypes {
  std::string storage; // "f32", "bf16", "f16", "i32", "i64", "i8" (for i1)
  std::string compute; // "f32", "i32", "i64", "i1"
  int bytes = 4;
  bool isFloat = false;
};

std::optional<ElemTypes> elemTypes(Type t) {
  Type e = getElementTypeOrSelf(t);
  if (e.isF32())
    return ElemTypes{"f32", "f32", 4, true};
  if (e.isBF16())
    return ElemTypes{"bf16", "f32", 2, true};
  if (e.isF16())
    return ElemTypes{"f16", "f32", 2, true};
  if (e.isSignlessInteger(32))
    return ElemTypes{"i32", "i32", 4, false};
  if (e.isSignlessInteger(64))
    return ElemTypes{"i64", "i64", 8, false};
  if (e.isSignlessInteger(1))
    return ElemTypes{"i8", "i1", 1, false};
  return std::nullopt;
}

std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

std::string f32Literal(double v) {
  return absl::StrFormat("%.9e", static_cast<float>(v));
}

/// Writes LLVM-dialect text.
class Writer {
public:
  std::string text;
  int counter = 0;
  std::string fresh() { return "%v" + std::to_string(counter++); }
  /// `%vN = <rhs>`; returns %vN.
  std::string def(const std::string &rhs) {
    std::string n = fresh();
    absl::StrAppend(&text, "    ", n, " = ", rhs, "\n");
    return n;
  }
  void line(const std::string &s) { absl::StrAppend(&text, "    ", s, "\n"); }
  void label(const std::string &s) { absl::StrAppend(&text, "  ", s, ":\n"); }
  std::string constI64(int64_t v) {
    return def(absl::StrCat("llvm.mlir.constant(", v, " : i64) : i64"));
  }
  std::string constF32(double v) {
    return def(absl::StrCat("llvm.mlir.constant(", f32Literal(v), " : f32) : f32"));
  }
  std::string f(const char *op, const std::string &a, const std::string &b) {
    return def(absl::StrCat("llvm.", op, " ", a, ", ", b, " : f32"));
  }
  std::string intr(const char *name, ArrayRef<std::string> args,
                   const std::string &type) {
    std::string list, types;
    for (auto [i, a] : llvm::enumerate(args)) {
      absl::StrAppend(&list, i ? ", " : "", a);
      absl::StrAppend(&types, i ? ", " : "", type);
    }
    return def(absl::StrCat("llvm.intr.", name, "(", list, ") : (", types,
                            ") -> ", type));
  }
  /// The one place for PTX instructions NVVM has no op for: SFU math.
  std::string ptxUnary(const char *instr, const std::string &x) {
    return def(absl::StrCat("llvm.inline_asm \"", instr, " $0, $1;\", \"=f,f\" ",
                            x, " : (f32) -> f32"));
  }
};

class KernelWriter {
public:
  KernelWriter(KernelOp kernel, const PtxOptions &options)
      : kernel(kernel), options(options) {}

  absl::StatusOr<GeneratedKernel> run();

private:
  absl::Status check();
  absl::StatusOr<std::string> eval(Value v, const std::string &mainIndex,
                                   int lane);
  std::string load(BlockArgument arg, const std::string &flatIndex);
  std::string toCompute(const std::string &raw, const ElemTypes &t);
  std::string toStorage(const std::string &value, const ElemTypes &t);
  std::string roundTo(const std::string &value, Type type);
  void vectorLoads(const std::string &base);
  struct RawChunk {
    std::vector<std::string> words; // four i32 words of a 16-byte load
    std::string vec;                // or an LLVM vector
    int64_t count = 0;
    ElemTypes type;
  };
  std::string vectorLoadInstr(unsigned argNumber);
  /// The kernel's parameters (operands, then results, as global pointers);
  /// fills argNames and `outNames`.
  std::string declareParams(std::vector<std::string> &outNames);
  RawChunk loadRaw(BlockArgument arg, const std::string &base, int64_t count);
  std::vector<std::string> unpack(const RawChunk &raw, bool launder);

  KernelOp kernel;
  const PtxOptions &options;
  Writer w;
  SmallVector<int64_t> domain;
  int64_t elements = 0, vector = 1;
  std::vector<std::string> argNames;
  /// Per lane of the vector path: the loaded lanes of full-shape operands.
  llvm::DenseMap<unsigned, std::vector<std::string>> lanes;
  /// Memo: (value, index) -> computed SSA name, reset per lane; inside a
  /// loop body, entries are dropped when the body ends (they do not
  /// dominate what follows the loop).
  llvm::DenseMap<std::pair<Value, int>, std::string> memo;
  std::vector<std::vector<std::pair<Value, int>>> scopes;
  int loopCounter = 0; ///< unique labels of loops emitted inside eval
  /// Reductions over dims that are not adjacent (runRows only): the kept
  /// and the reduced dims of the domain, in order.
  bool generalRows = false;
  SmallVector<int64_t> keptDims, reducedDims;
  void remember(std::pair<Value, int> key, const std::string &name) {
    memo[key] = name;
    if (!scopes.empty())
      scopes.back().push_back(key);
  }
  void openScope() { scopes.emplace_back(); }
  void closeScope() {
    for (auto &k : scopes.back())
      memo.erase(k);
    scopes.pop_back();
  }
  absl::StatusOr<GeneratedKernel> runRows();
  /// Row reductions: the reduced (trailing) length and the number of rows.
  int64_t rowLength = 0, rows = 0;
  std::vector<ReduceOp> reductions;
  /// The per-row totals of the reductions, once their loops are emitted.
  llvm::DenseMap<Value, std::string> rowTotals;
  bool vectorPath = false;
  /// On the vector path: the flat index of each lane (a full-shape operand
  /// read at any other index, as a transpose does, is loaded by itself).
  std::vector<std::string> laneIndex;
  /// Flat index <-> coordinates of `shape` (row-major).
  std::vector<std::string> coordinates(const std::string &flat, ArrayRef<int64_t> shape);
  std::string linearize(ArrayRef<std::string> coords, ArrayRef<int64_t> shape);
  /// Column reductions (runColumns): the reduced dims lead; per lane totals.
  bool columnMode = false;
  int64_t columnInner = 1; ///< elements after the reduced dims
  absl::StatusOr<GeneratedKernel> runColumns();
  std::map<std::pair<Value, int>, std::string, std::function<bool(const std::pair<Value, int> &, const std::pair<Value, int> &)>>
      columnTotals{[](const std::pair<Value, int> &a, const std::pair<Value, int> &b) {
        return std::make_pair(a.first.getAsOpaquePointer(), a.second) <
               std::make_pair(b.first.getAsOpaquePointer(), b.second);
      }};

  /// Rows held in registers (runRowsInRegisters): a group of `groupThreads`
  /// threads per row, each holding `rowChunks` chunks of `rowVector`
  /// elements of every full-shape operand.
  absl::StatusOr<std::optional<GeneratedKernel>> runRowsInRegisters();
  bool rowRegs = false;
  int64_t rowVector = 1, groupThreads = 32, rowChunks = 1;
  enum class IndexKind { Full, Column };
  struct IndexInfo {
    IndexKind kind;
    int64_t chunk, lane;
  };
  std::map<std::string, IndexInfo> indexInfo;
  std::vector<std::vector<std::string>> colIndex; // [chunk][lane]
  std::vector<std::string> chunkBase;             // [chunk]: safe column of lane 0
  std::map<std::pair<unsigned, int64_t>, RawChunk> rawChunks;
  std::map<std::pair<unsigned, int64_t>, std::vector<std::string>> passLanes, columnLanes;
  bool launderPass = false;
  /// Per-row reciprocals of row-level divisors (by the divisor's SSA name).
  std::map<std::string, std::string> reciprocals;
  std::string rowLaneValue(BlockArgument arg, const IndexInfo &at);
  std::optional<std::string> rowBroadcastIndex(BroadcastOp b, const std::string &mainIndex);
};

absl::Status KernelWriter::check() {
  Block &body = kernel.getBody().front();
  body.walk([&](ReduceOp r) { reductions.push_back(r); });
  if (!reductions.empty()) {
    // Row reductions: every reduction reduces the same trailing dims of the
    // same shape D (fusion guarantees the same signature).
    auto in = cast<RankedTensorType>(reductions[0].getInput().getType());
    domain.assign(in.getShape().begin(), in.getShape().end());
    SmallVector<int64_t> dims(reductions[0].getDims());
    llvm::sort(dims);
    int64_t rank = in.getRank();
    rowLength = 1;
    bool trailing = true, contiguous = true;
    for (auto [i, d] : llvm::enumerate(dims)) {
      trailing &= d == rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(i);
      contiguous &= d == dims[0] + static_cast<int64_t>(i);
      rowLength *= in.getDimSize(d);
    }
    rows = rowLength ? in.getNumElements() / rowLength : 0;
    if (!trailing && !contiguous) {
      // Reduced dims apart (MeanVarianceNormalization's 0, 2, 3): a warp
      // per kept position, each element found through its coordinates.
      generalRows = true;
      for (int64_t d = 0; d < rank; ++d)
        (llvm::is_contained(dims, d) ? reducedDims : keptDims).push_back(d);
    } else if (!trailing) {
      // Column reductions: the reduced dims lead, or sit between an outer
      // and an inner block: each "row" is a column, at a stride of the inner
      // block's size.
      columnMode = true;
      columnInner = 1;
      for (int64_t d = dims.back() + 1; d < rank; ++d)
        columnInner *= in.getDimSize(d);
      for (ReduceOp r : reductions)
        if (!isa<FloatType>(getElementTypeOrSelf(r.getType())))
          return unimplemented(r, "integer reductions are not generated yet");
      SmallVector<int64_t> colShape;
      for (int64_t d = 0; d < rank; ++d)
        if (!llvm::is_contained(dims, d))
          colShape.push_back(in.getDimSize(d));
      for (Value r : body.getTerminator()->getOperands()) {
        auto t = cast<RankedTensorType>(r.getType()).getShape();
        if (t != ArrayRef<int64_t>(domain) && t != ArrayRef<int64_t>(colShape))
          return unimplemented(kernel, "an output of neither the column nor "
                                       "the element shape");
      }
    }
    for (ReduceOp r : reductions)
      if (!isa<FloatType>(getElementTypeOrSelf(r.getType())))
        return unimplemented(r, "integer reductions are not generated yet");
    SmallVector<int64_t> rowShape(in.getShape().take_front(rank - dims.size()));
    if (generalRows) {
      rowShape.clear();
      for (int64_t d : keptDims)
        rowShape.push_back(in.getDimSize(d));
    }
    for (Value r : body.getTerminator()->getOperands()) {
      if (columnMode)
        break;
      auto t = cast<RankedTensorType>(r.getType()).getShape();
      if (t != ArrayRef<int64_t>(domain) && t != ArrayRef<int64_t>(rowShape))
        return unimplemented(kernel, "an output of neither the row nor the "
                                     "element shape");
    }
  }
  for (Value r : body.getTerminator()->getOperands()) {
    auto t = cast<RankedTensorType>(r.getType());
    if (!reductions.empty())
      break;
    if (domain.empty())
      domain.assign(t.getShape().begin(), t.getShape().end());
    else if (ArrayRef<int64_t>(domain) != t.getShape())
      return unimplemented(kernel, "outputs of different shapes");
  }
  if (domain.empty())
    return unimplemented(kernel, "a kernel without outputs");
  for (Operation &op : body) {
    if (isa<YieldOp>(op))
      continue;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      if (!isa<SplatElementsAttr>(c.getValue()))
        return unimplemented(&op, "only splat constants are generated yet");
    } else if (auto mm = dyn_cast<MatmulOp>(op)) {
      if (!reductions.empty())
        return unimplemented(&op, "a matmul fused with a reduction is not "
                                  "generated yet");
      if (!isa<FloatType>(getElementTypeOrSelf(mm.getLhs().getType())))
        return unimplemented(&op, "integer matmul is not generated yet");
    } else if (!isa<ReduceOp, CastOp, BroadcastOp, ReshapeOp, TransposeOp, SliceOp, ConcatOp,
                    GatherOp, CompareOp, SelectOp, AddOp, SubOp, MulOp,
                    DivOp, MaxOp, MinOp, PowOp, AndOp, OrOp, NotOp, NegOp,
                    AbsOp, SignOp, FloorOp, CeilOp, ExpOp, Exp2Op, LogOp,
                    TanhOp, ErfOp, SigmoidOp, RsqrtOp, SqrtOp>(op)) {
      return unimplemented(&op, "attention is not generated yet (only "
                                "elementwise, movement, reduction and SIMT "
                                "matmul kernels are)");
    }
    for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults()))
      if (!elemTypes(v.getType()))
        return unimplemented(&op, "fp8 element types are not generated yet");
  }
  for (Value v : body.getArguments())
    if (!elemTypes(v.getType()))
      return unimplemented(kernel, "fp8 element types are not generated yet");
  return absl::OkStatus();
}

std::string KernelWriter::toCompute(const std::string &raw, const ElemTypes &t) {
  if (t.storage == "bf16" || t.storage == "f16")
    return w.def(absl::StrCat("llvm.fpext ", raw, " : ", t.storage, " to f32"));
  if (t.storage == "i8")
    return w.def(absl::StrCat("llvm.trunc ", raw, " : i8 to i1"));
  return raw;
}

std::string KernelWriter::toStorage(const std::string &value, const ElemTypes &t) {
  if (t.storage == "bf16" || t.storage == "f16")
    return w.def(absl::StrCat("llvm.fptrunc ", value, " : f32 to ", t.storage));
  if (t.storage == "i8")
    return w.def(absl::StrCat("llvm.zext ", value, " : i1 to i8"));
  return value;
}

/// Rounds an f32 computation to a narrow float result type.
std::string KernelWriter::roundTo(const std::string &value, Type type) {
  auto t = elemTypes(type);
  if (!t || (t->storage != "bf16" && t->storage != "f16"))
    return value;
  return toCompute(toStorage(value, *t), *t);
}

std::string KernelWriter::load(BlockArgument arg, const std::string &flatIndex) {
  ElemTypes t = *elemTypes(arg.getType());
  std::string ptr = w.def(absl::StrCat(
      "llvm.getelementptr ", argNames[arg.getArgNumber()], "[", flatIndex,
      "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
  std::string raw = w.def(absl::StrCat("llvm.load ", ptr, " : !llvm.ptr<1> -> ",
                                       t.storage));
  return toCompute(raw, t);
}

std::vector<std::string> KernelWriter::coordinates(const std::string &flat,
                                                  ArrayRef<int64_t> shape) {
  auto strides = stridesOf(shape);
  std::vector<std::string> c;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string q = w.def(absl::StrCat("llvm.udiv ", flat, ", ", w.constI64(strides[d]), " : i64"));
    if (d > 0)
      q = w.def(absl::StrCat("llvm.urem ", q, ", ", w.constI64(shape[d]), " : i64"));
    c.push_back(q);
  }
  return c;
}

std::string KernelWriter::linearize(ArrayRef<std::string> coords, ArrayRef<int64_t> shape) {
  auto strides = stridesOf(shape);
  std::string acc = w.constI64(0);
  for (size_t d = 0; d < shape.size(); ++d)
    acc = w.def(absl::StrCat("llvm.add ", acc, ", ",
                             w.def(absl::StrCat("llvm.mul ", coords[d], ", ",
                                                w.constI64(strides[d]), " : i64")),
                             " : i64"));
  return acc;
}

std::string KernelWriter::declareParams(std::vector<std::string> &outNames) {
  Block &body = kernel.getBody().front();
  std::string params;
  unsigned n = 0;
  auto add = [&](std::vector<std::string> &names) {
    names.push_back("%arg" + std::to_string(n));
    absl::StrAppend(&params, n ? ", " : "", "%arg", n, ": !llvm.ptr<1> {llvm.noalias}");
    ++n;
  };
  for (unsigned i = 0; i < body.getNumArguments(); ++i)
    add(argNames);
  for (unsigned i = 0; i < body.getTerminator()->getNumOperands(); ++i)
    add(outNames);
  return params;
}

/// The load instruction for `arg` as fusec.cache_hints asks (16 bytes).
std::string KernelWriter::vectorLoadInstr(unsigned argNumber) {
  auto hints = kernel->getAttrOfType<ArrayAttr>("fusec.cache_hints");
  std::string hint = "default";
  if (hints && argNumber < hints.size())
    hint = cast<StringAttr>(hints[argNumber]).getValue().str();
  // With the cache policy that fusec.cache_hints asks for, or plain when
  // aggressive PTX is off.
  if (!options.aggressivePtx || hint == "default")
    return "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];";
  if (hint == "keep") {
    if (options.keepLoad == "evict_last")
      return "ld.global.nc.L1::evict_last.v4.u32 {$0, $1, $2, $3}, [$4];";
    if (options.keepLoad == "nc")
      return "ld.global.nc.v4.u32 {$0, $1, $2, $3}, [$4];";
    return "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];";
  }
  if (options.streamLoad == "plain")
    return "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];";
  if (options.streamLoad == "l2_256b")
    return "ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {$0, $1, $2, $3}, [$4];";
  if (options.streamLoad == "evict_first")
    return "{ .reg .b64 pol; createpolicy.fractional.L2::evict_first.b64 "
           "pol, 1.0; ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 "
           "{$0, $1, $2, $3}, [$4], pol; }";
  return "ld.global.nc.L1::no_allocate.v4.u32 {$0, $1, $2, $3}, [$4];";
}

/// Loads `count` elements of `arg` at flat index `base` (aligned to the
/// access): one 16-byte load as PTX when the access is 16 bytes (the LLVM
/// optimizer would split a vector load whose lanes are used one by one),
/// else an LLVM vector load.
KernelWriter::RawChunk KernelWriter::loadRaw(BlockArgument arg,
                                             const std::string &base,
                                             int64_t count) {
  ElemTypes t = *elemTypes(arg.getType());
  std::string ptr = w.def(absl::StrCat(
      "llvm.getelementptr ", argNames[arg.getArgNumber()], "[", base,
      "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
  RawChunk raw;
  raw.count = count;
  raw.type = t;
  if (count * t.bytes == 16) {
    std::string addr = w.def(absl::StrCat("llvm.ptrtoint ", ptr,
                                          " : !llvm.ptr<1> to i64"));
    std::string s = w.def(absl::StrCat(
        "llvm.inline_asm \"", vectorLoadInstr(arg.getArgNumber()),
        "\", \"=r,=r,=r,=r,l\" ", addr,
        " : (i64) -> !llvm.struct<(i32, i32, i32, i32)>"));
    for (int i = 0; i < 4; ++i)
      raw.words.push_back(w.def(absl::StrCat(
          "llvm.extractvalue ", s, "[", i, "] : !llvm.struct<(i32, i32, i32, i32)>")));
  } else {
    raw.vec = w.def(absl::StrCat("llvm.load ", ptr, " {alignment = ",
                                 count * t.bytes, " : i64} : !llvm.ptr<1> -> vector<",
                                 count, "x", t.storage, ">"));
  }
  return raw;
}

/// The lanes of a loaded chunk in the compute type. `launder` passes the
/// words through an opaque move first, so that a later pass over a row held
/// in registers converts again from the packed words instead of keeping the
/// f32 values of an earlier pass alive (which would double the registers).
std::vector<std::string> KernelWriter::unpack(const RawChunk &raw, bool launder) {
  std::string vecType = absl::StrCat("vector<", raw.count, "x", raw.type.storage, ">");
  std::string vec = raw.vec;
  if (!raw.words.empty()) {
    std::string packed = w.def("llvm.mlir.poison : vector<4xi32>");
    for (int i = 0; i < 4; ++i) {
      std::string e = raw.words[i];
      if (launder)
        e = w.def(absl::StrCat("llvm.inline_asm has_side_effects \"mov.b32 $0, $1;\", "
                               "\"=r,r\" ", e, " : (i32) -> i32"));
      std::string idx = w.def(absl::StrCat("llvm.mlir.constant(", i, " : i32) : i32"));
      packed = w.def(absl::StrCat("llvm.insertelement ", e, ", ", packed, "[",
                                  idx, " : i32] : vector<4xi32>"));
    }
    vec = w.def(absl::StrCat("llvm.bitcast ", packed, " : vector<4xi32> to ", vecType));
  }
  std::vector<std::string> out;
  for (int64_t i = 0; i < raw.count; ++i) {
    std::string idx = w.def(absl::StrCat("llvm.mlir.constant(", i, " : i32) : i32"));
    std::string e = w.def(absl::StrCat("llvm.extractelement ", vec, "[", idx,
                                       " : i32] : ", vecType));
    out.push_back(toCompute(e, raw.type));
  }
  return out;
}

/// Loads `vector` elements of every full-shape operand at `base`.
void KernelWriter::vectorLoads(const std::string &base) {
  for (BlockArgument arg : kernel.getBody().front().getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getShape() != ArrayRef<int64_t>(domain))
      continue;
    lanes[arg.getArgNumber()] = unpack(loadRaw(arg, base, vector), false);
  }
}

absl::StatusOr<std::string> KernelWriter::eval(Value v,
                                               const std::string &mainIndex,
                                               int lane) {
  // `mainIndex` is the flat index in the shape of `v` (broadcasts remap it).
  auto key = std::make_pair(v, static_cast<int>(std::hash<std::string>()(mainIndex)));
  if (auto it = memo.find(key); it != memo.end())
    return it->second;
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  bool full = shape == ArrayRef<int64_t>(domain);
  std::string result;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto at = rowRegs ? indexInfo.find(mainIndex) : indexInfo.end();
    int64_t argElements = cast<RankedTensorType>(arg.getType()).getNumElements();
    if (vectorPath && full && lane < static_cast<int>(laneIndex.size()) &&
        laneIndex[lane] == mainIndex)
      result = lanes[arg.getArgNumber()][lane];
    else if (at != indexInfo.end() &&
             ((full && at->second.kind == IndexKind::Full) ||
              (at->second.kind == IndexKind::Column && argElements == rowLength)))
      result = rowLaneValue(arg, at->second);
    else
      result = load(arg, mainIndex);
    remember(key, result);
    return result;
  }
  Operation *op = v.getDefiningOp();
  auto operand = [&](unsigned i) { return eval(op->getOperand(i), mainIndex, lane); };
  ElemTypes rt = *elemTypes(v.getType());
  bool isFloat = rt.isFloat;

  if (isa<ReduceOp>(op) && columnMode) {
    auto it = columnTotals.find({v, lane});
    if (it == columnTotals.end())
      return absl::InternalError("fusec codegen: a column reduction used before "
                                 "its loop (internal ordering error)");
    return it->second;
  }
  if (isa<ReduceOp>(op)) {
    auto it = rowTotals.find(v);
    if (it == rowTotals.end())
      return absl::InternalError("fusec codegen: a reduction used before its "
                                 "row loop (internal ordering error)");
    return it->second;
  }
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto splat = cast<SplatElementsAttr>(c.getValue());
    if (isFloat)
      result = w.constF32(splat.getSplatValue<APFloat>().convertToDouble());
    else if (rt.compute == "i1")
      result = w.def(absl::StrCat("llvm.mlir.constant(",
                                  splat.getSplatValue<APInt>().getBoolValue() ? "true" : "false",
                                  ") : i1"));
    else
      result = w.def(absl::StrCat("llvm.mlir.constant(",
                                  splat.getSplatValue<APInt>().getSExtValue(), " : ",
                                  rt.compute, ") : ", rt.compute));
  } else if (auto mm = dyn_cast<MatmulOp>(op)) {
    // One output element: a loop over K with an f32 fused multiply-add
    // (the SIMT fallback; tensor-core matmul is not generated yet). Values
    // computed in the loop body stay in its scope.
    auto lhs = cast<RankedTensorType>(mm.getLhs().getType()).getShape();
    auto rhs = cast<RankedTensorType>(mm.getRhs().getType()).getShape();
    auto c = coordinates(mainIndex, shape);
    size_t r = shape.size();
    int64_t kExtent = mm.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
    int id = loopCounter++;
    std::string head = absl::StrCat("^mm", id), bodyLabel = absl::StrCat("^mmbody", id),
                exit = absl::StrCat("^mmexit", id);
    std::string k = absl::StrCat("%mmk", id), acc = absl::StrCat("%mmacc", id);
    w.line(absl::StrCat("llvm.br ", head, "(", w.constI64(0), ", ", w.constF32(0),
                        " : i64, f32)"));
    w.label(absl::StrCat(head, "(", k, ": i64, ", acc, ": f32)"));
    std::string more = w.def(absl::StrCat("llvm.icmp \"ult\" ", k, ", ",
                                          w.constI64(kExtent), " : i64"));
    w.line(absl::StrCat("llvm.cond_br ", more, ", ", bodyLabel, ", ", exit));
    w.label(bodyLabel);
    openScope();
    // Batch coordinates align from the right; a batch dim of 1 broadcasts.
    auto operandIndex = [&](ArrayRef<int64_t> s, const std::string &row,
                            const std::string &col, bool transposed) {
      std::vector<std::string> oc;
      for (size_t i = 0; i + 2 < s.size(); ++i)
        oc.push_back(s[i] == 1 ? w.constI64(0) : c[i + r - s.size()]);
      oc.push_back(transposed ? col : row);
      oc.push_back(transposed ? row : col);
      return linearize(oc, s);
    };
    auto a = eval(mm.getLhs(), operandIndex(lhs, c[r - 2], k, mm.getTransposeLhs()), lane);
    if (!a.ok())
      return a;
    auto b = eval(mm.getRhs(), operandIndex(rhs, k, c[r - 1], mm.getTransposeRhs()), lane);
    if (!b.ok())
      return b;
    std::string next = w.intr("fma", {*a, *b, acc}, "f32");
    closeScope();
    std::string k2 = w.def(absl::StrCat("llvm.add ", k, ", ", w.constI64(1), " : i64"));
    w.line(absl::StrCat("llvm.br ", head, "(", k2, ", ", next, " : i64, f32)"));
    w.label(exit);
    result = acc;
  } else if (isa<ReshapeOp>(op)) {
    // Row-major: the same flat index.
    auto in = eval(op->getOperand(0), mainIndex, lane);
    if (!in.ok())
      return in;
    result = *in;
  } else if (auto t = dyn_cast<TransposeOp>(op)) {
    // Result dim i is input dim perm[i].
    auto src = cast<RankedTensorType>(t.getInput().getType()).getShape();
    auto c = coordinates(mainIndex, shape);
    std::vector<std::string> in(src.size());
    for (auto [i, p] : llvm::enumerate(t.getPermutation()))
      in[p] = c[i];
    auto v = eval(t.getInput(), linearize(in, src), lane);
    if (!v.ok())
      return v;
    result = *v;
  } else if (auto sl = dyn_cast<SliceOp>(op)) {
    auto src = cast<RankedTensorType>(sl.getInput().getType()).getShape();
    auto c = coordinates(mainIndex, shape);
    for (size_t i = 0; i < c.size(); ++i)
      c[i] = w.def(absl::StrCat(
          "llvm.add ", w.constI64(sl.getOffsets()[i]), ", ",
          w.def(absl::StrCat("llvm.mul ", c[i], ", ", w.constI64(sl.getStrides()[i]), " : i64")),
          " : i64"));
    auto v = eval(sl.getInput(), linearize(c, src), lane);
    if (!v.ok())
      return v;
    result = *v;
  } else if (auto cc = dyn_cast<ConcatOp>(op)) {
    // Every input is read at its clamped coordinate; a select keeps the one
    // the coordinate falls in.
    int64_t d = cc.getDim();
    auto c = coordinates(mainIndex, shape);
    int64_t start = 0;
    std::string chosen;
    for (Value input : cc.getInputs()) {
      auto src = cast<RankedTensorType>(input.getType()).getShape();
      if (src[d] == 0)
        continue;
      std::vector<std::string> ic = c;
      std::string local = w.def(absl::StrCat("llvm.sub ", c[d], ", ", w.constI64(start), " : i64"));
      std::string below = w.def(absl::StrCat("llvm.icmp \"slt\" ", local, ", ",
                                             w.constI64(0), " : i64"));
      std::string clamped = w.def(absl::StrCat("llvm.select ", below, ", ", w.constI64(0), ", ",
                                               local, " : i1, i64"));
      clamped = w.intr("umin", {clamped, w.constI64(src[d] - 1)}, "i64");
      ic[d] = clamped;
      auto v = eval(input, linearize(ic, src), lane);
      if (!v.ok())
        return v;
      if (chosen.empty()) {
        chosen = *v;
      } else {
        std::string here = w.def(absl::StrCat("llvm.icmp \"sge\" ", local, ", ",
                                              w.constI64(0), " : i64"));
        chosen = w.def(absl::StrCat("llvm.select ", here, ", ", *v, ", ", chosen, " : i1, ",
                                    rt.compute));
      }
      start += src[d];
    }
    result = chosen;
  } else if (auto ga = dyn_cast<GatherOp>(op)) {
    // result = table[:axis] ++ indices ++ table[axis+1:]; a negative index
    // counts from the end; out-of-range indices are clamped (the
    // interpreter reports them as errors).
    auto table = cast<RankedTensorType>(ga.getTable().getType()).getShape();
    auto ids = cast<RankedTensorType>(ga.getIndices().getType()).getShape();
    int64_t axis = ga.getAxis();
    auto c = coordinates(mainIndex, shape);
    std::vector<std::string> idc(c.begin() + axis, c.begin() + axis + ids.size());
    auto id = eval(ga.getIndices(), linearize(idc, ids), lane);
    if (!id.ok())
      return id;
    ElemTypes it = *elemTypes(ga.getIndices().getType());
    std::string id64 = it.compute == "i64" ? *id
                                           : w.def(absl::StrCat("llvm.sext ", *id, " : ",
                                                                it.compute, " to i64"));
    std::string neg = w.def(absl::StrCat("llvm.icmp \"slt\" ", id64, ", ", w.constI64(0), " : i64"));
    std::string wrapped = w.def(absl::StrCat("llvm.add ", id64, ", ", w.constI64(table[axis]), " : i64"));
    id64 = w.def(absl::StrCat("llvm.select ", neg, ", ", wrapped, ", ", id64, " : i1, i64"));
    id64 = w.intr("smax", {id64, w.constI64(0)}, "i64");
    id64 = w.intr("smin", {id64, w.constI64(table[axis] - 1)}, "i64");
    std::vector<std::string> tc(c.begin(), c.begin() + axis);
    tc.push_back(id64);
    tc.insert(tc.end(), c.begin() + axis + ids.size(), c.end());
    auto v = eval(ga.getTable(), linearize(tc, table), lane);
    if (!v.ok())
      return v;
    result = *v;
  } else if (auto b = dyn_cast<BroadcastOp>(op);
             b && rowRegs && rowBroadcastIndex(b, mainIndex)) {
    auto in = eval(b.getInput(), *rowBroadcastIndex(b, mainIndex), lane);
    if (!in.ok())
      return in;
    result = *in;
  } else if (auto b = dyn_cast<BroadcastOp>(op)) {
    // Remap the index: source dim j reads result dim dims[j] (or 0 if 1).
    auto src = cast<RankedTensorType>(b.getInput().getType()).getShape();
    auto strides = stridesOf(shape), srcStrides = stridesOf(src);
    std::string acc = w.constI64(0);
    for (auto [j, d] : llvm::enumerate(b.getDims())) {
      if (src[j] == 1)
        continue;
      std::string q = w.def(absl::StrCat("llvm.udiv ", mainIndex, ", ",
                                         w.constI64(strides[d]), " : i64"));
      std::string r = w.def(absl::StrCat("llvm.urem ", q, ", ",
                                         w.constI64(shape[d]), " : i64"));
      std::string m = w.def(absl::StrCat("llvm.mul ", r, ", ",
                                         w.constI64(srcStrides[j]), " : i64"));
      acc = w.def(absl::StrCat("llvm.add ", acc, ", ", m, " : i64"));
    }
    auto in = eval(b.getInput(), acc, lane);
    if (!in.ok())
      return in;
    result = *in;
  } else if (auto c = dyn_cast<CastOp>(op)) {
    auto in = operand(0);
    if (!in.ok())
      return in;
    ElemTypes from = *elemTypes(c.getInput().getType());
    if (from.isFloat && isFloat)
      result = *in;
    else if (from.isFloat && rt.compute == "i1")
      result = w.def(absl::StrCat("llvm.fcmp \"une\" ", *in, ", ", w.constF32(0), " : f32"));
    else if (from.isFloat)
      result = w.def(absl::StrCat("llvm.intr.fptosi.sat(", *in, ") : (f32) -> ", rt.compute));
    else if (isFloat)
      result = w.def(absl::StrCat(from.compute == "i1" ? "llvm.uitofp " : "llvm.sitofp ",
                                  *in, " : ", from.compute, " to f32"));
    else if (from.compute == rt.compute)
      result = *in;
    else if (rt.compute == "i1")
      result = w.def(absl::StrCat("llvm.icmp \"ne\" ", *in, ", ",
                                  w.def(absl::StrCat("llvm.mlir.constant(0 : ", from.compute,
                                                     ") : ", from.compute)),
                                  " : ", from.compute));
    else
      result = w.def(absl::StrCat(from.compute == "i1" || from.bytes < rt.bytes
                                      ? (from.compute == "i1" ? "llvm.zext " : "llvm.sext ")
                                      : "llvm.trunc ",
                                  *in, " : ", from.compute, " to ", rt.compute));
  } else {
    std::vector<std::string> in;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto x = operand(i);
      if (!x.ok())
        return x;
      in.push_back(*x);
    }
    Type operandType = op->getOperand(op->getNumOperands() - 1).getType();
    ElemTypes ot = *elemTypes(operandType);
    const double log2e = 1.4426950408889634, ln2 = 0.6931471805599453;
    auto ex2 = [&](const std::string &x) { return w.ptxUnary("ex2.approx.ftz.f32", x); };
    if (isa<CompareOp>(op)) {
      auto p = cast<CompareOp>(op).getPredicate();
      static const char *fp[] = {"oeq", "une", "olt", "ole", "ogt", "oge"};
      static const char *ip[] = {"eq", "ne", "slt", "sle", "sgt", "sge"};
      int k = static_cast<int>(p);
      result = ot.isFloat
                   ? w.def(absl::StrCat("llvm.fcmp \"", fp[k], "\" ", in[0], ", ", in[1], " : f32"))
                   : w.def(absl::StrCat("llvm.icmp \"", ip[k], "\" ", in[0], ", ", in[1], " : ", ot.compute));
    } else if (isa<SelectOp>(op)) {
      result = w.def(absl::StrCat("llvm.select ", in[0], ", ", in[1], ", ", in[2],
                                  " : i1, ", rt.compute));
    } else if (!isFloat) {
      const std::string &t = rt.compute;
      if (isa<AddOp>(op)) result = w.def(absl::StrCat("llvm.add ", in[0], ", ", in[1], " : ", t));
      else if (isa<SubOp>(op)) result = w.def(absl::StrCat("llvm.sub ", in[0], ", ", in[1], " : ", t));
      else if (isa<MulOp>(op)) result = w.def(absl::StrCat("llvm.mul ", in[0], ", ", in[1], " : ", t));
      else if (isa<DivOp>(op)) result = w.def(absl::StrCat("llvm.sdiv ", in[0], ", ", in[1], " : ", t));
      else if (isa<MaxOp>(op)) result = w.intr("smax", {in[0], in[1]}, t);
      else if (isa<MinOp>(op)) result = w.intr("smin", {in[0], in[1]}, t);
      else if (isa<AndOp>(op)) result = w.def(absl::StrCat("llvm.and ", in[0], ", ", in[1], " : i1"));
      else if (isa<OrOp>(op)) result = w.def(absl::StrCat("llvm.or ", in[0], ", ", in[1], " : i1"));
      else if (isa<NotOp>(op)) result = w.def(absl::StrCat("llvm.xor ", in[0], ", ",
                                                           w.def("llvm.mlir.constant(true) : i1"), " : i1"));
      else if (isa<NegOp>(op)) result = w.def(absl::StrCat("llvm.sub ", w.def(absl::StrCat("llvm.mlir.constant(0 : ", t, ") : ", t)), ", ", in[0], " : ", t));
      else if (isa<AbsOp>(op)) result = w.def(absl::StrCat("\"llvm.intr.abs\"(", in[0], ") <{is_int_min_poison = false}> : (", t, ") -> ", t));
      else return unimplemented(op, "this integer op is not generated yet");
    } else if (isa<AddOp>(op)) {
      result = w.f("fadd", in[0], in[1]);
    } else if (isa<SubOp>(op)) {
      result = w.f("fsub", in[0], in[1]);
    } else if (isa<MulOp>(op)) {
      result = w.f("fmul", in[0], in[1]);
    } else if (isa<DivOp>(op)) {
      // Dividing by a value of the row (softmax's sum): one IEEE division
      // per row for the reciprocal, then a multiply per element (at most
      // 1.5 ulp of f32 from the quotient).
      auto b = op->getOperand(1).getDefiningOp<BroadcastOp>();
      if (rowRegs && b && rowBroadcastIndex(b, mainIndex) == std::string("%row")) {
        auto it = reciprocals.find(in[1]);
        if (it == reciprocals.end())
          it = reciprocals.emplace(in[1], w.f("fdiv", w.constF32(1), in[1])).first;
        result = w.f("fmul", in[0], it->second);
      } else {
        result = w.f("fdiv", in[0], in[1]);
      }
    } else if (isa<MaxOp>(op)) {
      result = w.intr("maximum", {in[0], in[1]}, "f32");
    } else if (isa<MinOp>(op)) {
      result = w.intr("minimum", {in[0], in[1]}, "f32");
    } else if (isa<PowOp>(op)) {
      result = ex2(w.f("fmul", in[1], w.ptxUnary("lg2.approx.ftz.f32", in[0])));
    } else if (isa<NegOp>(op)) {
      result = w.def(absl::StrCat("llvm.fneg ", in[0], " : f32"));
    } else if (isa<AbsOp>(op)) {
      result = w.intr("fabs", {in[0]}, "f32");
    } else if (isa<FloorOp>(op)) {
      result = w.intr("floor", {in[0]}, "f32");
    } else if (isa<CeilOp>(op)) {
      result = w.intr("ceil", {in[0]}, "f32");
    } else if (isa<SqrtOp>(op)) {
      result = w.intr("sqrt", {in[0]}, "f32");
    } else if (isa<RsqrtOp>(op)) {
      result = w.ptxUnary("rsqrt.approx.ftz.f32", in[0]);
    } else if (isa<ExpOp>(op)) {
      result = ex2(w.f("fmul", in[0], w.constF32(log2e)));
    } else if (isa<Exp2Op>(op)) {
      result = ex2(in[0]);
    } else if (isa<LogOp>(op)) {
      result = w.f("fmul", w.ptxUnary("lg2.approx.ftz.f32", in[0]), w.constF32(ln2));
    } else if (isa<SigmoidOp>(op)) {
      std::string e = ex2(w.f("fmul", in[0], w.constF32(-log2e)));
      result = w.f("fdiv", w.constF32(1), w.f("fadd", w.constF32(1), e));
    } else if (isa<TanhOp>(op)) {
      // 1 - 2 / (e^{2x} + 1): exact limits, absolute error ~1e-7 near 0.
      std::string e = ex2(w.f("fmul", in[0], w.constF32(2 * log2e)));
      result = w.f("fsub", w.constF32(1),
                   w.f("fdiv", w.constF32(2), w.f("fadd", e, w.constF32(1))));
    } else if (isa<ErfOp>(op)) {
      // Abramowitz & Stegun 7.1.26.
      std::string ax = w.intr("fabs", {in[0]}, "f32");
      std::string t = w.f("fdiv", w.constF32(1),
                          w.f("fadd", w.constF32(1), w.f("fmul", w.constF32(0.3275911), ax)));
      const double a[] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
      std::string p = w.constF32(a[4]);
      for (int i = 3; i >= 0; --i)
        p = w.f("fadd", w.f("fmul", p, t), w.constF32(a[i]));
      p = w.f("fmul", p, t);
      std::string e = ex2(w.f("fmul", w.def(absl::StrCat("llvm.fneg ", w.f("fmul", ax, ax), " : f32")),
                              w.constF32(log2e)));
      std::string y = w.f("fsub", w.constF32(1), w.f("fmul", p, e));
      std::string neg = w.def(absl::StrCat("llvm.fcmp \"olt\" ", in[0], ", ", w.constF32(0), " : f32"));
      result = w.def(absl::StrCat("llvm.select ", neg, ", ",
                                  w.def(absl::StrCat("llvm.fneg ", y, " : f32")), ", ", y, " : i1, f32"));
    } else if (isa<SignOp>(op)) {
      std::string pos = w.def(absl::StrCat("llvm.fcmp \"ogt\" ", in[0], ", ", w.constF32(0), " : f32"));
      std::string neg = w.def(absl::StrCat("llvm.fcmp \"olt\" ", in[0], ", ", w.constF32(0), " : f32"));
      std::string m = w.def(absl::StrCat("llvm.select ", neg, ", ", w.constF32(-1), ", ", in[0], " : i1, f32"));
      result = w.def(absl::StrCat("llvm.select ", pos, ", ", w.constF32(1), ", ", m, " : i1, f32"));
    } else {
      return unimplemented(op, "this op is not generated yet");
    }
  }
  if (isFloat)
    result = roundTo(result, v.getType());
  remember(key, result);
  return result;
}

absl::StatusOr<GeneratedKernel> KernelWriter::run() {
  if (auto st = check(); !st.ok())
    return st;
  if (columnMode)
    return runColumns();
  if (!reductions.empty() && !generalRows) {
    auto inRegisters = runRowsInRegisters();
    if (!inRegisters.ok())
      return inRegisters.status();
    if (*inRegisters)
      return **inRegisters;
    return runRows();
  }
  if (generalRows)
    return runRows();
  Block &body = kernel.getBody().front();
  elements = 1;
  for (int64_t d : domain)
    elements *= d;
  // 16 bytes of the widest boundary element type.
  int widest = 1;
  for (Value v : llvm::concat<Value>(body.getArguments(), body.getTerminator()->getOperands()))
    widest = std::max(widest, elemTypes(v.getType())->bytes);
  vector = std::max(1, 16 / widest);

  GeneratedKernel g;
  g.entry = kernel.getName() ? kernel.getName()->str() : "fusec_kernel";
  g.strategy = "elementwise";
  body.walk([&](Operation *op) {
    if (isa<TransposeOp, SliceOp, ConcatOp, GatherOp>(op) && g.strategy == "elementwise")
      g.strategy = "movement";
    if (isa<MatmulOp>(op))
      g.strategy = "matmul_simt";
  });
  // A thread per output element of a matmul: its K loop is the work, so
  // vector lanes would only multiply the code.
  if (g.strategy == "matmul_simt")
    vector = 1;
  std::vector<std::string> outNames;
  std::string params = declareParams(outNames);

  // Entry: the chunk this thread starts at, and the grid stride.
  std::string tid = w.def("nvvm.read.ptx.sreg.tid.x : i32");
  std::string ctaid = w.def("nvvm.read.ptx.sreg.ctaid.x : i32");
  std::string ntid = w.def("nvvm.read.ptx.sreg.ntid.x : i32");
  std::string nctaid = w.def("nvvm.read.ptx.sreg.nctaid.x : i32");
  auto zext = [&](const std::string &x) {
    return w.def(absl::StrCat("llvm.zext ", x, " : i32 to i64"));
  };
  std::string start = w.def(absl::StrCat(
      "llvm.add ", w.def(absl::StrCat("llvm.mul ", zext(ctaid), ", ", zext(ntid), " : i64")),
      ", ", zext(tid), " : i64"));
  std::string stride = w.def(absl::StrCat("llvm.mul ", zext(nctaid), ", ", zext(ntid), " : i64"));
  w.line(absl::StrCat("llvm.br ^loop(", start, " : i64)"));

  w.label("^loop(%chunk: i64)");
  std::string vec = w.constI64(vector);
  std::string base = w.def(absl::StrCat("llvm.mul %chunk, ", vec, " : i64"));
  std::string total = w.constI64(elements);
  std::string inRange = w.def(absl::StrCat("llvm.icmp \"ult\" ", base, ", ", total, " : i64"));
  w.line(absl::StrCat("llvm.cond_br ", inRange, ", ^body, ^exit"));

  w.label("^body");
  std::string end = w.def(absl::StrCat("llvm.add ", base, ", ", vec, " : i64"));
  std::string fullChunk = w.def(absl::StrCat("llvm.icmp \"ule\" ", end, ", ", total, " : i64"));
  w.line("llvm.cond_br " + fullChunk + ", ^full, ^tail");

  // Full chunk: vector loads, lane-by-lane compute, vector stores.
  w.label("^full");
  vectorPath = true;
  vectorLoads(base);
  laneIndex.clear();
  for (int64_t lane = 0; lane < vector; ++lane)
    laneIndex.push_back(w.def(absl::StrCat("llvm.add ", base, ", ", w.constI64(lane), " : i64")));
  std::vector<std::vector<std::string>> outLanes(outNames.size());
  for (int64_t lane = 0; lane < vector; ++lane) {
    memo.clear();
    std::string idx = laneIndex[lane];
    for (auto [i, r] : llvm::enumerate(body.getTerminator()->getOperands())) {
      auto val = eval(r, idx, static_cast<int>(lane));
      if (!val.ok())
        return val.status();
      outLanes[i].push_back(toStorage(*val, *elemTypes(r.getType())));
    }
  }
  for (auto [i, r] : llvm::enumerate(body.getTerminator()->getOperands())) {
    ElemTypes t = *elemTypes(r.getType());
    std::string vecType = absl::StrCat("vector<", vector, "x", t.storage, ">");
    std::string acc = w.def(absl::StrCat("llvm.mlir.poison : ", vecType));
    for (int64_t lane = 0; lane < vector; ++lane) {
      std::string li = w.def(absl::StrCat("llvm.mlir.constant(", lane, " : i32) : i32"));
      acc = w.def(absl::StrCat("llvm.insertelement ", outLanes[i][lane], ", ", acc, "[",
                               li, " : i32] : ", vecType));
    }
    std::string ptr = w.def(absl::StrCat("llvm.getelementptr ", outNames[i], "[", base,
                                         "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
    w.line(absl::StrCat("llvm.store ", acc, ", ", ptr, " {alignment = ", vector * t.bytes,
                        " : i64} : ", vecType, ", !llvm.ptr<1>"));
  }
  w.line("llvm.br ^next");

  // Partial last chunk: element by element, each guarded.
  w.label("^tail");
  vectorPath = false;
  for (int64_t lane = 0; lane < vector; ++lane) {
    memo.clear();
    std::string idx = w.def(absl::StrCat("llvm.add ", base, ", ", w.constI64(lane), " : i64"));
    std::string ok = w.def(absl::StrCat("llvm.icmp \"ult\" ", idx, ", ", total, " : i64"));
    w.line(absl::StrCat("llvm.cond_br ", ok, ", ^lane", lane, ", ^next"));
    w.label(absl::StrCat("^lane", lane));
    for (auto [i, r] : llvm::enumerate(body.getTerminator()->getOperands())) {
      ElemTypes t = *elemTypes(r.getType());
      auto val = eval(r, idx, static_cast<int>(lane));
      if (!val.ok())
        return val.status();
      std::string stored = toStorage(*val, t);
      std::string ptr = w.def(absl::StrCat("llvm.getelementptr ", outNames[i], "[", idx,
                                           "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
      w.line(absl::StrCat("llvm.store ", stored, ", ", ptr, " : ", t.storage, ", !llvm.ptr<1>"));
    }
    w.line(lane + 1 < vector ? absl::StrCat("llvm.br ^guard", lane + 1) : "llvm.br ^next");
    if (lane + 1 < vector)
      w.label(absl::StrCat("^guard", lane + 1));
  }

  w.label("^next");
  std::string nextChunk = w.def(absl::StrCat("llvm.add %chunk, ", stride, " : i64"));
  w.line(absl::StrCat("llvm.br ^loop(", nextChunk, " : i64)"));
  w.label("^exit");
  w.line("llvm.return");

  g.llvmDialect = absl::StrCat("module {\n  llvm.func @", g.entry, "(", params,
                               ") attributes {nvvm.kernel} {\n", w.text, "  }\n}\n");
  // Launch: 256 threads, enough CTAs to cover every chunk, at most 32 per SM
  // worth (the loop strides over the rest).
  g.block = 256;
  int64_t chunks = (elements + vector - 1) / vector;
  g.grid = std::clamp<int64_t>((chunks + g.block - 1) / g.block, 1, 132 * 32);
  if (auto launch = kernel->getAttrOfType<DictionaryAttr>("fusec.launch"))
    if (auto grid = launch.getAs<IntegerAttr>("grid"))
      g.grid = std::clamp<int64_t>(grid.getInt(), 1, std::max<int64_t>(1, (chunks + g.block - 1) / g.block));
  return g;
}

/// Row reductions, a warp per row: for each reduction (in order) a loop over
/// the row's columns, lanes 32 apart (coalesced), then a butterfly of
/// shfl.sync; the row-level values follow; a last loop writes the outputs of
/// the element shape, and lane 0 those of the row shape.
absl::StatusOr<GeneratedKernel> KernelWriter::runRows() {
  Block &body = kernel.getBody().front();
  GeneratedKernel g;
  g.entry = kernel.getName() ? kernel.getName()->str() : "fusec_kernel";
  std::vector<std::string> outNames;
  std::string params = declareParams(outNames);
  auto zext = [&](const std::string &x) {
    return w.def(absl::StrCat("llvm.zext ", x, " : i32 to i64"));
  };
  auto i32 = [&](int v) {
    return w.def(absl::StrCat("llvm.mlir.constant(", v, " : i32) : i32"));
  };
  std::string tid = w.def("nvvm.read.ptx.sreg.tid.x : i32");
  std::string ctaid = zext(w.def("nvvm.read.ptx.sreg.ctaid.x : i32"));
  std::string ntid = w.def("nvvm.read.ptx.sreg.ntid.x : i32");
  std::string nctaid = zext(w.def("nvvm.read.ptx.sreg.nctaid.x : i32"));
  std::string lane = zext(w.def(absl::StrCat("llvm.and ", tid, ", ", i32(31), " : i32")));
  std::string warp = zext(w.def(absl::StrCat("llvm.lshr ", tid, ", ", i32(5), " : i32")));
  std::string warps = zext(w.def(absl::StrCat("llvm.lshr ", ntid, ", ", i32(5), " : i32")));
  std::string row0 = w.def(absl::StrCat(
      "llvm.add ", w.def(absl::StrCat("llvm.mul ", ctaid, ", ", warps, " : i64")), ", ",
      warp, " : i64"));
  std::string rowStep = w.def(absl::StrCat("llvm.mul ", nctaid, ", ", warps, " : i64"));
  std::string length = w.constI64(rowLength), rowCount = w.constI64(rows);
  std::string thirtyTwo = w.constI64(32);
  std::string mask = i32(-1), clamp = i32(31);
  w.line(absl::StrCat("llvm.br ^rowhead(", row0, " : i64)"));

  w.label("^rowhead(%row: i64)");
  std::string more = w.def(absl::StrCat("llvm.icmp \"ult\" %row, ", rowCount, " : i64"));
  w.line(absl::StrCat("llvm.cond_br ", more, ", ^rowbody, ^exit"));
  w.label("^rowbody");
  std::string rowBase = w.def(absl::StrCat("llvm.mul %row, ", length, " : i64"));
  memo.clear();
  rowTotals.clear();
  // The flat domain index of column `col` of this row: rowBase + col, or
  // through the coordinates when the reduced dims are apart.
  auto shapeOf = [&](ArrayRef<int64_t> ds) {
    SmallVector<int64_t> s;
    for (int64_t d : ds)
      s.push_back(domain[d]);
    return s;
  };
  std::vector<std::string> keptCoords;
  if (generalRows)
    keptCoords = coordinates("%row", shapeOf(keptDims));
  auto element = [&](const std::string &col) {
    if (!generalRows)
      return w.def(absl::StrCat("llvm.add ", rowBase, ", ", col, " : i64"));
    std::vector<std::string> rc = coordinates(col, shapeOf(reducedDims));
    std::vector<std::string> all(domain.size());
    for (auto [i, d] : llvm::enumerate(keptDims))
      all[d] = keptCoords[i];
    for (auto [i, d] : llvm::enumerate(reducedDims))
      all[d] = rc[i];
    return linearize(all, domain);
  };

  // Pairs of reductions that one pass computes: softmax's max and sum of
  // exp(x - max) (online softmax: a running max, the sum rescaled when it
  // rises), and layer_norm's mean and mean of squared deviations (Welford,
  // combined across lanes with Chan's formula). Rows that stream read the
  // input once per remaining pass.
  auto subOfRow = [&](Value v, ReduceOp r) -> Value {
    auto sub = v.getDefiningOp<SubOp>();
    if (!sub || !getElementTypeOrSelf(sub.getType()).isF32())
      return {};
    auto b = sub.getRhs().getDefiningOp<BroadcastOp>();
    if (!b || b.getInput() != r.getResult())
      return {};
    return sub.getLhs();
  };
  auto pairKind = [&](size_t k) -> int { // 0: none, 1: online softmax, 2: Welford
    if (k + 1 >= reductions.size())
      return 0;
    ReduceOp a = reductions[k], b = reductions[k + 1];
    if (!getElementTypeOrSelf(a.getType()).isF32() || !getElementTypeOrSelf(b.getType()).isF32())
      return 0;
    if (a.getKind() == ReduceKind::max && b.getKind() == ReduceKind::sum)
      if (auto e = b.getInput().getDefiningOp<ExpOp>())
        if (getElementTypeOrSelf(e.getType()).isF32() &&
            subOfRow(e->getOperand(0), a) == a.getInput())
          return 1;
    if (a.getKind() == ReduceKind::mean && b.getKind() == ReduceKind::mean)
      if (auto m = b.getInput().getDefiningOp<MulOp>())
        if (getElementTypeOrSelf(m.getType()).isF32() && m.getLhs() == m.getRhs() &&
            subOfRow(m.getLhs(), a) == a.getInput())
          return 2;
    return 0;
  };
  const double log2e = 1.4426950408889634;
  auto ex2 = [&](const std::string &x) { return w.ptxUnary("ex2.approx.ftz.f32", x); };
  auto sel = [&](const std::string &c, const std::string &a, const std::string &b) {
    return w.def(absl::StrCat("llvm.select ", c, ", ", a, ", ", b, " : i1, f32"));
  };
  auto feq = [&](const std::string &a, const std::string &b) {
    return w.def(absl::StrCat("llvm.fcmp \"oeq\" ", a, ", ", b, " : f32"));
  };
  // exp(a - b), exactly 1 when a == b (so -inf - -inf is no NaN).
  auto expDiff = [&](const std::string &a, const std::string &b) {
    return sel(feq(a, b), w.constF32(1),
               ex2(w.f("fmul", w.f("fsub", a, b), w.constF32(log2e))));
  };
  for (size_t k = 0; k < reductions.size(); ++k) {
    if (int pair = pairKind(k)) {
      ReduceOp a = reductions[k], b = reductions[k + 1];
      std::vector<std::string> init =
          pair == 1 ? std::vector<std::string>{w.def("llvm.mlir.constant(0xFF800000 : f32) : f32"),
                                               w.constF32(0)}
                    : std::vector<std::string>{w.constF32(0), w.constF32(0), w.constF32(0)};
      // update(state, x) and combine(state, state), both over f32 values.
      auto update = [&](const std::vector<std::string> &st, const std::string &x) {
        if (pair == 1) {
          std::string m = w.intr("maximum", {st[0], x}, "f32");
          std::string s2 = w.f("fadd", w.f("fmul", st[1], expDiff(st[0], m)), expDiff(x, m));
          return std::vector<std::string>{m, s2};
        }
        std::string n = w.f("fadd", st[0], w.constF32(1));
        std::string d = w.f("fsub", x, st[1]);
        std::string mean = w.f("fadd", st[1], w.f("fdiv", d, n));
        std::string m2 = w.f("fadd", st[2], w.f("fmul", d, w.f("fsub", x, mean)));
        return std::vector<std::string>{n, mean, m2};
      };
      auto combine2 = [&](const std::vector<std::string> &p, const std::vector<std::string> &q) {
        if (pair == 1) {
          std::string m = w.intr("maximum", {p[0], q[0]}, "f32");
          std::string s2 = w.f("fadd", w.f("fmul", p[1], expDiff(p[0], m)),
                               w.f("fmul", q[1], expDiff(q[0], m)));
          return std::vector<std::string>{m, s2};
        }
        std::string n = w.f("fadd", p[0], q[0]);
        std::string empty = feq(n, w.constF32(0));
        std::string safeN = sel(empty, w.constF32(1), n);
        std::string d = w.f("fsub", q[1], p[1]);
        std::string mean = w.f("fadd", p[1], w.f("fmul", d, w.f("fdiv", q[0], safeN)));
        std::string m2 = w.f("fadd", w.f("fadd", p[2], q[2]),
                             w.f("fmul", w.f("fmul", d, d),
                                 w.f("fdiv", w.f("fmul", p[0], q[0]), safeN)));
        return std::vector<std::string>{n, sel(empty, w.constF32(0), mean),
                                        sel(empty, w.constF32(0), m2)};
      };
      std::string head = absl::StrCat("^pair", k), bodyLabel = absl::StrCat("^pairbody", k),
                  exit = absl::StrCat("^pairexit", k);
      std::string col = absl::StrCat("%pcol", k);
      std::vector<std::string> st;
      std::string types = "i64", argDecl = col + ": i64", initList = lane;
      for (size_t i = 0; i < init.size(); ++i) {
        st.push_back(absl::StrCat("%pst", k, "_", i));
        absl::StrAppend(&types, ", f32");
        absl::StrAppend(&argDecl, ", ", st.back(), ": f32");
        absl::StrAppend(&initList, ", ", init[i]);
      }
      w.line(absl::StrCat("llvm.br ", head, "(", initList, " : ", types, ")"));
      w.label(absl::StrCat(head, "(", argDecl, ")"));
      std::string inRow = w.def(absl::StrCat("llvm.icmp \"ult\" ", col, ", ", length, " : i64"));
      w.line(absl::StrCat("llvm.cond_br ", inRow, ", ", bodyLabel, ", ", exit));
      w.label(bodyLabel);
      openScope();
      std::string idx = element(col);
      auto x = eval(a.getInput(), idx, 0);
      if (!x.ok())
        return x.status();
      std::vector<std::string> next = update(st, *x);
      closeScope();
      std::string col2 = w.def(absl::StrCat("llvm.add ", col, ", ", thirtyTwo, " : i64"));
      std::string nextList = col2;
      for (auto &v : next)
        absl::StrAppend(&nextList, ", ", v);
      w.line(absl::StrCat("llvm.br ", head, "(", nextList, " : ", types, ")"));
      w.label(exit);
      std::vector<std::string> total = st;
      for (int offset : {16, 8, 4, 2, 1}) {
        std::vector<std::string> other;
        for (auto &v : total)
          other.push_back(w.def(absl::StrCat("nvvm.shfl.sync bfly ", mask, ", ", v, ", ",
                                             i32(offset), ", ", clamp, " : f32 -> f32")));
        total = combine2(total, other);
      }
      if (pair == 1) {
        rowTotals[a.getResult()] = total[0];
        rowTotals[b.getResult()] = total[1];
      } else {
        rowTotals[a.getResult()] = total[1];
        rowTotals[b.getResult()] = w.f("fdiv", total[2], w.constF32(static_cast<double>(rowLength)));
      }
      ++k;
      continue;
    }
    ReduceOp r = reductions[k];
    ReduceKind kind = r.getKind();
    std::string init =
        kind == ReduceKind::max   ? w.def("llvm.mlir.constant(0xFF800000 : f32) : f32")
        : kind == ReduceKind::min ? w.def("llvm.mlir.constant(0x7F800000 : f32) : f32")
                                  : w.constF32(0);
    auto combine = [&](const std::string &a, const std::string &b) {
      if (kind == ReduceKind::max)
        return w.intr("maximum", {a, b}, "f32");
      if (kind == ReduceKind::min)
        return w.intr("minimum", {a, b}, "f32");
      return w.f("fadd", a, b);
    };
    std::string head = absl::StrCat("^red", k), bodyLabel = absl::StrCat("^redbody", k),
                exit = absl::StrCat("^redexit", k);
    std::string col = absl::StrCat("%col", k), acc = absl::StrCat("%acc", k);
    w.line(absl::StrCat("llvm.br ", head, "(", lane, ", ", init, " : i64, f32)"));
    w.label(absl::StrCat(head, "(", col, ": i64, ", acc, ": f32)"));
    std::string inRow = w.def(absl::StrCat("llvm.icmp \"ult\" ", col, ", ", length, " : i64"));
    w.line(absl::StrCat("llvm.cond_br ", inRow, ", ", bodyLabel, ", ", exit));
    w.label(bodyLabel);
    openScope();
    std::string idx = element(col);
    auto val = eval(r.getInput(), idx, 0);
    if (!val.ok())
      return val.status();
    std::string next = combine(acc, *val);
    closeScope();
    std::string col2 = w.def(absl::StrCat("llvm.add ", col, ", ", thirtyTwo, " : i64"));
    w.line(absl::StrCat("llvm.br ", head, "(", col2, ", ", next, " : i64, f32)"));
    w.label(exit);
    std::string total = acc;
    for (int offset : {16, 8, 4, 2, 1}) {
      std::string other = w.def(absl::StrCat("nvvm.shfl.sync bfly ", mask, ", ", total, ", ",
                                             i32(offset), ", ", clamp, " : f32 -> f32"));
      total = combine(total, other);
    }
    if (kind == ReduceKind::mean)
      total = w.f("fdiv", total, w.constF32(static_cast<double>(rowLength)));
    rowTotals[r.getResult()] = roundTo(total, r.getType());
  }

  // Outputs of the element shape: a last pass over the row.
  SmallVector<unsigned> full, perRow;
  for (auto [i, o] : llvm::enumerate(body.getTerminator()->getOperands()))
    (cast<RankedTensorType>(o.getType()).getShape() == ArrayRef<int64_t>(domain)
         ? full : perRow).push_back(i);
  if (!full.empty()) {
    w.line(absl::StrCat("llvm.br ^out(", lane, " : i64)"));
    w.label("^out(%ocol: i64)");
    std::string inRow = w.def(absl::StrCat("llvm.icmp \"ult\" %ocol, ", length, " : i64"));
    w.line(absl::StrCat("llvm.cond_br ", inRow, ", ^outbody, ^outexit"));
    w.label("^outbody");
    openScope();
    std::string idx = element("%ocol");
    for (unsigned i : full) {
      Value o = body.getTerminator()->getOperand(i);
      auto val = eval(o, idx, 0);
      if (!val.ok())
        return val.status();
      ElemTypes t = *elemTypes(o.getType());
      std::string stored = toStorage(*val, t);
      std::string ptr = w.def(absl::StrCat("llvm.getelementptr ", outNames[i], "[", idx,
                                           "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
      w.line(absl::StrCat("llvm.store ", stored, ", ", ptr, " : ", t.storage, ", !llvm.ptr<1>"));
    }
    closeScope();
    std::string col2 = w.def(absl::StrCat("llvm.add %ocol, ", thirtyTwo, " : i64"));
    w.line(absl::StrCat("llvm.br ^out(", col2, " : i64)"));
    w.label("^outexit");
  }
  // Outputs of the row shape: lane 0 writes them.
  std::string first = w.def(absl::StrCat("llvm.icmp \"eq\" ", lane, ", ", w.constI64(0), " : i64"));
  w.line(absl::StrCat("llvm.cond_br ", first, ", ^rowout, ^nextrow"));
  w.label("^rowout");
  openScope();
  for (unsigned i : perRow) {
    Value o = body.getTerminator()->getOperand(i);
    auto val = eval(o, "%row", 0);
    if (!val.ok())
      return val.status();
    ElemTypes t = *elemTypes(o.getType());
    std::string stored = toStorage(*val, t);
    std::string ptr = w.def(absl::StrCat("llvm.getelementptr ", outNames[i], "[%row] : "
                                         "(!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
    w.line(absl::StrCat("llvm.store ", stored, ", ", ptr, " : ", t.storage, ", !llvm.ptr<1>"));
  }
  closeScope();
  w.line("llvm.br ^nextrow");
  w.label("^nextrow");
  std::string nextRow = w.def(absl::StrCat("llvm.add %row, ", rowStep, " : i64"));
  w.line(absl::StrCat("llvm.br ^rowhead(", nextRow, " : i64)"));
  w.label("^exit");
  w.line("llvm.return");

  g.llvmDialect = absl::StrCat("module {\n  llvm.func @", g.entry, "(", params,
                               ") attributes {nvvm.kernel} {\n", w.text, "  }\n}\n");
  g.block = 256;
  g.grid = std::clamp<int64_t>((rows + 7) / 8, 1, 132 * 32);
  g.strategy = "row_stream";
  return g;
}

/// A lane of a full-shape operand (Full) or of an operand of the row's
/// trailing shape (Column), at the chunk and lane of a row held in registers.
std::string KernelWriter::rowLaneValue(BlockArgument arg, const IndexInfo &at) {
  auto key = std::make_pair(arg.getArgNumber(), at.chunk);
  if (at.kind == IndexKind::Full) {
    auto it = passLanes.find(key);
    if (it == passLanes.end())
      it = passLanes.emplace(key, unpack(rawChunks.at(key), launderPass)).first;
    return it->second[at.lane];
  }
  auto it = columnLanes.find(key);
  if (it == columnLanes.end())
    it = columnLanes.emplace(key, unpack(loadRaw(arg, chunkBase[at.chunk], rowVector),
                                         false)).first;
  return it->second[at.lane];
}

/// For a broadcast to the full shape inside a row kernel: the source's index
/// when the source is the row's trailing shape (the column) or its leading
/// shape (the row); nullopt otherwise (the general remap applies).
std::optional<std::string> KernelWriter::rowBroadcastIndex(BroadcastOp b,
                                                          const std::string &mainIndex) {
  auto shape = cast<RankedTensorType>(b.getType()).getShape();
  if (shape != ArrayRef<int64_t>(domain))
    return std::nullopt;
  auto at = indexInfo.find(mainIndex);
  if (at == indexInfo.end() || at->second.kind != IndexKind::Full)
    return std::nullopt;
  auto src = cast<RankedTensorType>(b.getInput().getType()).getShape();
  int64_t rank = static_cast<int64_t>(domain.size());
  int64_t reducedFrom = rank;
  for (int64_t p = 1, d = rank - 1; d >= 0 && p < rowLength; --d)
    p *= domain[d], reducedFrom = d;
  SmallVector<int64_t> used, column, leading;
  for (auto [j, d] : llvm::enumerate(b.getDims())) {
    if (src[j] == 1)
      continue;
    if (src[j] != domain[d])
      return std::nullopt;
    used.push_back(d);
  }
  for (int64_t d = 0; d < rank; ++d)
    if (domain[d] != 1)
      (d >= reducedFrom ? column : leading).push_back(d);
  if (used == column)
    return colIndex[at->second.chunk][at->second.lane];
  if (used == leading)
    return std::string("%row");
  return std::nullopt;
}

/// Row reductions with the row held in registers: a group of threads per
/// row (a warp for rows up to 4 chunks a lane, else a CTA of up to 1024
/// threads), each loading its chunks of 16 bytes of every full-shape operand
/// once; every reduction then runs over the registers (a thread's lanes, a
/// shfl.sync butterfly, and across the CTA's warps through shared memory
/// with one barrier), and the outputs are computed from the same registers
/// and stored 16 bytes at a time. The row is read from HBM exactly once.
/// Returns nullopt when the row does not fit in registers (runRows streams
/// it instead).
absl::StatusOr<std::optional<GeneratedKernel>> KernelWriter::runRowsInRegisters() {
  Block &body = kernel.getBody().front();
  auto isFull = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape() == ArrayRef<int64_t>(domain);
  };
  int widest = 1;
  std::vector<BlockArgument> fullArgs;
  for (BlockArgument a : body.getArguments())
    if (isFull(a)) {
      widest = std::max(widest, elemTypes(a.getType())->bytes);
      fullArgs.push_back(a);
    }
  for (Value o : body.getTerminator()->getOperands())
    if (isFull(o))
      widest = std::max(widest, elemTypes(o.getType())->bytes);
  std::vector<int64_t> inputBytes;
  for (BlockArgument a : fullArgs)
    inputBytes.push_back(elemTypes(a.getType())->bytes);
  RowPlan plan = planRow(rowLength, rows, widest, inputBytes, options.rowChunks);
  rowVector = plan.vector;
  groupThreads = plan.threads;
  rowChunks = plan.chunks;
  if (!plan.inRegisters)
    return std::optional<GeneratedKernel>();
  rowRegs = true;

  GeneratedKernel g;
  g.entry = kernel.getName() ? kernel.getName()->str() : "fusec_kernel";
  std::vector<std::string> outNames;
  std::string params = declareParams(outNames);
  bool cta = groupThreads > 32;
  int64_t block = cta ? groupThreads : 256;
  int64_t rowsPerCta = block / groupThreads;
  int64_t groupWarps = groupThreads / 32;
  int64_t numReductions = static_cast<int64_t>(reductions.size());
  std::string smemGlobal;
  if (cta)
    smemGlobal = absl::StrCat("  llvm.mlir.global internal @__fusec_partials() "
                              "{addr_space = 3 : i32, alignment = 16 : i64} : "
                              "!llvm.array<", 2 * numReductions * 32, " x f32>\n");

  auto zext = [&](const std::string &x) {
    return w.def(absl::StrCat("llvm.zext ", x, " : i32 to i64"));
  };
  auto i32 = [&](int v) {
    return w.def(absl::StrCat("llvm.mlir.constant(", v, " : i32) : i32"));
  };
  auto i64op = [&](const char *op, const std::string &a, const std::string &b) {
    return w.def(absl::StrCat("llvm.", op, " ", a, ", ", b, " : i64"));
  };
  std::string tid32 = w.def("nvvm.read.ptx.sreg.tid.x : i32");
  std::string tid = zext(tid32);
  std::string ctaid = zext(w.def("nvvm.read.ptx.sreg.ctaid.x : i32"));
  std::string nctaid = zext(w.def("nvvm.read.ptx.sreg.nctaid.x : i32"));
  std::string lane32 = w.def(absl::StrCat("llvm.and ", tid32, ", ", i32(31), " : i32"));
  std::string inGroup = i64op("and", tid, w.constI64(groupThreads - 1));
  std::string group = i64op("udiv", tid, w.constI64(groupThreads));
  std::string row0 = i64op("add", i64op("mul", ctaid, w.constI64(rowsPerCta)), group);
  std::string rowStep = i64op("mul", nctaid, w.constI64(rowsPerCta));
  std::string length = w.constI64(rowLength), rowCount = w.constI64(rows);
  std::string mask = i32(-1), clamp = i32(31);
  std::string partials, warpSlot;
  if (cta) {
    partials = w.def("llvm.mlir.addressof @__fusec_partials : !llvm.ptr<3>");
    warpSlot = i64op("lshr", tid, w.constI64(5));
  }
  // Column of lane 0 of each chunk for this thread; chunks that may run past
  // the row are clamped to column 0 (loaded, then ignored).
  std::vector<std::string> chunkInRange(rowChunks);
  chunkBase.assign(rowChunks, "");
  colIndex.assign(rowChunks, {});
  for (int64_t c = 0; c < rowChunks; ++c) {
    std::string col = i64op("mul", i64op("add", inGroup, w.constI64(c * groupThreads)),
                            w.constI64(rowVector));
    if ((c + 1) * groupThreads * rowVector <= rowLength) {
      chunkBase[c] = col;
    } else {
      chunkInRange[c] = w.def(absl::StrCat("llvm.icmp \"ult\" ", col, ", ", length, " : i64"));
      chunkBase[c] = w.def(absl::StrCat("llvm.select ", chunkInRange[c], ", ", col, ", ",
                                        w.constI64(0), " : i1, i64"));
    }
    for (int64_t l = 0; l < rowVector; ++l)
      colIndex[c].push_back(l ? i64op("add", chunkBase[c], w.constI64(l)) : chunkBase[c]);
  }
  w.line(absl::StrCat("llvm.br ^rowhead(", row0, ", ", i32(0), " : i64, i32)"));

  w.label("^rowhead(%row: i64, %parity: i32)");
  std::string more = w.def(absl::StrCat("llvm.icmp \"ult\" %row, ", rowCount, " : i64"));
  w.line(absl::StrCat("llvm.cond_br ", more, ", ^rowbody, ^exit"));
  w.label("^rowbody");
  std::string rowBase = i64op("mul", "%row", length);
  memo.clear();
  rowTotals.clear();
  rawChunks.clear();
  indexInfo.clear();
  passLanes.clear();
  columnLanes.clear();
  reciprocals.clear();
  // Flat indices of every (chunk, lane); all loads of the row, up front.
  std::vector<std::vector<std::string>> flat(rowChunks);
  for (int64_t c = 0; c < rowChunks; ++c) {
    for (int64_t l = 0; l < rowVector; ++l) {
      flat[c].push_back(i64op("add", rowBase, colIndex[c][l]));
      indexInfo[flat[c][l]] = {IndexKind::Full, c, l};
      indexInfo[colIndex[c][l]] = {IndexKind::Column, c, l};
    }
    for (BlockArgument a : fullArgs)
      rawChunks[{a.getArgNumber(), c}] = loadRaw(a, flat[c][0], rowVector);
  }
  // With up to 512 threads a row, a thread may hold 128 registers: values
  // of one pass stay live for the next (softmax's exp is computed once).
  // With 1024 (64 registers) each pass converts again from the packed words.
  bool tight = groupThreads >= 1024;
  auto newPass = [&](bool launder) {
    if (!tight)
      return;
    memo.clear();
    passLanes.clear();
    columnLanes.clear();
    reciprocals.clear();
    launderPass = launder;
  };

  for (auto [k, r] : llvm::enumerate(reductions)) {
    newPass(k > 0);
    ReduceKind kind = r.getKind();
    std::string identity =
        kind == ReduceKind::max   ? w.def("llvm.mlir.constant(0xFF800000 : f32) : f32")
        : kind == ReduceKind::min ? w.def("llvm.mlir.constant(0x7F800000 : f32) : f32")
                                  : w.constF32(0);
    auto combine = [&](const std::string &a, const std::string &b) {
      if (kind == ReduceKind::max)
        return w.intr("maximum", {a, b}, "f32");
      if (kind == ReduceKind::min)
        return w.intr("minimum", {a, b}, "f32");
      return w.f("fadd", a, b);
    };
    std::string acc;
    for (int64_t c = 0; c < rowChunks; ++c) {
      std::string chunkAcc;
      for (int64_t l = 0; l < rowVector; ++l) {
        auto val = eval(r.getInput(), flat[c][l], static_cast<int>(l));
        if (!val.ok())
          return val.status();
        chunkAcc = chunkAcc.empty() ? *val : combine(chunkAcc, *val);
      }
      if (!chunkInRange[c].empty())
        chunkAcc = w.def(absl::StrCat("llvm.select ", chunkInRange[c], ", ", chunkAcc, ", ",
                                      identity, " : i1, f32"));
      acc = acc.empty() ? chunkAcc : combine(acc, chunkAcc);
    }
    for (int offset : {16, 8, 4, 2, 1}) {
      std::string other = w.def(absl::StrCat("nvvm.shfl.sync bfly ", mask, ", ", acc, ", ",
                                             i32(offset), ", ", clamp, " : f32 -> f32"));
      acc = combine(acc, other);
    }
    if (cta) {
      // Every lane of a warp stores the warp's total (one transaction); one
      // barrier; each lane reads warp (lane mod warps) and a butterfly over
      // the warps finishes. Slots alternate with the row's parity, so a
      // fast warp's next row cannot overwrite a slot still being read.
      std::string slot0 = i64op("mul", i64op("add", i64op("mul", zext("%parity"),
                                                           w.constI64(numReductions)),
                                             w.constI64(k)),
                                w.constI64(32));
      std::string dst = w.def(absl::StrCat("llvm.getelementptr ", partials, "[",
                                           i64op("add", slot0, warpSlot),
                                           "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32"));
      w.line(absl::StrCat("llvm.store ", acc, ", ", dst, " : f32, !llvm.ptr<3>"));
      w.line("nvvm.barrier0");
      std::string which = i64op("and", zext(lane32), w.constI64(groupWarps - 1));
      std::string src = w.def(absl::StrCat("llvm.getelementptr ", partials, "[",
                                           i64op("add", slot0, which),
                                           "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32"));
      acc = w.def(absl::StrCat("llvm.load ", src, " : !llvm.ptr<3> -> f32"));
      for (int offset = static_cast<int>(groupWarps) / 2; offset >= 1; offset /= 2) {
        std::string other = w.def(absl::StrCat("nvvm.shfl.sync bfly ", mask, ", ", acc, ", ",
                                               i32(offset), ", ", clamp, " : f32 -> f32"));
        acc = combine(acc, other);
      }
    }
    if (kind == ReduceKind::mean)
      acc = w.f("fdiv", acc, w.constF32(static_cast<double>(rowLength)));
    rowTotals[r.getResult()] = roundTo(acc, r.getType());
  }

  // Outputs of the element shape, from the registers, 16 bytes at a time.
  newPass(!reductions.empty());
  int label = 0;
  for (int64_t c = 0; c < rowChunks; ++c) {
    std::vector<std::pair<std::string, std::string>> stores; // (vector, ptr)
    std::vector<std::string> types;
    for (auto [i, o] : llvm::enumerate(body.getTerminator()->getOperands())) {
      if (!isFull(o))
        continue;
      ElemTypes t = *elemTypes(o.getType());
      std::string vecType = absl::StrCat("vector<", rowVector, "x", t.storage, ">");
      std::string vec = w.def(absl::StrCat("llvm.mlir.poison : ", vecType));
      for (int64_t l = 0; l < rowVector; ++l) {
        auto val = eval(o, flat[c][l], static_cast<int>(l));
        if (!val.ok())
          return val.status();
        std::string li = w.def(absl::StrCat("llvm.mlir.constant(", l, " : i32) : i32"));
        vec = w.def(absl::StrCat("llvm.insertelement ", toStorage(*val, t), ", ", vec, "[",
                                 li, " : i32] : ", vecType));
      }
      std::string ptr = w.def(absl::StrCat("llvm.getelementptr ", outNames[i], "[", flat[c][0],
                                           "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
      stores.emplace_back(vec, ptr);
      types.push_back(absl::StrCat(vecType, "\x01", rowVector * t.bytes));
    }
    if (stores.empty())
      break;
    std::string cont;
    if (!chunkInRange[c].empty()) {
      std::string st = absl::StrCat("^store", label), next = absl::StrCat("^stored", label++);
      w.line(absl::StrCat("llvm.cond_br ", chunkInRange[c], ", ", st, ", ", next));
      w.label(st);
      cont = next;
    }
    for (auto [j, sp] : llvm::enumerate(stores)) {
      std::string type = types[j].substr(0, types[j].find('\x01'));
      std::string align = types[j].substr(types[j].find('\x01') + 1);
      w.line(absl::StrCat("llvm.store ", sp.first, ", ", sp.second, " {alignment = ", align,
                          " : i64} : ", type, ", !llvm.ptr<1>"));
    }
    if (!cont.empty()) {
      w.line("llvm.br " + cont);
      w.label(cont);
    }
  }
  // Outputs of the row shape: the group's first thread writes them.
  std::vector<std::pair<std::string, unsigned>> rowValues;
  for (auto [i, o] : llvm::enumerate(body.getTerminator()->getOperands())) {
    if (isFull(o))
      continue;
    auto val = eval(o, "%row", 0);
    if (!val.ok())
      return val.status();
    rowValues.emplace_back(toStorage(*val, *elemTypes(o.getType())), i);
  }
  if (!rowValues.empty()) {
    std::string first = w.def(absl::StrCat("llvm.icmp \"eq\" ", inGroup, ", ",
                                           w.constI64(0), " : i64"));
    w.line(absl::StrCat("llvm.cond_br ", first, ", ^rowout, ^nextrow"));
    w.label("^rowout");
    for (auto &[value, i] : rowValues) {
      ElemTypes t = *elemTypes(body.getTerminator()->getOperand(i).getType());
      std::string ptr = w.def(absl::StrCat("llvm.getelementptr ", outNames[i], "[%row] : "
                                           "(!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
      w.line(absl::StrCat("llvm.store ", value, ", ", ptr, " : ", t.storage, ", !llvm.ptr<1>"));
    }
    w.line("llvm.br ^nextrow");
  } else {
    w.line("llvm.br ^nextrow");
  }
  w.label("^nextrow");
  std::string nextRow = i64op("add", "%row", rowStep);
  std::string flip = w.def(absl::StrCat("llvm.xor %parity, ", i32(1), " : i32"));
  w.line(absl::StrCat("llvm.br ^rowhead(", nextRow, ", ", flip, " : i64, i32)"));
  w.label("^exit");
  w.line("llvm.return");
  rowRegs = false;

  // 1024 threads must fit in 64 registers: say so (.maxntid). Below that
  // the bound is left out: with it ptxas trades registers for occupancy
  // and spilled (layer_norm, 256 threads: 48 registers and a spill).
  std::string attrs = block >= 1024
                          ? absl::StrCat("nvvm.kernel, nvvm.maxntid = array<i32: ", block, ">")
                          : std::string("nvvm.kernel");
  g.llvmDialect = absl::StrCat("module {\n", smemGlobal, "  llvm.func @", g.entry, "(", params,
                               ") attributes {", attrs, "} {\n", w.text, "  }\n}\n");
  g.block = block;
  g.grid = std::clamp<int64_t>((rows + rowsPerCta - 1) / rowsPerCta, 1, 132 * (2048 / block) * 4);
  g.strategy = cta ? "row_cta" : "row_warp";
  return std::optional<GeneratedKernel>(std::move(g));
}

/// Column reductions (the reduced dims lead, the kept dims trail): a CTA of
/// 8 x 32 threads takes a tile of 32 column groups of `vector` adjacent
/// columns (16-byte loads along a row of the input, coalesced across the
/// warp); its 8 warps split the reduced rows, then combine their partial
/// sums in shared memory (one barrier per reduction; slots alternate with
/// the tile's parity). Outputs of the element shape take another pass over
/// the rows; those of the column shape are stored by the first warp.
absl::StatusOr<GeneratedKernel> KernelWriter::runColumns() {
  Block &body = kernel.getBody().front();
  int64_t columns = rows; // the kept (trailing) extent
  int64_t reducedRows = rowLength;
  auto isFull = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape() == ArrayRef<int64_t>(domain);
  };
  int widest = 1;
  for (Value v : llvm::concat<Value>(body.getArguments(), body.getTerminator()->getOperands()))
    if (isFull(v))
      widest = std::max(widest, elemTypes(v.getType())->bytes);
  vector = 16 / widest;
  if (columnInner % vector != 0)
    vector = 1;
  const int64_t slices = 8, groupsPerTile = 32;
  int64_t numReductions = static_cast<int64_t>(reductions.size());
  // Partials are f64 (sums accumulate in f64: a thread adds rows/8 values
  // in sequence, too many for f32 against an f64 reference); narrower
  // vectors when the partials would pass 40 KiB of shared memory.
  while (vector > 1 && 2 * numReductions * slices * groupsPerTile * vector * 8 > 40 * 1024)
    vector /= 2;
  if (2 * numReductions * slices * groupsPerTile * vector * 8 > 40 * 1024)
    return unimplemented(kernel, "a column kernel with this many reductions "
                                 "(their partials exceed 40 KiB of shared memory)");
  int64_t groups = (columns + vector - 1) / vector;
  int64_t tiles = (groups + groupsPerTile - 1) / groupsPerTile;
  int64_t regionFloats = slices * groupsPerTile * vector;

  GeneratedKernel g;
  g.entry = kernel.getName() ? kernel.getName()->str() : "fusec_kernel";
  g.strategy = "column";
  std::vector<std::string> outNames;
  std::string params = declareParams(outNames);
  auto zext = [&](const std::string &x) {
    return w.def(absl::StrCat("llvm.zext ", x, " : i32 to i64"));
  };
  auto i64op = [&](const char *op, const std::string &a, const std::string &b) {
    return w.def(absl::StrCat("llvm.", op, " ", a, ", ", b, " : i64"));
  };
  std::string tid = zext(w.def("nvvm.read.ptx.sreg.tid.x : i32"));
  std::string ctaid = zext(w.def("nvvm.read.ptx.sreg.ctaid.x : i32"));
  std::string nctaid = zext(w.def("nvvm.read.ptx.sreg.nctaid.x : i32"));
  std::string x = i64op("and", tid, w.constI64(groupsPerTile - 1));
  std::string y = i64op("lshr", tid, w.constI64(5));
  std::string partials = w.def("llvm.mlir.addressof @__fusec_partials : !llvm.ptr<3>");
  std::string smemGlobal = absl::StrCat(
      "  llvm.mlir.global internal @__fusec_partials() {addr_space = 3 : i32, "
      "alignment = 16 : i64} : !llvm.array<", 2 * numReductions * regionFloats, " x f64>\n");
  // Element (row r, column c) of the input: (c / inner) * rows * inner +
  // r * inner + c % inner, inner being the extent after the reduced dims
  // (the columns themselves when the reduced dims lead).
  std::string colCount = w.constI64(columnInner), rowCount = w.constI64(reducedRows);
  std::string step = w.constI64(slices);
  w.line(absl::StrCat("llvm.br ^tilehead(", ctaid, ", ", w.constI64(0), " : i64, i64)"));

  w.label("^tilehead(%tile: i64, %parity: i64)");
  std::string more = w.def(absl::StrCat("llvm.icmp \"ult\" %tile, ", w.constI64(tiles), " : i64"));
  w.line(absl::StrCat("llvm.cond_br ", more, ", ^tilebody, ^exit"));
  w.label("^tilebody");
  memo.clear();
  columnTotals.clear();
  std::string group = i64op("add", i64op("mul", "%tile", w.constI64(groupsPerTile)), x);
  std::string valid = w.def(absl::StrCat("llvm.icmp \"ult\" ", group, ", ",
                                         w.constI64(groups), " : i64"));
  // Threads past the last group work on group 0 (they must reach the
  // barriers) and store nothing.
  std::string col = i64op("mul", w.def(absl::StrCat("llvm.select ", valid, ", ", group, ", ",
                                                    w.constI64(0), " : i1, i64")),
                          w.constI64(vector));
  std::vector<std::string> colLane;
  for (int64_t l = 0; l < vector; ++l)
    colLane.push_back(l ? i64op("add", col, w.constI64(l)) : col);
  std::string colStart =
      columnInner == columns
          ? col
          : i64op("add",
                  i64op("mul", i64op("udiv", col, w.constI64(columnInner)),
                        w.constI64(reducedRows * columnInner)),
                  i64op("urem", col, w.constI64(columnInner)));

  auto laneValues = [&](Value v, const std::string &base)
      -> absl::StatusOr<std::vector<std::string>> {
    std::vector<std::string> out;
    laneIndex.clear();
    for (int64_t l = 0; l < vector; ++l)
      laneIndex.push_back(l ? i64op("add", base, w.constI64(l)) : base);
    for (int64_t l = 0; l < vector; ++l) {
      std::string idx = laneIndex[l];
      auto val = eval(v, idx, static_cast<int>(l));
      if (!val.ok())
        return val.status();
      out.push_back(*val);
    }
    return out;
  };

  for (auto [k, r] : llvm::enumerate(reductions)) {
    ReduceKind kind = r.getKind();
    bool wide = kind == ReduceKind::sum || kind == ReduceKind::mean;
    std::string acct = wide ? "f64" : "f32";
    std::string identity =
        kind == ReduceKind::max   ? w.def("llvm.mlir.constant(0xFF800000 : f32) : f32")
        : kind == ReduceKind::min ? w.def("llvm.mlir.constant(0x7F800000 : f32) : f32")
                                  : w.def("llvm.mlir.constant(0.0 : f64) : f64");
    auto widen = [&](const std::string &v) {
      return wide ? w.def(absl::StrCat("llvm.fpext ", v, " : f32 to f64")) : v;
    };
    auto combine = [&](const std::string &a, const std::string &b) {
      if (kind == ReduceKind::max)
        return w.intr("maximum", {a, b}, "f32");
      if (kind == ReduceKind::min)
        return w.intr("minimum", {a, b}, "f32");
      return w.def(absl::StrCat("llvm.fadd ", a, ", ", b, " : f64"));
    };
    std::string head = absl::StrCat("^red", k), bodyLabel = absl::StrCat("^redbody", k),
                exit = absl::StrCat("^redexit", k);
    std::string argList, argTypes, exitArgs;
    for (int64_t l = 0; l < vector; ++l) {
      absl::StrAppend(&argList, ", ", identity);
      absl::StrAppend(&argTypes, ", ", acct);
    }
    w.line(absl::StrCat("llvm.br ", head, "(", y, argList, " : i64", argTypes, ")"));
    std::string headArgs = absl::StrCat("%r", k, ": i64");
    std::vector<std::string> acc;
    for (int64_t l = 0; l < vector; ++l) {
      acc.push_back(absl::StrCat("%acc", k, "_", l));
      absl::StrAppend(&headArgs, ", ", acc.back(), ": ", acct);
    }
    w.label(absl::StrCat(head, "(", headArgs, ")"));
    std::string inRange = w.def(absl::StrCat("llvm.icmp \"ult\" %r", k, ", ", rowCount, " : i64"));
    w.line(absl::StrCat("llvm.cond_br ", inRange, ", ", bodyLabel, ", ", exit));
    w.label(bodyLabel);
    openScope();
    std::string base = i64op("add", i64op("mul", absl::StrCat("%r", k), colCount), colStart);
    if (vector > 1) {
      vectorPath = true;
      vectorLoads(base);
    }
    auto vals = laneValues(r.getInput(), base);
    vectorPath = false;
    if (!vals.ok())
      return vals.status();
    std::string nextArgs;
    for (int64_t l = 0; l < vector; ++l)
      absl::StrAppend(&nextArgs, ", ", combine(acc[l], widen((*vals)[l])));
    closeScope();
    std::string r2 = i64op("add", absl::StrCat("%r", k), step);
    w.line(absl::StrCat("llvm.br ", head, "(", r2, nextArgs, " : i64", argTypes, ")"));
    w.label(exit);
    // Partials of the 8 slices through shared memory.
    std::string region = i64op("mul", i64op("add", i64op("mul", "%parity",
                                                         w.constI64(numReductions)),
                                            w.constI64(k)),
                               w.constI64(regionFloats));
    auto slot = [&](const std::string &slice, int64_t l) {
      std::string i = i64op("add", region,
                            i64op("add", i64op("mul", i64op("add", i64op("mul", slice,
                                                                         w.constI64(groupsPerTile)),
                                                            x),
                                               w.constI64(vector)),
                                  w.constI64(l)));
      return w.def(absl::StrCat("llvm.getelementptr ", partials, "[", i,
                                "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f64"));
    };
    for (int64_t l = 0; l < vector; ++l)
      w.line(absl::StrCat("llvm.store ",
                          wide ? acc[l] : w.def(absl::StrCat("llvm.fpext ", acc[l], " : f32 to f64")),
                          ", ", slot(y, l), " : f64, !llvm.ptr<3>"));
    w.line("nvvm.barrier0");
    for (int64_t l = 0; l < vector; ++l) {
      std::string total;
      for (int64_t sIdx = 0; sIdx < slices; ++sIdx) {
        std::string v = w.def(absl::StrCat("llvm.load ", slot(w.constI64(sIdx), l),
                                           " : !llvm.ptr<3> -> f64"));
        if (!wide)
          v = w.def(absl::StrCat("llvm.fptrunc ", v, " : f64 to f32"));
        total = total.empty() ? v : combine(total, v);
      }
      if (kind == ReduceKind::mean)
        total = w.def(absl::StrCat("llvm.fdiv ", total, ", ",
                                   w.def(absl::StrCat("llvm.mlir.constant(",
                                                      absl::StrFormat("%.17e", static_cast<double>(reducedRows)),
                                                      " : f64) : f64")),
                                   " : f64"));
      if (wide)
        total = w.def(absl::StrCat("llvm.fptrunc ", total, " : f64 to f32"));
      columnTotals[{r.getResult(), static_cast<int>(l)}] = roundTo(total, r.getType());
    }
  }

  // Outputs of the element shape: another pass over the rows.
  SmallVector<unsigned> full, perColumn;
  for (auto [i, o] : llvm::enumerate(body.getTerminator()->getOperands()))
    (isFull(o) ? full : perColumn).push_back(i);
  if (!full.empty()) {
    w.line(absl::StrCat("llvm.br ^out(", y, " : i64)"));
    w.label("^out(%orow: i64)");
    std::string inRange = w.def(absl::StrCat("llvm.icmp \"ult\" %orow, ", rowCount, " : i64"));
    std::string doStore = w.def(absl::StrCat("llvm.and ", inRange, ", ", valid, " : i1"));
    std::string goOn = inRange;
    w.line(absl::StrCat("llvm.cond_br ", goOn, ", ^outbody, ^outexit"));
    w.label("^outbody");
    openScope();
    std::string base = i64op("add", i64op("mul", "%orow", colCount), colStart);
    if (vector > 1) {
      vectorPath = true;
      vectorLoads(base);
    }
    std::vector<std::pair<std::string, std::string>> stores;
    for (unsigned i : full) {
      Value o = body.getTerminator()->getOperand(i);
      auto vals = laneValues(o, base);
      if (!vals.ok())
        return vals.status();
      ElemTypes t = *elemTypes(o.getType());
      std::string vecType = absl::StrCat("vector<", vector, "x", t.storage, ">");
      std::string vec = w.def(absl::StrCat("llvm.mlir.poison : ", vecType));
      for (int64_t l = 0; l < vector; ++l) {
        std::string li = w.def(absl::StrCat("llvm.mlir.constant(", l, " : i32) : i32"));
        vec = w.def(absl::StrCat("llvm.insertelement ", toStorage((*vals)[l], t), ", ", vec,
                                 "[", li, " : i32] : ", vecType));
      }
      std::string ptr = w.def(absl::StrCat("llvm.getelementptr ", outNames[i], "[", base,
                                           "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
      stores.emplace_back(absl::StrCat(vec, ", ", ptr, " {alignment = ", vector * t.bytes,
                                       " : i64} : ", vecType),
                          "");
    }
    vectorPath = false;
    closeScope();
    w.line(absl::StrCat("llvm.cond_br ", doStore, ", ^outstore, ^outnext"));
    w.label("^outstore");
    for (auto &st : stores)
      w.line(absl::StrCat("llvm.store ", st.first, ", !llvm.ptr<1>"));
    w.line("llvm.br ^outnext");
    w.label("^outnext");
    std::string r2 = i64op("add", "%orow", step);
    w.line(absl::StrCat("llvm.br ^out(", r2, " : i64)"));
    w.label("^outexit");
  }
  // Outputs of the column shape: the first warp stores them.
  if (!perColumn.empty()) {
    std::vector<std::string> lines;
    for (unsigned i : perColumn) {
      Value o = body.getTerminator()->getOperand(i);
      ElemTypes t = *elemTypes(o.getType());
      for (int64_t l = 0; l < vector; ++l) {
        auto val = eval(o, colLane[l], static_cast<int>(l));
        if (!val.ok())
          return val.status();
        std::string stored = toStorage(*val, t);
        std::string ptr = w.def(absl::StrCat("llvm.getelementptr ", outNames[i], "[", colLane[l],
                                             "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
        lines.push_back(absl::StrCat("llvm.store ", stored, ", ", ptr, " : ", t.storage,
                                     ", !llvm.ptr<1>"));
      }
    }
    std::string first = w.def(absl::StrCat("llvm.icmp \"eq\" ", y, ", ", w.constI64(0), " : i64"));
    std::string doStore = w.def(absl::StrCat("llvm.and ", first, ", ", valid, " : i1"));
    w.line(absl::StrCat("llvm.cond_br ", doStore, ", ^colout, ^nexttile"));
    w.label("^colout");
    for (auto &l : lines)
      w.line(l);
    w.line("llvm.br ^nexttile");
  } else {
    w.line("llvm.br ^nexttile");
  }
  w.label("^nexttile");
  std::string nextTile = i64op("add", "%tile", nctaid);
  std::string flip = i64op("xor", "%parity", w.constI64(1));
  w.line(absl::StrCat("llvm.br ^tilehead(", nextTile, ", ", flip, " : i64, i64)"));
  w.label("^exit");
  w.line("llvm.return");

  g.llvmDialect = absl::StrCat("module {\n", smemGlobal, "  llvm.func @", g.entry, "(", params,
                               ") attributes {nvvm.kernel} {\n", w.text, "  }\n}\n");
  g.block = slices * groupsPerTile;
  g.grid = std::clamp<int64_t>(tiles, 1, 132 * 8);
  return g;
}

/// MLIR LLVM dialect text -> LLVM IR -> O3 -> PTX for `arch`.
absl::StatusOr<std::string> toPtx(const std::string &text, const std::string &arch) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  DialectRegistry registry;
  registry.insert<LLVM::LLVMDialect, NVVM::NVVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module)
    return absl::InternalError("fusec codegen produced invalid LLVM-dialect IR: " +
                               diagnostics);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, "fusec");
  if (!llvmModule)
    return absl::InternalError("translation to LLVM IR failed: " + diagnostics);
  llvm::Triple triple("nvptx64-nvidia-cuda");
  llvmModule->setTargetTriple(triple);
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return absl::InternalError("NVPTX target: " + error);
  const char *ptxFeature = arch == "sm_100a" ? "+ptx86" : arch == "sm_90a" ? "+ptx80" : "+ptx70";
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, arch, ptxFeature, llvm::TargetOptions(), std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    return absl::InvalidArgumentError("no NVPTX target machine for " + arch);
  llvmModule->setDataLayout(tm->createDataLayout());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(*llvmModule, mam);

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return absl::InternalError("the NVPTX backend cannot emit assembly");
  pm.run(*llvmModule);
  return std::string(ptx.str());
}

} // namespace

absl::StatusOr<GeneratedKernel> generateKernel(KernelOp kernel,
                                               const PtxOptions &options) {
  if (options.arch != "sm_90a" && options.arch != "sm_100a" && options.arch != "sm_80")
    return absl::InvalidArgumentError("fusec codegen: arch '" + options.arch +
                                      "' is not sm_90a, sm_100a or sm_80");
  KernelWriter writer(kernel, options);
  auto g = writer.run();
  if (!g.ok())
    return g.status();
  auto ptx = toPtx(g->llvmDialect, options.arch);
  if (!ptx.ok())
    return ptx.status();
  g->ptx = std::move(*ptx);
  return g;
}

} // namespace fusec
