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
  // A splat is one value, however many elements it stands for (a
  // ConstantOfShape of 10^12; iterating them timed out fuzz_onnx).
  if (dense.isSplat()) {
    APFloat f = dense.getSplatValue<APFloat>();
    bool lost;
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    return std::fabs(f.convertToDouble());
  }
  double m = 0;
  for (APFloat f : dense.getValues<APFloat>()) {
    bool lost;
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    m = std::max(m, std::fabs(f.convertToDouble()));
  }
  return m;
}

/// Unit roundoff of storing a value of element type `t` (0 for f64 and
/// integers, which the comparison holds exactly).
double roundoffOf(Type t) {
  if (t.isF32())
    return 0x1p-24;
  if (t.isBF16())
    return 0x1p-8;
  if (t.isF16())
    return 0x1p-11;
  if (isa<Float8E4M3FNType>(t))
    return 0x1p-4;
  if (isa<Float8E5M2Type>(t))
    return 0x1p-3;
  return 0;
}

/// Half the smallest subnormal of `t`: rounding a value below the normal
/// range loses up to this much whatever its size.
double underflowOf(Type t) {
  if (t.isF16())
    return 0x1p-25;
  if (isa<Float8E4M3FNType>(t))
    return 0x1p-10;
  if (isa<Float8E5M2Type>(t))
    return 0x1p-17;
  if (t.isBF16())
    return 0x1p-134;
  if (t.isF32())
    return 0x1p-150;
  return 0;
}

/// The number of products each element of a matmul or convolution sums.
double termsOf(Operation *op) {
  if (auto m = dyn_cast<MatmulOp>(op)) {
    auto t = cast<RankedTensorType>(m.getLhs().getType());
    return static_cast<double>(
        t.getDimSize(m.getTransposeLhs() ? t.getRank() - 2 : t.getRank() - 1));
  }
  auto c = cast<ConvOp>(op);
  auto f = cast<RankedTensorType>(c.getFilter().getType());
  double terms = static_cast<double>(c.getTransposed()
                                         ? c.getInput().getType().getDimSize(1) / c.getGroups()
                                         : f.getDimSize(1));
  for (int64_t d = 2; d < f.getRank(); ++d)
    terms *= static_cast<double>(f.getDimSize(d));
  return terms;
}


/// `dense`'s float values rounded to `to`'s element type (a splat stays a
/// splat: one conversion, not one per element).
DenseElementsAttr convertFloats(DenseElementsAttr dense, ShapedType to) {
  auto &semantics = cast<FloatType>(to.getElementType()).getFloatSemantics();
  auto convert = [&](APFloat f) {
    bool lost;
    f.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
    return f;
  };
  if (dense.isSplat())
    return DenseElementsAttr::get(to, convert(dense.getSplatValue<APFloat>()));
  SmallVector<APFloat> values;
  for (APFloat f : dense.getValues<APFloat>())
    values.push_back(convert(f));
  return DenseElementsAttr::get(to, values);
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
  if (isa<MatmulOp, ConvOp>(op)) // each output sums that many products
    return termsOf(op) * in[0] * in[1];
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
Value throughMovement(Value v);

/// `b` is a max of `x` over some dims (broadcast back, at times): returns
/// the reduce.
ReduceOp maxOf(Value b, Value x) {
  auto r = throughMovement(b).getDefiningOp<ReduceOp>();
  if (r && r.getKind() == ReduceKind::max &&
      throughMovement(r.getInput()) == throughMovement(x))
    return r;
  return nullptr;
}

std::pair<double, double> rangeOf(Value v, const llvm::DenseMap<Value, double> &mag,
                                  int depth = 0) {
  const double inf = std::numeric_limits<double>::infinity();
  auto it = mag.find(v);
  double m = it == mag.end() ? inf : it->second;
  std::pair<double, double> any{-m, m};
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return any;
  if (auto c = splatConstant(v))
    return {*c, *c};
  if (isa<TanhOp, ErfOp, SinOp, CosOp>(def))
    return {-1, 1};
  if (isa<SigmoidOp>(def))
    return {0, 1};
  if (isa<ExpOp, Exp2Op>(def)) {
    auto [lo, hi] = rangeOf(def->getOperand(0), mag, depth + 1);
    auto f = [&](double x) { return isa<ExpOp>(def) ? std::exp(x) : std::exp2(x); };
    return {f(lo), std::min(m, f(hi))};
  }
  if (isa<SqrtOp>(def)) { // monotone: the root of the operand's range
    auto [lo, hi] = rangeOf(def->getOperand(0), mag, depth + 1);
    return {std::sqrt(std::max(lo, 0.0)), std::min(m, std::sqrt(std::max(hi, 0.0)))};
  }
  if (isa<AbsOp>(def))
    return {0, m};
  if (isa<ConcatOp>(def)) {
    std::pair<double, double> all{inf, -inf};
    for (Value o : def->getOperands()) {
      auto [lo, hi] = rangeOf(o, mag, depth + 1);
      all = {std::min(all.first, lo), std::max(all.second, hi)};
    }
    return all;
  }
  if (followsOperand(def) || isa<CastOp>(def))
    return rangeOf(def->getOperand(0), mag, depth + 1);
  if (isa<MulOp>(def) && def->getOperand(0) == def->getOperand(1))
    return {0, m}; // a square
  // x - max(x): softmax's shift, never above 0.
  if (isa<SubOp>(def) && maxOf(def->getOperand(1), def->getOperand(0))) {
    auto [lo, hi] = rangeOf(def->getOperand(0), mag, depth + 1);
    return {std::max(lo - hi, -m), 0};
  }
  if (auto r = dyn_cast<ReduceOp>(def)) {
    auto [lo, hi] = rangeOf(r.getInput(), mag, depth + 1);
    if (r.getKind() == ReduceKind::sum) {
      auto t = cast<RankedTensorType>(r.getInput().getType());
      double n = 1;
      for (int64_t d : r.getDims())
        n *= static_cast<double>(t.getDimSize(d));
      std::pair<double, double> sum{std::max(n * lo, -m), std::min(n * hi, m)};
      // softmax's denominator: a sum of exp(x - max(x)) over the dims of
      // the max holds exp(0) = 1 once.
      Value e = throughMovement(r.getInput());
      if (n >= 1 && e.getDefiningOp<ExpOp>())
        if (auto sub = e.getDefiningOp()->getOperand(0).getDefiningOp<SubOp>())
          if (ReduceOp mx = maxOf(sub.getRhs(), sub.getLhs()))
            if (mx.getDims() == r.getDims())
              sum.first = std::max(sum.first, 1.0);
      return sum;
    }
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

/// Whether `a` and `b` are one value: the same, or one op applied to the same
/// operands twice (an exporter's `x - mean` written once for the variance and
/// again for the numerator).
bool sameValue(Value a, Value b) {
  if (a == b)
    return true;
  Operation *p = a.getDefiningOp(), *q = b.getDefiningOp();
  return p && q && p->getName() == q->getName() && p->getNumResults() == 1 &&
         q->getNumResults() == 1 && p->getOperands() == q->getOperands() &&
         p->getAttrDictionary() == q->getAttrDictionary() &&
         p->getResultTypes() == q->getResultTypes() && mlir::isPure(p);
}

/// `b` broadcasts a reduction's result back over the dims it reduced: a
/// broadcast of it whose kept dims are the complement of `dims`, or of its
/// keep-dims reshape (size 1 at `dims`) over every dim.
bool expandsOver(Value b, Value reduced, ArrayRef<int64_t> dims, int64_t rank) {
  auto bc = b.getDefiningOp<BroadcastOp>();
  if (!bc || cast<RankedTensorType>(bc.getType()).getRank() != rank)
    return false;
  Value in = bc.getInput();
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(dims, d))
      kept.push_back(d);
  if (in == reduced)
    return bc.getDims() == ArrayRef<int64_t>(kept);
  auto reshape = in.getDefiningOp<ReshapeOp>();
  if (!reshape || reshape.getInput() != reduced ||
      bc.getDims() != ArrayRef<int64_t>(llvm::to_vector(llvm::seq<int64_t>(0, rank))))
    return false;
  // The reshape puts a 1 at each reduced dim and keeps the others in order.
  auto from = cast<RankedTensorType>(reduced.getType()).getShape();
  auto to = cast<RankedTensorType>(in.getType()).getShape();
  if (static_cast<int64_t>(to.size()) != rank || from.size() != kept.size())
    return false;
  for (int64_t d = 0; d < rank; ++d)
    if (llvm::is_contained(dims, d) ? to[d] != 1 : false)
      return false;
  for (size_t i = 0; i < kept.size(); ++i)
    if (to[kept[i]] != from[i])
      return false;
  return true;
}

/// A bound on |y| for a normalization y = a * rsqrt(s + eps) or
/// y = a / sqrt(s + eps), s the mean (or sum) of a * a over some dims and
/// broadcast back, eps > 0 a constant: each a_i^2 is at most n s (s for a
/// sum), so |y_i| <= sqrt(n) (or 1) whatever a is, in the function as it was
/// and as lowered alike, which bounds the difference by twice that where no
/// slope does (rsqrt's grows without bound as s + eps nears eps). Rounding
/// (relative `u`, the largest of the chain's types, and absolute underflow
/// `eta`) loosens it by a few u; infinity where eps does not dominate the
/// underflow, or `op` is not such a normalization.
double normalizedBound(Operation *op, Type low) {
  const double inf = std::numeric_limits<double>::infinity();
  if (!isa<MulOp, DivOp>(op))
    return inf;
  auto rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  for (int k = 0; k < (isa<DivOp>(op) ? 1 : 2); ++k) {
    Value a = op->getOperand(k), scale = op->getOperand(1 - k);
    auto bc = scale.getDefiningOp<BroadcastOp>();
    Operation *root = bc ? throughMovement(bc.getInput()).getDefiningOp() : nullptr;
    if (!root || !(isa<MulOp>(op) ? isa<RsqrtOp>(root) : isa<SqrtOp>(root)))
      continue;
    auto add = root->getOperand(0).getDefiningOp<AddOp>();
    if (!add)
      continue;
    for (int j = 0; j < 2; ++j) {
      auto eps = splatConstant(add->getOperand(1 - j));
      auto r = add->getOperand(j).getDefiningOp<ReduceOp>();
      if (!eps || !(*eps > 0) || !r ||
          (r.getKind() != ReduceKind::mean && r.getKind() != ReduceKind::sum))
        continue;
      auto sq = r.getInput().getDefiningOp<MulOp>();
      if (!sq || !sameValue(sq.getLhs(), sq.getRhs()) || !sameValue(sq.getLhs(), a) ||
          cast<RankedTensorType>(r.getInput().getType()).getShape() !=
              cast<RankedTensorType>(op->getResult(0).getType()).getShape() ||
          !expandsOver(scale, root->getResult(0), r.getDims(), rank))
        continue;
      auto t = cast<RankedTensorType>(r.getInput().getType());
      double n = 1;
      for (int64_t d : r.getDims())
        n *= static_cast<double>(t.getDimSize(d));
      double u = roundoffOf(low), eta = underflowOf(low);
      for (Value v : SmallVector<Value, 6>{a, sq.getResult(), r.getResult(), add.getResult(),
                                           root->getResult(0), op->getResult(0)}) {
        Type e = getElementTypeOrSelf(v.getType());
        u = std::max(u, roundoffOf(e));
        eta = std::max(eta, underflowOf(e));
      }
      // Each rounding step on the way (a read of a, the square, the sum's
      // f32 accumulation and its store, the mean's scaling, the add, the
      // root, the result) moves a value by a factor within 1 +- u and by at
      // most eta; the denominator s' + eps' is then at least
      // c a_i^2 / n + eps (1 - u)^2 - kappa.
      double c = std::pow(1 - u, 10) * (1 - (n - 1) * 0x1p-24);
      double floor = *eps * (1 - u) * (1 - u) - 16 * eta;
      if (!(c > 0.5) || !(floor > 0))
        continue;
      double perRow = r.getKind() == ReduceKind::mean ? n : 1;
      return std::pow(1 + u, 4) * std::sqrt(perRow / c) +
             (1 + u) * (1 + u) * eta / std::sqrt(floor);
    }
  }
  return inf;
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
      double m = magnitude(&op, in);
      // Ops unbounded near 0, bounded on an operand's range away from it.
      if (isa<ExpOp, Exp2Op>(op)) // from the operand's upper end
        m = std::min(m, rangeOf(op.getResult(0), mag).second);
      if (std::isinf(m) && isa<RsqrtOp, LogOp, DivOp>(op)) {
        auto [lo, hi] = rangeOf(op.getOperand(isa<DivOp>(op) ? 1 : 0), mag);
        if (isa<RsqrtOp>(op) && lo > 0)
          m = 1 / std::sqrt(lo);
        else if (isa<LogOp>(op) && lo > 0)
          m = std::max(std::fabs(std::log(lo)), std::fabs(std::log(hi)));
        else if (isa<DivOp>(op) && (lo > 0 || hi < 0))
          m = in[0] / std::min(std::fabs(lo), std::fabs(hi));
      }
      // A normalization's result is at most sqrt(n) whatever its input.
      m = std::min(m, normalizedBound(&op, low));
      for (Value r : op.getResults())
        mag[r] = m;
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

  /// A bound on |after - before| for each element of each result, where
  /// before is the function as it was and after the function with the
  /// current decisions, both evaluated on the same arguments, each of
  /// magnitude at most `inputMagnitude`. Unlike `bounds()` it holds however
  /// the data cancel: it propagates absolute errors with the magnitudes
  /// (interval arithmetic on |error|), never relative ones. Each stored
  /// value adds the rounding of both functions' types at the value's
  /// magnitude (none where both compute it alike from the same operands);
  /// each op passes its operands' errors on through its Lipschitz constant
  /// over the operands' ranges widened by their errors, or through the
  /// exact expansion for products (Ma Eb + Mb Ea + Ea Eb). Sums and
  /// products of K terms add f32 accumulation (K - 1) u32 of the sum of
  /// magnitudes. Infinite where an op's constant is not bounded on those
  /// ranges (a log, a division or an rsqrt whose operand's range reaches
  /// 0, a comparison or rounding of an inexact value, pow).
  SmallVector<double> absoluteBounds() {
    const double inf = std::numeric_limits<double>::infinity();
    const double u32 = 0x1p-24;
    llvm::DenseMap<Value, double> err;
    auto get = [&](Value v) {
      auto it = err.find(v);
      return it == err.end() ? 0.0 : it->second;
    };
    auto magOf = [&](Value v) {
      auto it = mag.find(v);
      return it == mag.end() ? inf : it->second;
    };
    // 0 * inf is 0 here: an exact value of unknown size adds no error.
    auto times = [](double a, double b) { return a == 0 || b == 0 ? 0.0 : a * b; };
    // Beside each absolute bound E, a mixed one: |after - before| <=
    // R |before| + A. Where values keep a sign (exponentials, their sums,
    // products and quotients: softmax) relative errors compose where
    // absolute ones grow past the values: a sum of n terms each off by
    // e^E - 1 of itself is off by that much of the sum, at least 1 for
    // softmax's denominator. Each value's E is the lesser of the two.
    llvm::DenseMap<Value, std::pair<double, double>> mixed;
    auto getMixed = [&](Value v) {
      auto it = mixed.find(v);
      return it == mixed.end() ? std::pair<double, double>{0, 0} : it->second;
    };
    for (Value a : func.getArguments())
      err[a] = 0;
    for (Operation &op : func.getBody().front()) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        continue;
      bool resultLow = op.getNumResults() == 1 && isLow(op.getResult(0));
      // Each operand's error as the op reads it: an f32 operand of an op
      // that computes in the narrow type is rounded on the way in (a
      // constant is converted at compile time, the same rounding).
      SmallVector<double, 4> e, m, rel, add;
      double any = 0;
      for (Value o : op.getOperands()) {
        double eo = get(o), mo = magOf(o);
        auto [ro, ao] = getMixed(o);
        // (Matmuls, attention and convolutions compute in f32 unless all
        // their operands are narrow.)
        if (resultLow && isF32Tensor(o) && !isLow(o) &&
            !isa<CastOp, MatmulOp, AttentionOp, ConvOp>(op)) {
          eo += times(u, mo + eo) + underflowOf(low);
          ro = (1 + ro) * (1 + u) - 1;
          ao = ao * (1 + u) + underflowOf(low);
        }
        e.push_back(eo);
        m.push_back(mo);
        rel.push_back(ro);
        add.push_back(ao);
        any = std::max(any, eo);
      }
      auto range = [&](unsigned i) { return rangeOf(op.getOperand(i), mag); };
      double pre = 0; // the error before the result's own rounding
      if (any == 0) {
        pre = 0;
      } else if (isa<ConstantOp>(op)) {
        pre = 0;
      } else if (isa<AddOp, SubOp>(op)) {
        pre = e[0] + e[1];
      } else if (isa<MulOp>(op)) {
        pre = times(m[0], e[1]) + times(m[1], e[0]) + e[0] * e[1];
      } else if (isa<DivOp>(op)) {
        // x / y - x' / y' = ((x - x') y' + x' (y' - y)) / (y y'), |y| >= lo.
        auto [lo, hi] = range(1);
        double least = lo > 0 ? lo : hi < 0 ? -hi : 0;
        pre = least > e[1] ? e[0] / (least - e[1]) + times(m[0], e[1]) / ((least - e[1]) * least)
                           : inf;
      } else if (isa<MaxOp, MinOp, NegOp, AbsOp, TanhOp, SinOp, CosOp, CastOp>(op) ||
                 followsOperand(&op) || isa<PoolOp>(op)) {
        // Lipschitz 1 in each operand (max and min in both at once). A
        // gather's indices are integers: exact unless computed from an
        // inexact float, which the rounding rule below makes infinite.
        pre = any;
      } else if (isa<SelectOp>(op)) {
        pre = e[0] > 0 ? inf : std::max(e[1], e[2]);
      } else if (isa<SigmoidOp>(op)) {
        pre = e[0] / 4;
      } else if (isa<ErfOp>(op)) {
        pre = e[0] * 1.1283791670955126; // 2 / sqrt(pi)
      } else if (isa<ExpOp, Exp2Op>(op)) {
        double top = range(0).second + e[0];
        double slope = isa<ExpOp>(op) ? std::exp(top) : std::exp2(top) * 0.6931471805599453;
        pre = top < 700 ? slope * e[0] : inf;
      } else if (isa<LogOp>(op)) {
        double lo = range(0).first;
        pre = lo > e[0] ? e[0] / (lo - e[0]) : inf;
      } else if (isa<SqrtOp>(op)) {
        // |sqrt a - sqrt b| <= sqrt |a - b| for a, b >= 0, and the slope
        // 1 / (2 sqrt lo) where the range stays above 0.
        double lo = range(0).first;
        pre = lo < 0 ? inf : std::sqrt(e[0]);
        if (lo > e[0])
          pre = std::min(pre, e[0] / (2 * std::sqrt(lo - e[0])));
      } else if (isa<RsqrtOp>(op)) {
        double lo = range(0).first;
        pre = lo > e[0] ? e[0] / (2 * (lo - e[0]) * std::sqrt(lo - e[0])) : inf;
      } else if (auto r = dyn_cast<ReduceOp>(op)) {
        auto t = cast<RankedTensorType>(r.getInput().getType());
        double n = 1;
        for (int64_t d : r.getDims())
          n *= static_cast<double>(t.getDimSize(d));
        pre = r.getKind() == ReduceKind::sum    ? n * e[0] + (n - 1) * u32 * n * m[0]
              : r.getKind() == ReduceKind::mean ? e[0] + (n - 1) * u32 * m[0]
                                                : e[0];
      } else if (isa<MatmulOp, ConvOp>(op)) {
        double k = termsOf(&op);
        pre = k * (times(m[0], e[1]) + times(m[1], e[0]) + e[0] * e[1]) +
              (k - 1) * u32 * k * m[0] * m[1];
      } else if (auto a = dyn_cast<AttentionOp>(op)) {
        // A convex combination of the values, by softmax weights whose
        // logits move by at most d: each weight moves by a factor within
        // e^(+-2d), so the weights' L1 change is at most e^(2d) - 1.
        double dim = static_cast<double>(a.getQuery().getType().getDimSize(3));
        double d = std::fabs(a.getScale().convertToDouble()) * dim *
                   (times(m[0], e[1]) + times(m[1], e[0]) + e[0] * e[1]);
        if (a.getKeyMask() && e[3] > 0)
          d = inf;
        pre = 2 * d < 700 ? e[2] + std::expm1(2 * d) * (m[2] + e[2]) : inf;
      } else {
        // Floor, ceil, round, sign, compare, logic, pow, casts to integers:
        // a step may turn any error into one of the step's size.
        pre = inf;
      }
      if (isa<CastOp>(op) && any > 0 && pre < inf &&
          !isa<FloatType>(getElementTypeOrSelf(op.getResult(0).getType())))
        pre = inf;
      // The mixed bound (R, A) before the result's rounding.
      double preRel = inf, preAdd = inf;
      auto nonNegative = [&](unsigned i) { return range(i).first >= 0; };
      if (any == 0 || isa<ConstantOp>(op)) {
        preRel = preAdd = 0;
      } else if (isa<ExpOp, Exp2Op>(op)) {
        // exp(x') = exp(x) exp(x' - x).
        preRel = isa<ExpOp>(op) ? std::expm1(e[0]) : std::expm1(e[0] * 0.6931471805599453);
        preAdd = 0;
      } else if (isa<MulOp>(op)) {
        preRel = (1 + rel[0]) * (1 + rel[1]) - 1;
        preAdd = times(add[0], m[1] * (1 + rel[1]) + add[1]) + times(add[1], m[0] * (1 + rel[0]));
      } else if (isa<DivOp>(op)) {
        auto [lo, hi] = range(1);
        double least = lo > 0 ? lo : hi < 0 ? -hi : 0;
        double ry = least > 0 ? rel[1] + add[1] / least : inf;
        if (ry < 1) {
          preRel = (1 + rel[0]) / (1 - ry) - 1;
          preAdd = add[0] / (least * (1 - ry));
        }
      } else if (isa<AddOp>(op) && nonNegative(0) && nonNegative(1)) {
        preRel = std::max(rel[0], rel[1]);
        preAdd = add[0] + add[1];
      } else if (auto r = dyn_cast<ReduceOp>(op); r && nonNegative(0)) {
        auto t = cast<RankedTensorType>(r.getInput().getType());
        double n = 1;
        for (int64_t d : r.getDims())
          n *= static_cast<double>(t.getDimSize(d));
        preRel = rel[0] + (n - 1) * u32;
        preAdd = r.getKind() == ReduceKind::sum ? n * add[0] : add[0];
      } else if ((isa<NegOp, AbsOp, CastOp>(op) || followsOperand(&op)) &&
                 !isa<ConcatOp, GatherOp>(op)) {
        preRel = rel[0];
        preAdd = add[0];
      } else if (isa<SqrtOp, RsqrtOp>(op)) {
        auto [lo, hi] = range(0);
        double rx = lo > 0 ? rel[0] + add[0] / lo : inf;
        if (rx < 1) {
          preRel = isa<SqrtOp>(op) ? 1 - std::sqrt(1 - rx) : 1 / std::sqrt(1 - rx) - 1;
          preAdd = 0;
        }
      }
      if (std::isnan(preRel) || std::isnan(preAdd) ||
          (std::isinf(pre) && any > 0 && isa<CastOp>(op)))
        preRel = preAdd = inf; // a cast of an inexact value to an integer
      if (op.getNumResults() == 1 && preRel < inf && preAdd < inf)
        pre = std::min(pre, times(preRel, magOf(op.getResult(0))) + preAdd);
      for (Value r : op.getResults()) {
        Type before = getElementTypeOrSelf(r.getType());
        Type after = isLow(r) ? low : before;
        double total = pre;
        // Movement ops store what they read; every other op rounds its
        // result to its type, in each function (alike where the operands
        // and the types are: then the results are equal).
        bool rounds = !followsOperand(&op) && !(pre == 0 && after == before &&
                                               !isa<ConstantOp>(op));
        double totalRel = preRel, totalAdd = preAdd;
        if (rounds && isa<FloatType>(before)) {
          double mr = magOf(r);
          if (isa<ConstantOp>(op)) {
            total += after == before ? 0 : times(roundoffOf(after), mr) + underflowOf(after);
            if (after != before) {
              totalRel = roundoffOf(after);
              totalAdd = underflowOf(after);
            }
          } else {
            total += times(roundoffOf(after), mr + pre) + times(roundoffOf(before), mr) +
                     underflowOf(after) + underflowOf(before);
            // after = round(y (1 + r) + a), before = round(y).
            totalRel = (1 + preRel) * (1 + roundoffOf(after)) / (1 - roundoffOf(before)) - 1;
            totalAdd = preAdd * (1 + roundoffOf(after)) + underflowOf(after) + underflowOf(before);
          }
          if (totalRel < inf && totalAdd < inf)
            total = std::min(total, times(totalRel, mr) + totalAdd);
        }
        // A normalization bounds each function's result, so the difference
        // too, where no slope does.
        if (double bound = normalizedBound(&op, low); bound < inf)
          total = std::min(std::isnan(total) ? inf : total, 2 * bound);
        err[r] = std::isnan(total) ? inf : total;
        mixed[r] = {totalRel, totalAdd};
      }
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
    // An op computing in the narrow type rounds its f32 operands on the way
    // in (matmuls, attention and convolutions compute in f32 unless all
    // their operands are narrow): they must fit too.
    Operation *def = v.getDefiningOp();
    Value wide;
    if (def && !isa<MatmulOp, AttentionOp, ConvOp, CastOp>(def))
      for (Value o : def->getOperands())
        if (isF32Tensor(o) && !isLow(o) && mag.lookup(o) > maxFinite / 2)
          wide = o;
    if (wide) {
      mlir::emitRemark(locationOf(v, func)) << absl::StrFormat(
          "kept f32: computing %s in %s would round its operand, %s, which may reach "
          "|x| <= %.3g (inputs up to %g), beyond half of %s's largest finite value %g",
          describe(v), lowName, describe(wide), mag.lookup(wide), inputMagnitude, lowName,
          maxFinite);
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
  SmallVector<double> absolute = absoluteBounds();
  materialize();
  Builder b(func.getContext());
  SmallVector<Attribute> attrs, absAttrs;
  for (double e : finalBounds)
    attrs.push_back(b.getF64FloatAttr(e));
  for (double e : absolute)
    absAttrs.push_back(b.getF64FloatAttr(e));
  func->setAttr("fusec.error_bound", b.getArrayAttr(attrs));
  func->setAttr("fusec.abs_error_bound",
                b.getDictionaryAttr({b.getNamedAttr("bounds", b.getArrayAttr(absAttrs)),
                                     b.getNamedAttr("input_magnitude",
                                                    b.getF64FloatAttr(inputMagnitude))}));
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
    c.setValueAttr(convertFloats(dense, cast<ShapedType>(c.getType())));
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
        op->setOperand(i, ConstantOp::create(builder, c.getLoc(), t,
                                             convertFloats(dense, cast<ShapedType>(t))));
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
