//===- OnnxOps.cpp - One small importer per ONNX op type --------*- C++ -*-===//
//
// Each function reads one node through the Importer's building blocks
// (OnnxImporter.h) and defines its outputs. None folds: a node whose inputs
// are all known is evaluated by the reference interpreter in one place
// (Importer::foldNode). `opImporters()` at the end is the table.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

namespace fusec::onnximport {

namespace {

using onnx::Attribute;

#define TRY FUSEC_TRY_ASSIGN

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    // Wrapping (unsigned): a tensor with an empty dim may have others whose
    // product passes int64; it has no element to index.
    s[i] = static_cast<int64_t>(static_cast<uint64_t>(s[i + 1]) *
                                static_cast<uint64_t>(shape[i + 1]));
  return s;
}

int64_t dot(const std::vector<int64_t> &c, const std::vector<int64_t> &strides) {
  int64_t f = 0;
  for (size_t i = 0; i < c.size(); ++i)
    f += c[i] * strides[i];
  return f;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <const char *Name> absl::Status unaryOp(Importer &I) {
  TRY(x, I.input(0));
  return I.define(0, I.unary(Name, x));
}

template <const char *Name> absl::Status binaryOp(Importer &I) {
  TRY(a, I.input(0));
  TRY(b, I.input(1));
  TRY(r, I.binary(Name, a, b));
  return I.define(0, r);
}

template <const char *Pred> absl::Status compareOp(Importer &I) {
  TRY(a, I.input(0));
  TRY(b, I.input(1));
  TRY(r, I.compareBroadcast(Pred, a, b));
  return I.define(0, r);
}

constexpr char kNeg[] = "neg", kAbs[] = "abs", kFloor[] = "floor", kCeil[] = "ceil", kRound[] = "round",
               kSqrt[] = "sqrt", kExp[] = "exp", kLog[] = "log", kTanh[] = "tanh", kErf[] = "erf",
               kSigmoid[] = "sigmoid", kSign[] = "sign", kNot[] = "not", kSin[] = "sin",
               kCos[] = "cos";
constexpr char kAdd[] = "add", kSub[] = "sub", kMul[] = "mul", kDiv[] = "div", kAnd[] = "and",
               kOr[] = "or";
constexpr char kEq[] = "eq", kGt[] = "gt", kGe[] = "ge", kLt[] = "lt", kLe[] = "le";

/// a != b on booleans (compare and select take numbers only):
/// (a or b) and not (a and b).
absl::StatusOr<Val> logicalXor(Importer &I, Val a, Val b) {
  TRY(either, I.binary("or", a, b));
  TRY(both, I.binary("and", a, b));
  return I.binary("and", either, I.unary("not", both));
}

absl::Status importTan(Importer &I) {
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.invalid("expects a float input");
  TRY(r, I.binary("div", I.unary("sin", x), I.unary("cos", x)));
  return I.define(0, r);
}

/// Det: the determinant of each [M, M] matrix of `x` ([..., M, M]), up to
/// 4 x 4, as the sum over the permutations of M (Leibniz): the elements are
/// slices of `x`, every term elementwise, so it fuses into one kernel.
/// Larger matrices would want a pivoted LU, which fusec has no op for.
absl::Status importDet(Importer &I) {
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.invalid(absl::StrCat("expects a float input, not ", I.ty(x)));
  size_t rank = x.shape.size();
  if (rank < 2 || x.shape[rank - 1] != x.shape[rank - 2])
    return I.invalid(absl::StrCat("expects [..., M, M], not ", I.ty(x)));
  int64_t m = x.shape[rank - 1];
  if (m < 1 || m > 4)
    return I.unsupported(absl::StrCat("Det of ", m, " x ", m,
                                      " matrices (up to 4 x 4 are supported)"));
  std::vector<int64_t> batch(x.shape.begin(), x.shape.end() - 2);
  auto element = [&](int64_t i, int64_t j) {
    std::vector<int64_t> offsets(rank, 0), strides(rank, 1), shape = x.shape;
    offsets[rank - 2] = i;
    offsets[rank - 1] = j;
    shape[rank - 2] = shape[rank - 1] = 1;
    return I.reshape(I.slice(x, offsets, strides, shape), batch);
  };
  std::vector<int64_t> perm(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i)
    perm[static_cast<size_t>(i)] = i;
  std::optional<Val> total;
  do {
    // The permutation's sign: the parity of its inversions.
    int64_t inversions = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = i + 1; j < m; ++j)
        inversions += perm[static_cast<size_t>(i)] > perm[static_cast<size_t>(j)];
    Val term = element(0, perm[0]);
    for (int64_t i = 1; i < m; ++i) {
      TRY(next, I.binary("mul", term, element(i, perm[static_cast<size_t>(i)])));
      term = next;
    }
    if (!total) {
      total = inversions % 2 ? I.unary("neg", term) : term;
    } else {
      TRY(sum, I.binary(inversions % 2 ? "sub" : "add", *total, term));
      total = sum;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return I.define(0, *total);
}

/// atan of every element of float `x`: |x| past 1 through pi/2 - atan(1/|x|)
/// (infinities give pi/2), then one half-angle step, atan(r) = 2 atan(r /
/// (1 + sqrt(1 + r^2))), which leaves |u| <= tan(pi/8), where the odd
/// series to u^17 is within 3e-9; the sign restored last.
absl::StatusOr<Val> atanOf(Importer &I, Val x) {
  auto c = [&](double v) { return I.broadcastTo(I.constant(x.dtype, v), x.shape); };
  Val a = I.unary("abs", x);
  Val big = I.compare("gt", a, c(1.0));
  TRY(inv, I.binary("div", c(1.0), a));
  TRY(r, I.select(big, inv, a));
  TRY(r2, I.binary("mul", r, r));
  TRY(r2p1, I.binary("add", r2, c(1.0)));
  TRY(den, I.binary("add", I.unary("sqrt", r2p1), c(1.0)));
  TRY(u, I.binary("div", r, den));
  TRY(u2, I.binary("mul", u, u));
  // Horner in u^2: u (1 - u^2/3 + u^4/5 - ... + u^16/17).
  Val p = c(1.0 / 17.0);
  for (int k = 15; k >= 1; k -= 2) {
    TRY(m, I.binary("mul", p, u2));
    TRY(next, I.binary("add", m, c((k % 4 == 1 ? 1.0 : -1.0) / k)));
    p = next;
  }
  TRY(series, I.binary("mul", p, u));
  TRY(twice, I.binary("mul", series, c(2.0)));
  TRY(comp, I.binary("sub", c(1.5707963267948966), twice));
  TRY(mag, I.select(big, comp, twice));
  return I.binary("mul", mag, I.unary("sign", x));
}

/// The inverse and hyperbolic trigonometric functions, written with exp,
/// log, sqrt and atanOf: sinh (e^x - e^-x) / 2, cosh (e^x + e^-x) / 2,
/// asinh sign(x) log(|x| + sqrt(x^2 + 1)), acosh log(x + sqrt(x^2 - 1)),
/// atanh log((1 + x) / (1 - x)) / 2, atan, asin atan(x / sqrt(1 - x^2)),
/// acos pi/2 - asin.
absl::Status importTrig(Importer &I) {
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.invalid(absl::StrCat("x is ", I.ty(x), ", expected floats"));
  const std::string &op = I.node->opType;
  auto c = [&](double v) { return I.broadcastTo(I.constant(x.dtype, v), x.shape); };
  if (op == "Sinh" || op == "Cosh") {
    Val e = I.unary("exp", x), en = I.unary("exp", I.unary("neg", x));
    TRY(t, I.binary(op == "Sinh" ? "sub" : "add", e, en));
    TRY(r, I.binary("mul", t, c(0.5)));
    return I.define(0, r);
  }
  if (op == "Asinh" || op == "Acosh") {
    Val a = op == "Asinh" ? I.unary("abs", x) : x;
    TRY(x2, I.binary("mul", x, x));
    TRY(in, I.binary(op == "Asinh" ? "add" : "sub", x2, c(1.0)));
    TRY(sum, I.binary("add", a, I.unary("sqrt", in)));
    Val l = I.unary("log", sum);
    if (op == "Acosh")
      return I.define(0, l);
    TRY(r, I.binary("mul", l, I.unary("sign", x)));
    return I.define(0, r);
  }
  if (op == "Atanh") {
    TRY(num, I.binary("add", c(1.0), x));
    TRY(den, I.binary("sub", c(1.0), x));
    TRY(q, I.binary("div", num, den));
    TRY(r, I.binary("mul", I.unary("log", q), c(0.5)));
    return I.define(0, r);
  }
  if (op == "Atan") {
    TRY(r, atanOf(I, x));
    return I.define(0, r);
  }
  // Asin, Acos.
  TRY(x2, I.binary("mul", x, x));
  TRY(in, I.binary("sub", c(1.0), x2));
  TRY(q, I.binary("div", x, I.unary("sqrt", in)));
  TRY(asin, atanOf(I, q));
  if (op == "Asin")
    return I.define(0, asin);
  TRY(r, I.binary("sub", c(1.5707963267948966), asin));
  return I.define(0, r);
}

/// Shrink: x - bias where x > lambd, x + bias where x < -lambd, else 0.
absl::Status importShrink(Importer &I) {
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.unsupported(absl::StrCat("Shrink of ", I.ty(x), " (floats are supported)"));
  auto c = [&](double v) { return I.broadcastTo(I.constant(x.dtype, v), x.shape); };
  double lambd = I.attrFloat("lambd", 0.5f), bias = I.attrFloat("bias", 0.0f);
  TRY(down, I.binary("sub", x, c(bias)));
  TRY(up, I.binary("add", x, c(bias)));
  TRY(low, I.select(I.compare("lt", x, c(-lambd)), up, c(0.0)));
  TRY(y, I.select(I.compare("gt", x, c(lambd)), down, low));
  return I.define(0, y);
}

/// BitShift of unsigned 8-, 16- or 32-bit integers (held in i32, i32 and
/// i64): (x mod 2^(bits - y)) * 2^y (the bits shifted past the type
/// dropped first, so no product leaves i64) or floor(x / 2^y); a shift of
/// the type's width or more gives 0.
absl::Status importBitShift(Importer &I) {
  TRY(x, I.input(0));
  TRY(y, I.input(1));
  std::optional<int32_t> t = I.narrowType(I.node->inputs[0]);
  bool held = t && ((*t == onnx::kUint8 || *t == onnx::kUint16) ? x.dtype == DType::I32
                    : *t == onnx::kUint32                        ? x.dtype == DType::I64
                                                                 : false);
  if (!held)
    return I.unsupported("BitShift of other than uint8, uint16 or uint32");
  std::string dir = I.attrString("direction").value_or("");
  if (dir != "LEFT" && dir != "RIGHT")
    return I.invalid(absl::StrCat("direction '", dir, "' is not LEFT or RIGHT"));
  int64_t bits = *t == onnx::kUint8 ? 8 : *t == onnx::kUint16 ? 16 : 32;
  TRY(shape, broadcastShapes(x.shape, y.shape));
  Val xs = I.broadcastTo(I.cast(x, DType::I64), shape);
  Val ys = I.broadcastTo(I.cast(y, DType::I64), shape);
  auto c = [&](int64_t v) { return I.broadcastTo(I.intConstant(DType::I64, v), shape); };
  // 2^min(y, bits): past the width the result is 0 either way.
  TRY(capped, I.binary("min", ys, c(bits)));
  TRY(p, I.binary("pow", c(2), capped));
  Val r;
  if (dir == "LEFT") {
    // The bits that stay: x mod 2^(bits - y), then shifted.
    TRY(room, I.binary("sub", c(bits), capped));
    TRY(keep, I.binary("pow", c(2), room));
    TRY(q, I.binary("div", xs, keep));
    TRY(hi, I.binary("mul", q, keep));
    TRY(low, I.binary("sub", xs, hi));
    TRY(m, I.binary("mul", low, p));
    r = m;
  } else {
    TRY(q, I.binary("div", xs, p));
    r = q;
  }
  return I.define(0, I.cast(r, x.dtype));
}

absl::Status importXor(Importer &I) {
  TRY(a, I.input(0));
  TRY(b, I.input(1));
  TRY(r, logicalXor(I, a, b));
  return I.define(0, r);
}

absl::Status importVariadic(Importer &I) {
  const std::string &op = I.node->opType;
  if (I.numInputs() == 0)
    return I.invalid("no inputs");
  TRY(acc, I.input(0));
  const char *f = op == "Max" ? "max" : op == "Min" ? "min" : "add";
  for (size_t i = 1; i < I.numInputs(); ++i) {
    TRY(b, I.input(i));
    TRY(r, I.binary(f, acc, b));
    acc = r;
  }
  if (op == "Mean" && I.numInputs() > 1) {
    TRY(r, I.binary("div", acc, I.constant(acc.dtype, static_cast<double>(I.numInputs()))));
    acc = r;
  }
  return I.define(0, acc);
}

/// The value every element of a known tensor has, if they all agree.
std::optional<double> knownSplat(const Val &v) {
  if (v.splatOf)
    return v.splatOf->get(0);
  if (!v.known || v.known->numElements() == 0)
    return std::nullopt;
  double first = v.known->get(0);
  for (int64_t i = 1; i < v.known->numElements(); ++i)
    if (v.known->get(i) != first)
      return std::nullopt;
  return first;
}

absl::Status importPow(Importer &I) {
  TRY(a, I.input(0));
  TRY(b, I.input(1));
  // Exporters write x*x as Pow(x, 2) (variances, RMSNorm): small known
  // exponents become multiplies, square roots and reciprocals, which is
  // what the frameworks compute (and cheaper than 2^(y log2 x)).
  std::optional<double> k = knownSplat(b);
  if (k && isFloat(a.dtype) && !a.known) {
    TRY(shape, broadcastShapes(a.shape, b.shape));
    Val x = I.broadcastTo(a, shape);
    if (*k == 1)
      return I.define(0, x);
    if (*k == 2 || *k == 3) {
      TRY(sq, I.binary("mul", x, x));
      if (*k == 2)
        return I.define(0, sq);
      TRY(cube, I.binary("mul", sq, x));
      return I.define(0, cube);
    }
    if (*k == 0.5)
      return I.define(0, I.unary("sqrt", x));
    if (*k == -0.5)
      return I.define(0, I.unary("rsqrt", x));
    if (*k == -1) {
      TRY(r, I.binary("div", I.constant(x.dtype, 1), x));
      return I.define(0, r);
    }
  }
  TRY(r, I.binary("pow", a, I.cast(b, a.dtype)));
  return I.define(0, r);
}

absl::Status importReciprocal(Importer &I) {
  TRY(x, I.input(0));
  TRY(r, I.binary("div", I.constant(x.dtype, 1), x));
  return I.define(0, r);
}

absl::Status importRelu(Importer &I) {
  TRY(x, I.input(0));
  TRY(r, I.binary("max", x, I.constant(x.dtype, 0)));
  return I.define(0, r);
}

absl::Status importEluFamily(Importer &I) {
  const std::string &op = I.node->opType;
  TRY(x, I.input(0));
  double alpha = I.attrFloat("alpha", op == "LeakyRelu" ? 0.01f
                                      : op == "Elu"     ? 1.0f
                                                        : 1.67326319217681884765625f);
  Val zero = I.broadcastTo(I.constant(x.dtype, 0), x.shape);
  Val neg = I.compare(op == "Selu" ? "le" : "lt", x, zero);
  Val negPart;
  if (op == "LeakyRelu") {
    TRY(r, I.binary("mul", x, I.constant(x.dtype, alpha)));
    negPart = r;
  } else {
    TRY(e, I.binary("sub", I.unary("exp", x), I.constant(x.dtype, 1)));
    TRY(r, I.binary("mul", e, I.constant(x.dtype, alpha)));
    negPart = r;
  }
  TRY(r, I.select(neg, negPart, x));
  if (op == "Selu") {
    TRY(g, I.binary("mul", r, I.constant(x.dtype, I.attrFloat("gamma", 1.05070102214813232421875f))));
    return I.define(0, g);
  }
  return I.define(0, r);
}

absl::Status importHardSigmoid(Importer &I) {
  TRY(x, I.input(0));
  TRY(a, I.binary("mul", x, I.constant(x.dtype, I.attrFloat("alpha", 0.2f))));
  TRY(b, I.binary("add", a, I.constant(x.dtype, I.attrFloat("beta", 0.5f))));
  TRY(c, I.binary("min", b, I.constant(x.dtype, 1)));
  TRY(d, I.binary("max", c, I.constant(x.dtype, 0)));
  return I.define(0, d);
}

absl::Status importSoftplus(Importer &I) {
  TRY(x, I.input(0));
  TRY(a, I.binary("add", I.unary("exp", x), I.constant(x.dtype, 1)));
  return I.define(0, I.unary("log", a));
}

absl::Status importSoftsign(Importer &I) {
  TRY(x, I.input(0));
  TRY(a, I.binary("add", I.unary("abs", x), I.constant(x.dtype, 1)));
  TRY(r, I.binary("div", x, a));
  return I.define(0, r);
}

absl::Status importActivations(Importer &I) {
  const std::string &op = I.node->opType;
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.invalid("expects a float input");
  Val zero = I.broadcastTo(I.constant(x.dtype, 0), x.shape);
  if (op == "HardSwish") { // x * max(0, min(1, x / 6 + 0.5))
    TRY(a, I.binary("mul", x, I.constant(x.dtype, 1.0 / 6.0)));
    TRY(b, I.binary("add", a, I.constant(x.dtype, 0.5)));
    TRY(c, I.binary("min", b, I.constant(x.dtype, 1)));
    TRY(d, I.binary("max", c, I.constant(x.dtype, 0)));
    TRY(r, I.binary("mul", x, d));
    return I.define(0, r);
  }
  if (op == "Mish") { // x * tanh(log(1 + exp(x)))
    TRY(a, I.binary("add", I.unary("exp", x), I.constant(x.dtype, 1)));
    TRY(r, I.binary("mul", x, I.unary("tanh", I.unary("log", a))));
    return I.define(0, r);
  }
  if (op == "ThresholdedRelu") {
    Val gt = I.compare("gt", x, I.broadcastTo(I.constant(x.dtype, I.attrFloat("alpha", 1)), x.shape));
    TRY(r, I.select(gt, x, zero));
    return I.define(0, r);
  }
  // Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  double alpha = I.attrFloat("alpha", 1);
  TRY(xa, I.binary("div", x, I.constant(x.dtype, alpha)));
  TRY(e, I.binary("sub", I.unary("exp", xa), I.constant(x.dtype, 1)));
  TRY(ea, I.binary("mul", e, I.constant(x.dtype, alpha)));
  TRY(lo, I.binary("min", ea, I.constant(x.dtype, 0)));
  TRY(hi, I.binary("max", x, I.constant(x.dtype, 0)));
  TRY(r, I.binary("add", hi, lo));
  return I.define(0, r);
}

absl::Status importPRelu(Importer &I) {
  TRY(x, I.input(0));
  TRY(slope, I.input(1));
  // Before opset 7 a slope of [C] applies per channel (dim 1), as PyTorch's
  // old exports write it, not numpy-broadcast along the last dim.
  if (I.opset < 7 && slope.shape.size() == 1 && x.shape.size() > 2 &&
      slope.shape[0] == x.shape[1] && slope.shape[0] != x.shape.back()) {
    std::vector<int64_t> perChannel(x.shape.size() - 1, 1);
    perChannel[0] = slope.shape[0];
    slope = I.reshape(slope, perChannel);
  }
  TRY(shape, broadcastShapes(x.shape, slope.shape));
  Val xb = I.broadcastTo(x, shape);
  TRY(neg, I.binary("mul", xb, slope));
  Val lt = I.compare("lt", xb, I.broadcastTo(I.constant(x.dtype, 0), shape));
  TRY(r, I.select(lt, neg, xb));
  return I.define(0, r);
}

absl::Status importClip(Importer &I) {
  TRY(x, I.input(0));
  Val r = x;
  std::optional<Val> lo, hi;
  if (I.opset < 11) {
    if (I.node->attr("min"))
      lo = I.constant(x.dtype, I.attrFloat("min", 0));
    if (I.node->attr("max"))
      hi = I.constant(x.dtype, I.attrFloat("max", 0));
  } else {
    if (I.hasInput(1)) {
      TRY(v, I.input(1));
      lo = v;
    }
    if (I.hasInput(2)) {
      TRY(v, I.input(2));
      hi = v;
    }
  }
  if (lo) {
    TRY(m, I.binary("max", r, *lo));
    r = m;
  }
  if (hi) {
    TRY(m, I.binary("min", r, *hi));
    r = m;
  }
  return I.define(0, r);
}

absl::Status importWhere(Importer &I) {
  TRY(c, I.input(0));
  TRY(a, I.input(1));
  TRY(b, I.input(2));
  TRY(r, I.select(c, a, b));
  return I.define(0, r);
}

absl::Status importCast(Importer &I) {
  TRY(x, I.input(0));
  TRY(to, dtypeFor(static_cast<int32_t>(I.attrInt("to", onnx::kFloat))));
  return I.define(0, I.cast(x, to));
}

absl::Status importCastLike(Importer &I) {
  TRY(x, I.input(0));
  TRY(like, I.input(1));
  return I.define(0, I.cast(x, like.dtype));
}

/// A QuantizeLinear or DequantizeLinear scale or zero point `v` seen
/// against x of `rank` dims: one value (a scalar), or one per position of
/// `axis` (shaped to broadcast along it).
absl::StatusOr<Val> quantParam(Importer &I, Val v, const std::vector<int64_t> &xShape,
                               const char *what) {
  if (v.elements() == 1 && v.shape.size() <= 1)
    return I.reshape(v, {});
  if (I.attrInt("block_size", 0) != 0)
    return I.unsupported("blocked quantization (block_size)");
  TRY(axis, I.axis(I.attrInt("axis", 1), xShape.size()));
  if (v.shape.size() != 1 || v.shape[0] != xShape[static_cast<size_t>(axis)])
    return I.invalid(absl::StrCat(what, " is ", I.ty(v), ", expected one value or one per ",
                                  "position of axis ", axis, " (", xShape[static_cast<size_t>(axis)],
                                  ")"));
  std::vector<int64_t> shape(xShape.size(), 1);
  shape[static_cast<size_t>(axis)] = v.shape[0];
  return I.reshape(v, shape);
}

/// DequantizeLinear: (x - x_zero_point) * x_scale, the difference in
/// integers, the product in f32, the result of the scale's type.
absl::Status importDequantizeLinear(Importer &I) {
  TRY(x, I.input(0));
  TRY(scale, I.input(1));
  if (x.dtype != DType::I32)
    return I.unsupported(absl::StrCat("DequantizeLinear of ", dtypeName(x.dtype),
                                      " (8-, 16- and 32-bit integers are supported)"));
  if (!isFloat(scale.dtype))
    return I.invalid(absl::StrCat("x_scale is ", I.ty(scale), ", expected floats"));
  TRY(s, quantParam(I, scale, x.shape, "x_scale"));
  Val d = x;
  if (I.hasInput(2)) {
    TRY(z, I.input(2));
    if (z.dtype != DType::I32)
      return I.invalid(absl::StrCat("x_zero_point is ", I.ty(z), ", expected x's type"));
    TRY(zp, quantParam(I, z, x.shape, "x_zero_point"));
    TRY(diff, I.binary("sub", x, zp));
    d = diff;
  }
  TRY(y, I.binary("mul", I.cast(d, DType::F32), I.cast(s, DType::F32)));
  return I.define(0, I.cast(y, scale.dtype));
}

/// QuantizeLinear: saturate(round(x / y_scale) + y_zero_point), rounding
/// halves to even, into the range of the output's 8- or 16-bit type (held
/// in i32), computed in f32.
absl::Status importQuantizeLinear(Importer &I) {
  TRY(x, I.input(0));
  TRY(scale, I.input(1));
  if (!isFloat(x.dtype) && x.dtype != DType::I32)
    return I.invalid(absl::StrCat("x is ", I.ty(x), ", expected floats or int32"));
  if (!isFloat(scale.dtype))
    return I.invalid(absl::StrCat("y_scale is ", I.ty(scale), ", expected floats"));
  TRY(s, quantParam(I, scale, x.shape, "y_scale"));
  TRY(q, I.binary("div", I.cast(x, DType::F32), I.cast(s, DType::F32)));
  TRY(y, quantizeRounded(I, q, 2, "y_zero_point"));
  return I.define(0, y);
}

absl::Status importIsNaN(Importer &I) {
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.invalid("expects a float input");
  return I.define(0, I.compare("ne", x, x)); // NaN alone differs from itself
}

absl::Status importIsInf(Importer &I) {
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.invalid("expects a float input");
  bool pos = I.attrInt("detect_positive", 1), neg = I.attrInt("detect_negative", 1);
  double inf = std::numeric_limits<double>::infinity();
  std::optional<Val> r;
  if (pos)
    r = I.compare("eq", x, I.broadcastTo(I.constant(x.dtype, inf), x.shape));
  if (neg) {
    Val n = I.compare("eq", x, I.broadcastTo(I.constant(x.dtype, -inf), x.shape));
    if (r) {
      TRY(o, I.binary("or", *r, n));
      r = o;
    } else {
      r = n;
    }
  }
  if (!r)
    r = I.broadcastTo(I.constant(DType::I1, 0), x.shape);
  return I.define(0, *r);
}

/// trunc(x) for floats: toward zero.
absl::StatusOr<Val> truncFloat(Importer &I, Val x) {
  Val lt = I.compare("lt", x, I.broadcastTo(I.constant(x.dtype, 0), x.shape));
  return I.select(lt, I.unary("ceil", x), I.unary("floor", x));
}

absl::Status importMod(Importer &I) {
  TRY(a, I.input(0));
  TRY(b, I.input(1));
  bool fmod = I.attrInt("fmod", 0);
  TRY(shape, broadcastShapes(a.shape, b.shape));
  a = I.broadcastTo(a, shape);
  b = I.broadcastTo(b, shape);
  if (isFloat(a.dtype)) {
    if (!fmod)
      return I.invalid("a float Mod needs fmod = 1");
    TRY(q, I.binary("div", a, b));
    TRY(t, truncFloat(I, q));
    TRY(p, I.binary("mul", t, b));
    TRY(r, I.binary("sub", a, p));
    return I.define(0, r);
  }
  // Integers: the remainder of truncated division, moved to the divisor's
  // sign unless fmod.
  TRY(q, I.binary("div", a, b));
  TRY(p, I.binary("mul", q, b));
  TRY(r, I.binary("sub", a, p));
  if (fmod)
    return I.define(0, r);
  Val zero = I.broadcastTo(I.intConstant(a.dtype, 0), shape);
  Val nonzero = I.compare("ne", r, zero);
  Val rneg = I.compare("lt", r, zero), bneg = I.compare("lt", b, zero);
  TRY(differ, logicalXor(I, rneg, bneg));
  TRY(fix, I.binary("and", nonzero, differ));
  TRY(rb, I.binary("add", r, b));
  TRY(out, I.select(fix, rb, r));
  return I.define(0, out);
}

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

absl::Status importIdentity(Importer &I) {
  const std::string &op = I.node->opType;
  if (op == "Dropout" && I.hasInput(2)) {
    // Training mode drops each element with probability `ratio` (0.5 when
    // absent): random, unless the ratio is 0, where nothing drops and the
    // scale 1 / (1 - ratio) is 1. Both must be known at import.
    auto mustKnow = [&](size_t i, const char *what) {
      return I.unsupported(absl::StrCat("Dropout's ", what, " (input #", i, " ('",
                                        I.node->inputs[i], "') must be known at import"));
    };
    TRY(mode, I.inputData(2));
    if (!mode.known || mode.known->numElements() != 1)
      return mustKnow(2, "training_mode");
    if (mode.known->get(0) != 0) {
      if (!I.hasInput(1))
        return I.unsupported("Dropout in training mode is not supported (inference only, or a "
                             "ratio of 0)");
      TRY(ratio, I.inputData(1));
      if (!ratio.known || ratio.known->numElements() != 1)
        return mustKnow(1, "ratio");
      if (ratio.known->get(0) != 0)
        return I.unsupported("Dropout in training mode is not supported (inference only, or a "
                             "ratio of 0)");
    }
  }
  TRY(x, I.input(0));
  if (op == "Dropout" && I.hasOutput(1))
    if (auto st = I.define(1, I.broadcastTo(I.constant(DType::I1, 1), x.shape)); !st.ok())
      return st; // at inference the mask keeps everything
  return I.define(0, x);
}

absl::Status importConstant(Importer &I) {
  const onnx::Node &n = *I.node;
  if (const Attribute *a = n.attr("value"); a && (a->has & Attribute::kT)) {
    TRY(h, decodeTensor(a->t, I.baseDir));
    return I.define(0, knownVal(std::move(h)));
  }
  if (const Attribute *a = n.attr("value_float"))
    return I.define(0, I.constant(DType::F32, a->f));
  if (const Attribute *a = n.attr("value_int"))
    return I.define(0, I.intConstant(DType::I64, a->i));
  if (const Attribute *a = n.attr("value_floats")) {
    HostTensor h(DType::F32, {static_cast<int64_t>(a->floats.size())});
    for (size_t i = 0; i < a->floats.size(); ++i)
      h.data[i] = a->floats[i];
    return I.define(0, knownVal(std::move(h)));
  }
  if (const Attribute *a = n.attr("value_ints")) {
    HostTensor h(DType::I64, {static_cast<int64_t>(a->ints.size())});
    h.ints = a->ints;
    return I.define(0, knownVal(std::move(h)));
  }
  return I.unsupported("only value, value_float(s) and value_int(s) constants are supported");
}

absl::Status importShape(Importer &I) {
  TRY(x, I.input(0));
  int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t start = I.attrInt("start", 0), end = I.attrInt("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  HostTensor h(DType::I64, {std::max<int64_t>(0, end - start)});
  for (int64_t i = start; i < end; ++i)
    h.ints[i - start] = x.shape[i];
  return I.define(0, knownVal(std::move(h)));
}

absl::Status importSize(Importer &I) {
  TRY(x, I.input(0));
  return I.define(0, I.intConstant(DType::I64, x.elements()));
}

absl::Status importConstantOfShape(Importer &I) {
  TRY(dims, I.knownInts(0));
  for (int64_t d : dims)
    if (d < 0)
      return I.invalid("a negative dim");
  HostTensor fill(DType::F32, {1});
  if (const Attribute *a = I.node->attr("value"); a && (a->has & Attribute::kT)) {
    TRY(h, decodeTensor(a->t, I.baseDir));
    if (h.numElements() != 1)
      return I.invalid("value must have one element");
    fill = h;
  }
  TRY(n, I.checkedElements(dims));
  (void)n;
  // A splat broadcast to the shape: known up to the folding cap, a splat
  // constant of the graph above it.
  HostTensor one(fill.dtype, {});
  one.copyElement(0, fill, 0);
  return I.define(0, I.broadcastTo(knownVal(std::move(one)), dims));
}

absl::Status importRange(Importer &I) {
  std::vector<Val> in;
  for (size_t i = 0; i < 3; ++i) {
    TRY(v, I.input(i));
    if (!v.known || v.elements() != 1)
      return I.unsupported(absl::StrCat("input #", i, " ('", I.node->inputs[i],
                                        "') must be known at import (a constant or a shape "
                                        "computation)"));
    in.push_back(v);
  }
  DType d = in[0].dtype;
  HostTensor h;
  if (isInteger(d)) {
    int64_t start = in[0].known->ints[0], limit = in[1].known->ints[0],
            delta = in[2].known->ints[0];
    if (delta == 0)
      return I.invalid("delta is 0");
    // In 128 bits: limit - start overflows int64 for extreme bounds.
    __int128 span = delta > 0 ? static_cast<__int128>(limit) - start + delta - 1
                              : static_cast<__int128>(start) - limit - delta - 1;
    __int128 count = span / (delta > 0 ? delta : -static_cast<__int128>(delta));
    if (count > Importer::kMaxFoldElements)
      return I.unsupported(absl::StrCat("a range of ", static_cast<double>(count),
                                        " elements: above the import-time folding cap of 2^26"));
    // An empty range's count is negative, down to -2^64: no conversion.
    int64_t n = count <= 0 ? 0 : static_cast<int64_t>(count);
    h = HostTensor(d, {n});
    // Every element lies between start and limit, but i * delta alone can
    // leave int64 (start -2^63, delta 2^40): the product in 128 bits.
    for (int64_t i = 0; i < n; ++i)
      h.ints[i] = static_cast<int64_t>(start + static_cast<__int128>(i) * delta);
  } else {
    double start = in[0].known->get(0), limit = in[1].known->get(0), delta = in[2].known->get(0);
    if (delta == 0)
      return I.invalid("delta is 0");
    double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(Importer::kMaxFoldElements)))
      return I.unsupported(absl::StrCat("a range of ", count,
                                        " elements: above the import-time folding cap of 2^26"));
    // count may be -inf (limit -inf): clamp before the conversion.
    int64_t n = static_cast<int64_t>(std::max(0.0, count));
    h = HostTensor(d, {n});
    for (int64_t i = 0; i < n; ++i)
      h.data[i] = start + static_cast<double>(i) * delta;
  }
  h.roundInPlace();
  return I.define(0, knownVal(std::move(h)));
}

absl::Status importReshapeFamily(Importer &I) {
  const std::string &op = I.node->opType;
  TRY(x, I.input(0));
  std::vector<int64_t> shape;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (op == "Reshape") {
    TRY(req, I.knownInts(1));
    bool allowZero = I.attrInt("allowzero", 0);
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < req.size(); ++i) {
      int64_t d = req[i];
      if (d == 0 && !allowZero) {
        if (static_cast<int64_t>(i) >= rank)
          return I.invalid("a 0 in the shape past the input's rank");
        d = x.shape[i];
      }
      if (d == -1) {
        if (infer >= 0)
          return I.invalid("two -1 in the shape");
        infer = static_cast<int64_t>(i);
      } else if (d < 0) {
        return I.invalid(absl::StrCat("shape value ", d));
      } else if (__builtin_mul_overflow(known, d, &known)) {
        // (fuzz_onnx under UBSan: the requested dims' product wrapped.)
        return I.invalid("the requested shape has more than 2^63 elements");
      }
      shape.push_back(d);
    }
    if (infer >= 0) {
      if (known == 0 || x.elements() % known)
        return I.invalid("cannot infer the -1 dim");
      shape[infer] = x.elements() / known;
    }
  } else if (op == "Flatten") {
    int64_t a = I.attrInt("axis", 1);
    if (a < 0)
      a += rank;
    if (a < 0 || a > rank)
      return I.invalid(absl::StrCat("axis ", I.attrInt("axis", 1), " out of range for rank ", rank));
    int64_t outer = 1, inner = 1; // within the input's checked element count
    for (int64_t d = 0; d < a; ++d)
      outer *= x.shape[d];
    for (int64_t d = a; d < rank; ++d)
      inner *= x.shape[d];
    shape = {outer, inner};
  } else {
    std::vector<int64_t> axes;
    if (I.opset >= 13 && I.hasInput(1)) {
      TRY(v, I.knownInts(1));
      axes = v;
    } else if (auto a = I.attrInts("axes")) {
      axes = *a;
    }
    if (op == "Squeeze") {
      std::vector<bool> drop(rank, false);
      if (axes.empty())
        for (int64_t d = 0; d < rank; ++d)
          drop[d] = x.shape[d] == 1;
      for (int64_t a : axes) {
        TRY(ax, I.axis(a, rank));
        if (x.shape[ax] != 1)
          return I.invalid(absl::StrCat("squeezing dim ", ax, " of size ", x.shape[ax]));
        drop[ax] = true;
      }
      for (int64_t d = 0; d < rank; ++d)
        if (!drop[d])
          shape.push_back(x.shape[d]);
    } else {
      int64_t outRank = rank + static_cast<int64_t>(axes.size());
      if (outRank > static_cast<int64_t>(Importer::kMaxRank))
        return I.invalid(absl::StrCat("a result of rank ", outRank, ": more than ",
                                      Importer::kMaxRank, " dims"));
      std::vector<bool> ins(outRank, false);
      for (int64_t a : axes) {
        TRY(ax, I.axis(a, outRank));
        if (ins[ax])
          return I.invalid(absl::StrCat("axis ", a, " is repeated"));
        ins[ax] = true;
      }
      size_t k = 0;
      for (int64_t d = 0; d < outRank; ++d)
        shape.push_back(ins[d] ? 1 : x.shape[k++]);
    }
  }
  if (elementCount(shape) != x.elements())
    return I.invalid("the new shape has a different number of elements");
  return I.define(0, I.reshape(x, shape));
}

absl::Status importExpand(Importer &I) {
  TRY(x, I.input(0));
  TRY(dims, I.knownInts(1));
  auto shape = broadcastShapes(x.shape, dims);
  if (!shape.ok())
    return I.invalid(std::string(shape.status().message()));
  return I.define(0, I.broadcastTo(x, *shape));
}

absl::Status importTranspose(Importer &I) {
  TRY(x, I.input(0));
  std::vector<int64_t> perm;
  if (auto p = I.attrInts("perm"))
    perm = *p;
  else
    for (int64_t d = static_cast<int64_t>(x.shape.size()) - 1; d >= 0; --d)
      perm.push_back(d);
  if (perm.size() != x.shape.size())
    return I.invalid("perm does not match the rank");
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(x.shape.size()) || seen[p])
      return I.invalid("perm is not a permutation of the dims");
    seen[p] = true;
  }
  return I.define(0, I.transpose(x, perm));
}

/// DepthToSpace and SpaceToDepth: a reshape, a transpose and a reshape.
/// DepthToSpace's DCR (default) takes the channels as [b, b, C/b^2], CRD as
/// [C/b^2, b, b]; SpaceToDepth moves each b x b block into the channels as
/// [b, b, C].
absl::Status importDepthSpace(Importer &I) {
  TRY(x, I.input(0));
  bool toSpace = I.node->opType == "DepthToSpace";
  int64_t b = I.attrInt("blocksize", 0);
  if (x.shape.size() != 4)
    return I.invalid(absl::StrCat("input is ", I.ty(x), ", expected rank 4 (N, C, H, W)"));
  if (b < 1 || b > (int64_t(1) << 15))
    return I.invalid(absl::StrCat("blocksize ", b, " out of range"));
  int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  if (toSpace) {
    if (c % (b * b))
      return I.invalid(absl::StrCat("the ", c, " channels are not a multiple of blocksize^2 (",
                                    b * b, ")"));
    std::string mode = I.attrString("mode").value_or("DCR");
    if (mode != "DCR" && mode != "CRD")
      return I.invalid(absl::StrCat("mode '", mode, "' is not DCR or CRD"));
    int64_t cb = c / (b * b);
    bool dcr = mode == "DCR";
    Val r = I.reshape(x, dcr ? std::vector<int64_t>{n, b, b, cb, h, w}
                             : std::vector<int64_t>{n, cb, b, b, h, w});
    Val t = I.transpose(r, dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2}
                               : std::vector<int64_t>{0, 1, 4, 2, 5, 3});
    return I.define(0, I.reshape(t, {n, cb, h * b, w * b}));
  }
  if (h % b || w % b)
    return I.invalid(absl::StrCat("the spatial dims ", h, " x ", w,
                                  " are not multiples of blocksize ", b));
  Val r = I.reshape(x, {n, c, h / b, b, w / b, b});
  Val t = I.transpose(r, {0, 3, 5, 1, 2, 4});
  return I.define(0, I.reshape(t, {n, c * b * b, h / b, w / b}));
}

/// EyeLike: ones on the k-th diagonal of a 2-D tensor of the input's shape
/// (of `dtype`, else the input's type), zeros elsewhere.
absl::Status importEyeLike(Importer &I) {
  TRY(x, I.input(0));
  if (x.shape.size() != 2)
    return I.invalid(absl::StrCat("input is ", I.ty(x), ", expected rank 2"));
  DType d = x.dtype;
  if (I.attrInt("dtype", 0) != 0) {
    TRY(t, dtypeFor(static_cast<int32_t>(I.attrInt("dtype", 0))));
    d = t;
  }
  int64_t k = I.attrInt("k", 0), rows = x.shape[0], cols = x.shape[1];
  Val mask;
  if (rows * cols <= Importer::smallMapElements(/*indexMap=*/false)) {
    TRY(known, I.knownMask({rows, cols}, [&](const std::vector<int64_t> &at) {
      return at[1] - at[0] == k;
    }));
    mask = known;
  } else {
    TRY(row, I.axisIota({rows, cols}, 0));
    TRY(col, I.axisIota({rows, cols}, 1));
    TRY(diff, I.binary("sub", col, row));
    mask = I.compare("eq", diff, I.broadcastTo(I.intConstant(DType::I64, k), {rows, cols}));
  }
  return I.define(0, I.cast(mask, d));
}

/// OneHot: along a new dim `axis` of `depth` (a known scalar), values[1]
/// where the coordinate equals the index (a negative index counts from the
/// end), values[0] elsewhere (an index out of range: values[0] everywhere).
absl::Status importOneHot(Importer &I) {
  TRY(idx, I.input(0));
  TRY(depthVals, I.knownInts(1));
  TRY(values, I.input(2));
  if (depthVals.size() != 1 || depthVals[0] < 1 || depthVals[0] > (int64_t(1) << 31))
    return I.invalid("depth must be one positive value below 2^31");
  if (values.elements() != 2 || values.shape.size() != 1)
    return I.invalid(absl::StrCat("values is ", I.ty(values), ", expected [off, on]"));
  int64_t depth = depthVals[0];
  int64_t rank = static_cast<int64_t>(idx.shape.size()) + 1;
  TRY(ax, I.axis(I.attrInt("axis", -1), rank));
  std::vector<int64_t> shape = idx.shape;
  shape.insert(shape.begin() + ax, depth);
  if (auto n = I.checkedElements(shape); !n.ok())
    return n.status();
  // The index as an integer (a float index truncates), from the end where
  // negative.
  Val i64 = I.cast(idx, DType::I64);
  Val zero = I.broadcastTo(I.intConstant(DType::I64, 0), i64.shape);
  TRY(wrapped, I.binary("add", i64, I.broadcastTo(I.intConstant(DType::I64, depth), i64.shape)));
  TRY(norm, I.select(I.compare("lt", i64, zero), wrapped, i64));
  std::vector<int64_t> kept = idx.shape;
  kept.insert(kept.begin() + ax, 1);
  Val at = I.broadcastTo(I.reshape(norm, kept), shape);
  TRY(iota, I.axisIota(shape, ax));
  Val hit = I.compare("eq", at, iota);
  Val off = I.reshape(I.slice(values, {0}, {1}, {1}), {});
  Val on = I.reshape(I.slice(values, {1}, {1}, {1}), {});
  TRY(y, I.select(hit, I.broadcastTo(on, shape), I.broadcastTo(off, shape)));
  return I.define(0, y);
}

/// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere.
absl::Status importHardmax(Importer &I) {
  TRY(x, I.input(0));
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0)
    return I.invalid("Hardmax of a scalar");
  TRY(ax, I.axis(I.attrInt("axis", -1), rank));
  if (x.shape[ax] == 0)
    return I.define(0, x);
  TRY(m, I.reduce("max", x, {ax}, true));
  TRY(at, I.compareBroadcast("eq", x, m));
  TRY(iota, I.axisIota(x.shape, ax));
  Val none = I.broadcastTo(I.intConstant(DType::I64, x.shape[ax]), x.shape);
  TRY(pos, I.select(at, iota, none));
  TRY(first, I.reduce("min", pos, {ax}, true));
  TRY(hit, I.compareBroadcast("eq", iota, first));
  return I.define(0, I.cast(hit, x.dtype));
}

absl::Status importConcat(Importer &I) {
  std::vector<Val> in;
  for (size_t i = 0; i < I.numInputs(); ++i) {
    TRY(v, I.input(i));
    if (v.elements() > 0 || in.empty())
      in.push_back(v);
  }
  if (in.empty())
    return I.invalid("no inputs");
  TRY(ax, I.axis(I.attrInt("axis", 0), in[0].shape.size()));
  std::vector<int64_t> shape = in[0].shape;
  shape[ax] = 0;
  for (Val &v : in) {
    if (v.shape.size() != shape.size() || v.dtype != in[0].dtype)
      return I.invalid("inputs of different ranks or types");
    shape[ax] += v.shape[ax];
  }
  if (in.size() == 1)
    return I.define(0, in[0]);
  std::string names, types;
  for (size_t i = 0; i < in.size(); ++i) {
    absl::StrAppend(&names, i ? ", " : "", I.use(in[i]));
    absl::StrAppend(&types, i ? ", " : "", I.ty(in[i]));
  }
  return I.define(0, I.emit(absl::StrCat("fusec.concat ", names, " dim ", ax, " : (", types,
                                         ") -> ", typeOf(in[0].dtype, shape)),
                            in[0].dtype, shape));
}

absl::Status importSplit(Importer &I) {
  TRY(x, I.input(0));
  TRY(ax, I.axis(I.attrInt("axis", 0), x.shape.size()));
  std::vector<int64_t> sizes;
  if (I.opset >= 13 && I.hasInput(1)) {
    TRY(s, I.knownInts(1));
    sizes = s;
  } else if (auto s = I.attrInts("split")) {
    sizes = *s;
  } else {
    int64_t parts = static_cast<int64_t>(I.numOutputs());
    if (I.opset >= 18 && I.attrInt("num_outputs", 0) > 0)
      parts = I.attrInt("num_outputs", 0);
    // A Split with no outputs (fuzz_onnx: a division by zero here).
    if (parts <= 0)
      return I.invalid("Split has no outputs");
    if (parts != static_cast<int64_t>(I.numOutputs()))
      return I.invalid(absl::StrCat("num_outputs ", parts, " differs from the node's ",
                                    I.numOutputs(), " outputs"));
    int64_t each = (x.shape[ax] + parts - 1) / parts;
    for (int64_t i = 0, left = x.shape[ax]; i < parts; ++i, left -= each)
      sizes.push_back(std::max<int64_t>(0, std::min(each, left)));
  }
  if (sizes.size() != I.numOutputs())
    return I.invalid("split sizes and outputs differ in number");
  // Each size within the dim, so that their sum cannot wrap (fuzz_onnx: a
  // size of 2^63 - 2 overflowed the offsets).
  for (int64_t size : sizes)
    if (size < 0 || size > x.shape[ax])
      return I.invalid(absl::StrCat("split size ", size, " is not in [0, ", x.shape[ax],
                                    "] (the dim split)"));
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> shape = x.shape, offsets(x.shape.size(), 0), strides(x.shape.size(), 1);
    shape[ax] = sizes[i];
    offsets[ax] = offset;
    offset += sizes[i];
    Val empty;
    empty.dtype = x.dtype;
    empty.shape = shape;
    Val part = sizes[i] == 0 ? empty : I.slice(x, offsets, strides, shape);
    if (auto st = I.define(i, part); !st.ok())
      return st;
  }
  if (offset != x.shape[ax])
    return I.invalid("split sizes do not add up to the dim");
  return absl::OkStatus();
}

absl::Status importSlice(Importer &I) {
  TRY(x, I.input(0));
  std::vector<int64_t> starts, ends, axes, steps;
  if (I.opset < 10) {
    starts = I.attrInts("starts").value_or(std::vector<int64_t>{});
    ends = I.attrInts("ends").value_or(std::vector<int64_t>{});
    axes = I.attrInts("axes").value_or(std::vector<int64_t>{});
  } else {
    TRY(s, I.knownInts(1));
    TRY(e, I.knownInts(2));
    starts = s, ends = e;
    if (I.hasInput(3)) {
      TRY(a, I.knownInts(3));
      axes = a;
    }
    if (I.hasInput(4)) {
      TRY(st, I.knownInts(4));
      steps = st;
    }
  }
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return I.invalid("starts, ends, axes and steps differ in length");
  std::vector<int64_t> offsets(rank, 0), strides(rank, 1), shape = x.shape;
  bool reverse = false;
  for (size_t i = 0; i < starts.size(); ++i) {
    TRY(ax, I.axis(axes[i], rank));
    int64_t n = x.shape[ax], st = steps[i];
    if (st == 0)
      return I.invalid("a step of 0");
    // ONNX's clamping (starts and ends may be INT64_MAX or INT64_MIN).
    auto norm = [&](int64_t v) { return v < 0 ? (v < -n ? -1 : v + n) : v; };
    int64_t b = norm(starts[i]), e = norm(ends[i]);
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      shape[ax] = e > b ? (e - b - 1) / st + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, std::max<int64_t>(n - 1, 0));
      e = std::clamp<int64_t>(e, -1, std::max<int64_t>(n - 1, -1));
      // -st as unsigned: a step of INT64_MIN has no signed negation.
      uint64_t mag = uint64_t{0} - static_cast<uint64_t>(st);
      shape[ax] = n > 0 && b > e ? static_cast<int64_t>(static_cast<uint64_t>(b - e - 1) / mag) + 1 : 0;
      reverse = true;
    }
    offsets[ax] = b;
    strides[ax] = st;
  }
  if (elementCount(shape) == 0)
    return I.define(0, knownVal(HostTensor(x.dtype, shape)));
  if (!reverse)
    return I.define(0, I.slice(x, offsets, strides, shape));
  // Negative steps: the elements through an index map.
  auto src = stridesOf(x.shape);
  TRY(index, I.separableIndexMap(shape, [&](int64_t d, int64_t i) {
    return (offsets[d] + i * strides[d]) * src[d];
  }));
  return I.define(0, I.gatherFlat(x, index));
}

absl::Status importTile(Importer &I) {
  TRY(x, I.input(0));
  TRY(reps, I.knownInts(1));
  if (reps.size() != x.shape.size())
    return I.invalid("repeats do not match the rank");
  std::vector<int64_t> shape;
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 0)
      return I.invalid("a negative repeat");
    int64_t tiled;
    if (__builtin_mul_overflow(x.shape[d], reps[d], &tiled))
      return I.invalid(absl::StrCat("repeat ", reps[d], " of dim ", d, " overflows"));
    shape.push_back(tiled);
  }
  TRY(tiledElements, I.checkedElements(shape));
  if (tiledElements == 0)
    return I.define(0, knownVal(HostTensor(x.dtype, shape)));
  auto src = stridesOf(x.shape);
  TRY(index, I.separableIndexMap(
                 shape, [&](int64_t d, int64_t i) { return (i % x.shape[d]) * src[d]; }));
  return I.define(0, I.gatherFlat(x, index));
}

absl::Status importPad(Importer &I) {
  TRY(x, I.input(0));
  std::string mode = I.attrString("mode").value_or("constant");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> pads;
  if (I.opset < 11) {
    // "paddings" before opset 2.
    pads = I.attrInts(I.opset < 2 ? "paddings" : "pads").value_or(std::vector<int64_t>{});
  } else {
    TRY(p, I.knownInts(1));
    pads = p;
  }
  std::vector<int64_t> axes;
  if (I.hasInput(3)) {
    TRY(a, I.knownInts(3));
    for (int64_t v : a) {
      TRY(ax, I.axis(v, rank));
      axes.push_back(ax);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size())
    return I.invalid("pads must hold a begin and an end per axis");
  std::vector<int64_t> before(rank, 0), shape = x.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    before[axes[i]] = pads[i];
    int64_t grown;
    if (__builtin_add_overflow(pads[i], pads[i + axes.size()], &grown) ||
        __builtin_add_overflow(shape[axes[i]], grown, &shape[axes[i]]))
      return I.invalid("pads overflow the dim");
    if (shape[axes[i]] < 0)
      return I.invalid("pads remove more than the dim");
    // A pad past the dim's size on one side (and its negative on the
    // other) is never a sensible model, and its coordinates would overflow.
    auto huge = [](int64_t p) {
      return p < -Importer::kMaxElements || p > Importer::kMaxElements;
    };
    if (huge(pads[i]) || huge(pads[i + axes.size()]))
      return I.invalid(absl::StrCat("a pad of more than 2^40 along axis ", axes[i]));
  }
  TRY(padded, I.checkedElements(shape));
  // Edge, reflect and wrap read the input: an empty dim has nothing to read.
  if (mode != "constant" && padded != 0)
    for (int64_t d = 0; d < rank; ++d)
      if (x.shape[d] == 0)
        return I.invalid(absl::StrCat("mode '", mode, "' pads dim ", d, ", which is empty"));
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return I.invalid(absl::StrCat("mode '", mode, "'"));
  if (padded == 0)
    return I.define(0, knownVal(HostTensor(x.dtype, shape)));
  auto src = stridesOf(x.shape);
  // The source coordinate along d of output coordinate o, or -1 outside.
  auto from = [&](int64_t d, int64_t o) -> int64_t {
    int64_t n = x.shape[d], i = o - before[d];
    if (i >= 0 && i < n)
      return i;
    if (mode == "constant")
      return -1;
    if (mode == "edge")
      return std::clamp<int64_t>(i, 0, n - 1);
    if (mode == "wrap")
      return ((i % n) + n) % n;
    if (n == 1) // reflect
      return 0;
    int64_t period = 2 * (n - 1), m = ((i % period) + period) % period;
    return m < n ? m : period - m;
  };
  TRY(index, I.separableIndexMap(shape, [&](int64_t d, int64_t i) {
    return std::max<int64_t>(from(d, i), 0) * src[d];
  }));
  Val gathered = I.gatherFlat(x, index);
  if (mode != "constant")
    return I.define(0, gathered);
  // The fill value: an attribute before opset 11, an input after.
  Val fill = I.constant(x.dtype, I.opset < 11 ? I.attrFloat("value", 0.0f) : 0.0);
  if (I.opset >= 11 && I.hasInput(2)) {
    TRY(v, I.input(2));
    fill = I.reshape(v, {});
  }
  TRY(inside, I.separableMask(shape, [&](int64_t d, int64_t i) { return from(d, i) >= 0; }));
  TRY(r, I.select(inside, gathered, fill));
  return I.define(0, r);
}

//===----------------------------------------------------------------------===//
// Gathers and scatters
//===----------------------------------------------------------------------===//

/// ReverseSequence: each batch entry's first sequence_lens[b] steps along
/// time_axis in reverse order, the rest as they are. One gather whose flat
/// index moves each element along time: t -> len - 1 - t where t < len
/// (lengths clamped to [0, steps]); the lengths may be known or run-time
/// values.
absl::Status importReverseSequence(Importer &I) {
  TRY(x, I.input(0));
  TRY(lens, I.input(1));
  int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t timeAxis = I.attrInt("time_axis", 0), batchAxis = I.attrInt("batch_axis", 1);
  if (r < 2 || !((timeAxis == 0 && batchAxis == 1) || (timeAxis == 1 && batchAxis == 0)))
    return I.invalid(absl::StrCat("time_axis ", timeAxis, " and batch_axis ", batchAxis,
                                  " must be 0 and 1 (in either order) of a tensor of rank 2 or "
                                  "more, not ", I.ty(x)));
  if (lens.shape != std::vector<int64_t>{x.shape[batchAxis]} || !isInteger(lens.dtype))
    return I.invalid(absl::StrCat("sequence_lens is ", I.ty(lens), "; expected [",
                                  x.shape[batchAxis], "] integers"));
  if (x.elements() == 0)
    return I.define(0, x);
  auto strides = stridesOf(x.shape);
  TRY(flat, I.separableIndexMap(x.shape, [&](int64_t d, int64_t c) { return c * strides[d]; }));
  TRY(t, I.axisIota(x.shape, timeAxis));
  std::vector<int64_t> along(x.shape.size(), 1);
  along[batchAxis] = x.shape[batchAxis];
  Val steps = I.cast(lens, DType::I64);
  TRY(low, I.binary("max", steps, I.intConstant(DType::I64, 0)));
  TRY(clamped, I.binary("min", low, I.intConstant(DType::I64, x.shape[timeAxis])));
  Val len = I.broadcastTo(I.reshape(clamped, along), x.shape);
  TRY(lenLessT, I.binary("sub", len, t));
  TRY(reversed, I.binary("sub", lenLessT, I.broadcastTo(I.intConstant(DType::I64, 1), x.shape)));
  Val inside = I.compare("lt", t, len);
  TRY(source, I.select(inside, reversed, t));
  TRY(moved, I.binary("sub", source, t));
  TRY(delta, I.binary("mul", moved, I.broadcastTo(I.intConstant(DType::I64, strides[timeAxis]),
                                                   x.shape)));
  TRY(index, I.binary("add", flat, delta));
  return I.define(0, I.gatherFlat(x, index));
}

/// Compress: the slices of `input` along `axis` (of the flattened input
/// when there is none) where `condition` is true (positions past its end
/// count as false). The condition must be known at import (it fixes the
/// result's shape); the slices are a gather through the known positions.
absl::Status importCompress(Importer &I) {
  TRY(x, I.input(0));
  TRY(cond, I.inputData(1));
  if (!cond.known)
    return I.unsupported(absl::StrCat("input #1 ('", I.node->inputs[1],
                                      "') must be known at import (it fixes the result's shape)"));
  if (cond.shape.size() != 1)
    return I.invalid(absl::StrCat("condition is ", I.ty(cond), ", expected rank 1"));
  Val data = x;
  int64_t ax = 0;
  if (const onnx::Attribute *a = I.node->attr("axis"); a && (a->has & onnx::Attribute::kI)) {
    TRY(axis, I.axis(a->i, x.shape.size()));
    ax = axis;
  } else {
    data = I.reshape(x, {x.elements()});
  }
  int64_t n = data.shape[static_cast<size_t>(ax)];
  if (cond.elements() > n)
    return I.invalid(absl::StrCat("condition has ", cond.elements(), " values, the axis ", n));
  std::vector<int64_t> at;
  for (int64_t i = 0; i < cond.elements(); ++i)
    if (cond.known->get(i) != 0)
      at.push_back(i);
  std::vector<int64_t> shape = data.shape;
  shape[static_cast<size_t>(ax)] = static_cast<int64_t>(at.size());
  if (at.empty())
    return I.unsupported("a Compress that keeps nothing (an empty result)");
  HostTensor idx(DType::I64, {static_cast<int64_t>(at.size())});
  idx.ints = at;
  Val index = knownVal(std::move(idx));
  return I.define(0, I.emit(absl::StrCat("fusec.gather ", I.use(data), "[", I.use(index),
                                         "] axis ", ax, " : (", I.ty(data), ", ", I.ty(index),
                                         ") -> ", typeOf(data.dtype, shape)),
                            data.dtype, shape));
}

absl::Status importGather(Importer &I) {
  TRY(data, I.input(0));
  TRY(idx, I.inputData(1));
  TRY(ax, I.axis(I.attrInt("axis", 0), data.shape.size()));
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + ax);
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), data.shape.begin() + ax + 1, data.shape.end());
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    return I.invalid("indices must be int32 or int64");
  if (idx.known) {
    int64_t n = data.shape[ax];
    for (int64_t i = 0; i < idx.known->numElements(); ++i)
      if (int64_t k = idx.known->getInt(i); k < -n || k >= n)
        return I.invalid(absl::StrCat("index ", k, " out of range [", -n, ", ", n, ")"));
  }
  TRY(gathered, I.checkedElements(shape));
  if (gathered == 0)
    return I.define(0, knownVal(HostTensor(data.dtype, shape)));
  // Whatever it gathers from a splat is the splat (fuzz_onnx: a
  // ConstantOfShape gathered by itself, folded element by element, took
  // 40 s under ASan for 62M elements).
  if (data.splatOf || (data.known && data.splat)) {
    HostTensor one(data.dtype, {});
    one.copyElement(0, data.splatOf ? *data.splatOf : *data.known, 0);
    return I.define(0, I.broadcastTo(knownVal(std::move(one)), shape));
  }
  return I.define(0, I.emit(absl::StrCat("fusec.gather ", I.use(data), "[", I.use(idx), "] axis ",
                                         ax, " : (", I.ty(data), ", ", I.ty(idx), ") -> ",
                                         typeOf(data.dtype, shape)),
                            data.dtype, shape));
}

/// `idx` (any integer type) as i64 with negative entries counted from `n`.
absl::StatusOr<Val> normalizedIndex(Importer &I, Val idx, int64_t n) {
  Val i64 = I.cast(idx, DType::I64);
  Val zero = I.broadcastTo(I.intConstant(DType::I64, 0), i64.shape);
  Val neg = I.compare("lt", i64, zero);
  TRY(wrapped, I.binary("add", i64, I.intConstant(DType::I64, n)));
  return I.select(neg, wrapped, i64);
}

absl::Status importGatherElements(Importer &I) {
  TRY(data, I.input(0));
  TRY(idx, I.input(1));
  int64_t rank = static_cast<int64_t>(data.shape.size());
  TRY(ax, I.axis(I.attrInt("axis", 0), rank));
  if (idx.shape.size() != data.shape.size())
    return I.invalid("indices and data differ in rank");
  // ONNX: the indices' dims within the data's, but along the axis (each
  // element reads its own coordinates there).
  for (int64_t d = 0; d < rank; ++d)
    if (d != ax && idx.shape[d] > data.shape[d])
      return I.invalid(absl::StrCat("indices dim ", d, " (", idx.shape[d],
                                    ") is larger than the data's (", data.shape[d], ")"));
  if (idx.elements() == 0)
    return I.define(0, knownVal(HostTensor(data.dtype, idx.shape)));
  auto src = stridesOf(data.shape);
  // Flat source index: the element's own coordinates, its index along axis.
  TRY(base, I.separableIndexMap(idx.shape, [&](int64_t d, int64_t i) {
    return d != ax ? i * src[d] : 0;
  }));
  TRY(along, normalizedIndex(I, idx, data.shape[ax]));
  TRY(scaled, I.binary("mul", along, I.intConstant(DType::I64, src[ax])));
  TRY(flat, I.binary("add", base, scaled));
  return I.define(0, I.gatherFlat(data, flat));
}

absl::Status importGatherND(Importer &I) {
  TRY(data, I.input(0));
  TRY(idx, I.input(1));
  int64_t b = I.attrInt("batch_dims", 0);
  int64_t r = static_cast<int64_t>(data.shape.size()), q = static_cast<int64_t>(idx.shape.size());
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return I.invalid("bad ranks or batch_dims");
  int64_t k = idx.shape.back();
  if (k < 1 || b + k > r)
    return I.invalid("the index tuples are longer than the data's rank");
  for (int64_t d = 0; d < b; ++d)
    if (idx.shape[d] != data.shape[d])
      return I.invalid("batch dims differ");
  std::vector<int64_t> lead(idx.shape.begin(), idx.shape.end() - 1), shape = lead;
  shape.insert(shape.end(), data.shape.begin() + b + k, data.shape.end());
  TRY(gathered, I.checkedElements(shape));
  if (gathered == 0)
    return I.define(0, knownVal(HostTensor(data.dtype, shape)));
  auto src = stridesOf(data.shape);
  // The tuple's part of the flat index, over the leading dims.
  std::optional<Val> tuple;
  for (int64_t t = 0; t < k; ++t) {
    std::vector<int64_t> offsets(q, 0), strides(q, 1), part = idx.shape;
    offsets[q - 1] = t;
    part[q - 1] = 1;
    Val column = I.reshape(I.slice(idx, offsets, strides, part), lead);
    TRY(norm, normalizedIndex(I, column, data.shape[b + t]));
    TRY(term, I.binary("mul", norm, I.intConstant(DType::I64, src[b + t])));
    if (tuple) {
      TRY(sum, I.binary("add", *tuple, term));
      tuple = sum;
    } else {
      tuple = term;
    }
  }
  // Plus the batch coordinates and the trailing (copied) coordinates.
  int64_t leadRank = static_cast<int64_t>(lead.size());
  TRY(base, I.separableIndexMap(shape, [&](int64_t d, int64_t i) -> int64_t {
    if (d < b)
      return i * src[d];
    if (d >= leadRank)
      return i * src[b + k + (d - leadRank)];
    return 0;
  }));
  TRY(flat, I.binary("add", base, I.broadcastTo(I.reshape(*tuple, [&] {
                                                  std::vector<int64_t> s = lead;
                                                  s.resize(shape.size(), 1);
                                                  return s;
                                                }()),
                                                shape)));
  return I.define(0, I.gatherFlat(data, flat));
}

/// ScatterND and ScatterElements with indices known at import: the output
/// takes each element from the updates where an index points at it (the
/// last update wins) and from the data elsewhere.
absl::Status importScatter(Importer &I) {
  const std::string &op = I.node->opType;
  TRY(data, I.input(0));
  TRY(idx, I.inputData(1));
  TRY(upd, I.input(2));
  std::string reduction = I.attrString("reduction").value_or("none");
  const char *combine = reduction == "add"   ? "add"
                        : reduction == "mul" ? "mul"
                        : reduction == "max" ? "max"
                        : reduction == "min" ? "min"
                                             : nullptr;
  if (reduction != "none" && !combine)
    return I.invalid(absl::StrCat("unknown reduction '", reduction,
                                  "' (none, add, mul, max or min)"));
  if (!idx.known)
    return I.unsupported("the indices must be known at import (a scatter at run-time positions "
                         "is not supported)");
  int64_t r = static_cast<int64_t>(data.shape.size());
  // The scatter is resolved at import into a map of the data's elements.
  if (data.elements() > Importer::kMaxFoldElements)
    return I.unsupported(absl::StrCat("a scatter into ", data.elements(),
                                      " elements (more than the 2^26 mapped at import)"));
  // The shapes ONNX requires, checked before any index is followed (a
  // mutated model with indices wider than the data wrote past the map).
  if (upd.dtype != data.dtype)
    return I.invalid("the updates' type differs from the data's");
  if (op == "ScatterND") {
    if (idx.shape.empty() || idx.shape.back() < 1 || idx.shape.back() > r)
      return I.invalid(absl::StrCat("index tuples must have 1 to ", r,
                                    " (the data's rank) entries"));
    std::vector<int64_t> want(idx.shape.begin(), idx.shape.end() - 1);
    want.insert(want.end(), data.shape.begin() + idx.shape.back(), data.shape.end());
    if (upd.shape != want)
      return I.invalid(absl::StrCat("the updates are ", I.ty(upd), ", expected ",
                                    typeOf(upd.dtype, want)));
  } else {
    TRY(axis, I.axis(I.attrInt("axis", 0), r));
    if (static_cast<int64_t>(idx.shape.size()) != r || upd.shape != idx.shape)
      return I.invalid("the indices and the updates must have one shape, of the data's rank");
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && idx.shape[d] > data.shape[d])
        return I.invalid(absl::StrCat("the indices' dim ", d, " (", idx.shape[d],
                                      ") is longer than the data's (", data.shape[d], ")"));
  }
  if (idx.elements() == 0)
    return I.define(0, data); // nothing to scatter
  if (data.elements() == 0)
    return I.invalid("indices into an empty tensor");
  auto dst = stridesOf(data.shape);
  // The update elements each data element takes, in index order: layer j
  // holds every element's (j+1)-th (or -1). Without a reduction a later
  // index replaces an earlier one, so there is one layer; with one, each
  // layer is combined in turn (a data element written by k updates is k
  // layers deep).
  constexpr size_t kMaxLayers = 64;
  std::vector<std::vector<int64_t>> layers(1, std::vector<int64_t>(data.elements(), -1));
  std::vector<int32_t> depth(combine ? data.elements() : 0, 0);
  auto put = [&](int64_t f, int64_t e) -> absl::Status {
    if (!combine) {
      layers[0][f] = e;
      return absl::OkStatus();
    }
    size_t j = static_cast<size_t>(depth[f]++);
    if (j == layers.size()) {
      if (j == kMaxLayers || static_cast<int64_t>(j + 1) * data.elements() >
                                 Importer::kMaxFoldElements)
        return I.unsupported(absl::StrCat("a ", reduction, " scatter that writes one element ",
                                          j + 1, " times (at most ", kMaxLayers,
                                          " are resolved at import)"));
      layers.emplace_back(data.elements(), -1);
    }
    layers[j][f] = e;
    return absl::OkStatus();
  };
  const HostTensor &ix = *idx.known;
  if (op == "ScatterND") {
    int64_t k = idx.shape.back(), tuples = idx.elements() / std::max<int64_t>(k, 1);
    int64_t chunk = 1;
    for (int64_t d = k; d < r; ++d)
      chunk *= data.shape[d];
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t f = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = ix.getInt(t * k + j), n = data.shape[j];
        if (v < -n || v >= n)
          return I.invalid(absl::StrCat("index ", v, " out of range"));
        f += (v < 0 ? v + n : v) * dst[j];
      }
      for (int64_t i = 0; i < chunk; ++i)
        if (auto st = put(f + i, t * chunk + i); !st.ok())
          return st;
    }
  } else {
    TRY(ax, I.axis(I.attrInt("axis", 0), r));
    auto us = stridesOf(idx.shape);
    for (int64_t e = 0; e < idx.elements(); ++e) {
      int64_t f = 0, rest = e;
      for (int64_t d = 0; d < r; ++d) {
        int64_t c = rest / us[d];
        rest %= us[d];
        if (d == ax) {
          int64_t v = ix.getInt(e), n = data.shape[d];
          if (v < -n || v >= n)
            return I.invalid(absl::StrCat("index ", v, " out of range"));
          c = v < 0 ? v + n : v;
        }
        f += c * dst[d];
      }
      if (auto st = put(f, e); !st.ok())
        return st;
    }
  }
  if (upd.elements() == 0)
    return I.define(0, data);
  Val out = data;
  for (const std::vector<int64_t> &source : layers) {
    TRY(take, I.knownMask(data.shape, [&](const std::vector<int64_t> &c) {
      return source[dot(c, dst)] >= 0;
    }));
    TRY(index, I.knownIndexMap(data.shape, [&](const std::vector<int64_t> &c) {
      return std::max<int64_t>(source[dot(c, dst)], 0);
    }));
    Val taken = I.gatherFlat(upd, index);
    if (combine) {
      TRY(combined, I.binary(combine, out, taken));
      taken = combined;
    }
    TRY(next, I.select(take, taken, out));
    out = next;
  }
  return I.define(0, out);
}

//===----------------------------------------------------------------------===//
// Reductions, scans, normalizations
//===----------------------------------------------------------------------===//

absl::Status importReduce(Importer &I) {
  const std::string &op = I.node->opType;
  TRY(x, I.inputData(0));
  bool keep = I.attrInt("keepdims", 1);
  std::vector<int64_t> axes;
  bool axesFromInput = (op == "ReduceSum" && I.opset >= 13) || I.opset >= 18;
  bool given = false;
  if (axesFromInput && I.hasInput(1)) {
    TRY(a, I.knownInts(1));
    axes = a;
    given = true;
  } else if (auto a = I.attrInts("axes")) {
    axes = *a;
    given = true;
  }
  if (!given || axes.empty()) {
    if (given && I.attrInt("noop_with_empty_axes", 0))
      return I.define(0, x);
    for (size_t d = 0; d < x.shape.size(); ++d)
      axes.push_back(static_cast<int64_t>(d));
  }
  bool floatOnly = op != "ReduceSum" && op != "ReduceMax" && op != "ReduceMin";
  if (op == "ReduceProd" && !isFloat(x.dtype) && x.known) {
    // An integer product known at import (a shape computation): exact, on
    // the host, wrapping as two's complement.
    std::vector<bool> reduced(x.shape.size(), false);
    for (int64_t a : axes) {
      TRY(ax, I.axis(a, x.shape.size()));
      reduced[static_cast<size_t>(ax)] = true;
    }
    std::vector<int64_t> shape, kept;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (!reduced[d])
        shape.push_back(x.shape[d]);
      kept.push_back(reduced[d] ? 1 : x.shape[d]);
    }
    HostTensor out(x.dtype, keep ? kept : shape);
    for (int64_t i = 0; i < out.numElements(); ++i)
      out.ints[static_cast<size_t>(i)] = 1;
    std::vector<int64_t> at(x.shape.size(), 0);
    for (int64_t e = 0, n = x.elements(); e < n; ++e) {
      for (int64_t d = static_cast<int64_t>(x.shape.size()) - 1, r = e; d >= 0; --d) {
        at[static_cast<size_t>(d)] = r % x.shape[static_cast<size_t>(d)];
        r /= x.shape[static_cast<size_t>(d)];
      }
      int64_t o = 0;
      for (size_t d = 0; d < x.shape.size(); ++d)
        o = o * kept[d] + (reduced[d] ? 0 : at[d]);
      uint64_t p = static_cast<uint64_t>(out.ints[static_cast<size_t>(o)]) *
                   static_cast<uint64_t>(x.known->ints[static_cast<size_t>(e)]);
      out.ints[static_cast<size_t>(o)] = static_cast<int64_t>(p);
    }
    if (x.dtype == DType::I32)
      for (int64_t &v : out.ints)
        v = static_cast<int32_t>(static_cast<uint32_t>(v));
    return I.define(0, knownVal(std::move(out)));
  }
  if (!isFloat(x.dtype) && floatOnly)
    return I.unsupported(absl::StrCat("an integer ", op, " is not supported",
                                      op == "ReduceProd" ? " unless known at import" : ""));
  if (op == "ReduceProd") {
    // sign x exp(sum(log |x|)), the sign (-1)^(the count of negatives): a
    // zero gives exp(-inf) = 0; relative error about the f32 rounding of
    // the sum of the logs.
    Val zero = I.broadcastTo(I.constant(x.dtype, 0), x.shape);
    TRY(logs, I.reduce("sum", I.unary("log", I.unary("abs", x)), axes, keep));
    Val mag = I.unary("exp", logs);
    Val negative = I.cast(I.compare("lt", x, zero), DType::F32);
    TRY(count, I.reduce("sum", negative, axes, keep));
    TRY(half, I.binary("mul", count, I.broadcastTo(I.constant(DType::F32, 0.5), count.shape)));
    TRY(twice, I.binary("mul", I.unary("floor", half),
                        I.broadcastTo(I.constant(DType::F32, 2), count.shape)));
    TRY(odd, I.binary("sub", count, twice)); // 0 or 1
    TRY(flip, I.binary("mul", odd, I.broadcastTo(I.constant(DType::F32, -2), count.shape)));
    TRY(sign, I.binary("add", flip, I.broadcastTo(I.constant(DType::F32, 1), count.shape)));
    TRY(r, I.binary("mul", mag, I.cast(sign, x.dtype)));
    return I.define(0, r);
  }
  Val in = x;
  if (op == "ReduceSumSquare" || op == "ReduceL2") {
    TRY(sq, I.binary("mul", x, x));
    in = sq;
  } else if (op == "ReduceL1") {
    in = I.unary("abs", x);
  }
  if (op == "ReduceLogSumExp") {
    // log(sum(exp(x - max))) + max: no overflow for large inputs.
    TRY(m, I.reduce("max", x, axes, true));
    TRY(d, I.binary("sub", x, m));
    TRY(s, I.reduce("sum", I.unary("exp", d), axes, true));
    TRY(l, I.binary("add", I.unary("log", s), m));
    if (keep)
      return I.define(0, l);
    std::vector<int64_t> kept;
    for (size_t dd = 0; dd < x.shape.size(); ++dd) {
      bool reduced = false;
      for (int64_t a : axes)
        reduced |= (a < 0 ? a + static_cast<int64_t>(x.shape.size()) : a) == static_cast<int64_t>(dd);
      if (!reduced)
        kept.push_back(x.shape[dd]);
    }
    return I.define(0, I.reshape(l, kept));
  }
  const char *kind = op == "ReduceMax"    ? "max"
                     : op == "ReduceMin"  ? "min"
                     : op == "ReduceMean" ? "mean"
                                          : "sum";
  TRY(r, I.reduce(kind, in, axes, keep));
  if (op == "ReduceL2")
    return I.define(0, I.unary("sqrt", r));
  if (op == "ReduceLogSum")
    return I.define(0, I.unary("log", r));
  return I.define(0, r);
}

absl::Status importArgMaxMin(Importer &I) {
  bool isMax = I.node->opType == "ArgMax";
  TRY(x, I.input(0));
  int64_t rank = static_cast<int64_t>(x.shape.size());
  TRY(ax, I.axis(I.attrInt("axis", 0), rank));
  bool keep = I.attrInt("keepdims", 1), last = I.attrInt("select_last_index", 0);
  int64_t n = x.shape[ax];
  // The extreme along the axis, where it is reached, and the first (or
  // last) such position.
  TRY(m, I.reduce(isMax ? "max" : "min", x, {ax}, true));
  TRY(at, I.compareBroadcast("eq", x, m));
  TRY(iota, I.axisIota(x.shape, ax));
  Val none = I.broadcastTo(I.intConstant(DType::I64, last ? -1 : n), x.shape);
  TRY(pos, I.select(at, iota, none));
  TRY(r, I.reduce(last ? "max" : "min", pos, {ax}, keep));
  return I.define(0, r);
}

/// The lowest (or highest) value of `d`: what a taken element becomes.
Val extremeConstant(Importer &I, DType d, bool lowest) {
  if (isFloat(d))
    return I.constant(d, lowest ? -std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::infinity());
  bool wide = d == DType::I64;
  int64_t lo = wide ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
  int64_t hi = wide ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
  return I.intConstant(d, lowest ? lo : hi);
}

} // namespace

/// `parts` (each of `shape` but 1 along `axis`) side by side along `axis`.
Val concatAlong(Importer &I, std::vector<Val> parts, int64_t axis) {
  if (parts.size() == 1)
    return parts[0];
  std::vector<int64_t> shape = parts[0].shape;
  shape[axis] = 0;
  std::vector<std::string> names, types;
  for (Val &p : parts) {
    shape[axis] += p.shape[axis];
    names.push_back(I.use(p));
    types.push_back(I.ty(p));
  }
  return I.emit(absl::StrCat("fusec.concat ", absl::StrJoin(names, ", "), " dim ", axis, " : (",
                             absl::StrJoin(types, ", "), ") -> ",
                             typeOf(parts[0].dtype, shape)),
                parts[0].dtype, shape);
}

namespace {

/// LRN over the channels (dim 1) of [N, C, ...]: x / (bias + alpha / size x
/// the sum of x^2 over channels c - floor((size - 1) / 2) to c +
/// ceil((size - 1) / 2), clipped to the tensor)^beta, the window's sum as
/// slices of the squares padded with zeros along C.
absl::Status importLRN(Importer &I) {
  TRY(x, I.input(0));
  if (!isFloat(x.dtype) || x.shape.size() < 3)
    return I.invalid(absl::StrCat("input is ", I.ty(x), ", expected floats [N, C, d...]"));
  int64_t size = I.attrInt("size", 0);
  if (size < 1 || size > 4096)
    return I.invalid(absl::StrCat("size ", size, " is not in [1, 4096]"));
  double alpha = I.attrFloat("alpha", 1e-4f), beta = I.attrFloat("beta", 0.75f),
         bias = I.attrFloat("bias", 1.0f);
  int64_t c = x.shape[1], before = (size - 1) / 2, after = size - 1 - before;
  TRY(sq, I.binary("mul", x, x));
  std::vector<int64_t> padShape = x.shape;
  padShape[1] = c + before + after;
  std::vector<Val> parts;
  auto zeros = [&](int64_t n) {
    std::vector<int64_t> z = x.shape;
    z[1] = n;
    return I.broadcastTo(I.constant(x.dtype, 0), z);
  };
  if (before)
    parts.push_back(zeros(before));
  parts.push_back(sq);
  if (after)
    parts.push_back(zeros(after));
  Val padded = concatAlong(I, parts, 1);
  std::optional<Val> sum;
  std::vector<int64_t> off(x.shape.size(), 0), step(x.shape.size(), 1);
  for (int64_t k = 0; k < size; ++k) {
    off[1] = k;
    Val w = I.slice(padded, off, step, x.shape);
    if (sum) {
      TRY(s, I.binary("add", *sum, w));
      sum = s;
    } else {
      sum = w;
    }
  }
  auto c0 = [&](double v) { return I.broadcastTo(I.constant(x.dtype, v), x.shape); };
  TRY(scaled, I.binary("mul", *sum, c0(alpha / static_cast<double>(size))));
  TRY(base, I.binary("add", scaled, c0(bias)));
  TRY(den, I.binary("pow", base, c0(beta)));
  TRY(y, I.binary("div", x, den));
  return I.define(0, y);
}

/// TopK for a small k (greedy and top-k sampling): k rounds of "the extreme
/// of what is left, and its first position", each taken element then
/// masked out. Ties go to the lower index, as ONNX asks for; the results
/// are sorted.
absl::Status importTopK(Importer &I) {
  TRY(x, I.input(0));
  TRY(kv, I.knownInts(1));
  if (kv.size() != 1)
    return I.invalid("K must hold one value");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  TRY(ax, I.axis(I.attrInt("axis", -1), rank));
  bool largest = I.attrInt("largest", 1);
  int64_t k = kv[0], n = x.shape[ax];
  if (k < 1 || k > n)
    return I.invalid(absl::StrCat("K = ", k, " is not in [1, ", n, "]"));
  if (k > 16)
    return I.unsupported(absl::StrCat("K = ", k, ": TopK is imported for K <= 16 (k rounds of a "
                                      "reduction; a sort is not generated yet)"));
  TRY(iota, I.axisIota(x.shape, ax));
  Val none = I.broadcastTo(I.intConstant(DType::I64, n), x.shape);
  Val gone = I.broadcastTo(extremeConstant(I, x.dtype, largest), x.shape);
  std::vector<Val> values, indices;
  Val left = x;
  for (int64_t j = 0; j < k; ++j) {
    TRY(m, I.reduce(largest ? "max" : "min", left, {ax}, true));
    TRY(at, I.compareBroadcast("eq", left, m));
    TRY(pos, I.select(at, iota, none));
    TRY(idx, I.reduce("min", pos, {ax}, true));
    values.push_back(m);
    indices.push_back(idx);
    if (j + 1 < k) {
      TRY(taken, I.compareBroadcast("eq", iota, idx));
      TRY(next, I.select(taken, gone, left));
      left = next;
    }
  }
  if (auto st = I.define(0, concatAlong(I, values, ax)); !st.ok())
    return st;
  if (I.hasOutput(1))
    return I.define(1, concatAlong(I, indices, ax));
  return absl::OkStatus();
}

absl::Status importCumSum(Importer &I) {
  TRY(x, I.input(0));
  TRY(axv, I.knownInts(1));
  if (axv.size() != 1)
    return I.invalid("axis must be a scalar");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  TRY(ax, I.axis(axv[0], rank));
  bool exclusive = I.attrInt("exclusive", 0), reverse = I.attrInt("reverse", 0);
  // Each output element sums the elements its mask row keeps: the axis
  // moved last, x broadcast to [rows, n, n], a triangular mask, a sum.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != ax)
      perm.push_back(d);
  perm.push_back(ax);
  Val moved = I.transpose(x, perm);
  int64_t n = x.shape[ax], rows = n ? x.elements() / n : 0;
  Val flat = I.reshape(moved, {rows, n});
  Val wide = I.emit(absl::StrCat("fusec.broadcast ", I.use(flat), " dims [0, 2] : ", I.ty(flat),
                                 " -> ", typeOf(x.dtype, {rows, n, n})),
                    x.dtype, {rows, n, n});
  TRY(mask, I.knownMask({n, n}, [&](const std::vector<int64_t> &c) {
    int64_t i = c[0], j = c[1];
    return reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
  }));
  Val zero = isFloat(x.dtype) ? I.constant(x.dtype, 0) : I.intConstant(x.dtype, 0);
  TRY(kept, I.select(I.broadcastTo(mask, {rows, n, n}), wide, zero));
  TRY(sum, I.reduce("sum", kept, {2}, false));
  std::vector<int64_t> movedShape;
  for (int64_t p : perm)
    movedShape.push_back(x.shape[p]);
  std::vector<int64_t> back(rank);
  for (int64_t i = 0; i < rank; ++i)
    back[perm[i]] = i;
  return I.define(0, I.transpose(I.reshape(sum, movedShape), back));
}

absl::Status importGlobalPool(Importer &I) {
  TRY(x, I.input(0));
  if (x.shape.size() < 3 || !isFloat(x.dtype))
    return I.invalid("expects a float [N, C, spatial...] input");
  std::vector<int64_t> axes;
  for (size_t d = 2; d < x.shape.size(); ++d)
    axes.push_back(static_cast<int64_t>(d));
  TRY(r, I.reduce(I.node->opType == "GlobalMaxPool" ? "max" : "mean", x, axes, true));
  return I.define(0, r);
}

absl::Status importMeanVarianceNormalization(Importer &I) {
  // ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9),
  // the moments over `axes` (default 0, 2, 3).
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.unsupported("MeanVarianceNormalization needs a float input");
  std::vector<int64_t> axes = {0, 2, 3};
  if (auto a = I.attrInts("axes"))
    axes = *a;
  TRY(mean, I.reduce("mean", x, axes, true));
  TRY(meanSq, I.binary("mul", mean, mean));
  TRY(sq, I.binary("mul", x, x));
  TRY(sqMean, I.reduce("mean", sq, axes, true));
  TRY(var, I.binary("sub", sqMean, meanSq));
  TRY(den, I.binary("add", I.unary("sqrt", var), I.constant(x.dtype, 1e-9)));
  TRY(centered, I.binary("sub", x, mean));
  TRY(y, I.binary("div", centered, den));
  return I.define(0, y);
}

absl::Status importSoftmax(Importer &I) {
  TRY(x, I.input(0));
  int64_t rank = static_cast<int64_t>(x.shape.size());
  TRY(ax, I.axis(I.attrInt("axis", I.opset >= 13 ? -1 : 1), rank));
  // Before opset 13 the input is coerced to 2-D at axis.
  Val in = x;
  int64_t dim = ax;
  if (I.opset < 13 && ax != rank - 1) {
    int64_t outer = 1;
    for (int64_t d = 0; d < ax; ++d)
      outer *= x.shape[d];
    in = I.reshape(x, {outer, x.elements() / std::max<int64_t>(outer, 1)});
    dim = 1;
  }
  Val r;
  if (I.node->opType == "Softmax") {
    r = I.emit(absl::StrCat("fusec.softmax ", I.use(in), " dim ", dim, " : ", I.ty(in)), in.dtype,
               in.shape);
  } else {
    TRY(m, I.reduce("max", in, {dim}, true));
    TRY(d, I.binary("sub", in, m));
    TRY(s, I.reduce("sum", I.unary("exp", d), {dim}, true));
    TRY(l, I.binary("sub", d, I.unary("log", s)));
    r = l;
  }
  return I.define(0, I.reshape(r, x.shape));
}

/// NegativeLogLikelihoodLoss of `x` [N, C, d...] (log-probabilities) and
/// integer `target` [N, d...]: -x[n, target, d...] (0 where target is
/// ignore_index), times weight[target] when a weight [C] is given (clamped
/// into [0, C), as ONNX's reference takes it), then reduction "none",
/// "sum" or "mean" (the sum over the weights of the targets not ignored,
/// or the count of those, when there is a weight or an ignore_index; else
/// the mean). The element of x is picked by a sum over C of a select
/// (exact: one term is not zero), so no index is ever out of range.
absl::StatusOr<Val> nllLoss(Importer &I, Val x, Val target, std::optional<Val> weight) {
  if (!isFloat(x.dtype))
    return I.invalid(absl::StrCat("input is ", I.ty(x), ", expected floats"));
  if (x.shape.size() < 2)
    return I.invalid(absl::StrCat("input is ", I.ty(x), ", expected [N, C, d...]"));
  std::vector<int64_t> tshape = x.shape;
  tshape.erase(tshape.begin() + 1);
  if (!isInteger(target.dtype) || target.shape != tshape)
    return I.invalid(absl::StrCat("target is ", I.ty(target), ", expected integers of shape [",
                                  absl::StrJoin(tshape, ", "), "]"));
  int64_t c = x.shape[1];
  std::string reduction = I.attrString("reduction").value_or("mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return I.invalid(absl::StrCat("reduction '", reduction, "' is not none, sum or mean"));
  const onnx::Attribute *ii = I.node->attr("ignore_index");
  bool ignore = ii && (ii->has & onnx::Attribute::kI);
  Val t = I.cast(target, DType::I64);
  std::vector<int64_t> unsq = tshape;
  unsq.insert(unsq.begin() + 1, 1);
  TRY(iota, I.axisIota(x.shape, 1));
  Val hit = I.compare("eq", iota, I.broadcastTo(I.reshape(t, unsq), x.shape));
  TRY(sel, I.select(hit, x, I.broadcastTo(I.constant(x.dtype, 0), x.shape)));
  TRY(picked, I.reduce("sum", sel, {1}, false));
  TRY(loss, I.binary("sub", I.broadcastTo(I.constant(x.dtype, 0), tshape), picked));
  std::optional<Val> valid;
  if (ignore) {
    valid = I.compare("ne", t, I.broadcastTo(I.intConstant(DType::I64, ii->i), tshape));
    TRY(kept, I.select(*valid, loss, I.broadcastTo(I.constant(x.dtype, 0), tshape)));
    loss = kept;
  }
  std::optional<Val> w;
  if (weight) {
    if (weight->shape.size() != 1 || weight->shape[0] != c || !isFloat(weight->dtype))
      return I.invalid(absl::StrCat("weight is ", I.ty(*weight), ", expected ", c, " floats"));
    TRY(lo, I.binary("max", t, I.broadcastTo(I.intConstant(DType::I64, 0), tshape)));
    TRY(clamped, I.binary("min", lo, I.broadcastTo(I.intConstant(DType::I64, c - 1), tshape)));
    Val wt = I.cast(I.gatherFlat(*weight, clamped), x.dtype);
    if (valid) {
      TRY(kept, I.select(*valid, wt, I.broadcastTo(I.constant(x.dtype, 0), tshape)));
      wt = kept;
    }
    TRY(weighted, I.binary("mul", loss, wt));
    loss = weighted;
    w = wt;
  } else if (valid) {
    w = I.cast(*valid, x.dtype);
  }
  if (reduction == "none")
    return loss;
  std::vector<int64_t> all;
  for (size_t d = 0; d < tshape.size(); ++d)
    all.push_back(static_cast<int64_t>(d));
  TRY(sum, I.reduce("sum", loss, all, false));
  if (reduction == "sum")
    return sum;
  if (!w)
    return I.reduce("mean", loss, all, false);
  TRY(total, I.reduce("sum", *w, all, false));
  return I.binary("div", sum, total);
}

absl::Status importNegativeLogLikelihoodLoss(Importer &I) {
  TRY(x, I.input(0));
  TRY(target, I.input(1));
  std::optional<Val> weight;
  if (I.hasInput(2)) {
    TRY(wv, I.input(2));
    weight = wv;
  }
  TRY(loss, nllLoss(I, x, target, weight));
  return I.define(0, loss);
}

/// SoftmaxCrossEntropyLoss: log_softmax over the classes (dim 1), then
/// NegativeLogLikelihoodLoss's; the second output is the log-probabilities.
absl::Status importSoftmaxCrossEntropyLoss(Importer &I) {
  TRY(x, I.input(0));
  TRY(target, I.input(1));
  if (!isFloat(x.dtype) || x.shape.size() < 2)
    return I.invalid(absl::StrCat("scores are ", I.ty(x), ", expected floats [N, C, d...]"));
  TRY(m, I.reduce("max", x, {1}, true));
  TRY(d, I.binary("sub", x, m));
  TRY(s, I.reduce("sum", I.unary("exp", d), {1}, true));
  TRY(logp, I.binary("sub", d, I.unary("log", s)));
  std::optional<Val> weight;
  if (I.hasInput(2)) {
    TRY(wv, I.input(2));
    weight = wv;
  }
  TRY(loss, nllLoss(I, logp, target, weight));
  if (auto st = I.define(0, loss); !st.ok())
    return st;
  if (I.hasOutput(1))
    return I.define(1, logp);
  return absl::OkStatus();
}

absl::Status importLayerNormalization(Importer &I) {
  bool stats = false;
  for (size_t i = 1; i < I.numOutputs(); ++i)
    stats |= I.hasOutput(i);
  TRY(x, I.input(0));
  TRY(scale, I.input(1));
  int64_t rank = static_cast<int64_t>(x.shape.size());
  TRY(ax, I.axis(I.attrInt("axis", -1), rank));
  int64_t outer = 1;
  for (int64_t d = 0; d < ax; ++d)
    outer *= x.shape[d];
  int64_t inner = x.elements() / std::max<int64_t>(outer, 1);
  std::vector<int64_t> normShape(x.shape.begin() + ax, x.shape.end());
  Val bias;
  if (I.hasInput(2)) {
    TRY(b, I.input(2));
    bias = b;
  } else {
    bias = I.broadcastTo(I.constant(x.dtype, 0), normShape);
  }
  // TorchScript's fp16 export casts the residual stream to f32 before a
  // LayerNormalization whose Scale and B stay f16 (ViT, GPT-2). ONNX's
  // type rule wants one T; the normalization runs in X's type, so the
  // parameters are cast to it (exact from f16/bf16 to f32).
  if (isFloat(x.dtype) && isFloat(scale.dtype) && scale.dtype != x.dtype)
    scale = I.cast(scale, x.dtype);
  if (isFloat(x.dtype) && isFloat(bias.dtype) && bias.dtype != x.dtype)
    bias = I.cast(bias, x.dtype);
  if (!isFloat(x.dtype) || scale.dtype != x.dtype || bias.dtype != x.dtype)
    return I.unsupported(absl::StrCat("LayerNormalization needs one float type; X is ",
                                      dtypeName(x.dtype), ", Scale ", dtypeName(scale.dtype),
                                      ", B ", dtypeName(bias.dtype)));
  Val g = I.reshape(I.broadcastTo(scale, normShape), {inner});
  Val b = I.reshape(I.broadcastTo(bias, normShape), {inner});
  Val in = I.reshape(x, {outer, inner});
  if (stats) {
    // Mean and InvStdDev are outputs too: the normalization written out
    // (in the stash type, f32), the statistics kept with size-1 dims.
    Val xf = I.cast(in, DType::F32);
    TRY(mean, I.reduce("mean", xf, {1}, true));
    TRY(d, I.binary("sub", xf, mean));
    TRY(sq, I.binary("mul", d, d));
    TRY(var, I.reduce("mean", sq, {1}, true));
    TRY(ve, I.binary("add", var, I.constant(DType::F32, I.attrFloat("epsilon", 1e-5f))));
    Val inv = I.unary("rsqrt", ve);
    TRY(nrm, I.binary("mul", d, inv));
    TRY(sc, I.binary("mul", I.cast(nrm, x.dtype), I.reshape(g, {1, inner})));
    TRY(y, I.binary("add", sc, I.reshape(b, {1, inner})));
    std::vector<int64_t> statShape(x.shape.begin(), x.shape.begin() + ax);
    statShape.resize(x.shape.size(), 1);
    if (auto st = I.define(0, I.reshape(y, x.shape)); !st.ok())
      return st;
    if (I.numOutputs() > 1)
      if (auto st = I.define(1, I.reshape(mean, statShape)); !st.ok())
        return st;
    if (I.numOutputs() > 2)
      return I.define(2, I.reshape(inv, statShape));
    return absl::OkStatus();
  }
  Val y = I.emit(absl::StrCat("fusec.layer_norm ", I.use(in), ", ", I.use(g), ", ", I.use(b),
                              " {epsilon = ", floatText(I.attrFloat("epsilon", 1e-5f)),
                              " : f64} : (", I.ty(in), ", ", I.ty(g), ", ", I.ty(b), ") -> ",
                              I.ty(in)),
                 in.dtype, in.shape);
  return I.define(0, I.reshape(y, x.shape));
}

absl::Status importTrilu(Importer &I) {
  TRY(x, I.input(0));
  int64_t k = 0;
  if (I.hasInput(1)) {
    TRY(kv, I.knownInts(1));
    if (kv.size() != 1)
      return I.invalid("k must be a scalar");
    k = kv[0];
  }
  if (x.shape.size() < 2)
    return I.invalid("Trilu needs rank 2 or more");
  bool upper = I.attrInt("upper", 1);
  int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  // Where it is large (a causal mask of an LLM's context), j - i against k
  // at run time, not a constant of rows x cols.
  Val mask;
  if (rows * cols <= Importer::smallMapElements(/*indexMap=*/false)) {
    TRY(known, I.knownMask({rows, cols}, [&](const std::vector<int64_t> &c) {
      int64_t i = c[0], j = c[1];
      return upper ? (j - i >= k) : (j - i <= k);
    }));
    mask = known;
  } else {
    TRY(row, I.axisIota({rows, cols}, 0));
    TRY(col, I.axisIota({rows, cols}, 1));
    TRY(diff, I.binary("sub", col, row));
    mask = I.compare(upper ? "ge" : "le", diff,
                     I.broadcastTo(I.intConstant(DType::I64, k), {rows, cols}));
  }
  Val zero = isFloat(x.dtype) ? I.constant(x.dtype, 0) : I.intConstant(x.dtype, 0);
  TRY(r, I.select(mask, x, zero));
  return I.define(0, r);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// A product [..., M, N] of a 1-D lhs (`vecA`, taken as [1, K]) or rhs
/// (`vecB`, [K, 1]) without the dim that stood for it, as ONNX MatMul's
/// result has it.
Val dropVectorDims(Importer &I, Val r, bool vecA, bool vecB) {
  if (!vecA && !vecB)
    return r;
  std::vector<int64_t> out(r.shape.begin(), r.shape.end() - 2);
  if (!vecA)
    out.push_back(r.shape[r.shape.size() - 2]);
  if (!vecB)
    out.push_back(r.shape.back());
  return I.reshape(r, out);
}

} // namespace

/// a x b with ONNX MatMul's (and Gemm's transA/transB) shape rules: a 1-D
/// operand is a row on the left, a column on the right (its dim dropped
/// from the result); batch dims broadcast.
absl::StatusOr<Val> matmulOf(Importer &I, Val a, Val b, bool ta, bool tb) {
  if (a.shape.empty() || b.shape.empty())
    return I.invalid("scalar MatMul operands");
  if (a.dtype != b.dtype)
    return I.invalid("MatMul operands of two types");
  bool vecA = a.shape.size() == 1, vecB = b.shape.size() == 1;
  if (vecA)
    a = I.reshape(a, {1, a.shape[0]});
  if (vecB)
    b = I.reshape(b, {b.shape[0], 1});
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t m = ta ? a.shape[ra - 1] : a.shape[ra - 2], k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  int64_t k2 = tb ? b.shape[rb - 1] : b.shape[rb - 2], n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  if (k != k2)
    return I.invalid(absl::StrCat("contracting dims ", k, " and ", k2));
  std::vector<int64_t> batchA(a.shape.begin(), a.shape.end() - 2),
      batchB(b.shape.begin(), b.shape.end() - 2);
  TRY(batch, broadcastShapes(batchA, batchB));
  std::vector<int64_t> sa = batch, sb = batch;
  sa.insert(sa.end(), a.shape.end() - 2, a.shape.end());
  a = I.broadcastTo(a, sa);
  if (rb > 2 || batch.empty()) {
    sb.insert(sb.end(), b.shape.end() - 2, b.shape.end());
    b = I.broadcastTo(b, sb);
  }
  std::vector<int64_t> shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  std::string flags;
  if (ta || tb)
    flags = absl::StrCat(" {", ta ? "transpose_lhs" : "", ta && tb ? ", " : "",
                         tb ? "transpose_rhs" : "", "}");
  Val r = I.emit(absl::StrCat("fusec.matmul ", I.use(a), ", ", I.use(b), flags, " : (", I.ty(a),
                              ", ", I.ty(b), ") -> ", typeOf(a.dtype, shape)),
                 a.dtype, shape);
  return dropVectorDims(I, r, vecA, vecB);
}

namespace {

absl::Status importMatMul(Importer &I) {
  const std::string &op = I.node->opType;
  TRY(a, I.input(0));
  TRY(b, I.input(1));
  bool ta = op == "Gemm" && I.attrInt("transA", 0), tb = op == "Gemm" && I.attrInt("transB", 0);
  if (op == "Gemm" && (a.shape.size() != 2 || b.shape.size() != 2))
    return I.invalid(absl::StrCat("Gemm of ", I.ty(a), " and ", I.ty(b), ", expected matrices"));
  TRY(r, matmulOf(I, a, b, ta, tb));
  if (op == "Gemm") {
    float alpha = I.attrFloat("alpha", 1), beta = I.attrFloat("beta", 1);
    if (alpha != 1) {
      TRY(s, I.binary("mul", r, I.constant(r.dtype, alpha)));
      r = s;
    }
    if (I.hasInput(2) && beta != 0) {
      TRY(c, I.input(2));
      if (beta != 1) {
        TRY(s, I.binary("mul", c, I.constant(c.dtype, beta)));
        c = s;
      }
      TRY(s, I.binary("add", r, c));
      r = s;
    }
  }
  return I.define(0, r);
}

/// Whether input `i` of the node is ONNX int8 or uint8 (held in i32).
bool eightBit(Importer &I, size_t i) {
  std::optional<int32_t> t = I.narrowType(I.node->inputs[i]);
  return t && (*t == onnx::kInt8 || *t == onnx::kUint8);
}

/// sum over k of (a - a_zero_point)(b - b_zero_point) in int32, of int8 or
/// uint8 a [..., M, K] and b [..., K, N] (MatMulInteger, QLinearMatMul): the
/// node's inputs `aIn`, `bIn` and the optional zero points `aZpIn` (one
/// value, or one a row of a) and `bZpIn` (one, or one a column of b). The
/// differences are integers of at most 255 in magnitude, exact in f32, so
/// the product runs as an f32 `fusec.matmul`, exact while each output's
/// sum of magnitudes stays under 2^24: 255 x the largest over the columns
/// of sum |b - b_zero_point| (from b when it is known, else 255 a row of
/// K). K splits into runs that each stay under it (258 rows where b is not
/// known), each converted to i32; the runs add in i32 (wrapping, as ONNX's
/// int32 accumulation).
absl::StatusOr<Val> integerMatMul(Importer &I, size_t aIn, size_t bIn, size_t aZpIn,
                                  size_t bZpIn, const char *what) {
  TRY(a, I.inputData(aIn));
  TRY(b, I.inputData(bIn));
  if (a.dtype != DType::I32 || !eightBit(I, aIn) || b.dtype != DType::I32 || !eightBit(I, bIn))
    return I.invalid(absl::StrCat(what, " expects int8 or uint8 operands"));
  if (a.shape.empty() || b.shape.empty())
    return I.invalid(absl::StrCat("scalar ", what, " operands"));
  bool vecA = a.shape.size() == 1, vecB = b.shape.size() == 1;
  if (vecA)
    a = I.reshape(a, {1, a.shape[0]});
  if (vecB)
    b = I.reshape(b, {b.shape[0], 1});
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  if (b.shape[rb - 2] != k)
    return I.invalid(absl::StrCat("contracting dims ", k, " and ", b.shape[rb - 2]));
  Val da = a, db = b;
  if (I.hasInput(aZpIn)) {
    TRY(z, I.inputData(aZpIn));
    if (z.shape.size() > 1 || (z.elements() != 1 && z.elements() != m) || !eightBit(I, aZpIn))
      return I.invalid(absl::StrCat("a_zero_point is ", I.ty(z), ", expected one int8 or uint8 ",
                                    "value or one a row (", m, ")"));
    TRY(d, I.binary("sub", a, I.reshape(z, z.elements() == 1 ? std::vector<int64_t>{}
                                                              : std::vector<int64_t>{m, 1})));
    da = d;
  }
  std::shared_ptr<const HostTensor> bZero;
  bool bZeroKnown = true;
  if (I.hasInput(bZpIn)) {
    TRY(z, I.inputData(bZpIn));
    if (z.shape.size() > 1 || (z.elements() != 1 && z.elements() != n) || !eightBit(I, bZpIn))
      return I.invalid(absl::StrCat("b_zero_point is ", I.ty(z), ", expected one int8 or uint8 ",
                                    "value or one a column (", n, ")"));
    bZero = z.known;
    bZeroKnown = z.known != nullptr;
    TRY(d, I.binary("sub", b, I.reshape(z, z.elements() == 1 ? std::vector<int64_t>{}
                                                              : std::vector<int64_t>{n})));
    db = d;
  }
  // Runs [k0, k1) of K whose bound stays under 2^24 for every column (of
  // every batch of b).
  constexpr int64_t kExact = int64_t(1) << 24, kMaxRuns = 64;
  std::vector<std::pair<int64_t, int64_t>> runs;
  if (!(b.known && bZeroKnown)) {
    int64_t width = (kExact - 1) / (255 * 255);
    if ((k + width - 1) / width > kMaxRuns)
      return I.unsupported(absl::StrCat(what, " over K = ", k, ": more than ", kMaxRuns,
                                        " runs of ", width, " (exact f32 sums under 2^24)"));
    for (int64_t k0 = 0; k0 < k; k0 += width)
      runs.push_back({k0, std::min(k, k0 + width)});
  } else {
    int64_t batches = b.elements() / std::max<int64_t>(1, k * n);
    auto zeroAt = [&](int64_t j) -> int64_t {
      return bZero ? bZero->ints[static_cast<size_t>(bZero->ints.size() == 1 ? 0 : j)] : 0;
    };
    // No column (an empty b): no sum to bound, one run (not a walk of K).
    if (batches * n == 0)
      runs.push_back({0, k});
    for (int64_t k0 = 0; k0 < k && batches * n != 0;) {
      std::vector<int64_t> sum(static_cast<size_t>(batches * n), 0);
      int64_t k1 = k0;
      for (; k1 < k; ++k1) {
        bool fits = true;
        for (int64_t c = 0; c < batches * n && fits; ++c) {
          int64_t v = b.known->ints[static_cast<size_t>((c / n * k + k1) * n + c % n)];
          fits = 255 * (sum[static_cast<size_t>(c)] + std::abs(v - zeroAt(c % n))) < kExact;
        }
        if (!fits)
          break;
        for (int64_t c = 0; c < batches * n; ++c) {
          int64_t v = b.known->ints[static_cast<size_t>((c / n * k + k1) * n + c % n)];
          sum[static_cast<size_t>(c)] += std::abs(v - zeroAt(c % n));
        }
      }
      if (static_cast<int64_t>(runs.size()) == kMaxRuns)
        return I.unsupported(absl::StrCat(what, " whose sums need more than ", kMaxRuns,
                                          " runs of K under 2^24"));
      runs.push_back({k0, k1});
      k0 = k1;
    }
  }
  std::optional<Val> total;
  for (auto [k0, k1] : runs) {
    Val ar = da, br = db;
    if (runs.size() > 1) {
      std::vector<int64_t> aoff(ra, 0), astep(ra, 1), ashape = a.shape;
      aoff[ra - 1] = k0;
      ashape[ra - 1] = k1 - k0;
      std::vector<int64_t> boff(rb, 0), bstep(rb, 1), bshape = b.shape;
      boff[rb - 2] = k0;
      bshape[rb - 2] = k1 - k0;
      ar = I.slice(da, aoff, astep, ashape);
      br = I.slice(db, boff, bstep, bshape);
    }
    TRY(y, matmulOf(I, I.cast(ar, DType::F32), I.cast(br, DType::F32), false, false));
    if (auto st = addExactRun(I, total, y); !st.ok())
      return st;
  }
  return dropVectorDims(I, *total, vecA, vecB);
}

absl::Status importMatMulInteger(Importer &I) {
  TRY(y, integerMatMul(I, 0, 1, 2, 3, "MatMulInteger"));
  return I.define(0, y);
}

/// QLinearMatMul: saturate(round(the int32 product of the zero-point
/// differences x a_scale x b_scale / y_scale) + y_zero_point); the product
/// exact as MatMulInteger's, the rest in f32. a_scale is one value or one a
/// row, b_scale one or one a column.
absl::Status importQLinearMatMul(Importer &I) {
  TRY(acc, integerMatMul(I, 0, 3, 2, 5, "QLinearMatMul"));
  TRY(a, I.input(0));
  TRY(b, I.input(3));
  int64_t m = a.shape.size() > 1 ? a.shape[a.shape.size() - 2] : 1;
  int64_t n = b.shape.size() > 1 ? b.shape.back() : 1;
  TRY(as, I.input(1));
  TRY(bs, I.input(4));
  TRY(ys, I.input(6));
  for (const Val *v : {&as, &bs, &ys})
    if (!isFloat(v->dtype))
      return I.invalid(absl::StrCat("a scale is ", I.ty(*v), ", expected floats"));
  if ((as.elements() != 1 && as.elements() != m) || (bs.elements() != 1 && bs.elements() != n) ||
      ys.elements() != 1 || as.shape.size() > 1 || bs.shape.size() > 1)
    return I.invalid(absl::StrCat("a_scale must be one value or one a row (", m,
                                  "), b_scale one or one a column (", n, "), y_scale one"));
  Val asShaped = I.reshape(as, as.elements() == 1 ? std::vector<int64_t>{}
                                                  : std::vector<int64_t>{m, 1});
  Val bsShaped = I.reshape(bs, bs.elements() == 1 ? std::vector<int64_t>{}
                                                  : std::vector<int64_t>{n});
  TRY(num, I.binary("mul", I.cast(asShaped, DType::F32), I.cast(bsShaped, DType::F32)));
  TRY(mult, I.binary("div", num, I.cast(I.reshape(ys, {}), DType::F32)));
  TRY(q, I.binary("mul", I.cast(acc, DType::F32), mult));
  TRY(y, quantizeRounded(I, q, 7, "y_zero_point"));
  return I.define(0, y);
}

/// DynamicQuantizeLinear: uint8 y, y_scale and y_zero_point of a float x,
/// with the range [min(0, min x), max(0, max x)] spread over 0-255:
/// y_scale = (max - min) / 255, y_zero_point = saturate(round(-min /
/// y_scale)), y = saturate(round(x / y_scale) + y_zero_point), in f32.
absl::Status importDynamicQuantizeLinear(Importer &I) {
  TRY(x, I.input(0));
  if (!isFloat(x.dtype))
    return I.invalid(absl::StrCat("x is ", I.ty(x), ", expected floats"));
  Val xf = I.cast(x, DType::F32);
  std::vector<int64_t> all;
  for (size_t d = 0; d < x.shape.size(); ++d)
    all.push_back(static_cast<int64_t>(d));
  TRY(lo, I.reduce("min", xf, all, false));
  TRY(hi, I.reduce("max", xf, all, false));
  Val zero = I.constant(DType::F32, 0);
  TRY(lo0, I.binary("min", lo, zero));
  TRY(hi0, I.binary("max", hi, zero));
  TRY(range, I.binary("sub", hi0, lo0));
  TRY(scale, I.binary("div", range, I.constant(DType::F32, 255)));
  TRY(negLo, I.binary("sub", zero, lo0));
  TRY(z, I.binary("div", negLo, scale));
  TRY(zlo, I.binary("max", I.unary("round", z), zero));
  TRY(zhi, I.binary("min", zlo, I.constant(DType::F32, 255)));
  TRY(q, I.binary("div", xf, scale));
  TRY(r, I.binary("add", I.unary("round", q), zhi));
  TRY(ylo, I.binary("max", r, zero));
  TRY(yhi, I.binary("min", ylo, I.constant(DType::F32, 255)));
  if (auto st = I.define(0, I.cast(yhi, DType::I32)); !st.ok())
    return st;
  if (I.hasOutput(1))
    if (auto st = I.define(1, scale); !st.ok())
      return st;
  if (I.hasOutput(2))
    return I.define(2, I.cast(zhi, DType::I32));
  return absl::OkStatus();
}

/// An einsum index as a message names it ('...' dims are characters below
/// ' ': the first, second, ... dim the ellipsis stands for).
std::string indexName(char c) {
  if (static_cast<unsigned char>(c) < ' ')
    return absl::StrCat("'...' dim ", static_cast<int>(c) - 1);
  return absl::StrCat("'", std::string(1, c), "'");
}

/// The contraction of one or two operands, each index at most once per
/// operand, into the indices `out`: an operand's indices missing from the
/// output and the other operand are summed first; the two are then a
/// batched matmul over the shared indices (batch: also in the output;
/// contracted: not). Extents of 1 broadcast.
absl::StatusOr<Val> einsumPair(Importer &I, std::vector<std::string> terms, std::vector<Val> ops,
                               const std::string &out) {
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Val &v = ops[i];
    if (v.shape.size() != terms[i].size())
      return I.invalid(absl::StrCat("operand ", i, " has rank ", v.shape.size(), " for '",
                                    terms[i], "'"));
    for (size_t j = 0; j < terms[i].size(); ++j) {
      auto [it, fresh] = extent.insert({terms[i][j], v.shape[j]});
      if (!fresh && it->second != v.shape[j] && it->second != 1 && v.shape[j] != 1)
        return I.invalid(absl::StrCat("index ", indexName(terms[i][j]), " has extents ",
                                      it->second, " and ", v.shape[j]));
      it->second = std::max(it->second, v.shape[j]);
    }
  }
  for (char c : out)
    if (!extent.count(c))
      return I.invalid(absl::StrCat("output index ", indexName(c), " is in no operand"));
  auto has = [](const std::string &s, char c) { return s.find(c) != std::string::npos; };
  // Sum away indices only one operand has and the output lacks.
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<int64_t> axes;
    std::string kept;
    for (size_t j = 0; j < terms[i].size(); ++j) {
      char c = terms[i][j];
      bool elsewhere = has(out, c) || (ops.size() == 2 && has(terms[1 - i], c));
      if (elsewhere)
        kept += c;
      else
        axes.push_back(static_cast<int64_t>(j));
    }
    if (!axes.empty()) {
      TRY(r, I.reduce("sum", ops[i], axes, false));
      ops[i] = r;
      terms[i] = kept;
    }
  }
  auto permuteTo = [&](Val v, const std::string &from, const std::string &to) {
    std::vector<int64_t> perm;
    for (char c : to)
      perm.push_back(static_cast<int64_t>(from.find(c)));
    return I.transpose(v, perm);
  };
  if (ops.size() == 1)
    return permuteTo(ops[0], terms[0], out);
  std::string a = terms[0], b = terms[1], batch, contract, freeA, freeB;
  for (char c : a) {
    if (has(b, c))
      (has(out, c) ? batch : contract) += c;
    else
      freeA += c;
  }
  for (char c : b)
    if (!has(a, c))
      freeB += c;
  auto product = [&](const std::string &s) {
    int64_t p = 1;
    for (char c : s)
      p *= extent[c];
    return p;
  };
  auto full = [&](Val v, const std::string &idx) {
    std::vector<int64_t> shape;
    for (char c : idx)
      shape.push_back(extent[c]);
    return I.broadcastTo(v, shape);
  };
  Val av = full(permuteTo(ops[0], a, batch + freeA + contract), batch + freeA + contract);
  Val bv = full(permuteTo(ops[1], b, batch + contract + freeB), batch + contract + freeB);
  int64_t B = product(batch), M = product(freeA), K = product(contract), N = product(freeB);
  Val a3 = I.reshape(av, {B, M, K}), b3 = I.reshape(bv, {B, K, N});
  Val mm = I.emit(absl::StrCat("fusec.matmul ", I.use(a3), ", ", I.use(b3), " : (", I.ty(a3), ", ",
                               I.ty(b3), ") -> ", typeOf(a3.dtype, {B, M, N})),
                  a3.dtype, {B, M, N});
  std::string idx = batch + freeA + freeB;
  std::vector<int64_t> shape;
  for (char c : idx)
    shape.push_back(extent[c]);
  return permuteTo(I.reshape(mm, shape), idx, out);
}


/// Einsum in full: '...' (as many dims as the operand has beyond its
/// letters, aligned to the right across operands and broadcast), an index
/// repeated within an operand (its diagonal, taken by one gather), the
/// implicit output (no '->': the indices that occur once, '...' first and
/// the letters in order) and any number of operands, contracted left to
/// right (each pair keeps the indices the output or a later operand has).
absl::Status importEinsum(Importer &I) {
  auto eq = I.attrString("equation");
  if (!eq)
    return I.invalid("no equation");
  std::string e;
  for (char c : *eq)
    if (c != ' ')
      e += c;
  size_t arrow = e.find("->");
  bool implicit = arrow == std::string::npos;
  std::string lhs = e.substr(0, arrow), out = implicit ? "" : e.substr(arrow + 2);
  std::vector<std::string> terms;
  for (size_t s = 0;;) {
    size_t c = lhs.find(',', s);
    terms.push_back(lhs.substr(s, c == std::string::npos ? std::string::npos : c - s));
    if (c == std::string::npos)
      break;
    s = c + 1;
  }
  if (terms.size() != I.numInputs() || terms.empty())
    return I.invalid(absl::StrCat("the equation has ", terms.size(), " operands, the node ",
                                  I.numInputs(), " inputs"));
  auto isLetter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  // '...' becomes characters 1, 2, ... (the ellipsis' dims, the last
  // aligned with the last): an operand with fewer takes the last ones.
  auto expand = [&](std::string &t, int64_t dims, int64_t most) -> absl::Status {
    size_t dots = t.find("...");
    if (dots == std::string::npos)
      return absl::OkStatus();
    if (t.find("...", dots + 3) != std::string::npos)
      return I.invalid(absl::StrCat("'", t, "' has two '...'"));
    std::string dimsOf;
    for (int64_t k = most - dims; k < most; ++k)
      dimsOf += static_cast<char>(1 + k);
    t = t.substr(0, dots) + dimsOf + t.substr(dots + 3);
    return absl::OkStatus();
  };
  std::vector<Val> ops;
  std::vector<int64_t> ellipsis(terms.size(), 0);
  int64_t most = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    TRY(v, I.input(i));
    int64_t letters = 0;
    for (char c : terms[i]) {
      if (isLetter(c))
        ++letters;
      else if (c != '.')
        return I.invalid(absl::StrCat("'", std::string(1, c), "' in the equation (indices are "
                                      "letters)"));
    }
    bool dots = terms[i].find("...") != std::string::npos;
    int64_t rank = static_cast<int64_t>(v.shape.size());
    if (dots ? rank < letters : rank != letters)
      return I.invalid(absl::StrCat("operand ", i, " is ", I.ty(v), " for '", terms[i], "'"));
    ellipsis[i] = dots ? rank - letters : 0;
    most = std::max(most, ellipsis[i]);
    ops.push_back(v);
  }
  if (most > 30)
    return I.unsupported(absl::StrCat("'...' standing for ", most, " dims (at most 30)"));
  for (size_t i = 0; i < terms.size(); ++i)
    if (auto st = expand(terms[i], ellipsis[i], most); !st.ok())
      return st;
  if (implicit) {
    std::map<char, int> count;
    for (const std::string &t : terms)
      for (char c : t)
        ++count[c];
    for (auto [c, n] : count) // '...' dims sort first, then the letters
      if (n == 1 || static_cast<unsigned char>(c) < ' ')
        if (std::string(1, c) != "." && out.find(c) == std::string::npos)
          out += c;
  } else {
    for (char c : out)
      if (!isLetter(c) && c != '.')
        return I.invalid(absl::StrCat("'", std::string(1, c), "' in the output (indices are "
                                      "letters)"));
    // (An output without '...' sums the dims it stands for.)
    if (auto st = expand(out, most, most); !st.ok())
      return st;
  }
  {
    std::string sorted = out;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      return I.invalid("repeated output indices");
  }
  // Diagonals: an operand with a repeated index is its elements where those
  // coordinates agree, gathered at the flat index sum over its distinct
  // indices of the coordinate times the strides of its positions.
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string distinct;
    for (char c : terms[i])
      if (distinct.find(c) == std::string::npos)
        distinct += c;
    if (distinct.size() == terms[i].size())
      continue;
    const std::vector<int64_t> &shape = ops[i].shape;
    auto strides = stridesOf(shape);
    std::vector<int64_t> dshape, dstride;
    for (char c : distinct) {
      int64_t extent = -1, stride = 0;
      for (size_t j = 0; j < terms[i].size(); ++j) {
        if (terms[i][j] != c)
          continue;
        if (extent >= 0 && shape[j] != extent)
          return I.invalid(absl::StrCat("operand ", i, "'s diagonal over ", indexName(c),
                                        " has extents ", extent, " and ", shape[j]));
        extent = shape[j];
        stride += strides[j];
      }
      dshape.push_back(extent);
      dstride.push_back(stride);
    }
    if (elementCount(dshape) == 0 || ops[i].elements() == 0)
      return I.unsupported("an einsum of an empty operand");
    TRY(index, I.separableIndexMap(dshape, [&](int64_t d, int64_t c) { return c * dstride[d]; }));
    ops[i] = I.gatherFlat(ops[i], index);
    terms[i] = distinct;
  }
  // Left to right: each pair keeps what the output or a later operand reads.
  Val acc = ops[0];
  std::string accTerm = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    std::string keep;
    std::string both = accTerm + terms[i];
    for (char c : both) {
      if (keep.find(c) != std::string::npos)
        continue;
      bool later = out.find(c) != std::string::npos;
      for (size_t j = i + 1; j < terms.size() && !later; ++j)
        later = terms[j].find(c) != std::string::npos;
      if (later)
        keep += c;
    }
    TRY(pair, einsumPair(I, {accTerm, terms[i]}, {acc, ops[i]}, keep));
    acc = pair;
    accTerm = keep;
  }
  TRY(result, einsumPair(I, {accTerm}, {acc}, out));
  return I.define(0, result);
}

} // namespace

absl::Status addExactRun(Importer &I, std::optional<Val> &total, Val run) {
  Val yi = I.cast(run, DType::I32);
  if (!total) {
    total = yi;
    return absl::OkStatus();
  }
  FUSEC_TRY_ASSIGN(sum, I.binary("add", *total, yi));
  total = sum;
  return absl::OkStatus();
}

absl::StatusOr<Val> quantizeRounded(Importer &I, Val q, size_t zpIn, const char *what) {
  std::optional<int32_t> zpType =
      I.hasInput(zpIn) ? I.narrowType(I.node->inputs[zpIn]) : std::nullopt;
  int32_t type = zpType ? *zpType
                        : static_cast<int32_t>(I.attrInt("output_dtype", 0)
                                                   ? I.attrInt("output_dtype", 0)
                                                   : static_cast<int64_t>(onnx::kUint8));
  int64_t lo, hi;
  switch (type) {
  case onnx::kUint8: lo = 0, hi = 255; break;
  case onnx::kInt8: lo = -128, hi = 127; break;
  case onnx::kUint16: lo = 0, hi = 65535; break;
  case onnx::kInt16: lo = -32768, hi = 32767; break;
  default:
    return I.unsupported(absl::StrCat("quantizing to ", onnxTypeName(type),
                                      " (8- and 16-bit integers are supported)"));
  }
  Val r = I.unary("round", q);
  if (I.hasInput(zpIn)) {
    TRY(z, I.input(zpIn));
    if (z.dtype != DType::I32)
      return I.invalid(absl::StrCat(what, " is ", I.ty(z), ", expected an integer type"));
    Val zp = z;
    if (z.elements() == 1 && z.shape.size() <= 1) {
      zp = I.reshape(z, {});
    } else {
      TRY(shaped, quantParam(I, z, q.shape, what));
      zp = shaped;
    }
    TRY(shifted, I.binary("add", r, I.cast(zp, DType::F32)));
    r = shifted;
  }
  TRY(low, I.binary("max", r, I.constant(DType::F32, static_cast<double>(lo))));
  TRY(clamped, I.binary("min", low, I.constant(DType::F32, static_cast<double>(hi))));
  return I.cast(clamped, DType::I32);
}

const std::map<std::string, OpImporter> &opImporters() {
  static const std::map<std::string, OpImporter> table = {
      // Elementwise.
      {"Neg", unaryOp<kNeg>},
      {"Abs", unaryOp<kAbs>},
      {"Floor", unaryOp<kFloor>},
      {"Ceil", unaryOp<kCeil>},
      {"Round", unaryOp<kRound>},
      {"Sqrt", unaryOp<kSqrt>},
      {"Exp", unaryOp<kExp>},
      {"Log", unaryOp<kLog>},
      {"Tanh", unaryOp<kTanh>},
      {"Sin", unaryOp<kSin>},
      {"Cos", unaryOp<kCos>},
      {"Tan", importTan},
      {"Shrink", importShrink},
      {"BitShift", importBitShift},
      {"Sinh", importTrig},
      {"Cosh", importTrig},
      {"Asinh", importTrig},
      {"Acosh", importTrig},
      {"Atanh", importTrig},
      {"Atan", importTrig},
      {"Asin", importTrig},
      {"Acos", importTrig},
      {"Erf", unaryOp<kErf>},
      {"Sigmoid", unaryOp<kSigmoid>},
      {"Sign", unaryOp<kSign>},
      {"Not", unaryOp<kNot>},
      {"Add", binaryOp<kAdd>},
      {"Sub", binaryOp<kSub>},
      {"Mul", binaryOp<kMul>},
      {"Div", binaryOp<kDiv>},
      {"And", binaryOp<kAnd>},
      {"Or", binaryOp<kOr>},
      {"Xor", importXor},
      {"Equal", compareOp<kEq>},
      {"Greater", compareOp<kGt>},
      {"GreaterOrEqual", compareOp<kGe>},
      {"Less", compareOp<kLt>},
      {"LessOrEqual", compareOp<kLe>},
      {"Max", importVariadic},
      {"Min", importVariadic},
      {"Sum", importVariadic},
      {"Mean", importVariadic},
      {"Pow", importPow},
      {"Reciprocal", importReciprocal},
      {"Relu", importRelu},
      {"LeakyRelu", importEluFamily},
      {"Elu", importEluFamily},
      {"Selu", importEluFamily},
      {"HardSigmoid", importHardSigmoid},
      {"Softplus", importSoftplus},
      {"Softsign", importSoftsign},
      {"HardSwish", importActivations},
      {"Mish", importActivations},
      {"ThresholdedRelu", importActivations},
      {"Celu", importActivations},
      {"PRelu", importPRelu},
      {"Clip", importClip},
      {"Where", importWhere},
      {"Det", importDet},
      {"Cast", importCast},
      {"QuantizeLinear", importQuantizeLinear},
      {"DequantizeLinear", importDequantizeLinear},
      {"DynamicQuantizeLinear", importDynamicQuantizeLinear},
      {"CastLike", importCastLike},
      {"IsNaN", importIsNaN},
      {"IsInf", importIsInf},
      {"Mod", importMod},
      // Constants and shapes.
      {"Identity", importIdentity},
      {"Dropout", importIdentity},
      {"Constant", importConstant},
      {"Shape", importShape},
      {"Size", importSize},
      {"ConstantOfShape", importConstantOfShape},
      {"Range", importRange},
      {"Reshape", importReshapeFamily},
      {"Flatten", importReshapeFamily},
      {"Squeeze", importReshapeFamily},
      {"Unsqueeze", importReshapeFamily},
      {"Expand", importExpand},
      {"Transpose", importTranspose},
      {"DepthToSpace", importDepthSpace},
      {"SpaceToDepth", importDepthSpace},
      {"EyeLike", importEyeLike},
      {"OneHot", importOneHot},
      {"Concat", importConcat},
      {"Split", importSplit},
      {"Slice", importSlice},
      {"Tile", importTile},
      {"Pad", importPad},
      // Gathers and scatters.
      {"Gather", importGather},
      {"Compress", importCompress},
      {"ReverseSequence", importReverseSequence},
      {"GatherElements", importGatherElements},
      {"GatherND", importGatherND},
      {"ScatterND", importScatter},
      {"ScatterElements", importScatter},
      {"Scatter", importScatter}, // ScatterElements before opset 11
      // Reductions, scans, normalizations.
      {"ReduceSum", importReduce},
      {"ReduceMean", importReduce},
      {"ReduceMax", importReduce},
      {"ReduceMin", importReduce},
      {"ReduceProd", importReduce},
      {"ReduceSumSquare", importReduce},
      {"ReduceL1", importReduce},
      {"ReduceL2", importReduce},
      {"ReduceLogSum", importReduce},
      {"ReduceLogSumExp", importReduce},
      {"ArgMax", importArgMaxMin},
      {"ArgMin", importArgMaxMin},
      {"Hardmax", importHardmax},
      {"CumSum", importCumSum},
      {"TopK", importTopK},
      {"GlobalAveragePool", importGlobalPool},
      {"GlobalMaxPool", importGlobalPool},
      {"MeanVarianceNormalization", importMeanVarianceNormalization},
      {"Softmax", importSoftmax},
      {"LogSoftmax", importSoftmax},
      {"NegativeLogLikelihoodLoss", importNegativeLogLikelihoodLoss},
      {"SoftmaxCrossEntropyLoss", importSoftmaxCrossEntropyLoss},
      {"LayerNormalization", importLayerNormalization},
      {"LRN", importLRN},
      {"Trilu", importTrilu},
      // Recurrent layers, unrolled (OnnxRecurrent.cpp).
      {"RNN", importRNN},
      {"GRU", importRNN},
      {"LSTM", importRNN},
      // Signal processing (OnnxSignal.cpp).
      {"HannWindow", importSignalOp},
      {"HammingWindow", importSignalOp},
      {"BlackmanWindow", importSignalOp},
      {"MelWeightMatrix", importSignalOp},
      {"DFT", importSignalOp},
      {"STFT", importSignalOp},
      // Contractions.
      {"MatMul", importMatMul},
      {"Gemm", importMatMul},
      {"Einsum", importEinsum},
      {"MatMulInteger", importMatMulInteger},
      {"QLinearMatMul", importQLinearMatMul},
      // Convolutional networks (OnnxVision.cpp).
      {"Conv", importConv},
      {"ConvTranspose", importConv},
      {"ConvInteger", importConvInteger},
      {"QLinearConv", importQLinearConv},
      {"MaxPool", importPool},
      {"AveragePool", importPool},
      {"BatchNormalization", importBatchNormalization},
      {"InstanceNormalization", importInstanceNormalization},
      {"Resize", importResize},
      {"Upsample", importResize},
      {"GridSample", importGridSample},
      {"RoiAlign", importRoiAlign},
      {"MaxUnpool", importMaxUnpool},
  };
  return table;
}

} // namespace fusec::onnximport
