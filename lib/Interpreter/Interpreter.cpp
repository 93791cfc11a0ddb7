//===- Interpreter.cpp - Reference interpreter for fusec graphs -*- C++ -*-===//
//
// A direct, unoptimized evaluator: clarity over speed. Each float op computes
// in f64 and rounds its results to their storage type; integer ops compute in
// int64 and wrap to their width (no integer passes through a double).
//
//===----------------------------------------------------------------------===//

#include "fusec/Interpreter/Interpreter.h"
#include "fusec/IR/Fusec.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <unistd.h>
#include <map>
#include <limits>

using namespace mlir;

namespace fusec {

absl::StatusOr<std::pair<DType, std::vector<int64_t>>>
tensorTypeInfo(Type type) {
  std::string typeStr;
  llvm::raw_string_ostream(typeStr) << type;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return absl::InvalidArgumentError(
        absl::StrCat("expected a ranked tensor type, got ", typeStr));
  if (!tensor.hasStaticShape())
    return absl::InvalidArgumentError(absl::StrCat(
        "dynamic shape ", typeStr, ": specialize it to a static shape first"));
  std::optional<DType> dtype = dtypeOf(tensor);
  if (!dtype)
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported element type in ", typeStr));
  return std::make_pair(*dtype, std::vector<int64_t>(tensor.getShape().begin(),
                                                     tensor.getShape().end()));
}

namespace {

std::string locationString(Location loc) {
  if (auto fl = loc->findInstanceOf<FileLineColLoc>())
    return absl::StrCat(fl.getFilename().str(), ":", fl.getLine(), ":",
                        fl.getColumn());
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    // Wrapping (unsigned): a tensor with an empty dim may have others whose
    // product passes int64; it has no element to index.
    strides[i] = static_cast<int64_t>(static_cast<uint64_t>(strides[i + 1]) *
                                      static_cast<uint64_t>(shape[i + 1]));
  return strides;
}

/// Calls fn(flatIndex, multiIndex) for every element of `shape`, in order.
template <typename Fn> void forEachIndex(const std::vector<int64_t> &shape, Fn fn) {
  int64_t n = elementCount(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(flat, idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

int64_t ravel(const std::vector<int64_t> &idx,
              const std::vector<int64_t> &strides) {
  int64_t flat = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    flat += idx[i] * strides[i];
  return flat;
}

double nanAwareMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return std::max(a, b);
}
double nanAwareMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return std::min(a, b);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// The most elements a host tensor of the interpreter may hold: a quarter
/// of physical memory in its doubles (at most 2^40). A larger one is an
/// error naming it, not an allocation that aborts the process.
int64_t hostElementLimit() {
  static const int64_t limit = [] {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    double bytes = pages > 0 && size > 0 ? static_cast<double>(pages) * size : 16e9;
    return static_cast<int64_t>(std::min(bytes / 4 / sizeof(double), 0x1p40));
  }();
  return limit;
}

absl::Status checkHostSize(llvm::ArrayRef<int64_t> shape, const std::string &what) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > hostElementLimit())
      return absl::ResourceExhaustedError(absl::StrCat(
          what, " has more elements than the interpreter holds (", hostElementLimit(),
          ", a quarter of this machine's memory in doubles): run it at a smaller size"));
  return absl::OkStatus();
}

class Interpreter {
public:
  using Shared = std::shared_ptr<const HostTensor>;
  explicit Interpreter(const InterpretOptions &options = {})
      : options(options), rng(options.seed * 0x9E3779B97F4A7C15ull + 1) {}
  absl::StatusOr<std::vector<HostTensor>> runBlock(Block &block,
                                                   absl::Span<const HostTensor> args);
  /// The block's results as the values the interpreter holds (no copies).
  absl::StatusOr<std::vector<Shared>> runBlockShared(Block &block, absl::Span<const Shared> args);

private:
  absl::Status exec(Operation *op);
  absl::Status error(Operation *op, const std::string &msg) {
    return absl::InvalidArgumentError(absl::StrCat(
        locationString(op->getLoc()), ": '", op->getName().getStringRef().str(),
        "': ", msg));
  }
  const HostTensor &get(Value v) { return *env.find(v)->second; }
  absl::StatusOr<HostTensor> make(Operation *op, Value result) {
    auto info = tensorTypeInfo(result.getType());
    if (!info.ok())
      return error(op, std::string(info.status().message()));
    if (absl::Status st = checkHostSize(info->second, "the result"); !st.ok())
      return absl::ResourceExhaustedError(absl::StrCat(
          locationString(op->getLoc()), ": '", op->getName().getStringRef().str(), "': ",
          st.message()));
    return HostTensor(info->first, info->second);
  }
  void set(Value v, HostTensor t) {
    perturb(t);
    t.roundInPlace();
    env[v] = std::make_shared<const HostTensor>(std::move(t));
  }
  /// InterpretOptions::perturbation: each float element times 1 + d, d
  /// uniform in [-perturbation, perturbation].
  void perturb(HostTensor &t) {
    if (options.perturbation <= 0 || !isFloat(t.dtype))
      return;
    for (double &x : t.data) {
      rng += 0x9E3779B97F4A7C15ull; // splitmix64
      uint64_t z = rng;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      double u = static_cast<double>(z >> 11) * 0x1.0p-53; // [0, 1)
      x *= 1 + options.perturbation * (2 * u - 1);
    }
  }

  /// Elementwise ops: `fn` on floats (and i1), `ifn` on integers (null:
  /// an error on integer operands).
  absl::Status unary(Operation *op, double (*fn)(double), int64_t (*ifn)(int64_t) = nullptr);
  absl::Status binary(Operation *op, double (*fn)(double, double),
                      int64_t (*ifn)(int64_t, int64_t) = nullptr);

  absl::Status execConstant(ConstantOp op);
  absl::Status execCast(CastOp op);
  absl::Status execBroadcast(BroadcastOp op);
  absl::Status execTranspose(TransposeOp op);
  absl::Status execSlice(SliceOp op);
  absl::Status execConcat(ConcatOp op);
  absl::Status execGather(GatherOp op);
  absl::Status execReduce(ReduceOp op);
  absl::Status execMatmul(MatmulOp op);
  absl::Status execAttention(AttentionOp op);
  absl::Status execConv(ConvOp op);
  absl::Status execPool(PoolOp op);
  absl::Status execNorm(Operation *op, bool layerNorm, double eps);
  absl::Status execSoftmax(SoftmaxOp op);
  absl::Status execKernel(KernelOp op);

  /// Shared: a function's arguments and results are not copied in or out.
  llvm::DenseMap<Value, Shared> env;
  InterpretOptions options;
  uint64_t rng;
};

absl::StatusOr<std::vector<HostTensor>>
Interpreter::runBlock(Block &block, absl::Span<const HostTensor> args) {
  std::vector<Shared> shared;
  for (const HostTensor &t : args)
    shared.push_back(std::make_shared<const HostTensor>(t));
  auto results = runBlockShared(block, shared);
  if (!results.ok())
    return results.status();
  std::vector<HostTensor> out;
  for (const Shared &r : *results)
    out.push_back(*r);
  return out;
}

absl::StatusOr<std::vector<Interpreter::Shared>>
Interpreter::runBlockShared(Block &block, absl::Span<const Shared> args) {
  for (auto [arg, t] : llvm::zip(block.getArguments(), args))
    env[arg] = t;
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      std::vector<Shared> results;
      for (Value v : op.getOperands())
        results.push_back(env.find(v)->second);
      return results;
    }
    if (absl::Status st = exec(&op); !st.ok())
      return st;
  }
  return absl::InternalError("block has no terminator");
}

absl::Status Interpreter::unary(Operation *op, double (*fn)(double),
                                int64_t (*ifn)(int64_t)) {
  auto out = make(op, op->getResult(0));
  if (!out.ok())
    return out.status();
  const HostTensor &in = get(op->getOperand(0));
  if (out->isInteger()) {
    if (!ifn)
      return error(op, "not defined on integers");
    for (int64_t i = 0; i < out->numElements(); ++i)
      out->ints[i] = ifn(in.ints[i]);
  } else {
    for (int64_t i = 0; i < out->numElements(); ++i)
      out->data[i] = fn(in.data[i]);
  }
  set(op->getResult(0), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::binary(Operation *op, double (*fn)(double, double),
                                 int64_t (*ifn)(int64_t, int64_t)) {
  auto out = make(op, op->getResult(0));
  if (!out.ok())
    return out.status();
  const HostTensor &a = get(op->getOperand(0));
  const HostTensor &b = get(op->getOperand(1));
  if (out->isInteger()) {
    if (!ifn)
      return error(op, "not defined on integers");
    for (int64_t i = 0; i < out->numElements(); ++i)
      out->ints[i] = ifn(a.ints[i], b.ints[i]);
  } else {
    for (int64_t i = 0; i < out->numElements(); ++i)
      out->data[i] = fn(a.data[i], b.data[i]);
  }
  set(op->getResult(0), std::move(*out));
  return absl::OkStatus();
}

// Integer arithmetic wraps (two's complement, as the GPU's): computed on
// uint64 and wrapped to the type's width by set().
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t truncDiv(int64_t a, int64_t b) {
  if (b == -1) // INT64_MIN / -1 wraps
    return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  return a / b;
}
int64_t intPow(int64_t a, int64_t b) {
  if (b < 0)
    return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  uint64_t r = 1, x = static_cast<uint64_t>(a);
  for (; b; b >>= 1, x *= x)
    if (b & 1)
      r *= x;
  return static_cast<int64_t>(r);
}

absl::Status Interpreter::exec(Operation *op) {
  auto cmp = [](ComparePredicate p, double a, double b) -> double {
    switch (p) {
    case ComparePredicate::eq:
      return a == b;
    case ComparePredicate::ne:
      return a != b;
    case ComparePredicate::lt:
      return a < b;
    case ComparePredicate::le:
      return a <= b;
    case ComparePredicate::gt:
      return a > b;
    case ComparePredicate::ge:
      return a >= b;
    }
    return 0;
  };
  auto icmp = [](ComparePredicate p, int64_t a, int64_t b) -> double {
    switch (p) {
    case ComparePredicate::eq:
      return a == b;
    case ComparePredicate::ne:
      return a != b;
    case ComparePredicate::lt:
      return a < b;
    case ComparePredicate::le:
      return a <= b;
    case ComparePredicate::gt:
      return a > b;
    case ComparePredicate::ge:
      return a >= b;
    }
    return 0;
  };
  return llvm::TypeSwitch<Operation *, absl::Status>(op)
      .Case([&](ExpOp) { return unary(op, [](double x) { return std::exp(x); }); })
      .Case([&](Exp2Op) { return unary(op, [](double x) { return std::exp2(x); }); })
      .Case([&](LogOp) { return unary(op, [](double x) { return std::log(x); }); })
      .Case([&](TanhOp) { return unary(op, [](double x) { return std::tanh(x); }); })
      .Case([&](SinOp) { return unary(op, [](double x) { return std::sin(x); }); })
      .Case([&](CosOp) { return unary(op, [](double x) { return std::cos(x); }); })
      .Case([&](ErfOp) { return unary(op, [](double x) { return std::erf(x); }); })
      .Case([&](SigmoidOp) { return unary(op, sigmoid); })
      .Case([&](RsqrtOp) {
        return unary(op, [](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case([&](SqrtOp) { return unary(op, [](double x) { return std::sqrt(x); }); })
      .Case([&](NegOp) {
        return unary(op, [](double x) { return -x; },
                     [](int64_t x) { return wrapSub(0, x); });
      })
      .Case([&](AbsOp) {
        return unary(op, [](double x) { return std::fabs(x); },
                     [](int64_t x) { return x < 0 ? wrapSub(0, x) : x; });
      })
      .Case([&](FloorOp) {
        return unary(op, [](double x) { return std::floor(x); }, [](int64_t x) { return x; });
      })
      .Case([&](CeilOp) {
        return unary(op, [](double x) { return std::ceil(x); }, [](int64_t x) { return x; });
      })
      .Case([&](RoundOp) {
        // Halves to even: nearbyint in the default rounding mode.
        return unary(op, [](double x) { return std::nearbyint(x); }, [](int64_t x) { return x; });
      })
      .Case([&](SignOp) {
        return unary(
            op, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; },
            [](int64_t x) -> int64_t { return x > 0 ? 1 : x < 0 ? -1 : 0; });
      })
      .Case([&](NotOp) { return unary(op, [](double x) { return x == 0 ? 1.0 : 0.0; }); })
      .Case([&](AddOp) {
        return binary(op, [](double a, double b) { return a + b; }, wrapAdd);
      })
      .Case([&](SubOp) {
        return binary(op, [](double a, double b) { return a - b; }, wrapSub);
      })
      .Case([&](MulOp) {
        return binary(op, [](double a, double b) { return a * b; }, wrapMul);
      })
      .Case([&](DivOp div) -> absl::Status {
        if (get(div.getRhs()).isInteger()) {
          for (int64_t v : get(div.getRhs()).ints)
            if (v == 0)
              return error(op, "integer division by zero");
          return binary(op, nullptr, truncDiv);
        }
        return binary(op, [](double a, double b) { return a / b; });
      })
      .Case([&](MaxOp) {
        return binary(op, nanAwareMax, [](int64_t a, int64_t b) { return std::max(a, b); });
      })
      .Case([&](MinOp) {
        return binary(op, nanAwareMin, [](int64_t a, int64_t b) { return std::min(a, b); });
      })
      .Case([&](PowOp) {
        return binary(op, [](double a, double b) { return std::pow(a, b); }, intPow);
      })
      .Case([&](AndOp) {
        return binary(op, [](double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; },
                      [](int64_t a, int64_t b) { return a & b; });
      })
      .Case([&](OrOp) {
        return binary(op, [](double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; },
                      [](int64_t a, int64_t b) { return a | b; });
      })
      .Case([&](CompareOp c) -> absl::Status {
        auto out = make(op, c.getResult());
        if (!out.ok())
          return out.status();
        const HostTensor &a = get(c.getLhs()), &b = get(c.getRhs());
        for (int64_t i = 0; i < out->numElements(); ++i)
          out->data[i] = a.isInteger() ? icmp(c.getPredicate(), a.ints[i], b.ints[i])
                                       : cmp(c.getPredicate(), a.data[i], b.data[i]);
        set(c.getResult(), std::move(*out));
        return absl::OkStatus();
      })
      .Case([&](SelectOp s) -> absl::Status {
        auto out = make(op, s.getResult());
        if (!out.ok())
          return out.status();
        const HostTensor &c = get(s.getCondition()), &t = get(s.getOnTrue()),
                         &f = get(s.getOnFalse());
        for (int64_t i = 0; i < out->numElements(); ++i)
          out->copyElement(i, c.data[i] != 0 ? t : f, i);
        set(s.getResult(), std::move(*out));
        return absl::OkStatus();
      })
      .Case([&](ConstantOp c) { return execConstant(c); })
      .Case([&](CastOp c) { return execCast(c); })
      .Case([&](BroadcastOp b) { return execBroadcast(b); })
      .Case([&](ReshapeOp r) -> absl::Status {
        auto out = make(op, r.getResult());
        if (!out.ok())
          return out.status();
        set(r.getResult(), get(r.getInput()).reshaped(out->shape));
        return absl::OkStatus();
      })
      .Case([&](TransposeOp t) { return execTranspose(t); })
      .Case([&](SliceOp s) { return execSlice(s); })
      .Case([&](ConcatOp c) { return execConcat(c); })
      .Case([&](GatherOp g) { return execGather(g); })
      .Case([&](ReduceOp r) { return execReduce(r); })
      .Case([&](MatmulOp m) { return execMatmul(m); })
      .Case([&](AttentionOp a) { return execAttention(a); })
      .Case([&](ConvOp c) { return execConv(c); })
      .Case([&](PoolOp p) { return execPool(p); })
      .Case([&](LayerNormOp l) {
        return execNorm(op, true, l.getEpsilon().convertToDouble());
      })
      .Case([&](RMSNormOp r) {
        return execNorm(op, false, r.getEpsilon().convertToDouble());
      })
      .Case([&](SoftmaxOp s) { return execSoftmax(s); })
      .Case([&](GeluOp g) {
        return unary(op, g.getTanh() ? +[](double x) {
          return 0.5 * x *
                 (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
        } : +[](double x) { return 0.5 * x * (1 + std::erf(x * M_SQRT1_2)); });
      })
      .Case([&](SiluOp) { return unary(op, [](double x) { return x * sigmoid(x); }); })
      .Case([&](KernelOp k) { return execKernel(k); })
      .Default([&](Operation *) {
        return error(op, "the reference interpreter does not support this op");
      });
}

absl::Status Interpreter::execConstant(ConstantOp op) {
  auto value = elementsToHostTensor(op.getValue());
  if (!value.ok())
    return error(op, std::string(value.status().message()));
  set(op.getResult(), std::move(*value));
  return absl::OkStatus();
}

absl::Status Interpreter::execCast(CastOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &in = get(op.getInput());
  for (int64_t i = 0; i < out->numElements(); ++i) {
    if (in.isInteger())
      out->setInt(i, in.ints[i]); // wraps to the width; to a float: rounds below
    else if (out->dtype == DType::I1)
      out->data[i] = in.data[i] != 0 ? 1.0 : 0.0;
    else
      out->set(i, in.data[i]); // a float to an integer saturates (cvt.rzi.sat)
  }
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execBroadcast(BroadcastOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &in = get(op.getInput());
  std::vector<int64_t> inStrides = stridesOf(in.shape);
  ArrayRef<int64_t> dims = op.getDims();
  forEachIndex(out->shape, [&](int64_t flat, const std::vector<int64_t> &o) {
    int64_t src = 0;
    for (size_t i = 0; i < dims.size(); ++i)
      src += (in.shape[i] == 1 ? 0 : o[dims[i]]) * inStrides[i];
    out->copyElement(flat, in, src);
  });
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execTranspose(TransposeOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &in = get(op.getInput());
  std::vector<int64_t> inStrides = stridesOf(in.shape);
  ArrayRef<int64_t> perm = op.getPermutation();
  forEachIndex(out->shape, [&](int64_t flat, const std::vector<int64_t> &o) {
    int64_t src = 0;
    for (size_t i = 0; i < perm.size(); ++i)
      src += o[i] * inStrides[perm[i]];
    out->copyElement(flat, in, src);
  });
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execSlice(SliceOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &in = get(op.getInput());
  std::vector<int64_t> inStrides = stridesOf(in.shape);
  ArrayRef<int64_t> offsets = op.getOffsets(), strides = op.getStrides();
  forEachIndex(out->shape, [&](int64_t flat, const std::vector<int64_t> &o) {
    int64_t src = 0;
    for (size_t i = 0; i < o.size(); ++i)
      src += (offsets[i] + o[i] * strides[i]) * inStrides[i];
    out->copyElement(flat, in, src);
  });
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execConcat(ConcatOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  int64_t dim = op.getDim();
  std::vector<int64_t> starts;
  int64_t start = 0;
  for (Value v : op.getInputs()) {
    starts.push_back(start);
    start += get(v).shape[dim];
  }
  forEachIndex(out->shape, [&](int64_t flat, const std::vector<int64_t> &o) {
    size_t which = starts.size() - 1;
    while (o[dim] < starts[which])
      --which;
    const HostTensor &in = get(op.getInputs()[which]);
    std::vector<int64_t> idx = o;
    idx[dim] -= starts[which];
    out->copyElement(flat, in, ravel(idx, stridesOf(in.shape)));
  });
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execGather(GatherOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &table = get(op.getTable());
  const HostTensor &indices = get(op.getIndices());
  int64_t axis = op.getAxis();
  int64_t limit = table.shape[axis];
  for (int64_t i = 0; i < indices.numElements(); ++i)
    if (int64_t v = indices.getInt(i); v < -limit || v >= limit)
      return error(op, absl::StrCat("index ", v, " is out of range [", -limit, ", ", limit,
                                    ") of table dimension ", axis));
  // The result is [outer, indices, inner] of the table's [outer, limit,
  // inner]: a run of `inner` elements an (outer, index) pair, copied
  // without a coordinate vector an element (a fold of 2^26 elements at
  // import took 40 s under ASan that way).
  int64_t outer = 1, inner = 1, count = indices.numElements();
  for (int64_t d = 0; d < axis; ++d)
    outer *= table.shape[d];
  for (size_t d = axis + 1; d < table.shape.size(); ++d)
    inner *= table.shape[d];
  if (out->numElements() > 0)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < count; ++j) {
        int64_t index = indices.getInt(j);
        if (index < 0)
          index += limit;
        int64_t src = (o * limit + index) * inner, dst = (o * count + j) * inner;
        if (table.isInteger())
          std::copy_n(table.ints.begin() + src, inner, out->ints.begin() + dst);
        else
          std::copy_n(table.data.begin() + src, inner, out->data.begin() + dst);
      }
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execReduce(ReduceOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &in = get(op.getInput());
  std::vector<bool> reduced(in.shape.size(), false);
  int64_t count = 1;
  for (int64_t d : op.getDims()) {
    reduced[d] = true;
    count *= in.shape[d];
  }
  ReduceKind kind = op.getKind();
  if (in.isInteger()) {
    // Exact: sums wrap, max and min compare integers, mean truncates.
    int64_t iinit = kind == ReduceKind::max   ? std::numeric_limits<int64_t>::min()
                    : kind == ReduceKind::min ? std::numeric_limits<int64_t>::max()
                                              : 0;
    std::fill(out->ints.begin(), out->ints.end(), iinit);
    std::vector<int64_t> outStrides = stridesOf(out->shape);
    forEachIndex(in.shape, [&](int64_t flat, const std::vector<int64_t> &i) {
      int64_t dst = 0, k = 0;
      for (size_t d = 0; d < i.size(); ++d)
        if (!reduced[d])
          dst += i[d] * outStrides[k++];
      int64_t &acc = out->ints[dst];
      int64_t v = in.ints[flat];
      acc = kind == ReduceKind::max   ? std::max(acc, v)
            : kind == ReduceKind::min ? std::min(acc, v)
                                      : wrapAdd(acc, v);
    });
    if (kind == ReduceKind::mean && count)
      for (int64_t &v : out->ints)
        v /= count;
    set(op.getResult(), std::move(*out));
    return absl::OkStatus();
  }
  double init = kind == ReduceKind::max   ? -std::numeric_limits<double>::infinity()
                : kind == ReduceKind::min ? std::numeric_limits<double>::infinity()
                                          : 0.0;
  std::fill(out->data.begin(), out->data.end(), init);
  std::vector<int64_t> outStrides = stridesOf(out->shape);
  forEachIndex(in.shape, [&](int64_t flat, const std::vector<int64_t> &i) {
    int64_t dst = 0, k = 0;
    for (size_t d = 0; d < i.size(); ++d)
      if (!reduced[d])
        dst += i[d] * outStrides[k++];
    double &acc = out->data[dst];
    double v = in.data[flat];
    switch (kind) {
    case ReduceKind::sum:
    case ReduceKind::mean:
      acc += v;
      break;
    case ReduceKind::max:
      acc = nanAwareMax(acc, v);
      break;
    case ReduceKind::min:
      acc = nanAwareMin(acc, v);
      break;
    }
  });
  if (kind == ReduceKind::mean)
    for (double &v : out->data)
      v /= static_cast<double>(count);
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execMatmul(MatmulOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &a = get(op.getLhs()), &b = get(op.getRhs());
  size_t ar = a.shape.size(), br = b.shape.size();
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  int64_t m = ta ? a.shape[ar - 1] : a.shape[ar - 2];
  int64_t k = ta ? a.shape[ar - 2] : a.shape[ar - 1];
  int64_t n = tb ? b.shape[br - 2] : b.shape[br - 1];
  int64_t batch = elementCount(std::vector<int64_t>(a.shape.begin(), a.shape.end() - 2));
  bool sharedRhs = br == 2 && ar > 2;
  if (a.isInteger()) {
    for (int64_t bi = 0; bi < batch; ++bi) {
      const int64_t *pa = a.ints.data() + bi * m * k;
      const int64_t *pb = b.ints.data() + (sharedRhs ? 0 : bi * k * n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t acc = 0;
          for (int64_t l = 0; l < k; ++l)
            acc = wrapAdd(acc, wrapMul(ta ? pa[l * m + i] : pa[i * k + l],
                                       tb ? pb[j * k + l] : pb[l * n + j]));
          out->setInt(bi * m * n + i * n + j, acc);
        }
    }
    set(op.getResult(), std::move(*out));
    return absl::OkStatus();
  }
  for (int64_t bi = 0; bi < batch; ++bi) {
    const double *pa = a.data.data() + bi * m * k;
    const double *pb = b.data.data() + (sharedRhs ? 0 : bi * k * n);
    double *pc = out->data.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l)
          acc += (ta ? pa[l * m + i] : pa[i * k + l]) *
                 (tb ? pb[j * k + l] : pb[l * n + j]);
        pc[i * n + j] = acc;
      }
  }
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execAttention(AttentionOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  // An empty result: nothing to compute. Its keys may still have a length of
  // 2^60 (a head dim of 0 keeps the tensor empty), which the scores below
  // would allocate.
  if (out->numElements() == 0) {
    set(op.getResult(), std::move(*out));
    return absl::OkStatus();
  }
  const HostTensor &q = get(op.getQuery()), &k = get(op.getKey()),
                   &v = get(op.getValue());
  // [B, H, S, D] shapes and strides, each operand read (the result stored)
  // through its permutation.
  SmallVector<int64_t, 4> qShape = op.logicalShape(0), kShape = op.logicalShape(1),
                          vShape = op.logicalShape(2);
  SmallVector<int64_t, 4> qs = op.logicalStrides(0), ks = op.logicalStrides(1),
                          vs = op.logicalStrides(2), os = op.logicalStrides(3);
  int64_t batch = qShape[0], hq = qShape[1], sq = qShape[2], d = qShape[3];
  int64_t hkv = kShape[1], skv = kShape[2], dv = vShape[3];
  int64_t group = hq / hkv;
  double scale = op.getScale().convertToDouble();
  bool causal = op.getCausal();
  const HostTensor *mask = op.getKeyMask() ? &get(op.getKeyMask()) : nullptr;
  std::vector<double> scores(static_cast<size_t>(skv));
  std::vector<int64_t> seen;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hq; ++h) {
      int64_t kvh = h / group;
      const double *pk = k.data.data() + b * ks[0] + kvh * ks[1];
      const double *pv = v.data.data() + b * vs[0] + kvh * vs[1];
      for (int64_t i = 0; i < sq; ++i) {
        const double *pq = q.data.data() + b * qs[0] + h * qs[1] + i * qs[2];
        double *po = out->data.data() + b * os[0] + h * os[1] + i * os[2];
        // The keys row i sees: up to the causal diagonal, where the mask
        // (if any) is true.
        int64_t last = causal ? std::clamp<int64_t>(i + skv - sq + 1, 0, skv) : skv;
        seen.clear();
        for (int64_t j = 0; j < last; ++j)
          if (!mask || mask->data[b * skv + j] != 0)
            seen.push_back(j);
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j : seen) {
          double s = 0;
          for (int64_t l = 0; l < d; ++l)
            s += pq[l * qs[3]] * pk[j * ks[2] + l * ks[3]];
          scores[j] = s * scale;
          mx = std::max(mx, scores[j]);
        }
        double sum = 0;
        for (int64_t j : seen)
          sum += (scores[j] = std::exp(scores[j] - mx));
        for (int64_t c = 0; c < dv; ++c) {
          double acc = 0;
          for (int64_t j : seen)
            acc += scores[j] * pv[j * vs[2] + c * vs[3]];
          // A row that sees no key (causal with more queries than keys, or
          // every key masked) is zero.
          po[c * os[3]] = seen.empty() ? 0.0 : acc / sum;
        }
      }
    }
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execNorm(Operation *op, bool layerNorm, double eps) {
  auto out = make(op, op->getResult(0));
  if (!out.ok())
    return out.status();
  const HostTensor &x = get(op->getOperand(0));
  const HostTensor &g = get(op->getOperand(1));
  const HostTensor *bias = layerNorm ? &get(op->getOperand(2)) : nullptr;
  int64_t n = x.shape.back();
  int64_t rows = n ? x.numElements() / n : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double *px = x.data.data() + r * n;
    double *py = out->data.data() + r * n;
    double mean = 0;
    if (layerNorm) {
      for (int64_t i = 0; i < n; ++i)
        mean += px[i];
      mean /= n;
    }
    double sq = 0;
    for (int64_t i = 0; i < n; ++i)
      sq += (px[i] - mean) * (px[i] - mean);
    double rstd = 1.0 / std::sqrt(sq / n + eps);
    for (int64_t i = 0; i < n; ++i)
      py[i] = (px[i] - mean) * rstd * g.data[i] + (bias ? bias->data[i] : 0.0);
  }
  set(op->getResult(0), std::move(*out));
  return absl::OkStatus();
}

/// Calls fn(tap, flat) for each tap of the window at position `pos` that
/// lands inside `dims`: coordinate pos·stride - pad_low + tap·dilation per
/// dim, `tap` the flat index into the kernel and `flat` the row-major index
/// into `dims`. A convolution reads its input this way at each output; a
/// transposed one scatters each input to the outputs this way.
template <typename Fn>
static void forEachTap(const Window &w, const std::vector<int64_t> &pos,
                       const std::vector<int64_t> &dims, Fn fn) {
  size_t rank = dims.size();
  std::vector<int64_t> t(rank, 0);
  int64_t taps = elementCount(std::vector<int64_t>(w.kernel.begin(), w.kernel.end()));
  for (int64_t tap = 0; tap < taps; ++tap) {
    int64_t flat = 0;
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) {
      int64_t c = pos[d] * w.strides[d] - w.padLow[d] + t[d] * w.dilations[d];
      inside = c >= 0 && c < dims[d];
      if (inside) // (past the input, flat could overflow; it is not used)
        flat = flat * dims[d] + c;
    }
    if (inside)
      fn(tap, flat);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++t[d] < w.kernel[d])
        break;
      t[d] = 0;
    }
  }
}

absl::Status Interpreter::execConv(ConvOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &x = get(op.getInput()), &f = get(op.getFilter());
  Window w = windowOf(op);
  std::vector<int64_t> inSp(x.shape.begin() + 2, x.shape.end());
  std::vector<int64_t> outSp(out->shape.begin() + 2, out->shape.end());
  int64_t batch = x.shape[0], cin = x.shape[1], cout = out->shape[1];
  int64_t groups = op.getGroups(), cg = cin / groups, kg = cout / groups;
  int64_t inPlane = elementCount(inSp), outPlane = elementCount(outSp);
  int64_t taps = elementCount(std::vector<int64_t>(w.kernel.begin(), w.kernel.end()));
  std::fill(out->data.begin(), out->data.end(), 0.0);
  if (!op.getTransposed()) {
    // out[n, k, o] = sum over c of k's group and taps of x[n, c, at] * f[k, c, tap]
    forEachIndex(outSp, [&](int64_t o, const std::vector<int64_t> &pos) {
      forEachTap(w, pos, inSp, [&](int64_t tap, int64_t at) {
        for (int64_t n = 0; n < batch; ++n)
          for (int64_t k = 0; k < cout; ++k) {
            int64_t g = k / kg;
            double acc = 0;
            for (int64_t c = 0; c < cg; ++c)
              acc += x.data[(n * cin + g * cg + c) * inPlane + at] *
                     f.data[(k * cg + c) * taps + tap];
            out->data[(n * cout + k) * outPlane + o] += acc;
          }
      });
    });
  } else {
    // Each x[n, c, i] adds x * f[c, k, tap] to out[n, g·kg + k, at].
    forEachIndex(inSp, [&](int64_t i, const std::vector<int64_t> &pos) {
      forEachTap(w, pos, outSp, [&](int64_t tap, int64_t at) {
        for (int64_t n = 0; n < batch; ++n)
          for (int64_t c = 0; c < cin; ++c) {
            int64_t g = c / cg;
            double v = x.data[(n * cin + c) * inPlane + i];
            for (int64_t k = 0; k < kg; ++k)
              out->data[(n * cout + g * kg + k) * outPlane + at] +=
                  v * f.data[(c * kg + k) * taps + tap];
          }
      });
    });
  }
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execPool(PoolOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &x = get(op.getInput());
  Window w = windowOf(op);
  std::vector<int64_t> inSp(x.shape.begin() + 2, x.shape.end());
  std::vector<int64_t> outSp(out->shape.begin() + 2, out->shape.end());
  int64_t planes = x.shape[0] * x.shape[1];
  int64_t inPlane = elementCount(inSp), outPlane = elementCount(outSp);
  bool isMax = op.getKind() == ReduceKind::max;
  forEachIndex(outSp, [&](int64_t o, const std::vector<int64_t> &pos) {
    std::vector<int64_t> at;
    forEachTap(w, pos, inSp, [&](int64_t, int64_t a) { at.push_back(a); });
    // The divisor with count_include_pad: the taps inside [-pad_low, d + pad_high).
    int64_t padded = 1;
    for (size_t d = 0; d < inSp.size(); ++d) {
      int64_t inside = 0;
      for (int64_t t = 0; t < w.kernel[d]; ++t) {
        int64_t c = pos[d] * w.strides[d] - w.padLow[d] + t * w.dilations[d];
        inside += c >= -w.padLow[d] && c < inSp[d] + w.padHigh[d];
      }
      padded *= inside;
    }
    double count = op.getCountIncludePad() ? padded : static_cast<double>(at.size());
    for (int64_t p = 0; p < planes; ++p) {
      const double *src = x.data.data() + p * inPlane;
      double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t a : at)
        acc = isMax ? nanAwareMax(acc, src[a]) : acc + src[a];
      // A mean over no tap (a window wholly in the padding, counted
      // without it) is 0, as the generated kernels compute it.
      out->data[p * outPlane + o] = isMax ? acc : count > 0 ? acc / count : 0.0;
    }
  });
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execSoftmax(SoftmaxOp op) {
  auto out = make(op, op.getResult());
  if (!out.ok())
    return out.status();
  const HostTensor &x = get(op.getInput());
  int64_t dim = op.getDim();
  int64_t len = x.shape[dim];
  int64_t inner = 1;
  for (size_t i = dim + 1; i < x.shape.size(); ++i)
    inner *= x.shape[i];
  int64_t outer = (len * inner) != 0 ? x.numElements() / (len * inner) : 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t j) { return (o * len + j) * inner + in; };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < len; ++j)
        mx = nanAwareMax(mx, x.data[at(j)]);
      double sum = 0;
      for (int64_t j = 0; j < len; ++j)
        sum += (out->data[at(j)] = std::exp(x.data[at(j)] - mx));
      for (int64_t j = 0; j < len; ++j)
        out->data[at(j)] /= sum;
    }
  set(op.getResult(), std::move(*out));
  return absl::OkStatus();
}

absl::Status Interpreter::execKernel(KernelOp op) {
  std::vector<Shared> args;
  for (Value v : op.getInputs())
    args.push_back(env.find(v)->second);
  InterpretOptions innerOptions = options;
  innerOptions.seed = rng;
  Interpreter inner(innerOptions);
  auto results = inner.runBlockShared(op.getBody().front(), args);
  if (!results.ok())
    return results.status();
  // Already rounded to their types by the inner interpreter.
  for (auto [r, t] : llvm::zip(op.getResults(), *results))
    env[r] = t;
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<HostTensor> elementsToHostTensor(Attribute value) {
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return absl::InvalidArgumentError("only dense constants are supported");
  auto info = tensorTypeInfo(dense.getType());
  if (!info.ok())
    return info.status();
  // A splat of 2^41 elements passes the verifier (its bytes fit in int64)
  // and aborted on the allocation.
  if (absl::Status st = checkHostSize(info->second, "the constant"); !st.ok())
    return st;
  HostTensor out(info->first, info->second);
  Type e = dense.getElementType();
  auto fill = [&](auto range, auto toDouble) {
    if (dense.isSplat()) {
      double v = toDouble(*range.begin());
      std::fill(out.data.begin(), out.data.end(), v);
      return;
    }
    int64_t i = 0;
    for (auto v : range)
      out.data[i++] = toDouble(v);
  };
  if (isa<FloatType>(e)) {
    fill(dense.getValues<APFloat>(), [](APFloat v) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      return v.convertToDouble();
    });
  } else if (e.isSignlessInteger(1)) {
    fill(dense.getValues<APInt>(),
         [](const APInt &v) { return static_cast<double>(v.getZExtValue()); });
  } else {
    // Exact.
    if (dense.isSplat()) {
      std::fill(out.ints.begin(), out.ints.end(), dense.getSplatValue<APInt>().getSExtValue());
    } else {
      int64_t i = 0;
      for (const APInt &v : dense.getValues<APInt>())
        out.ints[i++] = v.getSExtValue();
    }
  }
  out.roundInPlace();
  return out;
}

namespace {
/// The arguments' count and types against the function's.
template <typename Get>
absl::Status checkArguments(func::FuncOp func, size_t count, Get tensorAt) {
  if (func.isExternal())
    return absl::InvalidArgumentError(absl::StrCat(
        "function @", func.getSymName().str(), " has no body"));
  auto argTypes = func.getArgumentTypes();
  if (count != argTypes.size())
    return absl::InvalidArgumentError(
        absl::StrCat("function @", func.getSymName().str(), " takes ",
                     argTypes.size(), " arguments, got ", count));
  for (size_t i = 0; i < count; ++i) {
    const HostTensor &t = tensorAt(i);
    auto info = tensorTypeInfo(argTypes[i]);
    if (!info.ok())
      return absl::InvalidArgumentError(absl::StrCat(
          "argument #", i, ": ", info.status().message()));
    if (info->first != t.dtype || info->second != t.shape)
      return absl::InvalidArgumentError(absl::StrCat(
          "argument #", i, " expects ",
          HostTensor(info->first, info->second).typeString(), ", got ",
          t.typeString()));
    // A tensor built by hand through the API: its storage must hold its
    // shape's elements, in the vector its type uses, or every op would read
    // past it.
    if (absl::Status st = checkHostSize(t.shape, absl::StrCat("argument #", i)); !st.ok())
      return st;
    int64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    if (t.numElements() != n || (t.isInteger() ? !t.data.empty() : !t.ints.empty()))
      return absl::InvalidArgumentError(absl::StrCat(
          "argument #", i, " (", t.typeString(), ") holds ", t.data.size(), " float and ",
          t.ints.size(), " integer elements, expected ", n, " ",
          t.isInteger() ? "integer" : "float", " ones"));
  }
  return absl::OkStatus();
}
} // namespace

absl::StatusOr<std::vector<HostTensor>>
interpret(func::FuncOp func, absl::Span<const HostTensor> inputs,
          const InterpretOptions &options) {
  if (absl::Status st = checkArguments(func, inputs.size(),
                                       [&](size_t i) -> const HostTensor & { return inputs[i]; });
      !st.ok())
    return st;
  Interpreter interp(options);
  return interp.runBlock(func.getBody().front(), inputs);
}

absl::StatusOr<std::vector<std::shared_ptr<const HostTensor>>>
interpretShared(func::FuncOp func, absl::Span<const std::shared_ptr<const HostTensor>> inputs) {
  if (absl::Status st = checkArguments(func, inputs.size(),
                                       [&](size_t i) -> const HostTensor & { return *inputs[i]; });
      !st.ok())
    return st;
  Interpreter interp;
  return interp.runBlockShared(func.getBody().front(), inputs);
}

absl::StatusOr<std::vector<HostTensor>> randomInputs(func::FuncOp func,
                                                     uint64_t seed) {
  std::vector<HostTensor> inputs;
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto info = tensorTypeInfo(arg.getType());
    if (!info.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("argument #", i, ": ", info.status().message()));
    int64_t lo = -8, hi = 8;
    for (Operation *user : arg.getUsers())
      if (auto gather = dyn_cast<GatherOp>(user))
        if (gather.getIndices() == arg) {
          lo = 0;
          hi = gather.getTable().getType().getDimSize(gather.getAxis());
        }
    if (absl::Status st = checkHostSize(info->second, absl::StrCat("argument #", i));
        !st.ok())
      return st;
    // Distinct seeds per argument, stable across runs.
    inputs.push_back(randomTensor(info->first, info->second,
                                  seed * 1000003 + i, lo, hi));
  }
  return inputs;
}

absl::StatusOr<func::FuncOp> findFunction(ModuleOp module,
                                          absl::string_view name) {
  if (!name.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(
        llvm::StringRef(name.data(), name.size()));
    if (!func)
      return absl::NotFoundError(
          absl::StrCat("no function named @", std::string(name)));
    return func;
  }
  SmallVector<func::FuncOp> candidates;
  std::string names;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    candidates.push_back(func);
    absl::StrAppend(&names, names.empty() ? "" : ", ", "@",
                    func.getSymName().str());
  }
  if (candidates.size() == 1)
    return candidates.front();
  if (candidates.empty())
    return absl::InvalidArgumentError("the module has no public function");
  return absl::InvalidArgumentError(absl::StrCat(
      "the module has several functions (", names,
      "); choose one (fusec-run --function, JitOptions::function)"));
}

namespace {

/// The type whose tolerance judges `result` of `func`: the least precise
/// float type among the values it depends on (the arguments, every op's
/// results on the way, and the values inside kernels on the way), starting
/// from `own`. A value that passed through f16 and was then cast to f32
/// carries f16's rounding, whatever its final type.
DType precisionFloor(Value result, DType own, DType *attentionInput = nullptr) {
  DType floor = own;
  auto consider = [&](Type t) {
    auto info = tensorTypeInfo(t);
    if (info.ok() && toleranceFor(info->first).rtol > toleranceFor(floor).rtol)
      floor = info->first;
  };
  llvm::SmallVector<Value> work{result};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    consider(v.getType());
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    if (auto attention = dyn_cast<AttentionOp>(def); attention && attentionInput) {
      auto info = tensorTypeInfo(attention.getQuery().getType());
      if (info.ok() && toleranceFor(info->first).rtol > toleranceFor(*attentionInput).rtol)
        *attentionInput = info->first;
    }
    if (auto kernel = dyn_cast<KernelOp>(def))
      kernel.getBody().walk([&](Operation *inner) {
        for (Type t : inner->getResultTypes())
          consider(t);
      });
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  return floor;
}

/// A type's unit roundoff (half its epsilon; 0 for integers).
double unitRoundoff(DType type) {
  switch (type) {
  case DType::F32:
    return 0x1.0p-24;
  case DType::F16:
    return 0x1.0p-11;
  case DType::BF16:
    return 0x1.0p-8;
  case DType::F8E4M3FN:
    return 0x1.0p-4;
  case DType::F8E5M2:
    return 0x1.0p-3;
  default:
    return 0;
  }
}

/// Monte Carlo arithmetic over `func`: kSpreadRuns runs with every float
/// value (the arguments too) perturbed by up to twice `unit` relative, more
/// than any one rounding at that unit roundoff moves it. Per result and
/// element, the largest distance of a perturbed run from `reference`
/// (infinite where a run gave NaN or infinity where the reference did not):
/// how far roundings of that size can move the result at these inputs.
constexpr int kSpreadRuns = 8;
constexpr double kSpreadFactor = 4;

absl::StatusOr<std::vector<std::vector<double>>>
perturbationSpread(func::FuncOp func, absl::Span<const HostTensor> inputs,
                   absl::Span<const HostTensor> reference, double unit, uint64_t seed) {
  std::vector<std::vector<double>> spread;
  for (const HostTensor &r : reference)
    spread.emplace_back(r.numElements(), 0.0);
  for (int run = 0; run < kSpreadRuns; ++run) {
    InterpretOptions options{2 * unit, seed * 7919 + run + 1};
    std::vector<HostTensor> perturbed(inputs.begin(), inputs.end());
    for (HostTensor &t : perturbed) {
      if (!isFloat(t.dtype))
        continue;
      // The arguments as a first op would see them.
      uint64_t z = options.seed;
      for (double &x : t.data) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        x *= 1 + options.perturbation * (static_cast<double>(z >> 11) * 0x1.0p-52 - 1);
      }
      t.roundInPlace();
    }
    auto out = interpret(func, perturbed, options);
    if (!out.ok())
      return out.status();
    for (size_t i = 0; i < reference.size() && i < out->size(); ++i) {
      const HostTensor &ref = reference[i], &got = (*out)[i];
      for (int64_t e = 0; e < ref.numElements(); ++e) {
        double a = ref.isInteger() ? static_cast<double>(ref.ints[e]) : ref.data[e];
        double b = got.isInteger() ? static_cast<double>(got.ints[e]) : got.data[e];
        double d = std::isfinite(a) && std::isfinite(b) ? std::fabs(a - b)
                   : (a == b || (std::isnan(a) && std::isnan(b)))
                       ? 0
                       : std::numeric_limits<double>::infinity();
        spread[i][e] = std::max(spread[i][e], d);
      }
    }
  }
  return spread;
}

/// Whether `got` matches `expected` within `tol` once each element may also
/// move by kSpreadFactor times its spread; counts the elements only the
/// spread admits.
bool withinSpread(const HostTensor &expected, const HostTensor &got, Tolerance tol,
                  const std::vector<double> &spread, int64_t *excused) {
  *excused = 0;
  for (int64_t e = 0; e < expected.numElements(); ++e) {
    double a = expected.isInteger() ? static_cast<double>(expected.ints[e]) : expected.data[e];
    double b = got.isInteger() ? static_cast<double>(got.ints[e]) : got.data[e];
    if (a == b || (std::isnan(a) && std::isnan(b)))
      continue;
    double s = spread[e];
    if (!std::isfinite(a) || !std::isfinite(b)) {
      if (std::isinf(s))
        ++*excused;
      else
        return false;
      continue;
    }
    double err = std::fabs(a - b), plain = tol.atol + tol.rtol * std::fabs(a);
    if (err <= plain)
      continue;
    if (err > plain + kSpreadFactor * s)
      return false;
    ++*excused;
  }
  return true;
}

/// How many elements of `actual` are past `bound` (an absolute bound) plus
/// `tol` from `expected`, and the first of them.
int64_t pastAbsoluteBound(const HostTensor &expected, const HostTensor &actual, double bound,
                          Tolerance tol, const std::vector<double> *spread, int64_t *first,
                          double *firstError) {
  int64_t past = 0;
  for (int64_t e = 0; e < expected.numElements(); ++e) {
    double a = expected.isInteger() ? static_cast<double>(expected.ints[e]) : expected.data[e];
    double b = actual.isInteger() ? static_cast<double>(actual.ints[e]) : actual.data[e];
    if (a == b || (std::isnan(a) && std::isnan(b)))
      continue;
    double err = std::fabs(a - b);
    if (err <= bound + tol.atol + tol.rtol * std::fabs(a) +
                   (spread ? kSpreadFactor * (*spread)[e] : 0.0))
      continue;
    if (past++ == 0) {
      *first = e;
      *firstError = err;
    }
  }
  return past;
}

/// Elements where one side is NaN or infinite and the other differs: the
/// relative L2 error leaves them out, so no judgement by it may excuse them.
int64_t nonFiniteMismatches(const HostTensor &expected, const HostTensor &actual) {
  if (expected.isInteger() || actual.isInteger())
    return 0;
  int64_t n = 0;
  for (int64_t e = 0; e < expected.numElements(); ++e) {
    double a = expected.data[e], b = actual.data[e];
    if (std::isfinite(a) && std::isfinite(b))
      continue;
    n += !(a == b || (std::isnan(a) && std::isnan(b)));
  }
  return n;
}

/// ‖spread‖₂ / ‖expected‖₂ (infinite if any element's spread is).
double relativeSpread(const HostTensor &expected, const std::vector<double> &spread) {
  double s2 = 0, r2 = 0;
  for (int64_t e = 0; e < expected.numElements(); ++e) {
    double r = expected.isInteger() ? static_cast<double>(expected.ints[e]) : expected.data[e];
    s2 += spread[e] * spread[e];
    if (std::isfinite(r))
      r2 += r * r;
  }
  return r2 > 0 ? std::sqrt(s2 / r2) : std::sqrt(s2);
}

} // namespace

Tolerance resultTolerance(func::FuncOp func, unsigned index) {
  Value v = func.getBody().front().getTerminator()->getOperand(index);
  auto info = tensorTypeInfo(v.getType());
  DType own = info.ok() ? info->first : DType::F32;
  DType attentionInput = DType::F32;
  Tolerance tol = toleranceFor(precisionFloor(v, own, &attentionInput));
  if (attentionInput == DType::BF16 || attentionInput == DType::F16) {
    double bound = attentionInput == DType::BF16 ? 2.5e-2 : 4e-3;
    tol.rtol = std::max(tol.rtol, bound);
    tol.atol = std::max(tol.atol, bound);
  }
  return tol;
}

absl::StatusOr<std::vector<Comparison>>
checkPipelinePreservesSemantics(ModuleOp module, absl::string_view pipeline,
                                absl::string_view function, uint64_t seed) {
  auto before = findFunction(module, function);
  if (!before.ok())
    return before.status();
  OwningOpRef<ModuleOp> transformed(cast<ModuleOp>(module->clone()));
  PassManager pm(module.getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  std::string errors;
  llvm::raw_string_ostream errStream(errors);
  if (failed(parsePassPipeline(llvm::StringRef(pipeline.data(), pipeline.size()),
                               pm, errStream)))
    return absl::InvalidArgumentError(
        absl::StrCat("bad pass pipeline '", std::string(pipeline), "': ", errors));
  if (failed(pm.run(*transformed)))
    return absl::InternalError(
        absl::StrCat("the pipeline '", std::string(pipeline), "' failed"));
  auto after = findFunction(*transformed, (*before).getSymName().str());
  if (!after.ok())
    return after.status();
  return compareFunctions(*before, *after, seed);
}

absl::StatusOr<std::vector<Comparison>> compareFunctions(func::FuncOp before,
                                                         func::FuncOp after, uint64_t seed) {
  auto inputs = randomInputs(before, seed);
  if (!inputs.ok())
    return inputs.status();
  auto expected = interpret(before, *inputs);
  if (!expected.ok())
    return absl::Status(expected.status().code(),
                        absl::StrCat("before the pipeline: ", expected.status().message()));
  // A pass may change the storage types of the arguments (precision
  // lowering): give the transformed graph the same values, rounded.
  std::vector<HostTensor> afterInputs = *inputs;
  if (after.getNumArguments() != before.getNumArguments())
    return absl::InvalidArgumentError(absl::StrCat(
        "the pipeline changed the number of arguments from ", before.getNumArguments(), " to ",
        after.getNumArguments()));
  for (auto [i, t] : llvm::enumerate(after.getArgumentTypes())) {
    auto info = tensorTypeInfo(t);
    if (info.ok() && isInteger(info->first) != afterInputs[i].isInteger())
      return absl::InvalidArgumentError(absl::StrCat(
          "the pipeline changed argument #", i, " from ", afterInputs[i].typeString(), " to ",
          HostTensor(info->first, {}).typeString(), ": an integer and a float type"));
    if (info.ok() && info->first != afterInputs[i].dtype) {
      afterInputs[i].dtype = info->first;
      afterInputs[i].roundInPlace();
    }
  }
  auto actual = interpret(after, afterInputs);
  if (!actual.ok())
    return absl::Status(actual.status().code(),
                        absl::StrCat("after the pipeline: ",
                                     actual.status().message()));
  if (actual->size() != expected->size())
    return absl::InternalError("the pipeline changed the number of results");
  // With `fusec.error_bound` (precision lowering) each result's relative L2
  // error must stay within its bound; otherwise results must match within
  // the tolerance of their type.
  auto bounds = after->getAttrOfType<ArrayAttr>("fusec.error_bound");
  // With `fusec.abs_error_bound`, each element's error is bounded whatever
  // the data cancel, for arguments within the recorded input magnitude.
  ArrayAttr absBounds;
  double inputMagnitude = 0;
  if (auto abs = after->getAttrOfType<DictionaryAttr>("fusec.abs_error_bound")) {
    absBounds = abs.getAs<ArrayAttr>("bounds");
    inputMagnitude = abs.getAs<FloatAttr>("input_magnitude").getValueAsDouble();
    for (const HostTensor &in : *inputs)
      if (!in.isInteger())
        for (double v : in.data)
          if (!(std::fabs(v) <= inputMagnitude))
            absBounds = nullptr;
  }
  // Monte Carlo spreads of the original graph, by unit roundoff, computed
  // only for a result that fails the plain check: a result whose inputs
  // nearly cancel (or that sits at a branch of a comparison) moves far
  // under any rounding, and the pipeline's roundings differ from the
  // reference's. Such elements are judged against that spread.
  std::map<double, std::vector<std::vector<double>>> spreads;
  auto spreadAt = [&](double unit) -> absl::StatusOr<const std::vector<std::vector<double>> *> {
    auto it = spreads.find(unit);
    if (it == spreads.end()) {
      auto s = perturbationSpread(before, *inputs, *expected, unit, seed);
      if (!s.ok())
        return s.status();
      it = spreads.emplace(unit, std::move(*s)).first;
    }
    return &it->second;
  };
  std::vector<Comparison> comparisons;
  for (size_t i = 0; i < expected->size(); ++i) {
    HostTensor got = (*actual)[i];
    DType storedAs = got.dtype;
    got.dtype = (*expected)[i].dtype; // a narrower float's values are exact
    if (bounds && i < bounds.size()) {
      // The bound covers the lowered storage's rounding; the other passes
      // of a pipeline may move the roundings of the values the graph
      // already held in narrow types: the tolerance of the least precise of
      // them (or of the stored type) adds.
      DType held = precisionFloor(
          before.getBody().front().getTerminator()->getOperand(i), storedAs);
      double bound = cast<FloatAttr>(bounds[i]).getValueAsDouble() + toleranceFor(held).rtol;
      Comparison c = compareTensors((*expected)[i], got, Tolerance{1e300, 0});
      int64_t nonFinite = nonFiniteMismatches((*expected)[i], got);
      c.ok = c.relL2 <= bound && nonFinite == 0;
      double absBound = absBounds && i < absBounds.size()
                            ? cast<FloatAttr>(absBounds[i]).getValueAsDouble()
                            : std::numeric_limits<double>::infinity();
      if (std::isfinite(absBound)) {
        // The absolute bound holds for any data: past it is a failure,
        // within it a pass (the relative estimate assumes no cancellation).
        int64_t first = 0;
        double firstError = 0;
        int64_t past = pastAbsoluteBound((*expected)[i], got, absBound, toleranceFor(held),
                                         nullptr, &first, &firstError);
        if (past > 0) {
          // The other passes move where the values the lowering kept
          // round (a decomposed composite's steps, a fused sum's order):
          // an element past the bound by no more than its spread under
          // roundings of the held type is judged as an fp32 pipeline's.
          auto s = spreadAt(unitRoundoff(held));
          if (!s.ok())
            return s.status();
          past = pastAbsoluteBound((*expected)[i], got, absBound, toleranceFor(held), &(**s)[i],
                                   &first, &firstError);
        }
        c.ok = past == 0;
        c.message =
            past == 0
                ? absl::StrCat("relative L2 error ", c.relL2,
                               c.relL2 <= bound ? " within" : " past",
                               " the estimated bound ", bound,
                               "; every element within the absolute bound ", absBound,
                               " (arguments within ", inputMagnitude, ")")
                : absl::StrCat(past, " element(s) past the absolute bound ", absBound,
                               " (arguments within ", inputMagnitude, ") plus ",
                               dtypeName(held), "'s tolerance: element ", first, " is off by ",
                               firstError, "; relative L2 error ", c.relL2);
        comparisons.push_back(c);
        continue;
      }
      // A mixed bound: the held type's absolute tolerance per element adds
      // (a result near 0, a GELU far in its tail, has no relative bound).
      double refNorm = relativeSpread((*expected)[i],
                                      std::vector<double>((*expected)[i].numElements(), 1.0));
      double absFloor = toleranceFor(held).atol;
      if (nonFinite > 0) {
        c.message = absl::StrCat(nonFinite, " element(s) NaN or infinite on one side only");
        comparisons.push_back(c);
        continue;
      }
      if (!c.ok && std::isfinite(c.relL2) && refNorm > 0 && std::isfinite(refNorm)) {
        // relativeSpread of ones is sqrt(n) / ‖ref‖.
        double n = static_cast<double>((*expected)[i].numElements());
        double norm = std::sqrt(n) / refNorm, errNorm = c.relL2 * norm;
        if (errNorm <= bound * norm + absFloor * std::sqrt(n)) {
          c.ok = true;
          c.message = absl::StrCat("relative L2 error ", c.relL2, " past the bound ", bound,
                                   " of a result near 0 (L2 norm ", norm, "), within it plus ",
                                   absFloor, " absolute per element");
          comparisons.push_back(c);
          continue;
        }
      }
      c.message = absl::StrCat("relative L2 error ", c.relL2,
                               c.ok ? " within" : " exceeds",
                               " the estimated bound ", bound);
      if (!c.ok) {
        // The recorded bound is first order: it holds for data where no
        // sum cancels. The data's own conditioning at the lowered type
        // (the narrowest the pipeline's graph holds on the way) widens it.
        DType lowered = precisionFloor(
            after.getBody().front().getTerminator()->getOperand(i), storedAs);
        auto s = spreadAt(std::max(unitRoundoff(lowered), unitRoundoff(held)));
        if (!s.ok())
          return s.status();
        double widened = bound + kSpreadFactor * relativeSpread((*expected)[i], (**s)[i]);
        if (c.relL2 <= widened) {
          c.ok = true;
          c.message = absl::StrCat("relative L2 error ", c.relL2, " past the first-order bound ",
                                   bound, ", within the bound widened by the data's conditioning ",
                                   widened, " (", kSpreadRuns, " perturbed runs at ",
                                   dtypeName(lowered), ")");
        }
      }
      comparisons.push_back(c);
      continue;
    }
    // The tolerance of the least precise type that held the result or
    // anything it depends on, before or after the pipeline.
    DType floor = storedAs;
    for (DType d : {(*expected)[i].dtype,
                    precisionFloor(before.getBody().front().getTerminator()->getOperand(i),
                                   (*expected)[i].dtype),
                    precisionFloor(after.getBody().front().getTerminator()->getOperand(i),
                                   storedAs)})
      if (toleranceFor(d).rtol > toleranceFor(floor).rtol)
        floor = d;
    Tolerance tol = toleranceFor(floor);
    Comparison c = compareTensors((*expected)[i], got, tol);
    // A pass may change where rounding happens (fusec-decompose evaluates a
    // composite's steps in the stored type, where the reference evaluates
    // the composite in f64): an ill-conditioned element (layer_norm over two
    // values that nearly cancel) then moves past its own tolerance while the
    // result as a whole stays within the type's rounding. Such a result is
    // accepted by its relative L2 error.
    if (!c.ok && c.mismatches > 0 && c.relL2 <= tol.rtol &&
        nonFiniteMismatches((*expected)[i], got) == 0) {
      c.ok = true;
      c.message = absl::StrCat(c.mismatches, " ill-conditioned element(s) past the elementwise "
                               "tolerance; relative L2 error ", c.relL2, " within ", tol.rtol);
    }
    // Otherwise each element past its tolerance is judged against how far
    // roundings at the floor type move it in the original graph.
    if (!c.ok && c.mismatches > 0) {
      auto s = spreadAt(unitRoundoff(floor));
      if (!s.ok())
        return s.status();
      int64_t excused = 0;
      if (withinSpread((*expected)[i], got, tol, (**s)[i], &excused)) {
        c.ok = true;
        c.message = absl::StrCat(excused, " ill-conditioned element(s) past the elementwise "
                                 "tolerance, within ", kSpreadFactor, "x their spread over ",
                                 kSpreadRuns, " perturbed runs at ", dtypeName(floor));
      }
    }
    comparisons.push_back(c);
  }
  return comparisons;
}

} // namespace fusec
