//===- LowerPrecision.cpp - Storage precision within a budget ---*- C++ -*-===//

#include "fusec/Passes/Passes.h"

#include "absl/strings/str_format.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <limits>
#include <optional>

namespace fusec {
#define GEN_PASS_DEF_LOWERPRECISION
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

bool isF32Tensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType().isF32();
}

/// Ops whose result element type follows their (first) operand's.
bool followsOperand(Operation *op) {
  return isa<BroadcastOp, TransposeOp, SliceOp, ReshapeOp, ConcatOp, GatherOp>(op);
}

/// Ops whose operands' relative errors add up (to first order).
bool addsErrors(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, MatmulOp, AttentionOp, ConvOp>(op);
}

/// How an op scales its operands' relative error (see Passes.td).
/// Discontinuous ops (rounding to integers, sign, comparisons) turn any error
/// into an unbounded one: a value next to a step may land on the other side.
double amplification(Operation *op) {
  // sin and cos: an absolute error of the argument is one of the result,
  // which near a zero of the result is any relative error.
  if (isa<FloorOp, CeilOp, RoundOp, SignOp, CompareOp, SinOp, CosOp>(op))
    return std::numeric_limits<double>::infinity();
  if (isa<ExpOp, Exp2Op, LogOp, PowOp>(op))
    return 4;
  return 1;
}

/// "the result of fusec.mul" or "argument #2", and where to point at it.
std::string describe(Value v) {
  if (Operation *def = v.getDefiningOp())
    return ("the result of " + def->getName().getStringRef()).str();
  return "argument #" + std::to_string(cast<BlockArgument>(v).getArgNumber());
}

Location locationOf(Value v, func::FuncOp func) {
  return v.getDefiningOp() ? v.getDefiningOp()->getLoc() : func.getLoc();
}

/// Largest |value| of a constant.
double constantMagnitude(ConstantOp c) {
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !isa<FloatType>(dense.getElementType()))
    return std::numeric_limits<double>::infinity();
  double m = 0;
  for (APFloat f : dense.getValues<APFloat>()) {
    bool lost;
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    m = std::max(m, std::fabs(f.convertToDouble()));
  }
  return m;
}

/// A bound on |result| from bounds on |operands| (inf where unknown).
double magnitude(Operation *op, ArrayRef<double> in) {
  const double inf = std::numeric_limits<double>::infinity();
  auto maxIn = [&] {
    double m = 0;
    for (double v : in)
      m = std::max(m, v);
    return m;
  };
  if (auto c = dyn_cast<ConstantOp>(op))
    return constantMagnitude(c);
  if (isa<AddOp, SubOp>(op))
    return in[0] + in[1];
  if (isa<MulOp>(op))
    return in[0] * in[1];
  if (auto d = dyn_cast<DivOp>(op)) {
    auto c = d.getRhs().getDefiningOp<ConstantOp>();
    auto splat = c ? dyn_cast<SplatElementsAttr>(c.getValue()) : nullptr;
    if (splat && isa<FloatType>(splat.getElementType())) {
      double v = std::fabs(splat.getSplatValue<APFloat>().convertToDouble());
      return v > 0 ? in[0] / v : inf;
    }
    return inf;
  }
  if (isa<TanhOp, ErfOp, SigmoidOp, SignOp, CompareOp, SinOp, CosOp>(op))
    return 1;
  if (isa<ExpOp>(op))
    return in[0] < 700 ? std::exp(in[0]) : inf;
  if (isa<Exp2Op>(op))
    return in[0] < 1000 ? std::exp2(in[0]) : inf;
  if (isa<SqrtOp>(op))
    return std::sqrt(in[0]);
  if (isa<LogOp, PowOp, RsqrtOp>(op))
    return inf;
  if (auto r = dyn_cast<ReduceOp>(op)) {
    if (r.getKind() != ReduceKind::sum)
      return in[0];
    auto t = cast<RankedTensorType>(r.getInput().getType());
    double n = 1;
    for (int64_t d : r.getDims())
      n *= t.getDimSize(d);
    return n * in[0];
  }
  if (auto m = dyn_cast<MatmulOp>(op)) {
    auto t = cast<RankedTensorType>(m.getLhs().getType());
    int64_t k = t.getDimSize(m.getTransposeLhs() ? t.getRank() - 2 : t.getRank() - 1);
    return k * in[0] * in[1];
  }
  if (auto c = dyn_cast<ConvOp>(op)) {
    // Like a matmul: each output sums (channels of a group) x (taps)
    // products (at most that many when transposed).
    auto f = cast<RankedTensorType>(c.getFilter().getType());
    double terms = static_cast<double>(c.getTransposed()
                                           ? c.getInput().getType().getDimSize(1) / c.getGroups()
                                           : f.getDimSize(1));
    for (int64_t d = 2; d < f.getRank(); ++d)
      terms *= static_cast<double>(f.getDimSize(d));
    return terms * in[0] * in[1];
  }
  if (isa<PoolOp>(op))
    return in[0]; // a max, or a convex combination of the window
  if (isa<AttentionOp>(op))
    return in[2]; // a convex combination of the values
  if (isa<SelectOp>(op))
    return std::max(in[1], in[2]);
  return maxIn(); // max, min, abs, neg, rounding, cast, movement
}

/// The splat value of a float constant, if `v` is one.
std::optional<double> splatConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto splat = c ? dyn_cast<SplatElementsAttr>(c.getValue()) : nullptr;
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>().convertToDouble();
}

/// An interval holding every value of `v`, from the ops whose range is known
/// whatever their input (tanh, erf, sigmoid, sin, cos, exp, abs) and affine
/// steps with constants; [-m, m] otherwise, m from the magnitudes.
std::pair<double, double> rangeOf(Value v, const llvm::DenseMap<Value, double> &mag,
                                  int depth = 0) {
  const double inf = std::numeric_limits<double>::infinity();
  auto it = mag.find(v);
  double m = it == mag.end() ? inf : it->second;
  std::pair<double, double> any{-m, m};
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return any;
  if (isa<TanhOp, ErfOp, SinOp, CosOp>(def))
    return {-1, 1};
  if (isa<SigmoidOp>(def))
    return {0, 1};
  if (isa<ExpOp, Exp2Op, AbsOp, SqrtOp>(def))
    return {0, m};
  if (followsOperand(def))
    return rangeOf(def->getOperand(0), mag, depth + 1);
  if (isa<MulOp>(def) && def->getOperand(0) == def->getOperand(1))
    return {0, m}; // a square
  if (auto r = dyn_cast<ReduceOp>(def)) {
    auto [lo, hi] = rangeOf(r.getInput(), mag, depth + 1);
    if (r.getKind() == ReduceKind::sum)
      return {lo >= 0 ? 0 : -m, hi <= 0 ? 0 : m};
    return {std::max(lo, -m), std::min(hi, m)}; // mean, max, min
  }
  if (isa<MulOp, AddOp>(def))
    for (int k = 0; k < 2; ++k)
      if (auto c = splatConstant(def->getOperand(k))) {
        auto [lo, hi] = rangeOf(def->getOperand(1 - k), mag, depth + 1);
        if (isa<AddOp>(def))
          return {lo + *c, hi + *c};
        return *c >= 0 ? std::pair{lo * *c, hi * *c} : std::pair{hi * *c, lo * *c};
      }
  return any;
}

/// An add or sub of `v` with a constant that may cancel it: the result's
/// range reaches 0 from a constant that is not 0, so rounding `v` to the
/// narrow type is an error relative to a sum that may be as small as the
/// rounding itself (tanh-GELU's 1 + tanh(u) for u far below 0). Returns
/// the op.
Operation *cancelsAgainstConstant(Value v, const llvm::DenseMap<Value, double> &mag) {
  for (Operation *user : v.getUsers()) {
    if (!isa<AddOp, SubOp>(user))
      continue;
    unsigned self = user->getOperand(0) == v ? 0 : 1;
    auto c = splatConstant(user->getOperand(1 - self));
    if (!c || *c == 0)
      continue;
    // v + c, v - c and c - v reach 0 where v reaches -c, c and c.
    double zeroAt = isa<AddOp>(user) ? -*c : *c;
    auto [lo, hi] = rangeOf(v, mag);
    if (lo <= zeroAt && zeroAt <= hi)
      return user;
  }
  return nullptr;
}

/// `v` with the movement ops that produce it looked through.
Value throughMovement(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!followsOperand(def) || def->getNumOperands() != 1)
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// A mean of x that is subtracted, broadcast back, from x itself (the
/// centering of layer_norm and of every variance: x - mean(x)): the
/// difference cancels where x's values along the reduced dims are nearly
/// equal (exactly, over a dim of 1), and a mean rounded to the narrow type
/// (or computed from x rounded on the way in) is then any error relative
/// to it, which the normalization by the difference's own spread turns into
/// an error of the result's size. Returns the sub.
Operation *centersItsInput(Value v) {
  auto r = v.getDefiningOp<ReduceOp>();
  if (!r || r.getKind() != ReduceKind::mean)
    return nullptr;
  Value x = throughMovement(r.getInput());
  SmallVector<Value> work{v};
  for (size_t i = 0; i < work.size() && i < 64; ++i)
    for (Operation *user : work[i].getUsers()) {
      if (followsOperand(user) && user->getNumOperands() == 1) {
        work.push_back(user->getResult(0));
        continue;
      }
      if (!isa<SubOp>(user))
        continue;
      Value other = user->getOperand(0) == work[i] ? user->getOperand(1) : user->getOperand(0);
      if (throughMovement(other) == x)
        return user;
    }
  return nullptr;
}

class Lowering {
public:
  Lowering(func::FuncOp func, Type low, double u, double maxFinite,
           double inputMagnitude)
      : func(func), low(low), u(u), maxFinite(maxFinite),
        inputMagnitude(inputMagnitude) {}

  /// A bound on |v| for every value, from the inputs' assumed magnitude.
  void computeMagnitudes() {
    for (Value a : func.getArguments())
      mag[a] = inputMagnitude;
    for (Operation &op : func.getBody().front()) {
      SmallVector<double, 4> in;
      for (Value o : op.getOperands()) {
        auto it = mag.find(o);
        in.push_back(it == mag.end() ? std::numeric_limits<double>::infinity()
                                     : it->second);
      }
      for (Value r : op.getResults())
        mag[r] = magnitude(&op, in);
    }
  }

  /// Error bound of each result given the current decisions.
  SmallVector<double> bounds() {
    llvm::DenseMap<Value, double> err;
    for (Value a : func.getArguments())
      err[a] = lowered.contains(a) ? u : 0.0;
    auto get = [&](Value v) {
      auto it = err.find(v);
      return it == err.end() ? 0.0 : it->second;
    };
    for (Operation &op : func.getBody().front()) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        continue;
      bool resultLow = op.getNumResults() == 1 && isLow(op.getResult(0));
      double in = 0;
      for (Value o : op.getOperands()) {
        double e = get(o);
        // An f32 operand read by an op computing in the low type is rounded
        // on the way in.
        if (resultLow && isF32Tensor(o) && !isLow(o) && !isa<CastOp>(op) &&
            !isa<MatmulOp, AttentionOp, ConvOp>(op))
          e += u;
        in = addsErrors(&op) ? in + e : std::max(in, e);
      }
      if (in > 0)
        in *= amplification(&op);
      for (Value r : op.getResults())
        err[r] = in + (isLow(r) && !followsOperand(&op) ? u : 0.0);
    }
    SmallVector<double> out;
    for (Value v : func.getBody().front().getTerminator()->getOperands())
      out.push_back(get(v));
    return out;
  }

  /// The value's type after the decisions: movement ops follow operands.
  bool isLow(Value v) {
    if (lowered.contains(v))
      return true;
    if (Operation *def = v.getDefiningOp())
      if (followsOperand(def) && isF32Tensor(v))
        return isLow(def->getOperand(0));
    return false;
  }

  void run(double budget, int64_t &bytesBefore, int64_t &bytesAfter);

private:
  void materialize();

  func::FuncOp func;
  Type low;
  double u, maxFinite, inputMagnitude;
  llvm::DenseSet<Value> lowered;
  llvm::DenseMap<Value, double> mag;
};

void Lowering::run(double budget, int64_t &bytesBefore, int64_t &bytesAfter) {
  // Values computed inside the function; its arguments keep their type (the
  // signature never changes: an op computing in the low type rounds an f32
  // argument as it reads it).
  SmallVector<Value> candidates;
  func.walk([&](Operation *op) {
    if (followsOperand(op) || isa<func::ReturnOp, KernelOp, YieldOp>(op) ||
        op->getParentOfType<KernelOp>())
      return;
    for (Value r : op->getResults())
      if (isF32Tensor(r))
        candidates.push_back(r);
  });
  // A returned value keeps the result's type: storing it narrow would only
  // add a rounding before the cast back.
  Operation *ret = func.getBody().front().getTerminator();
  llvm::erase_if(candidates, [&](Value v) { return llvm::is_contained(ret->getOperands(), v); });
  llvm::stable_sort(candidates, [](Value a, Value b) {
    return tensorBytes(a.getType()) > tensorBytes(b.getType());
  });
  computeMagnitudes();
  const char *lowName = low.isBF16() ? "bf16" : low.isF16() ? "fp16" : "fp8e4m3";
  for (Value v : candidates) {
    // Range first: the value must fit the narrow type, with a margin.
    double m = mag.lookup(v);
    if (m > maxFinite / 2) {
      mlir::emitRemark(locationOf(v, func)) << absl::StrFormat(
          "kept f32: %s may reach |x| <= %.3g (inputs up to %g), beyond half of "
          "%s's largest finite value %g",
          describe(v), m, inputMagnitude, lowName, maxFinite);
      continue;
    }
    // A mean subtracted from the values it is the mean of (x - mean(x)),
    // and the difference itself (computed in the narrow type, it would
    // round both on the way in).
    Operation *centering = centersItsInput(v);
    if (!centering)
      if (auto sub = v.getDefiningOp<SubOp>())
        for (Value o : sub->getOperands())
          if (centersItsInput(throughMovement(o)) == sub)
            centering = sub;
    if (centering) {
      bool isSub = centering == v.getDefiningOp();
      mlir::emitRemark(locationOf(v, func)) << absl::StrFormat(
          "kept f32: %s %s (x - mean(x)), which cancel where the values are nearly equal "
          "(exactly over a dim of 1): %s %s%s any error relative to the difference",
          describe(v),
          isSub ? "subtracts a mean from the values it is taken of"
                : "is a mean subtracted from the values it is taken of",
          isSub ? "computed in" : "a rounding to", lowName,
          isSub ? " it would round both first," : " is then");
      continue;
    }
    // A value that may cancel against a constant, and the sum itself (an
    // op computing in the narrow type rounds its operands on the way in).
    Operation *sum = cancelsAgainstConstant(v, mag);
    if (!sum && v.getDefiningOp() && isa<AddOp, SubOp>(v.getDefiningOp()))
      for (Value o : v.getDefiningOp()->getOperands())
        if (cancelsAgainstConstant(o, mag) == v.getDefiningOp())
          sum = v.getDefiningOp();
    if (sum) {
      mlir::emitRemark(locationOf(v, func)) << absl::StrFormat(
          "kept f32: %s %s a constant that may cancel it, where a rounding to %s is any "
          "error relative to the sum",
          describe(v), sum == v.getDefiningOp() ? "adds" : "meets, in " +
              sum->getName().getStringRef().str() + ",", lowName);
      continue;
    }
    lowered.insert(v);
    SmallVector<double> b = bounds();
    auto worst = std::max_element(b.begin(), b.end());
    if (worst != b.end() && *worst > budget) {
      lowered.erase(v);
      mlir::emitRemark(locationOf(v, func)) << absl::StrFormat(
          "kept f32: storing %s in %s would raise the error bound of result #%d "
          "to %.3g, over the budget of %.3g",
          describe(v), lowName,
          static_cast<int>(worst - b.begin()), *worst, budget);
    }
  }
  for (Value v : candidates) {
    // Saturating, as the costs are (tensors near 2^62 bytes are valid).
    bytesBefore = OpCost::saturatingAdd(bytesBefore, tensorBytes(v.getType()));
    bytesAfter = OpCost::saturatingAdd(
        bytesAfter, lowered.contains(v) ? tensorElements(v.getType()) * elementBytes(low)
                                        : tensorBytes(v.getType()));
  }
  SmallVector<double> finalBounds = bounds();
  materialize();
  Builder b(func.getContext());
  SmallVector<Attribute> attrs;
  for (double e : finalBounds)
    attrs.push_back(b.getF64FloatAttr(e));
  func->setAttr("fusec.error_bound", b.getArrayAttr(attrs));
}

void Lowering::materialize() {
  FunctionType signature = func.getFunctionType();
  auto lowType = [&](Type t) {
    return cast<RankedTensorType>(t).clone(low);
  };
  auto f32Type = [&](Type t) {
    return cast<RankedTensorType>(t).clone(Float32Type::get(t.getContext()));
  };
  // Decide every value's final type first (isLow reads the original types).
  llvm::DenseMap<Value, Type> finalType;
  for (Value a : func.getArguments())
    if (isLow(a))
      finalType[a] = lowType(a.getType());
  func.walk([&](Operation *op) {
    for (Value r : op->getResults())
      if (isF32Tensor(r) && isLow(r))
        finalType[r] = lowType(r.getType());
  });
  for (auto &[v, t] : finalType)
    v.setType(t);
  // Constants: convert their values.
  func.walk([&](ConstantOp c) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense || dense.getType() == c.getType())
      return;
    auto floatType = cast<FloatType>(low);
    SmallVector<APFloat> values;
    for (APFloat f : dense.getValues<APFloat>()) {
      bool lost;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    c.setValueAttr(DenseElementsAttr::get(cast<ShapedType>(c.getType()), values));
  });
  // Operands must agree with what each op computes in.
  OpBuilder builder(func.getContext());
  auto castTo = [&](Operation *op, unsigned i, Type t) {
    Value v = op->getOperand(i);
    if (v.getType() == t)
      return;
    builder.setInsertionPoint(op);
    // A float constant is converted, not cast at run time (a cast of a
    // constant shared by two kernels is an op that both would need).
    if (auto c = v.getDefiningOp<ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      auto to = dyn_cast<FloatType>(getElementTypeOrSelf(t));
      if (dense && to && isa<FloatType>(dense.getElementType())) {
        SmallVector<APFloat> values;
        for (APFloat f : dense.getValues<APFloat>()) {
          bool lost;
          f.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
          values.push_back(f);
        }
        op->setOperand(i, ConstantOp::create(builder, c.getLoc(), t,
                                             DenseElementsAttr::get(cast<ShapedType>(t), values)));
        return;
      }
    }
    op->setOperand(i, CastOp::create(builder, op->getLoc(), t, v));
  };
  func.walk([&](Operation *op) {
    if (isa<CastOp, ConstantOp, func::ReturnOp>(op))
      return;
    if (isa<MatmulOp, AttentionOp, ConvOp, CompareOp>(op)) {
      // Both (all) operands in the low type, or all in f32.
      bool allLow = llvm::all_of(op->getOperands(), [&](Value v) {
        return !isa<FloatType>(getElementTypeOrSelf(v.getType())) ||
               getElementTypeOrSelf(v.getType()) == low;
      });
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (isa<FloatType>(getElementTypeOrSelf(op->getOperand(i).getType())))
          castTo(op, i, allLow ? lowType(op->getOperand(i).getType())
                               : f32Type(op->getOperand(i).getType()));
      return;
    }
    if (op->getNumResults() != 1)
      return;
    Type result = op->getResult(0).getType();
    if (!isa<FloatType>(getElementTypeOrSelf(result)))
      return;
    Type element = getElementTypeOrSelf(result);
    if (followsOperand(op)) {
      // The result follows operand #0; other float operands (concat) match.
      Type e0 = getElementTypeOrSelf(op->getOperand(0).getType());
      op->getResult(0).setType(cast<RankedTensorType>(result).clone(e0));
      for (unsigned i = 1; i < op->getNumOperands(); ++i)
        if (isa<ConcatOp>(op))
          castTo(op, i, cast<RankedTensorType>(op->getOperand(i).getType()).clone(e0));
      return;
    }
    unsigned first = isa<SelectOp>(op) ? 1 : 0;
    for (unsigned i = first; i < op->getNumOperands(); ++i)
      castTo(op, i, cast<RankedTensorType>(op->getOperand(i).getType()).clone(element));
  });
  // The signature stays: a returned value stored in the low type (or a
  // movement of one) is cast back to the result's type on the way out.
  Operation *ret = func.getBody().front().getTerminator();
  for (unsigned i = 0; i < ret->getNumOperands(); ++i)
    castTo(ret, i, signature.getResult(i));
}

class LowerPrecisionPass
    : public fusec::impl::LowerPrecisionBase<LowerPrecisionPass> {
public:
  using LowerPrecisionBase::LowerPrecisionBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Type low;
    double u, maxFinite;
    if (policy == "bf16") {
      low = BFloat16Type::get(ctx);
      u = 0x1p-8;
      maxFinite = 3.3895e38;
    } else if (policy == "fp16") {
      low = Float16Type::get(ctx);
      u = 0x1p-11;
      maxFinite = 65504;
    } else if (policy == "fp8e4m3") {
      low = Float8E4M3FNType::get(ctx);
      u = 0x1p-4;
      maxFinite = 448;
    } else {
      getOperation().emitError() << "fusec-lower-precision: policy '" << policy
                                 << "' is not bf16, fp16 or fp8e4m3";
      return signalPassFailure();
    }
    for (auto func : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      int64_t before = 0, after = 0;
      Lowering(func, low, u, maxFinite, inputMagnitude).run(maxRelError, before, after);
      mlir::emitRemark(func.getLoc()) << absl::StrFormat(
          "lowered storage to %s: %d -> %d bytes of tensors (%d saved)",
          policy.getValue(), before, after, before - after);
    }
  }
};

} // namespace
