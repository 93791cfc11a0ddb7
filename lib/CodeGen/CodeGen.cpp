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
// All inline PTX lives in ptxUnary() and vectorLoad().
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/CodeGen.h"
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

#include <mutex>

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
    for (auto [i, d] : llvm::enumerate(dims)) {
      if (d != rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(i))
        return unimplemented(reductions[0], "reductions over outer dimensions "
                                            "are not generated yet");
      rowLength *= in.getDimSize(d);
    }
    rows = rowLength ? in.getNumElements() / rowLength : 0;
    for (ReduceOp r : reductions)
      if (!isa<FloatType>(getElementTypeOrSelf(r.getType())))
        return unimplemented(r, "integer reductions are not generated yet");
    SmallVector<int64_t> rowShape(in.getShape().take_front(rank - dims.size()));
    for (Value r : body.getTerminator()->getOperands()) {
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
    } else if (!isa<ReduceOp, CastOp, BroadcastOp, CompareOp, SelectOp, AddOp, SubOp, MulOp,
                    DivOp, MaxOp, MinOp, PowOp, AndOp, OrOp, NotOp, NegOp,
                    AbsOp, SignOp, FloorOp, CeilOp, ExpOp, Exp2Op, LogOp,
                    TanhOp, ErfOp, SigmoidOp, RsqrtOp, SqrtOp>(op)) {
      return unimplemented(&op, "only elementwise kernels and row reductions "
                                "are generated yet (matmuls and data movement "
                                "come next)");
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

/// Loads `vector` elements of every full-shape operand at `base`, 16 bytes
/// at a time when the type allows, cache-hinted as fusec.cache_hints says.
void KernelWriter::vectorLoads(const std::string &base) {
  auto hints = kernel->getAttrOfType<ArrayAttr>("fusec.cache_hints");
  for (BlockArgument arg : kernel.getBody().front().getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getShape() != ArrayRef<int64_t>(domain))
      continue;
    ElemTypes t = *elemTypes(type);
    std::string ptr = w.def(absl::StrCat(
        "llvm.getelementptr ", argNames[arg.getArgNumber()], "[", base,
        "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, ", t.storage));
    std::string vecType = absl::StrCat("vector<", vector, "x", t.storage, ">");
    std::string hint = "default";
    if (hints && arg.getArgNumber() < hints.size())
      hint = cast<StringAttr>(hints[arg.getArgNumber()]).getValue().str();
    std::string vec;
    if (vector * t.bytes == 16) {
      // One 16-byte load, as PTX (the LLVM optimizer would split a vector
      // load whose lanes are used one by one): with the cache policy that
      // fusec.cache_hints asks for, or plain when aggressive PTX is off.
      // The only other inline PTX of the code generator.
      std::string addr = w.def(absl::StrCat("llvm.ptrtoint ", ptr,
                                            " : !llvm.ptr<1> to i64"));
      std::string load;
      if (!options.aggressivePtx || hint == "default")
        load = "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];";
      else if (hint == "keep")
        load = "ld.global.nc.L1::evict_last.v4.u32 {$0, $1, $2, $3}, [$4];";
      else if (options.streamLoad == "plain")
        load = "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];";
      else if (options.streamLoad == "l2_256b")
        load = "ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {$0, $1, $2, $3}, [$4];";
      else if (options.streamLoad == "evict_first")
        load = "{ .reg .b64 pol; createpolicy.fractional.L2::evict_first.b64 "
               "pol, 1.0; ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 "
               "{$0, $1, $2, $3}, [$4], pol; }";
      else
        load = "ld.global.nc.L1::no_allocate.v4.u32 {$0, $1, $2, $3}, [$4];";
      std::string s = w.def(absl::StrCat(
          "llvm.inline_asm \"", load, "\", \"=r,=r,=r,=r,l\" ", addr,
          " : (i64) -> !llvm.struct<(i32, i32, i32, i32)>"));
      std::string packed = w.def("llvm.mlir.poison : vector<4xi32>");
      for (int i = 0; i < 4; ++i) {
        std::string e = w.def(absl::StrCat("llvm.extractvalue ", s, "[", i,
                                           "] : !llvm.struct<(i32, i32, i32, i32)>"));
        std::string idx = w.def(absl::StrCat("llvm.mlir.constant(", i, " : i32) : i32"));
        packed = w.def(absl::StrCat("llvm.insertelement ", e, ", ", packed, "[",
                                    idx, " : i32] : vector<4xi32>"));
      }
      vec = w.def(absl::StrCat("llvm.bitcast ", packed, " : vector<4xi32> to ", vecType));
    } else {
      vec = w.def(absl::StrCat("llvm.load ", ptr, " {alignment = ",
                               vector * t.bytes, " : i64} : !llvm.ptr<1> -> ",
                               vecType));
    }
    std::vector<std::string> out;
    for (int64_t i = 0; i < vector; ++i) {
      std::string idx = w.def(absl::StrCat("llvm.mlir.constant(", i, " : i32) : i32"));
      std::string e = w.def(absl::StrCat("llvm.extractelement ", vec, "[", idx,
                                         " : i32] : ", vecType));
      out.push_back(toCompute(e, t));
    }
    lanes[arg.getArgNumber()] = std::move(out);
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
    if (vectorPath && full)
      result = lanes[arg.getArgNumber()][lane];
    else
      result = load(arg, mainIndex);
    remember(key, result);
    return result;
  }
  Operation *op = v.getDefiningOp();
  auto operand = [&](unsigned i) { return eval(op->getOperand(i), mainIndex, lane); };
  ElemTypes rt = *elemTypes(v.getType());
  bool isFloat = rt.isFloat;

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
      result = w.f("fdiv", in[0], in[1]);
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
  if (!reductions.empty())
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
  std::string params;
  unsigned n = 0;
  for (BlockArgument a : body.getArguments()) {
    (void)a;
    argNames.push_back("%arg" + std::to_string(n));
    absl::StrAppend(&params, n ? ", " : "", "%arg", n, ": !llvm.ptr<1> {llvm.noalias}");
    ++n;
  }
  std::vector<std::string> outNames;
  for (Value r : body.getTerminator()->getOperands()) {
    (void)r;
    outNames.push_back("%arg" + std::to_string(n));
    absl::StrAppend(&params, n ? ", " : "", "%arg", n, ": !llvm.ptr<1> {llvm.noalias}");
    ++n;
  }

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
  std::vector<std::vector<std::string>> outLanes(outNames.size());
  for (int64_t lane = 0; lane < vector; ++lane) {
    memo.clear();
    std::string idx = w.def(absl::StrCat("llvm.add ", base, ", ", w.constI64(lane), " : i64"));
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
  std::string params;
  unsigned n = 0;
  for (BlockArgument a : body.getArguments()) {
    (void)a;
    argNames.push_back("%arg" + std::to_string(n));
    absl::StrAppend(&params, n ? ", " : "", "%arg", n, ": !llvm.ptr<1> {llvm.noalias}");
    ++n;
  }
  std::vector<std::string> outNames;
  for (Value r : body.getTerminator()->getOperands()) {
    (void)r;
    outNames.push_back("%arg" + std::to_string(n));
    absl::StrAppend(&params, n ? ", " : "", "%arg", n, ": !llvm.ptr<1> {llvm.noalias}");
    ++n;
  }
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

  for (auto [k, r] : llvm::enumerate(reductions)) {
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
    std::string idx = w.def(absl::StrCat("llvm.add ", rowBase, ", ", col, " : i64"));
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
    std::string idx = w.def(absl::StrCat("llvm.add ", rowBase, ", %ocol : i64"));
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
