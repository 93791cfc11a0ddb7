//===- Reductions.cpp - Combining partial reductions ------------*- C++ -*-===//
//
// The pieces every reducing strategy shares: identities and combines of
// sum/mean/max/min (f32, f64, and signed i32/i64: sums wrap), the warp butterfly (shfl.sync bfly), and the two pairs
// of reductions one pass computes together:
// - online softmax: a running max and the sum of exp(x - max), the sum
//   rescaled by exp(old - new) when the max rises;
// - Welford: count, mean and the sum of squared deviations, combined across
//   lanes with Chan's formula.
// exp(a - b) is exactly 1 when a == b, so -inf - -inf is no NaN.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;

namespace fusec::codegen {

namespace {

const double kLog2e = 1.4426950408889634;

Value expDiff(Emitter &e, Value a, Value b) {
  Value ex = ptxUnaryF32(e, "ex2.approx.ftz.f32", e.fmul(e.fsub(a, b), e.f32c(kLog2e)));
  return e.select(e.fcmp(LLVM::FCmpPredicate::oeq, a, b), e.f32c(1), ex);
}

/// x - broadcast(r) in f32: the value whose row reduction `r` feeds; null
/// otherwise.
Value subOfRow(Value v, ReduceOp r) {
  auto sub = v.getDefiningOp<SubOp>();
  if (!sub || !getElementTypeOrSelf(sub.getType()).isF32())
    return {};
  auto b = sub.getRhs().getDefiningOp<BroadcastOp>();
  if (!b || b.getInput() != r.getResult())
    return {};
  return sub.getLhs();
}

} // namespace

Type reductionAccType(Emitter &e, ReduceOp r) {
  Type t = getElementTypeOrSelf(r.getType());
  return isa<FloatType>(t) ? e.f32 : t;
}

Value reductionIdentity(Emitter &e, ReduceKind kind, Type type) {
  if (auto it = dyn_cast<IntegerType>(type)) {
    unsigned w = it.getWidth();
    if (kind == ReduceKind::max)
      return e.intc(type, w == 64 ? INT64_MIN : -(int64_t{1} << (w - 1)));
    if (kind == ReduceKind::min)
      return e.intc(type, w == 64 ? INT64_MAX : (int64_t{1} << (w - 1)) - 1);
    return e.intc(type, 0);
  }
  if (kind == ReduceKind::max)
    return e.f32Inf(/*negative=*/true);
  if (kind == ReduceKind::min)
    return e.f32Inf(/*negative=*/false);
  return type == e.f64 ? e.f64c(0) : e.f32c(0);
}

Value reductionCombine(Emitter &e, ReduceKind kind, Value a, Value b) {
  if (isa<IntegerType>(a.getType())) {
    if (kind == ReduceKind::max)
      return e.smax(a, b);
    if (kind == ReduceKind::min)
      return e.smin(a, b);
    return e.add(a, b);
  }
  if (kind == ReduceKind::max)
    return e.fmaximum(a, b);
  if (kind == ReduceKind::min)
    return e.fminimum(a, b);
  return e.fadd(a, b);
}

Value warpReduce(Emitter &e, ReduceKind kind, Value v, int width) {
  for (int offset = width / 2; offset >= 1; offset /= 2)
    v = reductionCombine(e, kind, v, e.shflBfly(v, offset));
  return v;
}

PairKind pairKind(ReduceOp a, ReduceOp b) {
  if (!getElementTypeOrSelf(a.getType()).isF32() || !getElementTypeOrSelf(b.getType()).isF32())
    return PairKind::None;
  if (a.getKind() == ReduceKind::max && b.getKind() == ReduceKind::sum)
    if (auto x = b.getInput().getDefiningOp<ExpOp>())
      if (getElementTypeOrSelf(x.getType()).isF32() &&
          subOfRow(x->getOperand(0), a) == a.getInput())
        return PairKind::OnlineSoftmax;
  if (a.getKind() == ReduceKind::mean && b.getKind() == ReduceKind::mean)
    if (auto m = b.getInput().getDefiningOp<MulOp>())
      if (getElementTypeOrSelf(m.getType()).isF32() && m.getLhs() == m.getRhs() &&
          subOfRow(m.getLhs(), a) == a.getInput())
        return PairKind::Welford;
  return PairKind::None;
}

void reductionsRead(Value v, function_ref<void(ReduceOp)> fn) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || !seen.insert(op).second)
      continue;
    if (auto r = dyn_cast<ReduceOp>(op)) {
      fn(r);
      continue;
    }
    work.append(op->getOperands().begin(), op->getOperands().end());
  }
}

SmallVector<SmallVector<PassUnit>> rowStreamPasses(ArrayRef<ReduceOp> reductions) {
  llvm::DenseMap<Operation *, unsigned> index;
  for (auto [i, r] : llvm::enumerate(reductions))
    index[r] = static_cast<unsigned>(i);
  // The reductions whose results `r`'s input reads (through the body).
  auto dependsOn = [&](ReduceOp r) {
    llvm::SmallVector<unsigned> out;
    reductionsRead(r.getInput(), [&](ReduceOp d) {
      if (auto it = index.find(d); it != index.end())
        out.push_back(it->second);
    });
    return out;
  };
  SmallVector<SmallVector<PassUnit>> passes;
  llvm::SmallVector<int> passOf(reductions.size(), -1);
  for (unsigned k = 0; k < reductions.size(); ++k) {
    PassUnit u{k, k + 1 < reductions.size() ? pairKind(reductions[k], reductions[k + 1])
                                            : PairKind::None};
    unsigned last = u.pair == PairKind::None ? k : k + 1;
    int level = 0;
    for (unsigned m = k; m <= last; ++m)
      for (unsigned d : dependsOn(reductions[m]))
        if (d < k || d > last)
          // A later reduction (not in walk order) puts this one after it
          // in a pass of its own.
          level = std::max(level, d < k ? passOf[d] + 1 : static_cast<int>(passes.size()));
    if (level >= static_cast<int>(passes.size()))
      passes.resize(level + 1);
    passes[level].push_back(u);
    for (unsigned m = k; m <= last; ++m)
      passOf[m] = level;
    k = last;
  }
  return passes;
}

SmallVector<Value> pairInit(Emitter &e, PairKind kind) {
  if (kind == PairKind::OnlineSoftmax)
    return {e.f32Inf(/*negative=*/true), e.f32c(0)};
  return {e.f32c(0), e.f32c(0), e.f32c(0)};
}

SmallVector<Value> pairUpdate(Emitter &e, PairKind kind, ArrayRef<Value> st, Value x) {
  if (kind == PairKind::OnlineSoftmax) {
    // One exp an element: exp(lower - higher) of the old max and x. A new
    // max rescales the sum by it and adds exp(0) = 1; otherwise it is x's
    // term (an SFU op an element, not two: a bf16 row streams at HBM speed
    // faster than two exps an element issue).
    Value m = e.fmaximum(st[0], x);
    Value t = expDiff(e, e.fminimum(st[0], x), m);
    Value rises = e.fcmp(LLVM::FCmpPredicate::ogt, x, st[0]);
    Value sum = e.select(rises, e.fadd(e.fmul(st[1], t), e.f32c(1)), e.fadd(st[1], t));
    return {m, sum};
  }
  Value n = e.fadd(st[0], e.f32c(1));
  Value d = e.fsub(x, st[1]);
  Value mean = e.fadd(st[1], e.fdiv(d, n));
  Value m2 = e.fadd(st[2], e.fmul(d, e.fsub(x, mean)));
  return {n, mean, m2};
}

SmallVector<Value> pairCombine(Emitter &e, PairKind kind, ArrayRef<Value> p, ArrayRef<Value> q) {
  if (kind == PairKind::OnlineSoftmax) {
    Value m = e.fmaximum(p[0], q[0]);
    Value sum = e.fadd(e.fmul(p[1], expDiff(e, p[0], m)), e.fmul(q[1], expDiff(e, q[0], m)));
    return {m, sum};
  }
  Value n = e.fadd(p[0], q[0]);
  Value empty = e.fcmp(LLVM::FCmpPredicate::oeq, n, e.f32c(0));
  Value safeN = e.select(empty, e.f32c(1), n);
  Value d = e.fsub(q[1], p[1]);
  Value mean = e.fadd(p[1], e.fmul(d, e.fdiv(q[0], safeN)));
  Value m2 = e.fadd(e.fadd(p[2], q[2]), e.fmul(e.fmul(d, d), e.fdiv(e.fmul(p[0], q[0]), safeN)));
  return {n, e.select(empty, e.f32c(0), mean), e.select(empty, e.f32c(0), m2)};
}

} // namespace fusec::codegen
