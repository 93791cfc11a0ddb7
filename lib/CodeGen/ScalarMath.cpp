//===- ScalarMath.cpp - One element of an elementwise op --------*- C++ -*-===//
//
// Fast math, explicitly: exp, exp2, log, pow, sigmoid and tanh use the SFU's
// ex2.approx.ftz / lg2.approx.ftz (max error ~2 ulp of f32), rsqrt uses
// rsqrt.approx.ftz, sigmoid, tanh and erf divide by a value of at least 1
// with rcp.approx.ftz (1 ulp); erf is the Abramowitz-Stegun 7.1.26
// polynomial (1.5e-7 absolute, Horner's steps fused); a division by a splat
// constant multiplies by its reciprocal (KernelEmitter::divide, 1.5 ulp);
// other divisions and sqrt are IEEE. Floats compute in f32; the caller
// rounds narrow results after every op, as the reference interpreter does.
// Integers compute in their own type, booleans in i1.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include <cmath>

using namespace mlir;

namespace fusec::codegen {

namespace {

const double kLog2e = 1.4426950408889634, kLn2 = 0.6931471805599453;

Value ex2(Emitter &e, Value x) { return ptxUnaryF32(e, "ex2.approx.ftz.f32", x); }
Value lg2(Emitter &e, Value x) { return ptxUnaryF32(e, "lg2.approx.ftz.f32", x); }

absl::StatusOr<Value> castOp(Emitter &e, CastOp c, Value in, const ElemTypes &rt) {
  ElemTypes from = *elemTypes(c.getInput().getType());
  if (from.isFloat && rt.isFloat)
    return in;
  if (from.isFloat && rt.isBool())
    return e.fcmp(LLVM::FCmpPredicate::une, in, e.f32c(0));
  if (from.isFloat)
    return e.fptosiSat(rt.compute, in);
  if (rt.isFloat)
    return from.isBool() ? e.uitofp(e.f32, in) : e.sitofp(e.f32, in);
  if (from.compute == rt.compute)
    return in;
  if (rt.isBool())
    return e.icmp(LLVM::ICmpPredicate::ne, in, e.intc(from.compute, 0));
  if (from.isBool())
    return e.zext(rt.compute, in);
  if (from.bytes < rt.bytes)
    return e.sext(rt.compute, in);
  return e.trunc(rt.compute, in);
}

/// x^y on integers, exact and wrapping like the interpreter: square and
/// multiply over every bit of y; a negative y truncates 1/x^-y toward zero.
Value integerPow(Emitter &e, Value x, Value y, Type t) {
  unsigned bits = t.getIntOrFloatBitWidth();
  Value one = e.intc(t, 1), zero = e.intc(t, 0);
  Value r = one, p = x;
  for (unsigned i = 0; i + 1 < bits; ++i) {
    Value bit = e.icmp(LLVM::ICmpPredicate::ne, e.band(e.lshr(y, e.intc(t, i)), one), zero);
    r = e.select(bit, e.mul(r, p), r);
    p = e.mul(p, p);
  }
  // y < 0: 1 for x = 1, +-1 for x = -1 (by y's parity), else 0.
  Value odd = e.icmp(LLVM::ICmpPredicate::ne, e.band(y, one), zero);
  Value negOne = e.intc(t, -1);
  Value inv = e.select(e.icmp(LLVM::ICmpPredicate::eq, x, one), one,
                       e.select(e.icmp(LLVM::ICmpPredicate::eq, x, negOne),
                                e.select(odd, negOne, one), zero));
  return e.select(e.icmp(LLVM::ICmpPredicate::slt, y, zero), inv, r);
}

/// powf: 2^(y log2|x|), then the sign rules for x < 0 (an integer y keeps
/// the value, negated when odd; any other y is NaN) and x^0 = 1.
Value floatPow(Emitter &e, Value x, Value y) {
  using FP = LLVM::FCmpPredicate;
  Value r = ex2(e, e.fmul(y, lg2(e, e.fabs(x))));
  Value fy = e.floor(y);
  Value yInt = e.fcmp(FP::oeq, fy, y);
  Value half = e.fmul(y, e.f32c(0.5));
  Value yOdd = e.fcmp(FP::une, e.floor(half), half);
  Value negBase = e.select(yInt, e.select(yOdd, e.fneg(r), r), e.f32c(std::nan("")));
  r = e.select(e.fcmp(FP::olt, x, e.f32c(0)), negBase, r);
  return e.select(e.fcmp(FP::oeq, y, e.f32c(0)), e.f32c(1), r);
}

absl::StatusOr<Value> integerOp(Emitter &e, Operation *op, ArrayRef<Value> in, Type t) {
  if (isa<PowOp>(op)) return integerPow(e, in[0], in[1], t);
  if (isa<AddOp>(op)) return e.add(in[0], in[1]);
  if (isa<SubOp>(op)) return e.sub(in[0], in[1]);
  if (isa<MulOp>(op)) return e.mul(in[0], in[1]);
  if (isa<DivOp>(op)) return e.sdiv(in[0], in[1]);
  if (isa<MaxOp>(op)) return e.smax(in[0], in[1]);
  if (isa<MinOp>(op)) return e.smin(in[0], in[1]);
  if (isa<AndOp>(op)) return e.band(in[0], in[1]);
  if (isa<OrOp>(op)) return e.bor(in[0], in[1]);
  if (isa<NotOp>(op)) return e.bxor(in[0], e.boolc(true));
  if (isa<NegOp>(op)) return e.sub(e.intc(t, 0), in[0]);
  if (isa<AbsOp>(op)) return e.iabs(in[0]);
  return unimplemented(op, "this integer op is not generated yet");
}

} // namespace

absl::StatusOr<Value> emitScalarOp(Emitter &e, Operation *op, ArrayRef<Value> in,
                                   const ElemTypes &rt,
                                   function_ref<Value(Value, Value)> divide) {
  if (auto c = dyn_cast<CastOp>(op))
    return castOp(e, c, in[0], rt);
  if (auto cmp = dyn_cast<CompareOp>(op)) {
    using FP = LLVM::FCmpPredicate;
    using IP = LLVM::ICmpPredicate;
    static const FP fp[] = {FP::oeq, FP::une, FP::olt, FP::ole, FP::ogt, FP::oge};
    static const IP ip[] = {IP::eq, IP::ne, IP::slt, IP::sle, IP::sgt, IP::sge};
    int k = static_cast<int>(cmp.getPredicate());
    return elemTypes(cmp.getLhs().getType())->isFloat ? e.fcmp(fp[k], in[0], in[1])
                                                      : e.icmp(ip[k], in[0], in[1]);
  }
  if (isa<SelectOp>(op))
    return e.select(in[0], in[1], in[2]);
  if (!rt.isFloat)
    return integerOp(e, op, in, rt.compute);
  if (isa<AddOp>(op))
    return e.fadd(in[0], in[1]);
  if (isa<SubOp>(op))
    return e.fsub(in[0], in[1]);
  if (isa<MulOp>(op))
    return e.fmul(in[0], in[1]);
  if (isa<DivOp>(op))
    return divide(in[0], in[1]);
  if (isa<MaxOp>(op))
    return e.fmaximum(in[0], in[1]);
  if (isa<MinOp>(op))
    return e.fminimum(in[0], in[1]);
  if (isa<PowOp>(op))
    return floatPow(e, in[0], in[1]);
  if (isa<NegOp>(op))
    return e.fneg(in[0]);
  if (isa<AbsOp>(op))
    return e.fabs(in[0]);
  if (isa<FloorOp>(op))
    return e.floor(in[0]);
  if (isa<CeilOp>(op))
    return e.ceil(in[0]);
  if (isa<RoundOp>(op))
    return e.roundEven(in[0]);
  if (isa<SqrtOp>(op))
    return e.sqrt(in[0]);
  if (isa<RsqrtOp>(op))
    return ptxUnaryF32(e, "rsqrt.approx.ftz.f32", in[0]);
  if (isa<SinOp, CosOp>(op)) {
    // x - k·2pi, k = round(x / 2pi): 2pi = C1 + C2 with C1 = 6.28125 (8
    // significant bits, so k·C1 is exact for |k| < 2^16), then the SFU on
    // [-pi, pi].
    Value k = e.floor(e.fadd(e.fmul(in[0], e.f32c(0.15915494309189535)), e.f32c(0.5)));
    Value r = e.fsub(e.fsub(in[0], e.fmul(k, e.f32c(6.28125))),
                     e.fmul(k, e.f32c(0.0019353071795864769)));
    return ptxUnaryF32(e, isa<SinOp>(op) ? "sin.approx.ftz.f32" : "cos.approx.ftz.f32", r);
  }
  if (isa<ExpOp>(op))
    return ex2(e, e.fmul(in[0], e.f32c(kLog2e)));
  if (isa<Exp2Op>(op))
    return ex2(e, in[0]);
  if (isa<LogOp>(op))
    return e.fmul(lg2(e, in[0]), e.f32c(kLn2));
  if (isa<SigmoidOp>(op)) {
    // 1 / (1 + e^-x): the divisor is at least 1 (or inf), where the SFU's
    // reciprocal is within 1 ulp (an IEEE division costs ~10 instructions
    // more, which matmul epilogues feel).
    Value x = ex2(e, e.fmul(in[0], e.f32c(-kLog2e)));
    return NVVM::RcpApproxFtzF32Op::create(e.b, e.f32, e.fadd(e.f32c(1), x));
  }
  if (isa<TanhOp>(op)) {
    // 1 - 2 / (e^{2x} + 1): exact limits, absolute error ~1e-7 near 0.
    Value x = ex2(e, e.fmul(in[0], e.f32c(2 * kLog2e)));
    Value r = NVVM::RcpApproxFtzF32Op::create(e.b, e.f32, e.fadd(x, e.f32c(1)));
    return e.fsub(e.f32c(1), e.fmul(e.f32c(2), r));
  }
  if (isa<ErfOp>(op)) {
    // Abramowitz & Stegun 7.1.26.
    Value ax = e.fabs(in[0]);
    Value t = NVVM::RcpApproxFtzF32Op::create(
        e.b, e.f32, e.fadd(e.f32c(1), e.fmul(e.f32c(0.3275911), ax)));
    const double a[] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
    // Horner's steps as fused multiply-adds (one rounding each, half the
    // instructions of a multiply and an add).
    Value p = e.f32c(a[4]);
    for (int i = 3; i >= 0; --i)
      p = e.fma(p, t, e.f32c(a[i]));
    p = e.fmul(p, t);
    Value x = ex2(e, e.fmul(e.fmul(ax, ax), e.f32c(-kLog2e)));
    Value y = e.fma(e.fneg(p), x, e.f32c(1));
    Value neg = e.fcmp(LLVM::FCmpPredicate::olt, in[0], e.f32c(0));
    return e.select(neg, e.fneg(y), y);
  }
  if (isa<SignOp>(op)) {
    Value pos = e.fcmp(LLVM::FCmpPredicate::ogt, in[0], e.f32c(0));
    Value neg = e.fcmp(LLVM::FCmpPredicate::olt, in[0], e.f32c(0));
    Value m = e.select(neg, e.f32c(-1), in[0]);
    return e.select(pos, e.f32c(1), m);
  }
  return unimplemented(op, "this op is not generated yet");
}

} // namespace fusec::codegen
