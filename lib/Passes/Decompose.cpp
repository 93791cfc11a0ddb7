//===- Decompose.cpp - Composite ops to fusec primitives --------*- C++ -*-===//
//
// Rewrites layer_norm, rms_norm, softmax, gelu and silu into primitives so that
// fusion sees every elementwise op and reduction (and folds a transpose of a
// matmul operand's last two dims into the matmul's flag); and, before that, forms the
// one composite that stays whole: attention written out as matmul, scale,
// mask, softmax and matmul becomes fusec.attention. Low-precision inputs are cast
// to f32 for the math and the result cast back, so the decomposed graph rounds
// where the composite did: at its output.
//
//===----------------------------------------------------------------------===//

#include "FoldMovement.h"
#include "fusec/Passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>

namespace fusec {
#define GEN_PASS_DEF_DECOMPOSE
#define GEN_PASS_DEF_RECOGNIZEATTENTION
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

/// Emits primitives at one location in one compute element type.
class Emitter {
public:
  Emitter(PatternRewriter &rewriter, Location loc, Type computeElement)
      : b(rewriter), loc(loc), computeElement(computeElement) {}

  /// Casts `v` to the compute element type if it is not already in it.
  Value in(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == computeElement)
      return v;
    return CastOp::create(b, loc, type.clone(computeElement), v);
  }
  /// Casts `v` back to `type` if needed.
  Value out(Value v, Type type) {
    if (v.getType() == type)
      return v;
    return CastOp::create(b, loc, type, v);
  }
  Value splat(Value like, double value) {
    auto type = cast<RankedTensorType>(like.getType());
    auto attr = DenseElementsAttr::get(
        type, b.getFloatAttr(type.getElementType(), value));
    return ConstantOp::create(b, loc, type, attr);
  }
  template <typename OpTy> Value unary(Value x) {
    return OpTy::create(b, loc, x.getType(), x);
  }
  template <typename OpTy> Value binary(Value x, Value y) {
    return OpTy::create(b, loc, x.getType(), x, y);
  }
  Value add(Value x, Value y) { return binary<AddOp>(x, y); }
  Value sub(Value x, Value y) { return binary<SubOp>(x, y); }
  Value mul(Value x, Value y) { return binary<MulOp>(x, y); }
  Value div(Value x, Value y) { return binary<DivOp>(x, y); }

  /// Reduces `x` over `dim`, dropping that dimension.
  Value reduce(ReduceKind kind, Value x, int64_t dim) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape.erase(shape.begin() + dim);
    return ReduceOp::create(b, loc, type.clone(shape), kind, x,
                            b.getDenseI64ArrayAttr({dim}));
  }
  /// Broadcasts `x` back to `like`'s shape along the dimension `dim` that a
  /// reduction removed.
  Value expand(Value x, Value like, int64_t dim) {
    auto type = cast<RankedTensorType>(like.getType());
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != dim)
        dims.push_back(d);
    return BroadcastOp::create(b, loc, type, x, b.getDenseI64ArrayAttr(dims));
  }
  /// Broadcasts a per-feature vector along the last dimension of `like`.
  Value alongLast(Value vec, Value like) {
    auto type = cast<RankedTensorType>(like.getType());
    return BroadcastOp::create(b, loc, type, vec,
                               b.getDenseI64ArrayAttr({type.getRank() - 1}));
  }

private:
  PatternRewriter &b;
  Location loc;
  Type computeElement;
};

/// The element type the decomposed math runs in: f32 for narrow floats.
Type computeElementFor(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isF32())
    return element;
  return Float32Type::get(type.getContext());
}

struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e(rewriter, op.getLoc(), computeElementFor(op.getType()));
    int64_t last = op.getType().getRank() - 1;
    Value x = e.in(op.getInput());
    Value centred = e.sub(x, e.expand(e.reduce(ReduceKind::mean, x, last), x, last));
    Value var = e.reduce(ReduceKind::mean, e.mul(centred, centred), last);
    Value rstd = e.unary<RsqrtOp>(
        e.add(var, e.splat(var, op.getEpsilon().convertToDouble())));
    Value normed = e.mul(centred, e.expand(rstd, x, last));
    Value scaled = e.mul(normed, e.alongLast(e.in(op.getScale()), x));
    Value y = e.add(scaled, e.alongLast(e.in(op.getBias()), x));
    rewriter.replaceOp(op, e.out(y, op.getType()));
    return success();
  }
};

struct DecomposeRMSNorm : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e(rewriter, op.getLoc(), computeElementFor(op.getType()));
    int64_t last = op.getType().getRank() - 1;
    Value x = e.in(op.getInput());
    Value meanSq = e.reduce(ReduceKind::mean, e.mul(x, x), last);
    Value rstd = e.unary<RsqrtOp>(
        e.add(meanSq, e.splat(meanSq, op.getEpsilon().convertToDouble())));
    Value normed = e.mul(x, e.expand(rstd, x, last));
    Value y = e.mul(normed, e.alongLast(e.in(op.getScale()), x));
    rewriter.replaceOp(op, e.out(y, op.getType()));
    return success();
  }
};

struct DecomposeSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e(rewriter, op.getLoc(), computeElementFor(op.getType()));
    int64_t dim = op.getDim();
    Value x = e.in(op.getInput());
    Value shifted = e.sub(x, e.expand(e.reduce(ReduceKind::max, x, dim), x, dim));
    Value ex = e.unary<ExpOp>(shifted);
    Value y = e.div(ex, e.expand(e.reduce(ReduceKind::sum, ex, dim), x, dim));
    rewriter.replaceOp(op, e.out(y, op.getType()));
    return success();
  }
};

struct DecomposeGelu : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e(rewriter, op.getLoc(), computeElementFor(op.getType()));
    Value x = e.in(op.getInput());
    Value inner;
    if (op.getTanh()) {
      // tanh(√(2/π)·(x + 0.044715·x³))
      Value cube = e.mul(x, e.mul(x, x));
      Value poly = e.add(x, e.mul(e.splat(x, 0.044715), cube));
      inner = e.unary<TanhOp>(e.mul(e.splat(x, std::sqrt(2.0 / M_PI)), poly));
    } else {
      // erf(x/√2)
      inner = e.unary<ErfOp>(e.mul(x, e.splat(x, M_SQRT1_2)));
    }
    Value y = e.mul(e.mul(x, e.splat(x, 0.5)), e.add(inner, e.splat(x, 1.0)));
    rewriter.replaceOp(op, e.out(y, op.getType()));
    return success();
  }
};

struct DecomposeSilu : OpRewritePattern<SiluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SiluOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e(rewriter, op.getLoc(), computeElementFor(op.getType()));
    Value x = e.in(op.getInput());
    Value y = e.mul(x, e.unary<SigmoidOp>(x));
    rewriter.replaceOp(op, e.out(y, op.getType()));
    return success();
  }
};

/// A transpose of an operand's last two dims becomes the matmul's flag: the
/// matmul then reads the operand where it lies. Exporters write x·Wᵀ (tied
/// embeddings, nn.Linear) and q·kᵀ as a Transpose feeding a MatMul; as a
/// copy, the transposed operand costs a movement kernel, and with an odd
/// dim (GPT-2's vocabulary of 50257) its rows are not 16-byte aligned, so
/// TMA cannot read it and the matmul would fall back to SIMT.
struct AbsorbOperandTranspose : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  static bool swapsLastTwo(TransposeOp t) {
    ArrayRef<int64_t> p = t.getPermutation();
    int64_t n = static_cast<int64_t>(p.size());
    if (n < 2 || p[n - 2] != n - 1 || p[n - 1] != n - 2)
      return false;
    for (int64_t i = 0; i + 2 < n; ++i)
      if (p[i] != i)
        return false;
    return true;
  }
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    Value lhs = op.getLhs(), rhs = op.getRhs();
    bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs(), changed = false;
    if (auto t = lhs.getDefiningOp<TransposeOp>(); t && swapsLastTwo(t)) {
      lhs = t.getInput();
      tl = !tl;
      changed = true;
    }
    if (auto t = rhs.getDefiningOp<TransposeOp>(); t && swapsLastTwo(t)) {
      rhs = t.getInput();
      tr = !tr;
      changed = true;
    }
    if (!changed)
      return failure();
    auto m = rewriter.replaceOpWithNewOp<MatmulOp>(op, op.getType(), lhs, rhs);
    if (tl)
      m.setTransposeLhs(true);
    if (tr)
      m.setTransposeRhs(true);
    return success();
  }
};

/// A scale on a matmul operand moves to its result: (x·c1)(y·c2) =
/// (x·y)·(c1·c2) for splat constants c1, c2. Exporters scale q and kᵀ by
/// sqrt(1/sqrt(d)) each before q·kᵀ (PyTorch's SDPA decomposition); as an
/// operand producer the scale would make the matmul read a computed
/// operand, which TMA cannot, and as a result scale it is one multiply in
/// the epilogue. The matmul accumulates in f32 and the scale applies there,
/// before the result is rounded to a narrow type, so no f16 overflow is
/// introduced.
struct HoistOperandScale : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  /// `v` as x·c with c a float splat constant of v's type: (x, c).
  static std::optional<std::pair<Value, double>> scaled(Value v) {
    auto mul = v.getDefiningOp<MulOp>();
    if (!mul)
      return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      Value x = mul->getOperand(i), c = mul->getOperand(1 - i);
      auto k = c.getDefiningOp<ConstantOp>();
      auto splat = k ? dyn_cast<SplatElementsAttr>(k.getValue()) : nullptr;
      if (splat && isa<FloatType>(splat.getElementType()) && x.getType() == v.getType())
        return std::make_pair(x, splat.getSplatValue<APFloat>().convertToDouble());
    }
    return std::nullopt;
  }
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!isa<FloatType>(type.getElementType()))
      return failure();
    auto l = scaled(op.getLhs()), r = scaled(op.getRhs());
    if (!l && !r)
      return failure();
    double scale = (l ? l->second : 1.0) * (r ? r->second : 1.0);
    Location loc = op.getLoc();
    auto f32 = type.clone(rewriter.getF32Type());
    auto m = MatmulOp::create(rewriter, loc, f32, l ? l->first : op.getLhs(),
                              r ? r->first : op.getRhs());
    if (op.getTransposeLhs())
      m.setTransposeLhs(true);
    if (op.getTransposeRhs())
      m.setTransposeRhs(true);
    Emitter e(rewriter, loc, rewriter.getF32Type());
    Value scaledResult = e.mul(m, e.splat(m, scale));
    rewriter.replaceOp(op, e.out(scaledResult, type));
    return success();
  }
};

/// reshape(transpose(reshape(x))) that only regroups dims the transpose
/// moves whole is one transpose of x. PyTorch exports kᵀ of a
/// [B, H, S, D] tensor as reshape to [B·H, S, D], transpose (0, 2, 1),
/// reshape to [B, H, D, S]; as one 4-d transpose it becomes q·kᵀ's
/// transpose flag (AbsorbOperandTranspose) instead of a producer kernel
/// that writes kᵀ with a stride in its inner dim.
struct MergeRegroupedTranspose : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp out, PatternRewriter &rewriter) const override {
    auto t = out.getInput().getDefiningOp<TransposeOp>();
    auto in = t ? t.getInput().getDefiningOp<ReshapeOp>() : nullptr;
    if (!in)
      return failure();
    ArrayRef<int64_t> x = cast<RankedTensorType>(in.getInput().getType()).getShape();
    ArrayRef<int64_t> y = cast<RankedTensorType>(in.getType()).getShape();
    ArrayRef<int64_t> w = cast<RankedTensorType>(out.getType()).getShape();
    // Each dim of y as a run of x's dims (a 1 of y may take none).
    SmallVector<SmallVector<int64_t, 4>> groups;
    size_t next = 0;
    for (int64_t yd : y) {
      SmallVector<int64_t, 4> g;
      int64_t product = 1;
      while (next < x.size() && (product < yd || (g.empty() && x[next] == yd)) &&
             (product * x[next] <= yd)) {
        product *= x[next];
        g.push_back(static_cast<int64_t>(next++));
        if (product == yd)
          break;
      }
      if (product != yd)
        return failure();
      groups.push_back(std::move(g));
    }
    if (next != x.size())
      return failure();
    // The transposed groups, flattened, must be w's dims exactly.
    SmallVector<int64_t> perm, dims;
    for (int64_t p : t.getPermutation())
      for (int64_t d : groups[p]) {
        perm.push_back(d);
        dims.push_back(x[d]);
      }
    if (!llvm::equal(dims, w) || perm.size() != x.size())
      return failure();
    rewriter.replaceOpWithNewOp<TransposeOp>(out, out.getType(), in.getInput(),
                                             rewriter.getDenseI64ArrayAttr(perm));
    return success();
  }
};

/// A matmul whose rhs has no batch dims reads lhs's leading dims as rows:
/// [B, S, K]·[K, N] is [B·S, K]·[K, N]. Exporters keep the activations'
/// [batch, sequence] dims on every linear layer; as batch dims they would
/// make each of B row blocks re-read the whole weight (at decode, S = 1:
/// B matmuls of one row each), as rows they make one GEMM with M = B·S.
struct CollapseMatmulRows : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (op.getTransposeLhs() || rhsType.getRank() != 2 || lhsType.getRank() < 3 ||
        type.getRank() != lhsType.getRank() || !lhsType.hasStaticShape() ||
        !type.hasStaticShape())
      return failure();
    int64_t rows = 1;
    for (int64_t d : lhsType.getShape().drop_back())
      rows *= d;
    int64_t k = lhsType.getShape().back(), n = type.getShape().back();
    Location loc = op.getLoc();
    Value lhs = ReshapeOp::create(rewriter, loc, lhsType.clone({rows, k}), op.getLhs());
    auto m = MatmulOp::create(rewriter, loc, type.clone({rows, n}), lhs, op.getRhs());
    if (op.getTransposeRhs())
      m.setTransposeRhs(true);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, type, m.getResult());
    return success();
  }
};

/// An elementwise op that reads a reshape which only splits leading dims
/// (its last dim kept) runs on the reshape's input shape, and the reshape
/// moves to its result: f(reshape(x), y) = reshape(f(x, reshape(y))). A
/// matmul's result is [rows, N] while the graph around it is [B, S, N]
/// (PyTorch's Conv1D and CollapseMatmulRows both reshape around it), so its
/// bias, activation and residual add see the matmul's own shape and join
/// its epilogue. Only towards fewer dims, so that it ends.
struct SinkReshape : RewritePattern {
  SinkReshape(MLIRContext *context) : RewritePattern(MatchAnyOpTypeTag(), 1, context) {}
  static bool elementwise(Operation *op) {
    return isa<CastOp, CompareOp, SelectOp, AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp,
               AndOp, OrOp, NotOp, NegOp, AbsOp, SignOp, FloorOp, CeilOp, RoundOp, ExpOp, Exp2Op, LogOp,
               TanhOp, ErfOp, SigmoidOp, RsqrtOp, SqrtOp, SinOp, CosOp>(op);
  }
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!elementwise(op) || op->getNumResults() != 1)
      return failure();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape() || type.getRank() < 2)
      return failure();
    // The shape to run on: the input of a reshape operand with fewer dims
    // and the same last dim; or, where every operand is a reshape of a
    // value of one shape with fewer dims or a splat, that shape (a row
    // statistic [B, S] of a reduction run on [B*S, N] rows).
    std::optional<SmallVector<int64_t>> to;
    for (Value v : op->getOperands())
      if (auto r = v.getDefiningOp<ReshapeOp>()) {
        auto src = cast<RankedTensorType>(r.getInput().getType());
        if (src.hasStaticShape() && src.getRank() >= 1 && src.getRank() < type.getRank() &&
            src.getShape().back() == type.getShape().back()) {
          to = SmallVector<int64_t>(src.getShape());
          break;
        }
      }
    if (!to) {
      for (Value v : op->getOperands()) {
        if (auto c = v.getDefiningOp<ConstantOp>(); c && isa<SplatElementsAttr>(c.getValue()))
          continue;
        auto r = v.getDefiningOp<ReshapeOp>();
        if (!r)
          return failure();
        auto src = cast<RankedTensorType>(r.getInput().getType());
        if (!src.hasStaticShape() || src.getRank() < 1 || src.getRank() >= type.getRank() ||
            (to && ArrayRef(*to) != src.getShape()))
          return failure();
        to = SmallVector<int64_t>(src.getShape());
      }
      if (!to)
        return failure();
    }
    int64_t rank = static_cast<int64_t>(to->size());
    // Each operand in the new shape: the reshape's input, a splat, a bias
    // broadcast, or a reshape (a view) of a value a kernel stores.
    enum class From { Source, Splat, Bias, View };
    SmallVector<From> from;
    for (Value v : op->getOperands()) {
      if (auto r = v.getDefiningOp<ReshapeOp>();
          r && cast<RankedTensorType>(r.getInput().getType()).getShape() == ArrayRef(*to)) {
        from.push_back(From::Source);
      } else if (auto c = v.getDefiningOp<ConstantOp>();
                 c && isa<SplatElementsAttr>(c.getValue())) {
        from.push_back(From::Splat);
      } else if (auto b = v.getDefiningOp<BroadcastOp>()) {
        auto in = cast<RankedTensorType>(b.getInput().getType());
        if (in.getRank() != 1 || b.getDims().size() != 1 || b.getDims()[0] != type.getRank() - 1)
          return failure();
        from.push_back(From::Bias);
      } else if (v.getDefiningOp<TransposeOp>() || v.getDefiningOp<SliceOp>() ||
                 v.getDefiningOp<ConcatOp>()) {
        return failure(); // a reshape of it would be a movement kernel
      } else {
        from.push_back(From::View);
      }
    }
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (auto [v, f] : llvm::zip(op->getOperands(), from)) {
      auto newType = cast<RankedTensorType>(v.getType()).clone(*to);
      switch (f) {
      case From::Source:
        operands.push_back(v.getDefiningOp<ReshapeOp>().getInput());
        break;
      case From::Splat: {
        auto splat = cast<SplatElementsAttr>(v.getDefiningOp<ConstantOp>().getValue());
        operands.push_back(ConstantOp::create(rewriter, loc, newType, splat.resizeSplat(newType)));
        break;
      }
      case From::Bias:
        operands.push_back(BroadcastOp::create(rewriter, loc, newType,
                                               v.getDefiningOp<BroadcastOp>().getInput(),
                                               rewriter.getDenseI64ArrayAttr({rank - 1})));
        break;
      case From::View:
        operands.push_back(ReshapeOp::create(rewriter, loc, newType, v));
        break;
      }
    }
    Operation *moved = rewriter.clone(*op);
    moved->setOperands(operands);
    moved->getResult(0).setType(type.clone(*to));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, type, moved->getResult(0));
    return success();
  }
};

/// A reduction over trailing dims of a reshape that only regroups the
/// leading ones runs on the reshape's input, and the reshape moves to its
/// result: reduce(reshape(x), last k dims) = reshape(reduce(x, last k dims)).
/// An exported RMSNorm squares the residual in the matmul's [B*S, N] rows
/// (SinkReshape) and takes the mean over [B, S, N]; on the rows, the square
/// joins the reduction's kernel. Only towards fewer dims.
struct SinkReshapeIntoReduce : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    auto r = op.getInput().getDefiningOp<ReshapeOp>();
    if (!r)
      return failure();
    auto src = cast<RankedTensorType>(r.getInput().getType());
    auto mid = cast<RankedTensorType>(r.getType());
    if (!src.hasStaticShape() || !mid.hasStaticShape() || src.getRank() >= mid.getRank())
      return failure();
    SmallVector<int64_t> dims(op.getDims());
    llvm::sort(dims);
    int64_t k = static_cast<int64_t>(dims.size());
    if (k == 0 || k >= src.getRank())
      return failure();
    for (int64_t i = 0; i < k; ++i)
      if (dims[i] != mid.getRank() - k + i ||
          src.getDimSize(src.getRank() - k + i) != mid.getDimSize(mid.getRank() - k + i))
        return failure();
    SmallVector<int64_t> newDims, rowShape;
    for (int64_t i = 0; i < k; ++i)
      newDims.push_back(src.getRank() - k + i);
    for (int64_t i = 0; i < src.getRank() - k; ++i)
      rowShape.push_back(src.getDimSize(i));
    Location loc = op.getLoc();
    auto reduced = ReduceOp::create(rewriter, loc, src.clone(rowShape), op.getKindAttr(),
                                    r.getInput(), rewriter.getDenseI64ArrayAttr(newDims));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), reduced.getResult());
    return success();
  }
};

/// A reduction over dims that are not one contiguous run (BatchNorm's
/// statistics: [N, C, H, W] over [0, 2, 3]) is two reductions: first over
/// the innermost run of its dims (H, W: a row reduction, or a column one
/// when the run is in the middle), then over the rest, on the smaller
/// result. Every code-generation strategy takes a contiguous run; over
/// several runs an element's rows are strided and the kernel ran at 1% of
/// HBM bandwidth. Sums, maxima and minima reassociate, and a mean of equal
/// parts' means is the mean; narrow floats reduce in f32 between the two
/// (the cast joins the first reduction's kernel), integers in their own
/// type (their sums wrap alike in any order). Below a million elements the
/// one kernel (row_stream, a warp per kept position) stays: it is one
/// launch, and the input sits in L2.
struct SplitReduceRuns : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    auto in = cast<RankedTensorType>(op.getInput().getType());
    if (!in.hasStaticShape() || in.getNumElements() < (int64_t{1} << 20))
      return failure();
    SmallVector<int64_t> dims(op.getDims());
    llvm::sort(dims);
    if (dims.size() < 2 || dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size()))
      return failure();
    // The innermost run of reduced dims.
    size_t first = dims.size() - 1;
    while (first > 0 && dims[first - 1] + 1 == dims[first])
      --first;
    SmallVector<int64_t> inner(dims.begin() + first, dims.end());
    SmallVector<int64_t> outer(dims.begin(), dims.begin() + first);
    Location loc = op.getLoc();
    Type elem = in.getElementType();
    auto fl = dyn_cast<FloatType>(elem);
    bool narrow = fl && fl.getWidth() < 32;
    Value x = op.getInput();
    Type work = narrow ? Type(rewriter.getF32Type()) : elem;
    if (narrow)
      x = CastOp::create(rewriter, loc, in.clone(work), x);
    SmallVector<int64_t> midShape;
    for (int64_t i = 0; i < in.getRank(); ++i)
      if (!llvm::is_contained(inner, i))
        midShape.push_back(in.getDimSize(i));
    auto mid = ReduceOp::create(rewriter, loc, RankedTensorType::get(midShape, work),
                                op.getKindAttr(), x, rewriter.getDenseI64ArrayAttr(inner));
    // The outer dims keep their positions: every removed dim is after them.
    auto outType = cast<RankedTensorType>(op.getType());
    Value out = ReduceOp::create(rewriter, loc, outType.clone(work), op.getKindAttr(),
                                 mid.getResult(), rewriter.getDenseI64ArrayAttr(outer));
    if (narrow)
      out = CastOp::create(rewriter, loc, outType, out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// A variance over many elements in groups: var_D(x) = mean over D of
/// (x - mean_D(x))^2, where D is not one run of trailing dims (BatchNorm's
/// statistics over [N, H, W] of NCHW, or over the leading N*H*W of NHWC).
/// Computed as written, it reads x twice (the second pass waits for the
/// whole mean) and, in the column form, cannot split its rows across CTAs
/// (the variance reads the mean). By the law of total variance over equal
/// groups it is
///   mean_O(v_g + (m_g - m)^2),  m_g, v_g = mean_I(x), mean_I((x - m_g)^2),
///   m = mean_O(m_g),
/// where D = O ∪ I and I is a run of dims after every dim of O: the first
/// kernel reads x once (a group's statistics in its registers or L1), the
/// second works on the small [O, kept] statistics. A sum instead of the
/// outer mean is the same times |D|: sum_O(M2_g + |I| (m_g - m)^2). Over
/// dims that form one run (the column form) of more than 4096 rows the run
/// is cut in two, the groups about the square root of its extent. Exact in real arithmetic
/// (and in floating point no worse than the two-pass form: every sum is of
/// centred terms); f32 and f64 only, from a million elements.
std::optional<double> splatValue(Value v);

struct SplitVariance : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Whether the mean `mean` and variance `op` (a mean of `sub`'s square
  /// about `bc`, the mean broadcast) are left to one column kernel (above).
  /// FUSEC_COLUMN_SHIFTED=0: never (the groups below, for measurement).
  static bool shiftedColumnPair(ReduceOp op, ReduceOp mean, BroadcastOp bc, SubOp sub, Value w,
                                double scale, ReduceKind kind) {
    static const bool off = [] {
      const char *v = std::getenv("FUSEC_COLUMN_SHIFTED");
      return v && std::string_view(v) == "0";
    }();
    auto in = cast<RankedTensorType>(sub.getType());
    // At least 32 columns: with fewer (BatchNorm1d's few features) a column
    // tile is mostly idle threads, and the groups do better.
    auto outType = cast<RankedTensorType>(op.getType());
    if (!outType.hasStaticShape() || outType.getNumElements() < 32)
      return false;
    if (off || w || scale != 1.0 || kind != ReduceKind::mean || !in.getElementType().isF32() ||
        bc.getInput() != mean.getResult() || !cast<RankedTensorType>(op.getType()).getElementType().isF32())
      return false;
    // The chain mean -> bc -> sub -> square -> op, each read once.
    auto square = op.getInput().getDefiningOp<MulOp>();
    if (!square || square.getLhs() != square.getRhs() || square.getLhs() != sub.getResult() ||
        !bc->hasOneUse() || !square->hasOneUse() ||
        !llvm::all_of(sub->getUsers(), [&](Operation *u) { return u == square.getOperation(); }))
      return false;
    // Whatever else reads the mean or the variance (within 256 ops) stays
    // smaller than half of x.
    int64_t limit = std::max<int64_t>(1, in.getNumElements() / 2);
    SmallVector<Value> work{mean.getResult(), op.getResult()};
    llvm::SmallPtrSet<Operation *, 32> seen{bc.getOperation()};
    int budget = 256;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (!seen.insert(user).second)
          continue;
        if (--budget < 0)
          return false;
        for (Value r : user->getResults()) {
          auto t = dyn_cast<RankedTensorType>(r.getType());
          if (!t || !t.hasStaticShape() || t.getNumElements() >= limit)
            return false;
          work.push_back(r);
        }
      }
    }
    return true;
  }

  /// `v` as d * d or d^2: d.
  static Value squared(Value v) {
    if (auto m = v.getDefiningOp<MulOp>(); m && m.getLhs() == m.getRhs())
      return m.getLhs();
    if (auto p = v.getDefiningOp<PowOp>()) {
      std::optional<double> e = splatValue(p.getRhs());
      if (e && *e == 2.0)
        return p.getLhs();
    }
    return Value();
  }
  /// `v` as d^2 or c * d^2 (a splat c): d, and c.
  static Value scaledSquare(Value v, double &c) {
    c = 1.0;
    if (Value d = squared(v))
      return d;
    if (auto m = v.getDefiningOp<MulOp>())
      for (auto [a, b] : {std::pair(m.getLhs(), m.getRhs()), std::pair(m.getRhs(), m.getLhs())})
        if (std::optional<double> k = splatValue(b))
          if (Value d = squared(a)) {
            c = *k;
            return d;
          }
    return Value();
  }

  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    ReduceKind kind = op.getKind();
    if (kind != ReduceKind::mean && kind != ReduceKind::sum)
      return failure();
    // K_D(c (x - mean_D(x))^2), or K_D(w + c (x - mean_D(x))^2): the
    // second is what this rewrite leaves across the groups, so that a long
    // run of groups splits again.
    double scale = 1.0;
    Value w, d = scaledSquare(op.getInput(), scale);
    if (!d)
      if (auto a = op.getInput().getDefiningOp<AddOp>()) {
        if ((d = scaledSquare(a.getRhs(), scale)))
          w = a.getLhs();
        else if ((d = scaledSquare(a.getLhs(), scale)))
          w = a.getRhs();
      }
    auto sub = d ? d.getDefiningOp<SubOp>() : SubOp();
    if (!sub)
      return failure();
    Value x = sub.getLhs();
    auto in = cast<RankedTensorType>(x.getType());
    if (!in.hasStaticShape() || !(in.getElementType().isF32() || in.getElementType().isF64()) ||
        (w && w.getType() != in))
      return failure();
    int64_t rank = in.getRank();
    SmallVector<int64_t> dims(op.getDims());
    llvm::sort(dims);
    SmallVector<int64_t> kept;
    for (int64_t i = 0; i < rank; ++i)
      if (!llvm::is_contained(dims, i))
        kept.push_back(i);
    // The subtrahend: the mean of x over the same dims, broadcast back
    // (directly, or through the keepdims reshape an exporter writes).
    auto bc = sub.getRhs().getDefiningOp<BroadcastOp>();
    if (!bc || bc.getType() != in)
      return failure();
    Value meanValue = bc.getInput();
    if (auto r = meanValue.getDefiningOp<ReshapeOp>()) {
      auto rt = cast<RankedTensorType>(r.getType());
      if (rt.getRank() != rank || bc.getDims() != ArrayRef<int64_t>(llvm::to_vector(llvm::seq<int64_t>(0, rank))))
        return failure();
      for (int64_t i = 0; i < rank; ++i)
        if (rt.getDimSize(i) != (llvm::is_contained(dims, i) ? 1 : in.getDimSize(i)))
          return failure();
      meanValue = r.getInput();
    } else if (bc.getDims() != ArrayRef<int64_t>(kept)) {
      return failure();
    }
    auto mean = meanValue.getDefiningOp<ReduceOp>();
    if (!mean || mean.getKind() != ReduceKind::mean || mean.getInput() != x)
      return failure();
    SmallVector<int64_t> meanDims(mean.getDims());
    llvm::sort(meanDims);
    if (meanDims != dims || dims.empty() || mean.getType() != op.getType())
      return failure();

    // D = O ∪ I. Over several runs, I is the innermost run; over one run
    // that does not end the shape, the run becomes [extent / g, g].
    Location loc = op.getLoc();
    Value xr = x, wr = w;
    SmallVector<int64_t> inner, outer;
    bool oneRun = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
    if (!oneRun) {
      if (in.getNumElements() < (int64_t{1} << 20))
        return failure(); // one row_stream kernel, in L2
      size_t first = dims.size() - 1;
      while (first > 0 && dims[first - 1] + 1 == dims[first])
        --first;
      inner.assign(dims.begin() + first, dims.end());
      outer.assign(dims.begin(), dims.begin() + first);
    } else {
      if (dims.back() == rank - 1)
        return failure(); // rows: the row strategies hold a row on chip
      int64_t extent = 1;
      for (int64_t i : dims)
        extent *= in.getDimSize(i);
      // A column kernel whose variance reads its mean runs its rows in
      // sequence, 8 warps a tile; up to 512 rows that is short.
      if (extent <= 512)
        return failure();
      // An f32 mean and the mean of squared deviations about it, read
      // directly and by nothing as large as x: one column kernel takes both
      // in one pass as sums shifted by a column's first element (their rows
      // split across CTAs like any sum: Columns.cpp in code generation), so
      // nothing here. A mean that also centres x for a consumer of x's
      // size (BatchNorm in training) stays in groups: that consumer would
      // join the column kernel, which then cannot split its rows.
      if (shiftedColumnPair(op, mean, bc, sub, w, scale, kind))
        return failure();
      // The least divisor of n from `from` on (below n), or 0.
      auto divisorFrom = [](int64_t n, int64_t from) -> int64_t {
        for (int64_t c = std::max<int64_t>(from, 2); c < n; ++c)
          if (n % c == 0)
            return c;
        return 0;
      };
      auto rootOf = [](int64_t n) {
        return static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
      };
      if (dims.size() >= 2 && (in.getDimSize(dims.back()) >= 256 ||
                               (w && in.getDimSize(dims.back()) >= 2))) {
        // A run of several dims whose innermost is long: the groups are
        // that dim. So are the groups of groups that a reshape below made
        // (w is their variance), whatever its length: a reshape of w would
        // keep it from the groups' kernel (fusion does not reach through
        // one). (NHWC's W of 56 as the groups ran at a quarter of copy: a
        // tile of 56 rows is a few dependent loads.)
        inner = {dims.back()};
        outer.assign(dims.begin(), dims.end() - 1);
      } else {
        // One dim: groups of at least the square root of the extent and at
        // most about 256 rows where the extent allows (a group's second
        // pass then finds its rows in L2 while every CTA streams); more
        // than 512 groups are themselves cut in two, so that the rest
        // splits again without a reshape.
        int64_t g = divisorFrom(extent, std::min<int64_t>(256, rootOf(extent)));
        if (g == 0)
          return failure(); // a prime extent
        SmallVector<int64_t> groups{extent / g};
        if (groups[0] > 512)
          if (int64_t b = divisorFrom(groups[0], rootOf(groups[0])))
            groups = {groups[0] / b, b};
        rewriter.setInsertionPointAfter(mean);
        SmallVector<int64_t> shape;
        for (int64_t i = 0; i < dims.front(); ++i)
          shape.push_back(in.getDimSize(i));
        for (int64_t k : groups) {
          outer.push_back(static_cast<int64_t>(shape.size()));
          shape.push_back(k);
        }
        inner = {static_cast<int64_t>(shape.size())};
        shape.push_back(g);
        for (int64_t i = dims.back() + 1; i < rank; ++i)
          shape.push_back(in.getDimSize(i));
        // A cast (a narrow input in f32) stays below the reshape, so that
        // it joins the groups' kernel (fusion does not reach through a
        // reshape).
        if (auto c = x.getDefiningOp<CastOp>()) {
          auto src = cast<RankedTensorType>(c.getInput().getType());
          xr = CastOp::create(rewriter, loc, in.clone(shape),
                              ReshapeOp::create(rewriter, loc, src.clone(shape), c.getInput()));
        } else {
          xr = ReshapeOp::create(rewriter, loc, in.clone(shape), x);
        }
      }
    }
    // The groups' statistics and the mean where the mean was (its users
    // may precede the variance), the variance where it was.
    rewriter.setInsertionPointAfter(xr == x ? mean.getOperation() : xr.getDefiningOp());
    auto xt = cast<RankedTensorType>(xr.getType());
    int64_t xrank = xt.getRank();
    SmallVector<int64_t> midShape, midPositions;
    int64_t innerCount = 1;
    for (int64_t i = 0; i < xrank; ++i) {
      if (llvm::is_contained(inner, i)) {
        innerCount *= xt.getDimSize(i);
        continue;
      }
      midShape.push_back(xt.getDimSize(i));
      midPositions.push_back(i);
    }
    auto midType = xt.clone(midShape);
    auto reduce = [&](ReduceKind k, Value v, Type type, ArrayRef<int64_t> over) -> Value {
      return ReduceOp::create(rewriter, loc, type, k, v, rewriter.getDenseI64ArrayAttr(over));
    };
    auto splat = [&](double value) -> Value {
      auto attr = DenseElementsAttr::get(midType, rewriter.getFloatAttr(midType.getElementType(), value));
      return ConstantOp::create(rewriter, loc, midType, attr);
    };
    // The groups' statistics.
    Value mg = reduce(ReduceKind::mean, xr, midType, inner);
    Value mgb = BroadcastOp::create(rewriter, loc, xt, mg, rewriter.getDenseI64ArrayAttr(midPositions));
    Value dg = SubOp::create(rewriter, loc, xt, xr, mgb);
    // K_I(c (x - m_g)^2 (+ w)).
    Value sq = MulOp::create(rewriter, loc, xt, dg, dg);
    if (scale != 1.0) {
      auto attr = DenseElementsAttr::get(xt, rewriter.getFloatAttr(xt.getElementType(), scale));
      sq = MulOp::create(rewriter, loc, xt, sq, ConstantOp::create(rewriter, loc, xt, attr));
    }
    // Across the groups: every outer dim precedes the inner ones, so it keeps
    // its position in the statistics' shape. The mean is made here, before
    // any user of the old one; w may be defined later, so what reads it is
    // made where the variance was.
    auto outType = cast<RankedTensorType>(op.getType());
    Value m = reduce(ReduceKind::mean, mg, outType, outer);
    rewriter.setInsertionPoint(op);
    if (w) {
      if (xr != x)
        wr = ReshapeOp::create(rewriter, loc, xt, w);
      sq = AddOp::create(rewriter, loc, xt, wr, sq);
    }
    Value vg = reduce(kind, sq, midType, inner);
    SmallVector<int64_t> keptInMid;
    for (int64_t i = 0; i < static_cast<int64_t>(midShape.size()); ++i)
      if (!llvm::is_contained(outer, i))
        keptInMid.push_back(i);
    Value mb = BroadcastOp::create(rewriter, loc, midType, m, rewriter.getDenseI64ArrayAttr(keptInMid));
    Value e = SubOp::create(rewriter, loc, midType, mg, mb);
    // + c s (m_g - m)^2, s = |I| for a sum.
    Value e2 = MulOp::create(rewriter, loc, midType, e, e);
    double spread = scale * (kind == ReduceKind::sum ? static_cast<double>(innerCount) : 1.0);
    if (spread != 1.0)
      e2 = MulOp::create(rewriter, loc, midType, e2, splat(spread));
    Value t = AddOp::create(rewriter, loc, midType, vg, e2);
    Value v = reduce(kind, t, outType, outer);
    rewriter.replaceOp(mean, m);
    rewriter.replaceOp(op, v);
    return success();
  }
};

/// A broadcast of a reshape whose dims stay one contiguous run in the
/// result broadcasts the reshape's input, and the reshape moves to the
/// result: broadcast(reshape(x [B*S] -> [B, S]), dims [0, 1]) -> [B, S, N]
/// is reshape(broadcast(x, dims [0]) -> [B*S, N]). A row statistic then
/// meets the rows it scales in one shape. Only towards fewer dims.
struct SinkReshapeIntoBroadcast : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op, PatternRewriter &rewriter) const override {
    auto r = op.getInput().getDefiningOp<ReshapeOp>();
    if (!r)
      return failure();
    auto src = cast<RankedTensorType>(r.getInput().getType());
    auto mid = cast<RankedTensorType>(r.getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (!src.hasStaticShape() || !mid.hasStaticShape() || !type.hasStaticShape() ||
        src.getRank() >= mid.getRank() || mid.getRank() == 0)
      return failure();
    ArrayRef<int64_t> dims = op.getDims();
    int64_t a = dims.front();
    for (int64_t i = 0; i < mid.getRank(); ++i)
      if (dims[i] != a + i || type.getDimSize(a + i) != mid.getDimSize(i))
        return failure();
    SmallVector<int64_t> shape, newDims;
    for (int64_t i = 0; i < a; ++i)
      shape.push_back(type.getDimSize(i));
    for (int64_t i = 0; i < src.getRank(); ++i) {
      newDims.push_back(a + i);
      shape.push_back(src.getDimSize(i));
    }
    for (int64_t i = a + mid.getRank(); i < type.getRank(); ++i)
      shape.push_back(type.getDimSize(i));
    Location loc = op.getLoc();
    auto b = BroadcastOp::create(rewriter, loc, type.clone(shape), r.getInput(),
                                 rewriter.getDenseI64ArrayAttr(newDims));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, type, b.getResult());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Convolution and pooling on the primitives the GPU runs
//===----------------------------------------------------------------------===//

/// Whether `perm` moves the last dim to position 1 ([N, s..., C] ->
/// [N, C, s...]): the transpose a lowered convolution or pool ends with.
bool channelsFirst(ArrayRef<int64_t> perm) {
  int64_t r = static_cast<int64_t>(perm.size());
  if (r < 3 || perm[0] != 0 || perm[1] != r - 1)
    return false;
  for (int64_t i = 2; i < r; ++i)
    if (perm[i] != i - 1)
      return false;
  return true;
}

/// A dense constant `v` (a reshape of one counts) relaid into `type` at
/// compile time: result element `o` is `v`'s element at the flat index
/// `source(o's coordinates)`, or zero where that is -1. Null where `v` is
/// not a dense, byte-sized constant, or is a splat.
Value mappedConstant(PatternRewriter &b, Location loc, Value v, RankedTensorType type,
                     llvm::function_ref<int64_t(ArrayRef<int64_t>)> source) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (auto r = v.getDefiningOp<ReshapeOp>())
    c = r.getInput().getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  auto in = cast<RankedTensorType>(v.getType());
  if (!dense || dense.isSplat() || !in.getElementType().isIntOrFloat() ||
      in.getElementType().getIntOrFloatBitWidth() % 8 ||
      dense.getNumElements() != in.getNumElements())
    return Value();
  int64_t bytes = in.getElementType().getIntOrFloatBitWidth() / 8, rank = type.getRank();
  ArrayRef<char> raw = dense.getRawData();
  std::vector<char> out(static_cast<size_t>(type.getNumElements() * bytes), 0);
  SmallVector<int64_t> at(rank, 0);
  for (int64_t o = 0, n = type.getNumElements(); o < n; ++o) {
    int64_t rem = o;
    for (int64_t i = rank - 1; i >= 0; --i) {
      at[i] = rem % type.getDimSize(i);
      rem /= type.getDimSize(i);
    }
    if (int64_t src = source(at); src >= 0)
      std::memcpy(&out[o * bytes], &raw[src * bytes], bytes);
  }
  return ConstantOp::create(b, loc, type,
                            DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(out)));
}

/// A constant `v` (a filter's weights) permuted by `perm` (result dim i is
/// dim perm[i]) and grown with zeros at the end of each result dim to
/// `type`'s extents, computed at compile time: null where `v` is not a
/// dense constant.
Value relaidConstant(PatternRewriter &b, Location loc, Value v, ArrayRef<int64_t> perm,
                     RankedTensorType type) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (auto r = v.getDefiningOp<ReshapeOp>())
    c = r.getInput().getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  auto in = cast<RankedTensorType>(v.getType());
  int64_t rank = in.getRank();
  if (dense && dense.isSplat() && in.getElementType().isIntOrFloat() &&
      !llvm::any_of(llvm::seq<int64_t>(0, rank),
                    [&](int64_t i) { return type.getDimSize(i) != in.getDimSize(perm[i]); }))
    return ConstantOp::create(b, loc, type, dense.resizeSplat(type));
  SmallVector<int64_t> inStrides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * in.getDimSize(d + 1);
  return mappedConstant(b, loc, v, type, [&](ArrayRef<int64_t> at) -> int64_t {
    int64_t src = 0;
    for (int64_t i = 0; i < rank; ++i) {
      if (at[i] >= in.getDimSize(perm[i]))
        return -1;
      src += at[i] * inStrides[perm[i]];
    }
    return src;
  });
}

/// The movement ops (transposes, reshapes, slices, concats, splat
/// constants) that compute `v` from one function argument `root` (a
/// network's input, as an RGB stem's taps folded into its channels read
/// it), each used only inside the chain and its last by `user` alone, in
/// program order; empty where `v` is not such a chain. Built into the
/// kernel that reads `v`, the chain costs no kernel and no tensor of its
/// own. (An activation's chain is left alone: its channels-first transpose
/// must stay outside, where the next convolution's cancels it.)
SmallVector<Operation *> argumentChain(Value v, Operation *user, Value &root) {
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> work{v};
  root = Value();
  while (!work.empty()) {
    Value x = work.pop_back_val();
    Operation *def = x.getDefiningOp();
    if (auto c = dyn_cast_or_null<ConstantOp>(def)) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense || !dense.isSplat())
        return {};
      seen.insert(def);
      continue;
    }
    if (def && isa<TransposeOp, ReshapeOp, SliceOp, ConcatOp>(def)) {
      if (seen.insert(def))
        work.append(def->operand_begin(), def->operand_end());
      continue;
    }
    if (!isa<BlockArgument>(x) || (root && root != x))
      return {};
    root = x;
  }
  if (!root || seen.size() > 64)
    return {};
  for (Operation *op : seen)
    for (Operation *u : op->getUsers())
      if (u != user && !seen.contains(u) && !isa<ConstantOp>(op))
        return {};
  SmallVector<Operation *> chain = seen.takeVector();
  llvm::sort(chain, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return chain;
}

/// Whether every op of `chain` (argumentChain's) works image by image on
/// a batch of `n` along dim 0 (dim 0 kept first and whole), so that image
/// b of its result reads image b of its root alone, the same way.
bool perImage(ArrayRef<Operation *> chain, int64_t n) {
  auto lead = [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getRank() > 0 && t.getDimSize(0) == n;
  };
  return llvm::all_of(chain, [&](Operation *op) {
    if (auto t = dyn_cast<TransposeOp>(op))
      return t.getPermutation()[0] == 0;
    if (auto r = dyn_cast<ReshapeOp>(op))
      return lead(r.getInput()) && lead(r.getResult());
    if (auto s = dyn_cast<SliceOp>(op))
      return s.getOffsets()[0] == 0 && s.getStrides()[0] == 1 && lead(s.getInput()) &&
             lead(s.getResult());
    if (auto c = dyn_cast<ConcatOp>(op))
      return c.getDim() != 0;
    return isa<ConstantOp>(op);
  });
}

/// Element `flat` of `v`, a movement chain over `root` (reshapes,
/// transposes, slices, concats and zero splats): the flat index into
/// `root` of the element it copies, -1 where it is a zero, nullopt where
/// the chain holds anything else. A compile-time walk of the chain's index
/// maps, as the code generator's are at run time.
std::optional<int64_t> tracedSource(Value v, int64_t flat, Value root) {
  SmallVector<int64_t, 8> c;
  auto split = [&](ArrayRef<int64_t> shape) {
    c.resize(shape.size());
    for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
      c[i] = flat % shape[i];
      flat /= shape[i];
    }
  };
  auto join = [&](ArrayRef<int64_t> shape) {
    flat = 0;
    for (size_t i = 0; i < shape.size(); ++i)
      flat = flat * shape[i] + c[i];
  };
  while (v != root) {
    Operation *op = v.getDefiningOp();
    if (!op)
      return std::nullopt;
    if (auto r = dyn_cast<ReshapeOp>(op)) { // row-major: the same flat index
      v = r.getInput();
      continue;
    }
    if (auto k = dyn_cast<ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(k.getValue());
      if (!dense || !dense.isSplat())
        return std::nullopt;
      Attribute a = dense.getSplatValue<Attribute>();
      auto f = dyn_cast<FloatAttr>(a);
      auto i = dyn_cast<IntegerAttr>(a);
      if ((f && f.getValue().isZero()) || (i && i.getValue().isZero()))
        return -1;
      return std::nullopt;
    }
    split(cast<RankedTensorType>(v.getType()).getShape());
    if (auto t = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t, 8> in(c.size());
      for (auto [i, p] : llvm::enumerate(t.getPermutation()))
        in[p] = c[i];
      c = in;
      v = t.getInput();
    } else if (auto s = dyn_cast<SliceOp>(op)) {
      for (size_t i = 0; i < c.size(); ++i)
        c[i] = s.getOffsets()[i] + c[i] * s.getStrides()[i];
      v = s.getInput();
    } else if (auto cc = dyn_cast<ConcatOp>(op)) {
      int64_t d = cc.getDim();
      for (Value in : cc.getInputs()) {
        int64_t extent = cast<RankedTensorType>(in.getType()).getDimSize(d);
        if (c[d] < extent) {
          v = in;
          break;
        }
        c[d] -= extent;
      }
    } else {
      return std::nullopt;
    }
    join(cast<RankedTensorType>(v.getType()).getShape());
  }
  return flat;
}

/// A splat constant of `type`.
Value splatOf(PatternRewriter &b, Location loc, RankedTensorType type, double value) {
  auto attr = DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), value));
  return ConstantOp::create(b, loc, type, attr);
}

/// `x` grown along dim `dim` by `low` and `high` elements of `value`.
Value padDim(PatternRewriter &b, Location loc, Value x, int64_t dim, int64_t low,
             int64_t high, double value) {
  if (low == 0 && high == 0)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<Value> parts;
  SmallVector<int64_t> shape(type.getShape());
  auto piece = [&](int64_t n) {
    SmallVector<int64_t> s = shape;
    s[dim] = n;
    parts.push_back(splatOf(b, loc, type.clone(s), value));
  };
  if (low)
    piece(low);
  parts.push_back(x);
  if (high)
    piece(high);
  shape[dim] += low + high;
  return ConcatOp::create(b, loc, type.clone(shape), parts, static_cast<uint64_t>(dim));
}

/// A fusec.kernel `name` over `inputs` of result type `type`, its body
/// built by `body` from the block's arguments. The decomposed im2col and
/// pooling chains are slices of one padded tensor, which fusion would leave
/// a kernel each; built as one kernel, the code generator reads the input
/// through the chain's index maps, once per output element and tap.
Value buildKernel(PatternRewriter &b, Location loc, StringRef name, ValueRange inputs,
                  Type type, llvm::function_ref<Value(ArrayRef<Value>)> body) {
  auto kernel = KernelOp::create(b, loc, TypeRange{type}, inputs, b.getStringAttr(name));
  Block *block = new Block();
  kernel.getBody().push_back(block);
  SmallVector<Value> args;
  for (Value in : inputs)
    args.push_back(block->addArgument(in.getType(), loc));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(block);
  Value r = body(args);
  YieldOp::create(b, loc, ValueRange{r});
  return kernel.getResult(0);
}

/// buildKernel over one value `v` that `user` reads, `body` building the
/// result from it; where `v` is a function argument's movement chain
/// (argumentChain: a filter a stem's folding relaid), the kernel reads the
/// argument and the chain is built into it.
Value buildKernelOverChain(PatternRewriter &b, Location loc, StringRef name, Value v,
                           Operation *user, Type type, llvm::function_ref<Value(Value)> body) {
  Value root;
  SmallVector<Operation *> chain = argumentChain(v, user, root);
  return buildKernel(b, loc, name, {chain.empty() ? v : root}, type, [&](ArrayRef<Value> args) {
    if (chain.empty())
      return body(args[0]);
    IRMapping map;
    map.map(root, args[0]);
    for (Operation *o : chain)
      b.clone(*o, map);
    return body(map.lookup(v));
  });
}

/// The most taps a window may have for a convolution or a pool to be
/// decomposed (a slice a tap, in one kernel). Past it the op stays as it is
/// and code generation refuses it by name: a 6 x 65535 window (fuzz_onnx)
/// made 393,210 slices, 7 s in fusec-decompose.
constexpr int64_t kMaxWindowTaps = int64_t(1) << 14;

/// The taps of `w`, saturating past kMaxWindowTaps.
int64_t windowTapCount(const Window &w) {
  int64_t taps = 1;
  for (int64_t k : w.kernel)
    taps = k > 0 && taps > kMaxWindowTaps / k ? kMaxWindowTaps + 1 : taps * k;
  return taps;
}

/// The taps of a window, each its offset per spatial dim.
SmallVector<SmallVector<int64_t, 4>> windowTaps(const Window &w) {
  SmallVector<SmallVector<int64_t, 4>> taps(1);
  for (int64_t k : w.kernel) {
    SmallVector<SmallVector<int64_t, 4>> next;
    for (auto &t : taps)
      for (int64_t i = 0; i < k; ++i) {
        next.push_back(t);
        next.back().push_back(i);
      }
    taps = std::move(next);
  }
  return taps;
}

/// The elements tap `t` of the window reads for every output of `outDims`
/// (spatial, at dims `first`...), from `xp` (already padded): a strided slice.
Value tapSlice(PatternRewriter &b, Location loc, Value xp, const Window &w,
               ArrayRef<int64_t> tap, ArrayRef<int64_t> outDims, int64_t first) {
  auto type = cast<RankedTensorType>(xp.getType());
  SmallVector<int64_t> offsets(type.getRank(), 0), strides(type.getRank(), 1),
      shape(type.getShape());
  for (size_t i = 0; i < outDims.size(); ++i) {
    offsets[first + i] = tap[i] * w.dilations[i];
    strides[first + i] = w.strides[i];
    shape[first + i] = outDims[i];
  }
  return SliceOp::create(b, loc, type.clone(shape), xp, offsets, strides);
}

/// A transposed convolution as forward ones, one per output phase. Along a
/// dim of stride s, dilation d and low pad p, output o receives input i
/// through tap t where o + p = i·s + t·d; write o + p = m·s + ρ. Phase ρ
/// (0 <= ρ < s) is then y_ρ[m] = sum over the taps t with t·d = ρ (mod s) of
/// x[m - e_t] w[t], e_t = (t·d - ρ) / s: a forward, stride-1 convolution
/// of x padded low by E = max e_t, with the filter w'[E - e_t] = w[t] (zero
/// between taps), its channels swapped ([C, K/g] -> [K, C/g], group by
/// group). Each phase runs over the same m (from p / s on, enough for the
/// outputs), the phases interleave along a new dim of s after each spatial
/// dim ([N, K, M1, s1, M2, s2, ...], a reshape to [N, K, M1·s1, ...]) and a
/// slice from p mod s takes the outputs. No product with an inserted zero
/// is computed (a zero-stuffed input would compute s^n times the FLOPs),
/// and each phase is a forward convolution that DecomposeConv runs
/// (implicit GEMM in 16-bit floats). A constant filter's phases are
/// relaid at compile time; another's are a gather through a constant table.
/// A phase no tap reaches is zero.
struct DecomposeTransposedConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  static constexpr int64_t kMaxPhases = 256;
  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &b) const override {
    if (!op.getTransposed())
      return failure();
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType(), filter = op.getFilter().getType(),
                     outType = op.getType();
    if (!in.hasStaticShape() || !outType.hasStaticShape() || in.getNumElements() == 0 ||
        outType.getNumElements() == 0 || filter.getNumElements() == 0)
      return b.notifyMatchFailure(op, "a dynamic or empty transposed convolution");
    // A filter that is not a constant is gathered through i32 indices.
    if (filter.getNumElements() >= (int64_t(1) << 31) - 1)
      return b.notifyMatchFailure(op, "a filter of 2^31 elements or more");
    Window w = windowOf(op);
    if (windowTapCount(w) > kMaxWindowTaps)
      return b.notifyMatchFailure(op, "a window of more than 2^14 taps");
    int64_t rank = in.getRank(), n = rank - 2, groups = op.getGroups();
    int64_t c = in.getDimSize(1), k = outType.getDimSize(1), cg = c / groups, kg = k / groups;
    int64_t phases = 1;
    for (int64_t i = 0; i < n; ++i) {
      if (w.strides[i] < 1 || w.dilations[i] < 1 || w.padLow[i] < 0)
        return b.notifyMatchFailure(op, "a stride, dilation or low pad out of range");
      phases *= w.strides[i];
      if (phases > kMaxPhases)
        return b.notifyMatchFailure(op, "more than 256 output phases");
    }
    // Per dim: the m range every phase covers, and per residue the filter
    // taps at each position j of the phase's filter (-1: a zero).
    SmallVector<int64_t> mStart(n), mCount(n), inDims(n), outDims(n);
    SmallVector<SmallVector<SmallVector<int64_t>>> tapsOf(n);
    for (int64_t i = 0; i < n; ++i) {
      int64_t s = w.strides[i], d = w.dilations[i], p = w.padLow[i], kk = w.kernel[i];
      inDims[i] = in.getDimSize(2 + i);
      outDims[i] = outType.getDimSize(2 + i);
      mStart[i] = p / s;
      mCount[i] = (outDims[i] - 1 + p) / s - mStart[i] + 1;
      for (int64_t rho = 0; rho < s; ++rho) {
        int64_t e = -1;
        for (int64_t t = 0; t < kk; ++t)
          if ((t * d) % s == rho)
            e = std::max(e, (t * d - rho) / s);
        SmallVector<int64_t> taps(static_cast<size_t>(e + 1), -1);
        for (int64_t t = 0; t < kk; ++t)
          if ((t * d) % s == rho)
            taps[static_cast<size_t>(e - (t * d - rho) / s)] = t;
        tapsOf[i].push_back(std::move(taps));
      }
    }
    SmallVector<int64_t> fStrides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      fStrides[d] = fStrides[d + 1] * filter.getDimSize(d + 1);
    // The filter's elements, flat, with a zero appended (a gather's index
    // for a tap between taps), when the filter is not a constant.
    Value flatFilter;
    // A phase filter of type fType, element `at` the filter's element
    // source(at) (-1: a zero): relaid at compile time when the filter is a
    // constant, else gathered through a constant table.
    auto filterOf = [&](RankedTensorType fType,
                        llvm::function_ref<int64_t(ArrayRef<int64_t>)> source) -> Value {
      if (Value f = mappedConstant(b, loc, op.getFilter(), fType, source))
        return f;
      int64_t total = filter.getNumElements();
      if (!flatFilter) {
        Value flat = ReshapeOp::create(b, loc, filter.clone({total}), op.getFilter());
        Value zero = splatOf(b, loc, filter.clone({1}), 0.0);
        flatFilter = ConcatOp::create(b, loc, filter.clone({total + 1}),
                                      ValueRange{flat, zero}, static_cast<uint64_t>(0));
      }
      auto idxType = RankedTensorType::get(fType.getShape(), b.getI32Type());
      SmallVector<int32_t> idx(static_cast<size_t>(idxType.getNumElements()));
      SmallVector<int64_t> at(rank, 0);
      for (int64_t e = 0, ne = idxType.getNumElements(); e < ne; ++e) {
        for (int64_t d = rank - 1, r = e; d >= 0; --d) {
          at[d] = r % fType.getDimSize(d);
          r /= fType.getDimSize(d);
        }
        int64_t src = source(at);
        idx[static_cast<size_t>(e)] = static_cast<int32_t>(src < 0 ? total : src);
      }
      Value table = ConstantOp::create(b, loc, idxType,
                                       DenseElementsAttr::get(idxType, ArrayRef<int32_t>(idx)));
      return GatherOp::create(b, loc, fType, flatFilter, table, static_cast<uint64_t>(0));
    };
    // Where every phase has the same taps at the same offsets along every
    // dim (a kernel that is a multiple of the stride, undilated: a U-Net's
    // or a GAN's 4x4 and 2x2 stride-2 upsampling), the phases differ only
    // in their filters: they are one forward convolution of Φ·K output
    // channels (ordered group, phase, channel), its result interleaved by a
    // reshape and a transpose (depth to space). One GEMM of Φ·K columns
    // instead of Φ of K, and no concat of phases. FUSEC_CONVT_STACKED=0
    // keeps a convolution a phase. FUSEC_CONVT_STACKED=2 stacks phases
    // with different taps too (a 3x3 stride-2 filter: 2 or 1 taps a dim),
    // each phase's filter padded with zero taps to the most any phase has
    // (its taps at their offsets, zeros before them): one GEMM, at the
    // cost of the zero taps' products (for measurement; not yet timed).
    const char *stackKnob = std::getenv("FUSEC_CONVT_STACKED");
    int64_t stackMode = stackKnob && *stackKnob ? std::atoll(stackKnob) : 1;
    bool stacked = stackMode != 0;
    SmallVector<int64_t> most(n, 0);
    for (int64_t i = 0; i < n; ++i)
      for (const auto &taps : tapsOf[i]) {
        stacked &= stackMode == 2 || (!taps.empty() && taps.size() == tapsOf[i][0].size());
        most[i] = std::max<int64_t>(most[i], static_cast<int64_t>(taps.size()));
      }
    if (stacked) {
      int64_t batch = in.getDimSize(0);
      SmallVector<int64_t> fShape = {phases * k, cg}, low(n), high(n), ones(n, 1),
                           convShape = {batch, phases * k};
      for (int64_t i = 0; i < n; ++i) {
        int64_t j = most[i];
        fShape.push_back(j);
        low[i] = j - 1;
        high[i] = std::max<int64_t>(0, mStart[i] + mCount[i] - inDims[i]);
        convShape.push_back(inDims[i] + high[i]);
      }
      // Output channel o = (g·Φ + φ)·kg + kk reads w[g·cg + cc, kk, taps...]
      // of phase φ (its residues row-major, the last dim's fastest).
      auto source = [&](ArrayRef<int64_t> at) -> int64_t {
        int64_t kk = at[0] % kg, phase = (at[0] / kg) % phases, g = at[0] / kg / phases;
        int64_t src = (g * cg + at[1]) * fStrides[0] + kk * fStrides[1];
        for (int64_t i = n - 1, r = phase; i >= 0; --i) {
          // Position j of `most` holds offset most - 1 - j: the phase's
          // tap list (offsets from its size - 1 down) starts most - size in.
          const auto &taps = tapsOf[i][r % w.strides[i]];
          int64_t at0 = at[2 + i] - (most[i] - static_cast<int64_t>(taps.size()));
          r /= w.strides[i];
          int64_t t = at0 < 0 ? -1 : taps[static_cast<size_t>(at0)];
          if (t < 0)
            return -1;
          src += t * fStrides[2 + i];
        }
        return src;
      };
      Value f = filterOf(filter.clone(fShape), source);
      auto conv = ConvOp::create(b, loc, outType.clone(convShape), op.getInput(), f,
                                 b.getDenseI64ArrayAttr(ones), b.getDenseI64ArrayAttr(ones),
                                 b.getDenseI64ArrayAttr(low), b.getDenseI64ArrayAttr(high),
                                 b.getI64IntegerAttr(groups), nullptr);
      SmallVector<int64_t> off(rank, 0), str(rank, 1), partShape = {batch, phases * k};
      for (int64_t i = 0; i < n; ++i)
        off[2 + i] = mStart[i];
      partShape.append(mCount.begin(), mCount.end());
      Value y = SliceOp::create(b, loc, outType.clone(partShape), conv, off, str);
      // [N, g, s..., kg, M...] -> [N, g, kg, M1, s1, M2, s2, ...] -> [N, K, M1·s1, ...].
      SmallVector<int64_t> split = {batch, groups}, perm = {0, 1, 2 + n}, moved, full = {batch, k};
      for (int64_t i = 0; i < n; ++i)
        split.push_back(w.strides[i]);
      split.push_back(kg);
      split.append(mCount.begin(), mCount.end());
      for (int64_t i = 0; i < n; ++i) {
        perm.push_back(3 + n + i);
        perm.push_back(2 + i);
        full.push_back(mCount[i] * w.strides[i]);
      }
      for (int64_t d : perm)
        moved.push_back(split[d]);
      y = ReshapeOp::create(b, loc, outType.clone(split), y);
      y = TransposeOp::create(b, loc, outType.clone(moved), y, perm);
      y = ReshapeOp::create(b, loc, outType.clone(full), y);
      SmallVector<int64_t> outOff(rank, 0);
      for (int64_t i = 0; i < n; ++i)
        outOff[2 + i] = w.padLow[i] % w.strides[i];
      b.replaceOpWithNewOp<SliceOp>(op, outType, y, outOff, str);
      return success();
    }
    SmallVector<Value> parts;
    for (int64_t phase = 0; phase < phases; ++phase) {
      SmallVector<int64_t> rho(n);
      for (int64_t i = n - 1, r = phase; i >= 0; --i) {
        rho[i] = r % w.strides[i];
        r /= w.strides[i];
      }
      SmallVector<int64_t> partShape = {in.getDimSize(0), k};
      partShape.append(mCount.begin(), mCount.end());
      auto partType = outType.clone(partShape);
      bool reached = true;
      SmallVector<int64_t> fShape = {k, cg}, low(n), high(n), convShape = {in.getDimSize(0), k};
      for (int64_t i = 0; i < n; ++i) {
        const auto &taps = tapsOf[i][rho[i]];
        reached &= !taps.empty();
        int64_t j = static_cast<int64_t>(taps.size());
        fShape.push_back(j);
        low[i] = j - 1;
        high[i] = std::max<int64_t>(0, mStart[i] + mCount[i] - inDims[i]);
        convShape.push_back(inDims[i] + high[i]);
      }
      Value part;
      if (!reached) {
        part = splatOf(b, loc, partType, 0.0);
      } else {
        auto fType = filter.clone(fShape);
        // w'[o, cc, j...] = w[g·cg + cc, o mod kg, taps(j)...], g = o / kg.
        auto source = [&](ArrayRef<int64_t> at) -> int64_t {
          int64_t g = at[0] / kg, src = (g * cg + at[1]) * fStrides[0] + (at[0] % kg) * fStrides[1];
          for (int64_t i = 0; i < n; ++i) {
            int64_t t = tapsOf[i][rho[i]][static_cast<size_t>(at[2 + i])];
            if (t < 0)
              return -1;
            src += t * fStrides[2 + i];
          }
          return src;
        };
        Value f = filterOf(fType, source);
        SmallVector<int64_t> ones(n, 1);
        auto conv = ConvOp::create(b, loc, outType.clone(convShape), op.getInput(), f,
                                   b.getDenseI64ArrayAttr(ones), b.getDenseI64ArrayAttr(ones),
                                   b.getDenseI64ArrayAttr(low), b.getDenseI64ArrayAttr(high),
                                   b.getI64IntegerAttr(groups), nullptr);
        SmallVector<int64_t> off(rank, 0), str(rank, 1);
        for (int64_t i = 0; i < n; ++i)
          off[2 + i] = mStart[i];
        part = SliceOp::create(b, loc, partType, conv, off, str);
      }
      // [N, K, M1, 1, M2, 1, ...].
      SmallVector<int64_t> spread = {in.getDimSize(0), k};
      for (int64_t i = 0; i < n; ++i) {
        spread.push_back(mCount[i]);
        spread.push_back(1);
      }
      parts.push_back(ReshapeOp::create(b, loc, outType.clone(spread), part));
    }
    // Interleave: the last dim's residues first (consecutive parts), along
    // the new dim after each spatial dim.
    SmallVector<int64_t> shape = {in.getDimSize(0), k};
    for (int64_t i = 0; i < n; ++i) {
      shape.push_back(mCount[i]);
      shape.push_back(1);
    }
    for (int64_t i = n - 1; i >= 0; --i) {
      int64_t s = w.strides[i];
      shape[3 + 2 * i] = s;
      SmallVector<Value> joined;
      for (size_t g = 0; g < parts.size(); g += static_cast<size_t>(s)) {
        if (s == 1) {
          joined.push_back(parts[g]);
          continue;
        }
        SmallVector<Value> group(parts.begin() + g, parts.begin() + g + s);
        joined.push_back(ConcatOp::create(b, loc, outType.clone(shape), group,
                                          static_cast<uint64_t>(3 + 2 * i)));
      }
      parts = std::move(joined);
    }
    SmallVector<int64_t> full = {in.getDimSize(0), k}, off(rank, 0), str(rank, 1);
    for (int64_t i = 0; i < n; ++i) {
      full.push_back(mCount[i] * w.strides[i]);
      off[2 + i] = w.padLow[i] % w.strides[i];
    }
    Value y = ReshapeOp::create(b, loc, outType.clone(full), parts.front());
    b.replaceOpWithNewOp<SliceOp>(op, outType, y, off, str);
    return success();
  }
};

/// A forward convolution in 16-bit floats as implicit GEMM (implicitGemm
/// below); in other types (or where the windows' rows pass 2^31) as a
/// matmul over an im2col matrix: the input transposed to channels-last
/// ([N, spatial..., C]), each tap a strided slice of it, the taps side by
/// side into [N, P, T·C] (P outputs, T taps; the contraction padded with
/// zeros to a multiple of 8 elements, so TMA can read its rows), times the
/// filter as [K, T·C] (transposed the same way). The [N, P, K] product is
/// transposed back to [N, K, spatial...], which the matmul's epilogue can
/// store directly. A depthwise convolution (one input channel a group) is
/// a sum over the taps of slices times per-channel weights instead: a
/// memory-bound elementwise kernel. Other grouped ones run a convolution per
/// group. Transposed convolutions are left whole.
struct DecomposeConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &b) const override {
    if (op.getTransposed())
      return failure();
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType(), filter = op.getFilter().getType(),
                     outType = op.getType();
    int64_t rank = in.getRank(), n = in.getDimSize(0), c = in.getDimSize(1);
    int64_t k = outType.getDimSize(1), groups = op.getGroups(), cg = c / groups;
    Window w = windowOf(op);
    if (windowTapCount(w) > kMaxWindowTaps)
      return b.notifyMatchFailure(op, "a window of more than 2^14 taps");
    SmallVector<int64_t> outDims(outType.getShape().drop_front(2));
    int64_t p = 1;
    for (int64_t d : outDims)
      p *= d;
    if (cg == 1 && groups > 1)
      return depthwise(op, b, w, outDims);
    if (groups > 1) {
      // One convolution per group on its channels, joined along the channels.
      SmallVector<Value> parts;
      int64_t kg = k / groups;
      for (int64_t g = 0; g < groups; ++g) {
        SmallVector<int64_t> off(rank, 0), str(rank, 1), xs(in.getShape()), fs(filter.getShape());
        off[1] = g * cg;
        xs[1] = cg;
        Value xg = SliceOp::create(b, loc, in.clone(xs), op.getInput(), off, str);
        off[1] = 0;
        off[0] = g * kg;
        fs[0] = kg;
        Value fg = SliceOp::create(b, loc, filter.clone(fs), op.getFilter(), off, str);
        SmallVector<int64_t> ys(outType.getShape());
        ys[1] = kg;
        auto conv = ConvOp::create(b, loc, outType.clone(ys), xg, fg, op.getStridesAttr(),
                                   op.getDilationsAttr(), op.getPadLowAttr(),
                                   op.getPadHighAttr(), b.getI64IntegerAttr(1), nullptr);
        parts.push_back(conv);
      }
      b.replaceOpWithNewOp<ConcatOp>(op, outType, parts, static_cast<uint64_t>(1));
      return success();
    }
    // Channels last: [N, C, s...] -> [N, s..., C].
    SmallVector<int64_t> toLast = {0};
    for (int64_t d = 2; d < rank; ++d)
      toLast.push_back(d);
    toLast.push_back(1);
    auto permuted = [&](RankedTensorType t, ArrayRef<int64_t> perm) {
      SmallVector<int64_t> s;
      for (int64_t d : perm)
        s.push_back(t.getDimSize(d));
      return t.clone(s);
    };
    SmallVector<SmallVector<int64_t, 4>> taps = windowTaps(w);
    int64_t t = static_cast<int64_t>(taps.size()), kdim = t * c;
    int64_t kpad = (8 - kdim % 8) % 8;
    Type et = in.getElementType();
    auto lhsType = RankedTensorType::get({n, p, kdim + kpad}, et);
    bool pointwise = t == 1 && kpad == 0 && llvm::all_of(w.strides, [](int64_t v) { return v == 1; }) &&
                     llvm::all_of(w.padLow, [](int64_t v) { return v == 0; }) &&
                     llvm::all_of(w.padHigh, [](int64_t v) { return v == 0; });
    // A 1x1 convolution is a matmul on the channels-last input as it is;
    // every other one in 16-bit floats an implicit GEMM. The 1x1 GEMM takes
    // the images' positions as its rows, [N·P, C]·[C, K], as
    // CollapseMatmulRows does for linear layers, not N batches of P rows: a
    // 7x7 image is 49 rows, which a batch pads to a 64-row tile and whose
    // filter each image reads again. Measured on the H100 (bench/results/
    // 2026-12-07-h100-stop59): ResNet-50 end to end 1.235 ms against 1.307
    // for the batch, l4's 512 -> 2048 0.016 against 0.020 ms, 128 -> 512
    // 0.016 against 0.018; FUSEC_CONV_POINTWISE_ROWS=0 keeps the batch.
    const char *rowsKnob = std::getenv("FUSEC_CONV_POINTWISE_ROWS");
    bool pointwiseRows = pointwise && !(rowsKnob && std::string_view(rowsKnob) == "0");
    auto rowsType = RankedTensorType::get({n * p, kdim + kpad}, et);
    Type elem = in.getElementType();
    // TMA's im2col mode (unless FUSEC_CONV_IM2COL=0) reads an activation
    // of at least a k-block of channels as it is; fewer channels (a stem's)
    // fold their phases and taps into the channels first.
    if (!pointwise && (elem.isF16() || elem.isBF16()) && c >= 64 &&
        succeeded(im2colGemm(op, b, w, outDims)))
      return success();
    if (!pointwise && (elem.isF16() || elem.isBF16()) &&
        (succeeded(spaceToDepth(op, b, w)) || succeeded(foldTapsIntoChannels(op, b, w))))
      return success();
    if (!pointwise && (elem.isF16() || elem.isBF16()) &&
        succeeded(implicitGemm(op, b, w, outDims)))
      return success();
    auto im2col = [&](ArrayRef<Value> args) -> Value {
      Value x = TransposeOp::create(b, loc, permuted(in, toLast), args[0], toLast);
      if (pointwise)
        return ReshapeOp::create(b, loc, pointwiseRows ? rowsType : lhsType, x);
      for (int64_t i = 0; i + 2 < rank; ++i)
        x = padDim(b, loc, x, i + 1, w.padLow[i], w.padHigh[i], 0.0);
      SmallVector<Value> cols;
      for (auto &tap : taps) {
        Value s = tapSlice(b, loc, x, w, tap, outDims, 1);
        cols.push_back(ReshapeOp::create(b, loc, RankedTensorType::get({n, p, c}, et), s));
      }
      if (kpad)
        cols.push_back(splatOf(b, loc, RankedTensorType::get({n, p, kpad}, et), 0.0));
      if (cols.size() == 1)
        return cols[0];
      return ConcatOp::create(b, loc, lhsType, cols, static_cast<uint64_t>(2));
    };
    // A 1x1 convolution's channels-last input is a transpose that fusion
    // can fold into the matmul's load; every other one is an im2col kernel.
    Value lhs = pointwise ? im2col({op.getInput()})
                          : buildKernel(b, loc, "im2col", {op.getInput()}, lhsType, im2col);
    // The filter [K, C, taps...] -> [K, taps..., C] -> [K, T·C] (+ zeros).
    SmallVector<int64_t> fperm = {0};
    for (int64_t d = 2; d < rank; ++d)
      fperm.push_back(d);
    fperm.push_back(1);
    // Weights (a constant) are relaid at compile time where the zeros pad
    // the channels of the one tap, or there are none.
    Value f;
    if (kpad == 0 || t == 1) {
      RankedTensorType grown = permuted(filter, fperm);
      SmallVector<int64_t> shape(grown.getShape());
      shape.back() += kpad;
      if (Value cf = relaidConstant(b, loc, op.getFilter(), fperm, grown.clone(shape)))
        f = ReshapeOp::create(b, loc, RankedTensorType::get({k, kdim + kpad}, et), cf);
    }
    // One tap and no padding: [K, C, 1...] is [K, C] as it lies in memory,
    // a reshape that the matmul's load reads through (no relayout kernel
    // for a filter that is an argument).
    if (!f && t == 1 && kpad == 0)
      f = ReshapeOp::create(b, loc, RankedTensorType::get({k, kdim}, et), op.getFilter());
    if (!f)
      f = buildKernel(
          b, loc, "filter_im2col", {op.getFilter()}, RankedTensorType::get({k, kdim + kpad}, et),
          [&](ArrayRef<Value> args) -> Value {
            Value f = TransposeOp::create(b, loc, permuted(filter, fperm), args[0], fperm);
            f = ReshapeOp::create(b, loc, RankedTensorType::get({k, kdim}, et), f);
            return kpad ? padDim(b, loc, f, 1, 0, kpad, 0.0) : f;
          });
    Type rt = outType.getElementType();
    auto mmType = pointwiseRows ? RankedTensorType::get({n * p, k}, rt)
                                : RankedTensorType::get({n, p, k}, rt);
    auto mm = MatmulOp::create(b, loc, mmType, lhs, f);
    mm.setTransposeRhs(true);
    replaceChannelsFirst(op, b, mm, outDims);
    return success();
  }

  /// Replaces `op` by the GEMM result `mm` ([N, P, K] or [N P, K]) as
  /// [N, spatial..., K], transposed channels first (a transpose the next
  /// convolution's cancels).
  static void replaceChannelsFirst(ConvOp op, PatternRewriter &b, Value mm,
                                   ArrayRef<int64_t> outDims) {
    RankedTensorType outType = op.getType();
    int64_t rank = outType.getRank();
    SmallVector<int64_t> nhwk = {outType.getDimSize(0)}, toFirst = {0, rank - 1};
    nhwk.append(outDims.begin(), outDims.end());
    nhwk.push_back(outType.getDimSize(1));
    for (int64_t d = 1; d + 1 < rank; ++d)
      toFirst.push_back(d);
    Value y = ReshapeOp::create(b, op.getLoc(),
                                RankedTensorType::get(nhwk, outType.getElementType()), mm);
    b.replaceOpWithNewOp<TransposeOp>(op, outType, y, toFirst);
  }

  /// Few channels and a stride (an RGB stem's 7x7 of stride 2): space to
  /// depth. The padded input's stride phases move into the channels,
  /// x'[n, (p_1...p_S) C + c, q...] = x_pad[n, c, ..., q_i s_i + p_i, ...],
  /// and the filter, padded with zero taps to k'_i s_i (k'_i = ceil(k_i /
  /// s_i)), the same way: f'[k, (p...) C + c, j'...] = f[k, c, ..., j'_i s_i
  /// + p_i, ...]. The new convolution has stride 1, no padding and k'_i
  /// taps: output o's tap j' of phase p reads x_pad[o s + j' s + p], the
  /// original tap j' s + p. A 7x7 stride-2 stem of 3 channels becomes a 4x4
  /// one of 12, whose taps along W then fold into 48 channels
  /// (foldTapsIntoChannels): 4 k-blocks (K = 256), not 7, over a padded
  /// input half the size. Only where the phases' channels fit one k-block
  /// (C Πs <= 64) and every strided dim is undilated.
  LogicalResult spaceToDepth(ConvOp op, PatternRewriter &b, const Window &w) const {
    RankedTensorType in = op.getInput().getType(), filter = op.getFilter().getType(),
                     outType = op.getType();
    int64_t rank = in.getRank(), sp = rank - 2, n = in.getDimSize(0), c = in.getDimSize(1);
    int64_t kf = filter.getDimSize(0), phases = 1;
    for (int64_t i = 0; i < sp; ++i) {
      if (w.strides[i] > 1 && w.dilations[i] != 1)
        return failure();
      phases *= w.strides[i];
    }
    if (phases == 1 || c % 64 == 0 || c * phases > 64)
      return failure();
    Location loc = op.getLoc();
    Type et = in.getElementType();
    SmallVector<int64_t> kp(sp), q(sp);
    Value x = op.getInput();
    for (int64_t i = 0; i < sp; ++i) {
      int64_t s = w.strides[i], span = (w.kernel[i] - 1) * w.dilations[i] + 1;
      kp[i] = s == 1 ? span : (span + s - 1) / s;
      q[i] = outType.getDimSize(i + 2) + kp[i] - 1;
      // The padded extent Q_i s_i: pad, or trim what no output reads.
      auto type = cast<RankedTensorType>(x.getType());
      int64_t extent = in.getDimSize(i + 2), high = q[i] * s - w.padLow[i] - extent;
      if (high < 0) {
        SmallVector<int64_t> off(rank, 0), str(rank, 1), shape(type.getShape());
        shape[i + 2] = extent + high;
        x = SliceOp::create(b, loc, type.clone(shape), x, off, str);
        high = 0;
      }
      x = padDim(b, loc, x, i + 2, w.padLow[i], high, 0.0);
    }
    // [N, C, Q_1 s_1, ...] -> [N, C, Q_1, s_1, ...] -> [N, s..., C, Q...]
    // -> [N, Πs C, Q...].
    SmallVector<int64_t> split = {n, c}, perm = {0}, moved, shape2 = {n, phases * c};
    for (int64_t i = 0; i < sp; ++i) {
      split.push_back(q[i]);
      split.push_back(w.strides[i]);
      perm.push_back(3 + 2 * i);
      shape2.push_back(q[i]);
    }
    perm.push_back(1);
    for (int64_t i = 0; i < sp; ++i)
      perm.push_back(2 + 2 * i);
    for (int64_t d : perm)
      moved.push_back(split[d]);
    x = ReshapeOp::create(b, loc, RankedTensorType::get(split, et), x);
    x = TransposeOp::create(b, loc, RankedTensorType::get(moved, et), x, perm);
    x = ReshapeOp::create(b, loc, RankedTensorType::get(shape2, et), x);
    // The filter the same way (dilations 1 where strided; a stride-1 dim
    // keeps its taps, dilation included, as its own).
    SmallVector<int64_t> fshape = {kf, phases * c};
    fshape.append(kp.begin(), kp.end());
    auto ftype = RankedTensorType::get(fshape, filter.getElementType());
    Value f = mappedConstant(b, loc, op.getFilter(), ftype, [&](ArrayRef<int64_t> at) -> int64_t {
      int64_t ch = at[1] % c, phase = at[1] / c, src = at[0] * c + ch;
      SmallVector<int64_t> p(sp);
      for (int64_t i = sp - 1; i >= 0; --i) {
        p[i] = phase % w.strides[i];
        phase /= w.strides[i];
      }
      for (int64_t i = 0; i < sp; ++i) {
        int64_t tap = at[2 + i] * w.strides[i] + p[i];
        if (w.strides[i] == 1) {
          if (tap % w.dilations[i])
            return -1;
          tap /= w.dilations[i];
        }
        if (tap >= w.kernel[i])
          return -1;
        src = src * w.kernel[i] + tap;
      }
      return src;
    });
    if (!f) {
      bool dilated = false;
      for (int64_t i = 0; i < sp; ++i)
        dilated |= w.strides[i] == 1 && w.dilations[i] != 1;
      if (dilated)
        return failure(); // a computed filter: only undilated windows
      Value g = op.getFilter();
      for (int64_t i = 0; i < sp; ++i)
        g = padDim(b, loc, g, i + 2, 0, kp[i] * w.strides[i] - w.kernel[i], 0.0);
      SmallVector<int64_t> fsplit = {kf, c}, fmoved;
      for (int64_t i = 0; i < sp; ++i) {
        fsplit.push_back(kp[i]);
        fsplit.push_back(w.strides[i]);
      }
      for (int64_t d : perm)
        fmoved.push_back(fsplit[d]);
      Type ft = filter.getElementType();
      g = ReshapeOp::create(b, loc, RankedTensorType::get(fsplit, ft), g);
      g = TransposeOp::create(b, loc, RankedTensorType::get(fmoved, ft), g, perm);
      f = ReshapeOp::create(b, loc, ftype, g);
    }
    SmallVector<int64_t> ones(sp, 1), zeros(sp, 0);
    b.replaceOpWithNewOp<ConvOp>(op, outType, x, f, b.getDenseI64ArrayAttr(ones),
                                 b.getDenseI64ArrayAttr(ones), b.getDenseI64ArrayAttr(zeros),
                                 b.getDenseI64ArrayAttr(zeros), b.getI64IntegerAttr(1), nullptr);
    return success();
  }

  /// Few channels (an RGB stem's 3): the taps along the last spatial dim
  /// move into the channels, where they take fewer zero channels to fill
  /// whole k-blocks of 64: x'[n, j C + c, ..., o] = x_pad[n, c, ..., o s +
  /// j d] (the window's j-th tap along the dim, a strided slice of the
  /// input padded along it), and the filter [K, C, ..., k] becomes
  /// [K, k C, ..., 1]; the new convolution has stride and dilation 1 and no
  /// padding along the dim. A 7x7 stem of 3 channels reads 7 taps of 21
  /// (padded to 64) channels, not 49 of 64: 7x fewer FLOPs.
  LogicalResult foldTapsIntoChannels(ConvOp op, PatternRewriter &b, const Window &w) const {
    RankedTensorType in = op.getInput().getType(), filter = op.getFilter().getType(),
                     outType = op.getType();
    int64_t rank = in.getRank(), c = in.getDimSize(1), last = rank - 1, sp = rank - 2;
    int64_t kw = w.kernel.back();
    auto blocks = [](int64_t ch) { return (ch + 63) / 64; };
    if (c % 64 == 0 || kw == 1 || blocks(c * kw) >= blocks(c) * kw)
      return failure();
    Location loc = op.getLoc();
    int64_t wo = outType.getDimSize(last), s = w.strides.back(), d = w.dilations.back();
    Value x = padDim(b, loc, op.getInput(), last, w.padLow.back(), w.padHigh.back(), 0.0);
    auto xt = cast<RankedTensorType>(x.getType());
    SmallVector<Value> taps;
    SmallVector<int64_t> shape(xt.getShape());
    shape[last] = wo;
    for (int64_t j = 0; j < kw; ++j) {
      SmallVector<int64_t> off(rank, 0), str(rank, 1);
      off[last] = j * d;
      str[last] = s;
      taps.push_back(SliceOp::create(b, loc, xt.clone(shape), x, off, str));
    }
    shape[1] = kw * c;
    Value folded = ConcatOp::create(b, loc, xt.clone(shape), taps, static_cast<uint64_t>(1));
    // The filter [K, C, ..., k] -> [K, k, C, ...] -> [K, k C, ..., 1].
    SmallVector<int64_t> perm = {0, last}, fshape = {filter.getDimSize(0), kw};
    for (int64_t i = 1; i < last; ++i) {
      perm.push_back(i);
      fshape.push_back(filter.getDimSize(i));
    }
    Value f = relaidConstant(b, loc, op.getFilter(), perm, filter.clone(fshape));
    if (!f)
      f = TransposeOp::create(b, loc, filter.clone(fshape), op.getFilter(), perm);
    SmallVector<int64_t> f2(filter.getShape());
    f2[1] = kw * c;
    f2[last] = 1;
    f = ReshapeOp::create(b, loc, filter.clone(f2), f);
    SmallVector<int64_t> strides(w.strides.begin(), w.strides.end()),
        dilations(w.dilations.begin(), w.dilations.end()), lo(w.padLow.begin(), w.padLow.end()),
        hi(w.padHigh.begin(), w.padHigh.end());
    strides[sp - 1] = dilations[sp - 1] = 1;
    lo[sp - 1] = hi[sp - 1] = 0;
    b.replaceOpWithNewOp<ConvOp>(op, outType, folded, f, b.getDenseI64ArrayAttr(strides),
                                 b.getDenseI64ArrayAttr(dilations), b.getDenseI64ArrayAttr(lo),
                                 b.getDenseI64ArrayAttr(hi), b.getI64IntegerAttr(1), nullptr);
    return success();
  }

  /// A convolution whose channels fill whole k-blocks (C a multiple of 64)
  /// as implicit GEMM over shifted row windows. The input, channels last
  /// and padded, is cut into its stride phases (space to depth: phase p of
  /// dim i holds the padded positions q s_i + p), each phase's positions
  /// flattened into rows: P [Φ, R, C] (conv_pad; only the phases some tap
  /// reads, and zero rows at the end). Output rows are the positions
  /// (n, q...) of the phase grid, Q_i = O_i + ((k_i - 1) d_i) / s_i per dim;
  /// tap j reads phase φ_j at row offset δ_j (its (j d) / s per dim, in
  /// grid rows), so its lhs block is a contiguous window of P: the
  /// conv_window kernel lays the T windows side by side into [M, T·C],
  /// which the matmul kernel folds into its load (each k-block one TMA box
  /// of its tap's window). The matmul is [M, T·C] x [T·C, K]; the grid's
  /// rows past the output (Q_i > O_i) are computed and dropped by a slice,
  /// which the store folds in.
  /// The filter [K, C0, taps...] as the implicit GEMM's [K, T·C] (taps
  /// outer, channels padded with zeros to C): a constant relaid at compile
  /// time, else a filter_im2col kernel.
  Value gemmFilter(ConvOp op, PatternRewriter &b, int64_t c) const {
    Location loc = op.getLoc();
    RankedTensorType filter = op.getFilter().getType();
    int64_t rank = filter.getRank(), k = filter.getDimSize(0), c0 = filter.getDimSize(1), t = 1;
    Type et = op.getInput().getType().getElementType();
    SmallVector<int64_t> fperm = {0}, fshape = {k};
    for (int64_t d = 2; d < rank; ++d) {
      fperm.push_back(d);
      fshape.push_back(filter.getDimSize(d));
      t *= filter.getDimSize(d);
    }
    fperm.push_back(1);
    fshape.push_back(c0);
    SmallVector<int64_t> grown(fshape);
    grown.back() = c;
    Value f = relaidConstant(b, loc, op.getFilter(), fperm, filter.clone(grown));
    if (f)
      return ReshapeOp::create(b, loc, RankedTensorType::get({k, t * c}, et), f);
    return buildKernelOverChain(b, loc, "filter_im2col", op.getFilter(), op,
                                RankedTensorType::get({k, t * c}, et), [&](Value arg) {
      Value f = TransposeOp::create(b, loc, filter.clone(fshape), arg, fperm);
      f = padDim(b, loc, f, rank - 1, 0, c - c0, 0.0);
      return Value(ReshapeOp::create(b, loc, RankedTensorType::get({k, t * c}, et), f));
    });
  }

  /// Implicit GEMM read by TMA's im2col mode (the default; FUSEC_CONV_IM2COL=0
  /// keeps the padded grid of implicitGemm): the
  /// conv_window kernel is the im2col matrix [M, T·C] of the channels-last
  /// input itself, M = N Π O_i exactly (no grid of padded positions): each
  /// tap's block a strided slice of the input zero-padded (spatially, and
  /// to C channels), which the matmul kernel folds into its load (one im2col
  /// load a k-block: the padding and the channels past C0 are TMA's
  /// out-of-bounds zeros, so no conv_pad kernel runs and no padded tensor
  /// is written). Where the driver's ranges allow it: channels a multiple
  /// of 16 bytes, padding >= 0, strides <= 8, and the pixel box's corners
  /// and the taps' offsets within 8 bits (2-D; 16 in 1-D, 5 in 3-D). A
  /// network input's movement chain that pads or folds (a stem's) keeps
  /// conv_pad.
  LogicalResult im2colGemm(ConvOp op, PatternRewriter &b, const Window &w,
                           ArrayRef<int64_t> outDims) const {
    const char *knob = std::getenv("FUSEC_CONV_IM2COL");
    if (knob && std::string_view(knob) == "0")
      return failure();
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType(), outType = op.getType();
    int64_t rank = in.getRank(), sp = rank - 2, n = in.getDimSize(0), c0 = in.getDimSize(1);
    int64_t k = outType.getDimSize(1), c = (c0 + 63) / 64 * 64;
    Type et = in.getElementType();
    int64_t bound = rank == 3 ? 32768 : rank == 4 ? 128 : 16, m = n;
    if (rank > 5 || n < 1 || c0 % 8 || (c0 * et.getIntOrFloatBitWidth() / 8) % 16)
      return failure();
    for (int64_t i = 0; i < sp; ++i) {
      // Every operand in range before any arithmetic on it (no overflow);
      // rows past 2^31 keep the grid path, which refuses them too.
      int64_t extent = in.getDimSize(i + 2), o = outDims[i];
      if (w.padLow[i] < 0 || w.padHigh[i] < 0 || w.padLow[i] > bound || w.strides[i] < 1 ||
          w.strides[i] > 8 || w.dilations[i] < 1 || w.dilations[i] >= bound ||
          w.kernel[i] < 1 || w.kernel[i] > bound || o < 1 || extent >= (int64_t(1) << 31) ||
          o >= (int64_t(1) << 31) || m >= (int64_t(1) << 31) / o)
        return failure();
      int64_t upper = (o - 1) * w.strides[i] + 1 - extent - w.padLow[i];
      if (upper < -bound || upper >= bound || (w.kernel[i] - 1) * w.dilations[i] >= bound)
        return failure();
      m *= o;
    }
    // A network input's chain that pads, cuts or folds (a stem's, after
    // space to depth or tap folding) stays in conv_pad, which traces it
    // into a gather; a chain of transposes and reshapes (a channels-last
    // argument) is read as it is.
    Value root;
    for (Operation *o : argumentChain(op.getInput(), op, root))
      if (!isa<TransposeOp, ReshapeOp>(o))
        return failure();
    SmallVector<SmallVector<int64_t, 4>> taps = windowTaps(w);
    int64_t t = static_cast<int64_t>(taps.size());
    SmallVector<int64_t> toLast = {0}, nhwc = {n};
    for (int64_t d = 2; d < rank; ++d) {
      toLast.push_back(d);
      nhwc.push_back(in.getDimSize(d));
    }
    toLast.push_back(1);
    nhwc.push_back(c0);
    Value x = TransposeOp::create(b, loc, in.clone(nhwc), op.getInput(), toLast);
    auto lhsType = RankedTensorType::get({m, t * c}, et);
    Value lhs = buildKernel(b, loc, "conv_window", {x}, lhsType, [&](ArrayRef<Value> args) {
      Value xp = padDim(b, loc, args[0], rank - 1, 0, c - c0, 0.0);
      for (int64_t i = 0; i < sp; ++i)
        xp = padDim(b, loc, xp, i + 1, w.padLow[i], w.padHigh[i], 0.0);
      SmallVector<Value> cols;
      for (auto &tap : taps)
        cols.push_back(ReshapeOp::create(b, loc, RankedTensorType::get({m, c}, et),
                                         tapSlice(b, loc, xp, w, tap, outDims, 1)));
      return cols.size() == 1 ? cols[0]
                              : Value(ConcatOp::create(b, loc, lhsType, cols,
                                                       static_cast<uint64_t>(1)));
    });
    Value f = gemmFilter(op, b, c);
    Type rt = outType.getElementType();
    auto mm = MatmulOp::create(b, loc, RankedTensorType::get({m, k}, rt), lhs, f);
    mm.setTransposeRhs(true);
    replaceChannelsFirst(op, b, mm, outDims);
    return success();
  }

  LogicalResult implicitGemm(ConvOp op, PatternRewriter &b, const Window &w,
                             ArrayRef<int64_t> outDims) const {
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType(),
                     outType = op.getType();
    int64_t rank = in.getRank(), sp = rank - 2, n = in.getDimSize(0), c0 = in.getDimSize(1);
    int64_t k = outType.getDimSize(1);
    // Channels padded with zeros to whole k-blocks (a 3-channel stem's to
    // 64: more FLOPs on the tensor cores, no im2col matrix in HBM).
    int64_t c = (c0 + 63) / 64 * 64;
    Type et = in.getElementType();
    if (succeeded(im2colGemm(op, b, w, outDims)))
      return success();
    // Q_i is the grid's pitch along dim i. The whole window needs Q_i =
    // O_i + ((k_i - 1) d_i) / s_i, but neighbouring rows (and images) may
    // share their padding: a read past the pitch wraps into the next row's
    // low padding, which is zero where (Q_i - Q'_i) s_i <= pad_low_i, so a
    // pitch Q'_i of max(O_i, ceil((pad_low_i + extent_i) / s_i), Q_i -
    // pad_low_i / s_i) keeps every output's taps and stores every input
    // element. A same-padded 3x3 over 7x7 then computes 8x8 positions an
    // image, not 9x9 (1.27x fewer rows). FUSEC_CONV_SHARED_PAD=0 keeps the
    // whole window's pitch.
    const char *sharedKnob = std::getenv("FUSEC_CONV_SHARED_PAD");
    bool sharePad = !sharedKnob || std::string_view(sharedKnob) != "0";
    SmallVector<int64_t> q(sp);
    int64_t gridRows = n, phases = 1;
    for (int64_t i = 0; i < sp; ++i) {
      q[i] = outDims[i] + ((w.kernel[i] - 1) * w.dilations[i]) / w.strides[i];
      int64_t s = w.strides[i], low = w.padLow[i], extent = in.getDimSize(i + 2);
      if (sharePad && low >= 0)
        q[i] = std::min(q[i], std::max({outDims[i], (low + extent + s - 1) / s, q[i] - low / s}));
      gridRows *= q[i];
      phases *= w.strides[i];
    }
    // Each tap's phase and row offset.
    SmallVector<SmallVector<int64_t, 4>> taps = windowTaps(w);
    SmallVector<std::pair<int64_t, int64_t>> tapAt;
    SmallVector<int64_t> used;
    int64_t maxDelta = 0;
    for (auto &tap : taps) {
      int64_t phi = 0, delta = 0, rowStride = 1;
      for (int64_t i = sp - 1; i >= 0; --i) {
        int64_t at = tap[i] * w.dilations[i];
        delta += (at / w.strides[i]) * rowStride;
        rowStride *= q[i];
      }
      for (int64_t i = 0; i < sp; ++i)
        phi = phi * w.strides[i] + (tap[i] * w.dilations[i]) % w.strides[i];
      if (!llvm::is_contained(used, phi))
        used.push_back(phi);
      tapAt.push_back({phi, delta});
      maxDelta = std::max(maxDelta, delta);
    }
    llvm::sort(used);
    for (auto &[phi, delta] : tapAt)
      phi = llvm::find(used, phi) - used.begin();
    int64_t t = static_cast<int64_t>(taps.size()), np = static_cast<int64_t>(used.size());
    int64_t rows = gridRows + maxDelta;
    if (rows >= (int64_t(1) << 31))
      return failure();

    SmallVector<int64_t> toLast = {0};
    for (int64_t d = 2; d < rank; ++d)
      toLast.push_back(d);
    toLast.push_back(1);
    SmallVector<int64_t> nhwc = {n};
    for (int64_t d = 2; d < rank; ++d)
      nhwc.push_back(in.getDimSize(d));
    nhwc.push_back(c0);
    // A network input's movement chain (a stem's folded taps) is built
    // into conv_pad; else the channels-last transpose stays outside, where
    // it cancels the producer's channels-first one.
    Value root;
    SmallVector<Operation *> chain = argumentChain(op.getInput(), op, root);
    // Channels-last [N, s..., C0] -> channels padded to C, each spatial dim
    // grown (or trimmed) to Q_i s_i padded positions.
    auto grow = [&](Value x) {
      x = padDim(b, loc, x, sp + 1, 0, c - c0, 0.0);
      for (int64_t i = 0; i < sp; ++i) {
        auto type = cast<RankedTensorType>(x.getType());
        int64_t extent = in.getDimSize(i + 2);
        int64_t high = q[i] * w.strides[i] - w.padLow[i] - extent;
        if (high < 0) {
          SmallVector<int64_t> off(sp + 2, 0), str(sp + 2, 1), shape(type.getShape());
          shape[i + 1] = extent + high;
          x = SliceOp::create(b, loc, type.clone(shape), x, off, str);
          high = 0;
        }
        x = padDim(b, loc, x, i + 1, w.padLow[i], high, 0.0);
      }
      return x;
    };
    // Where the chain works image by image, it is traced at compile time
    // into a table of the input element each position of an image's grown
    // tensor copies (-1: a zero), and conv_pad is a gather through it: one
    // index load per element, not the chain's index maps (a stem's folded
    // taps take ~125 instructions an element through them, ALU-bound).
    Value table;
    RankedTensorType grownType;
    auto rootType = root ? cast<RankedTensorType>(root.getType()) : RankedTensorType();
    int64_t image = rootType ? rootType.getNumElements() / n : 0;
    if (!chain.empty() && perImage(chain, n) && rootType.getDimSize(0) == n &&
        image + 1 < (int64_t(1) << 31)) {
      Value g = grow(TransposeOp::create(b, loc, in.clone(nhwc), op.getInput(), toLast));
      grownType = cast<RankedTensorType>(g.getType());
      int64_t positions = grownType.getNumElements() / n;
      std::vector<int32_t> entries;
      if (positions <= (int64_t(1) << 22)) {
        entries.reserve(positions);
        for (int64_t i = 0; i < positions; ++i) {
          std::optional<int64_t> src = tracedSource(g, i, root);
          if (!src || *src >= image) {
            entries.clear();
            break;
          }
          entries.push_back(static_cast<int32_t>(*src));
        }
      }
      llvm::SmallPtrSet<Operation *, 16> keep(chain.begin(), chain.end());
      std::function<void(Value)> drop = [&](Value v) {
        Operation *d = v.getDefiningOp();
        if (!d || keep.contains(d) || !d->use_empty())
          return;
        SmallVector<Value> operands(d->getOperands());
        b.eraseOp(d);
        for (Value o : operands)
          drop(o);
      };
      drop(g);
      if (!entries.empty()) {
        auto tt = RankedTensorType::get(grownType.getShape().drop_front(), b.getI32Type());
        table = ConstantOp::create(
            b, loc, tt, DenseElementsAttr::get(tt, ArrayRef<int32_t>(entries)));
      }
    }
    Value source = chain.empty()
                       ? Value(TransposeOp::create(b, loc, in.clone(nhwc), op.getInput(), toLast))
                       : root;
    SmallVector<Value> inputs = {source};
    if (table)
      inputs.push_back(table);
    auto padType = RankedTensorType::get({np, rows, c}, et);
    Value padded = buildKernel(b, loc, "conv_pad", inputs, padType, [&](ArrayRef<Value> args) {
      Value x = args[0];
      if (table) {
        // [N, image] and one zero after each image, which index -1 reads.
        Value flat = ReshapeOp::create(b, loc, RankedTensorType::get({n, image}, et), x);
        flat = padDim(b, loc, flat, 1, 0, 1, 0.0);
        x = GatherOp::create(b, loc, grownType, flat, args[1], static_cast<uint64_t>(1));
      } else {
        if (!chain.empty()) {
          IRMapping map;
          map.map(root, args[0]);
          for (Operation *o : chain)
            b.clone(*o, map);
          x = TransposeOp::create(b, loc, in.clone(nhwc), map.lookup(op.getInput()), toLast);
        }
        x = grow(x);
      }
      Value p;
      if (phases == 1) {
        p = ReshapeOp::create(b, loc, RankedTensorType::get({1, gridRows, c}, et), x);
      } else {
        // [N, Q_1 s_1, ..., C] -> [N, Q_1, s_1, ..., C] -> [s..., N, Q..., C].
        SmallVector<int64_t> split = {n}, perm, moved;
        for (int64_t i = 0; i < sp; ++i) {
          split.push_back(q[i]);
          split.push_back(w.strides[i]);
        }
        split.push_back(c);
        for (int64_t i = 0; i < sp; ++i)
          perm.push_back(2 + 2 * i);
        perm.push_back(0);
        for (int64_t i = 0; i < sp; ++i)
          perm.push_back(1 + 2 * i);
        perm.push_back(2 * sp + 1);
        for (int64_t d : perm)
          moved.push_back(split[d]);
        Value r = ReshapeOp::create(b, loc, RankedTensorType::get(split, et), x);
        Value tr = TransposeOp::create(b, loc, RankedTensorType::get(moved, et), r, perm);
        p = ReshapeOp::create(b, loc, RankedTensorType::get({phases, gridRows, c}, et), tr);
        if (np < phases) {
          SmallVector<Value> parts;
          for (int64_t phi : used)
            parts.push_back(SliceOp::create(b, loc, RankedTensorType::get({1, gridRows, c}, et), p,
                                            ArrayRef<int64_t>{phi, 0, 0},
                                            ArrayRef<int64_t>{1, 1, 1}));
          p = parts.size() == 1 ? parts[0]
                                : Value(ConcatOp::create(
                                      b, loc, RankedTensorType::get({np, gridRows, c}, et),
                                      parts, static_cast<uint64_t>(0)));
        }
      }
      return padDim(b, loc, p, 1, 0, maxDelta, 0.0);
    });
    auto lhsType = RankedTensorType::get({gridRows, t * c}, et);
    Value lhs = buildKernel(b, loc, "conv_window", {padded}, lhsType, [&](ArrayRef<Value> args) {
      SmallVector<Value> cols;
      for (auto [phi, delta] : tapAt) {
        Value s = SliceOp::create(b, loc, RankedTensorType::get({1, gridRows, c}, et), args[0],
                                  ArrayRef<int64_t>{phi, delta, 0}, ArrayRef<int64_t>{1, 1, 1});
        cols.push_back(ReshapeOp::create(b, loc, RankedTensorType::get({gridRows, c}, et), s));
      }
      return cols.size() == 1 ? cols[0]
                              : Value(ConcatOp::create(b, loc, lhsType, cols,
                                                       static_cast<uint64_t>(1)));
    });
    Value f = gemmFilter(op, b, c);
    Type rt = outType.getElementType();
    auto mm = MatmulOp::create(b, loc, RankedTensorType::get({gridRows, k}, rt), lhs, f);
    mm.setTransposeRhs(true);
    SmallVector<int64_t> grid = {n}, valid = {n};
    for (int64_t i = 0; i < sp; ++i) {
      grid.push_back(q[i]);
      valid.push_back(outDims[i]);
    }
    grid.push_back(k);
    valid.push_back(k);
    Value y = ReshapeOp::create(b, loc, RankedTensorType::get(grid, rt), mm);
    if (grid != valid)
      y = SliceOp::create(b, loc, RankedTensorType::get(valid, rt), y,
                          SmallVector<int64_t>(rank, 0), SmallVector<int64_t>(rank, 1));
    SmallVector<int64_t> toFirst = {0, rank - 1};
    for (int64_t d = 1; d + 1 < rank; ++d)
      toFirst.push_back(d);
    b.replaceOpWithNewOp<TransposeOp>(op, outType, y, toFirst);
    return success();
  }

  /// groups == C: each output channel k reads input channel k / (K / C);
  /// the result is the sum over the taps of the tap's slice times the
  /// filter's weight of that tap, per channel.
  LogicalResult depthwise(ConvOp op, PatternRewriter &b, const Window &w,
                          ArrayRef<int64_t> outDims) const {
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType(), outType = op.getType();
    int64_t rank = in.getRank(), c = in.getDimSize(1), k = outType.getDimSize(1);
    Value y = buildKernel(b, loc, "depthwise_conv", {op.getInput(), op.getFilter()}, outType,
                          [&](ArrayRef<Value> args) -> Value {
      Type ct = computeElementFor(in);
      Emitter e(b, loc, ct);
      Value x = args[0];
      if (k != c) {
        // A channel multiplier: each input channel repeated K / C times.
        SmallVector<int64_t> s5(in.getShape()), dims;
        s5.insert(s5.begin() + 2, k / c);
        for (int64_t d = 0; d < rank; ++d)
          dims.push_back(d < 2 ? d : d + 1);
        Value bx = BroadcastOp::create(b, loc, in.clone(s5), x, dims);
        SmallVector<int64_t> sk(in.getShape());
        sk[1] = k;
        x = ReshapeOp::create(b, loc, in.clone(sk), bx);
      }
      for (int64_t i = 0; i + 2 < rank; ++i)
        x = padDim(b, loc, x, i + 2, w.padLow[i], w.padHigh[i], 0.0);
      Value filter = e.in(args[1]);
      auto ftype = cast<RankedTensorType>(filter.getType());
      auto accType = outType.clone(ct);
      Value acc;
      SmallVector<SmallVector<int64_t, 4>> taps = windowTaps(w);
      for (auto &tap : taps) {
        Value s = e.in(tapSlice(b, loc, x, w, tap, outDims, 2));
        // The weights of this tap, [K], broadcast along the channel dim.
        SmallVector<int64_t> off(rank, 0), str(rank, 1), fs(rank, 1);
        fs[0] = k;
        for (size_t i = 0; i < tap.size(); ++i)
          off[i + 2] = tap[i];
        Value wt = SliceOp::create(b, loc, ftype.clone(fs), filter, off, str);
        wt = ReshapeOp::create(b, loc, RankedTensorType::get({k}, ct), wt);
        Value wb = BroadcastOp::create(b, loc, accType, wt, ArrayRef<int64_t>{1});
        Value term = e.mul(s, wb);
        acc = acc ? e.add(acc, term) : term;
      }
      return e.out(acc, outType);
    });
    b.replaceOp(op, y);
    return success();
  }
};

/// A pool as an elementwise max or sum over the taps of its window, each a
/// strided slice of the input padded with -inf (max) or 0 (mean); a mean
/// divides by the count of the window's taps that it averages (a splat when
/// every window counts the same).
struct DecomposePool : OpRewritePattern<PoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PoolOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType(), outType = op.getType();
    int64_t rank = in.getRank();
    Window w = windowOf(op);
    if (windowTapCount(w) > kMaxWindowTaps)
      return b.notifyMatchFailure(op, "a window of more than 2^14 taps");
    // Channels last where the input arrives so (a lowered convolution's
    // result, channels-first transposed): spatial dims from 1, and the
    // result transposed back.
    Value input = op.getInput();
    int64_t first = 2;
    RankedTensorType poolType = outType;
    SmallVector<int64_t> perm;
    if (auto t = input.getDefiningOp<TransposeOp>(); t && channelsFirst(t.getPermutation())) {
      perm.assign(t.getPermutation().begin(), t.getPermutation().end());
      input = t.getInput();
      first = 1;
      SmallVector<int64_t> shape = {outType.getDimSize(0)};
      for (int64_t d = 2; d < rank; ++d)
        shape.push_back(outType.getDimSize(d));
      shape.push_back(outType.getDimSize(1));
      poolType = outType.clone(shape);
    }
    // The input's spatial extent of window dim i.
    auto extent = [&](int64_t i) { return in.getDimSize(i + 2); };
    bool isMax = op.getKind() == ReduceKind::max;
    SmallVector<int64_t> outDims(outType.getShape().drop_front(2));
    // The divisor of a mean: the window positions inside (the input, or
    // the padding too with count_include_pad), a product over the dims of
    // each dim's count at that output coordinate. A dim whose counts are all
    // alike joins one splat; the others are [out] vectors of reciprocals,
    // inputs of the kernel broadcast along their dim (the code generator
    // materializes only splats in a body). Not a plane of every output
    // position: linear in the dims, not their product.
    double uniform = 1;
    SmallVector<int64_t> varying; // window dims whose counts differ
    SmallVector<SmallVector<float>> inverses;
    if (!isMax) {
      for (int64_t i = 0; i < static_cast<int64_t>(outDims.size()); ++i) {
        int64_t lo = op.getCountIncludePad() ? -w.padLow[i] : 0;
        int64_t hi = extent(i) + (op.getCountIncludePad() ? w.padHigh[i] : 0);
        int64_t k = w.kernel[i], s = w.strides[i], dl = w.dilations[i], n = outDims[i];
        auto count = [&](int64_t pos) {
          int64_t inside = 0;
          for (int64_t t = 0; t < k; ++t) {
            int64_t cpos = pos * s - w.padLow[i] + t * dl;
            inside += cpos >= lo && cpos < hi;
          }
          return inside;
        };
        // Windows wholly inside [lo, hi) count k: positions p0 .. p1. Only
        // the others (at most about the window's extent over the stride at
        // each end) are counted one by one, so a dim of 2^31 positions
        // costs no walk.
        int64_t p0 = std::max<int64_t>(0, llvm::divideCeilSigned(lo + w.padLow[i], s));
        int64_t p1 = std::min<int64_t>(
            n - 1, llvm::divideFloorSigned(hi - 1 + w.padLow[i] - (k - 1) * dl, s));
        bool interior = p0 <= p1;
        int64_t firstCount = interior ? k : (n > 0 ? count(0) : 1);
        bool alike = true;
        auto border = [&](auto &&visit) {
          for (int64_t pos = 0; pos < (interior ? p0 : n); ++pos)
            visit(pos);
          if (interior)
            for (int64_t pos = p1 + 1; pos < n; ++pos)
              visit(pos);
        };
        border([&](int64_t pos) { alike &= count(pos) == firstCount; });
        if (alike) {
          uniform *= static_cast<double>(firstCount);
          continue;
        }
        // A vector of reciprocals for this dim: at most 2^24 positions
        // (past that the pool stays undecomposed, and code generation says
        // it generates no such kernel).
        if (n > (int64_t(1) << 24))
          return b.notifyMatchFailure(op, "a mean's divisors differ along a dim of over 2^24");
        varying.push_back(i);
        SmallVector<float> inverse(n, 1.0f / static_cast<float>(k));
        border([&](int64_t pos) {
          int64_t c = count(pos);
          inverse[pos] = c ? 1.0f / static_cast<float>(c) : 0.0f;
        });
        inverses.push_back(std::move(inverse));
      }
    }
    SmallVector<Value> inputs = {input};
    for (auto [k, i] : llvm::enumerate(varying)) {
      auto vec = RankedTensorType::get({outDims[i]}, b.getF32Type());
      inputs.push_back(ConstantOp::create(b, loc, vec,
                                          DenseElementsAttr::get(vec, ArrayRef<float>(inverses[k]))));
    }
    Value y = buildKernel(b, loc, isMax ? "max_pool" : "avg_pool", inputs, poolType,
                          [&](ArrayRef<Value> args) -> Value {
      // Enough high padding for a ceil-mode window past the end.
      Value x = args[0];
      for (int64_t i = 0; i + 2 < rank; ++i) {
        int64_t need = (outDims[i] - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 -
                       extent(i) - w.padLow[i];
        x = padDim(b, loc, x, i + first, w.padLow[i], std::max<int64_t>(need, 0),
                   isMax ? -std::numeric_limits<double>::infinity() : 0.0);
      }
      Type ct = isMax ? in.getElementType() : computeElementFor(in);
      Emitter e(b, loc, ct);
      Value acc;
      for (auto &tap : windowTaps(w)) {
        Value s = e.in(tapSlice(b, loc, x, w, tap, outDims, first));
        acc = !acc ? s : isMax ? Value(MaxOp::create(b, loc, s.getType(), acc, s)) : e.add(acc, s);
      }
      if (!isMax) {
        auto accType = cast<RankedTensorType>(acc.getType());
        if (uniform != 1 || varying.empty())
          acc = e.mul(acc, splatOf(b, loc, accType, uniform ? 1.0 / uniform : 0.0));
        for (auto [k, i] : llvm::enumerate(varying))
          acc = e.mul(acc, BroadcastOp::create(b, loc, accType, e.in(args[1 + k]),
                                               ArrayRef<int64_t>{first + i}));
      }
      return e.out(acc, poolType);
    });
    if (!perm.empty())
      y = TransposeOp::create(b, loc, outType, y, perm);
    b.replaceOp(op, y);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Channels-last layout between convolutions
//===----------------------------------------------------------------------===//

/// An operand of an elementwise op in the layout `remap` gives: a splat
/// resized, or a broadcast of a vector whose dims `remap` takes to dims that
/// still increase; null where neither.
Value relaid(PatternRewriter &b, Location loc, Value v, RankedTensorType type,
             llvm::function_ref<int64_t(int64_t)> remap) {
  if (auto c = v.getDefiningOp<ConstantOp>(); c && isa<SplatElementsAttr>(c.getValue())) {
    auto splat = cast<SplatElementsAttr>(c.getValue());
    auto t = type.clone(cast<RankedTensorType>(v.getType()).getElementType());
    return ConstantOp::create(b, loc, t, splat.resizeSplat(t));
  }
  auto bc = v.getDefiningOp<BroadcastOp>();
  if (!bc)
    return Value();
  // The source's dims of extent 1 (ONNX's [1, K, 1, 1] bias) are dropped
  // by a reshape first: only the others need to stay in order.
  auto in = cast<RankedTensorType>(bc.getInput().getType());
  auto t = type.clone(cast<RankedTensorType>(v.getType()).getElementType());
  SmallVector<int64_t> dims, kept;
  for (auto [j, d] : llvm::enumerate(bc.getDims())) {
    if (in.getDimSize(j) == 1)
      continue;
    int64_t to = remap(d);
    if (to < 0 || (!dims.empty() && to <= dims.back()) || in.getDimSize(j) != t.getDimSize(to))
      return Value();
    dims.push_back(to);
    kept.push_back(in.getDimSize(j));
  }
  Value src = bc.getInput();
  if (static_cast<int64_t>(kept.size()) != in.getRank())
    src = ReshapeOp::create(b, loc, in.clone(kept), src);
  return BroadcastOp::create(b, loc, t, src, dims);
}

/// f(T(x), ...) = T(f(x, ...)) for T a lowered convolution's channels-first
/// transpose; the other operands the same transpose of a value of x's shape,
/// splats or broadcasts. The transpose moves down to the next convolution,
/// whose channels-last transpose then cancels it: activations stay
/// channels last from one convolution to the next, and each one's bias,
/// activation and residual add join its matmul's epilogue.
struct SinkChannelsFirst : RewritePattern {
  SinkChannelsFirst(MLIRContext *context) : RewritePattern(MatchAnyOpTypeTag(), 1, context) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &b) const override {
    if (!SinkReshape::elementwise(op) || op->getNumResults() != 1)
      return failure();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    ArrayRef<int64_t> perm;
    RankedTensorType from;
    for (Value v : op->getOperands())
      if (auto t = v.getDefiningOp<TransposeOp>(); t && channelsFirst(t.getPermutation())) {
        perm = t.getPermutation();
        from = cast<RankedTensorType>(t.getInput().getType());
        break;
      }
    if (perm.empty())
      return failure();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = static_cast<int64_t>(i);
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      if (auto t = v.getDefiningOp<TransposeOp>();
          t && t.getPermutation() == perm && t.getInput().getType().getShape() == from.getShape()) {
        operands.push_back(t.getInput());
        continue;
      }
      // Result dim d of the channels-first value is dim perm[d] of x's.
      Value r = relaid(b, loc, v, from, [&](int64_t d) { return perm[d]; });
      if (!r)
        return failure();
      operands.push_back(r);
    }
    Operation *moved = b.clone(*op);
    moved->setOperands(operands);
    moved->getResult(0).setType(from.clone(type.getElementType()));
    b.replaceOpWithNewOp<TransposeOp>(op, type, moved->getResult(0), perm);
    return success();
  }
};

/// transpose(transpose(x)) is one transpose, or x.
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &b) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    SmallVector<int64_t> perm;
    bool identity = true;
    for (auto [i, p] : llvm::enumerate(op.getPermutation())) {
      perm.push_back(inner.getPermutation()[p]);
      identity &= perm.back() == static_cast<int64_t>(i);
    }
    if (identity)
      b.replaceOp(op, inner.getInput());
    else
      b.replaceOpWithNewOp<TransposeOp>(op, op.getType(), inner.getInput(), perm);
    return success();
  }
};

/// f(slice(g), ...) = slice(f(g, ...)) where g is a convolution's output
/// grid (the reshaped matmul result of an implicit GEMM, whose rows past
/// the output the slice drops) and the other operands are splats or
/// broadcasts along dims the slice keeps whole: the bias and activation
/// then run in the matmul's epilogue, on the grid, and the slice folds into
/// its store.
struct HoistGridSlice : RewritePattern {
  HoistGridSlice(MLIRContext *context) : RewritePattern(MatchAnyOpTypeTag(), 1, context) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &b) const override {
    if (!SinkReshape::elementwise(op) || op->getNumResults() != 1)
      return failure();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    // The grid: a matmul's result through reshapes and the elementwise ops
    // already hoisted above the slice.
    auto fromMatmul = [](Value v) {
      for (int depth = 0; depth < 64; ++depth) {
        Operation *def = v.getDefiningOp();
        if (!def)
          return false;
        if (isa<MatmulOp>(def))
          return true;
        if (!isa<ReshapeOp>(def) && !SinkReshape::elementwise(def))
          return false;
        // An elementwise op's operand of its own shape that leads back.
        Value next;
        for (Value o : def->getOperands())
          if (isa<ReshapeOp>(def) ||
              cast<RankedTensorType>(o.getType()).getShape() ==
                  cast<RankedTensorType>(def->getResult(0).getType()).getShape()) {
            Operation *d = o.getDefiningOp();
            if (d && (isa<MatmulOp, ReshapeOp>(d) || SinkReshape::elementwise(d))) {
              next = o;
              break;
            }
          }
        if (!next)
          return false;
        v = next;
      }
      return false;
    };
    SliceOp slice;
    for (Value v : op->getOperands())
      if (auto s = v.getDefiningOp<SliceOp>()) {
        if (fromMatmul(s.getInput()) &&
            llvm::all_of(s.getOffsets(), [](int64_t o) { return o == 0; }) &&
            llvm::all_of(s.getStrides(), [](int64_t o) { return o == 1; })) {
          slice = s;
          break;
        }
      }
    if (!slice)
      return failure();
    auto grid = cast<RankedTensorType>(slice.getInput().getType());
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      if (v == slice.getResult()) {
        operands.push_back(slice.getInput());
        continue;
      }
      // A broadcast's dim must not be narrowed by the slice (unless of
      // extent 1 in its source).
      if (auto bc = v.getDefiningOp<BroadcastOp>()) {
        auto in = cast<RankedTensorType>(bc.getInput().getType());
        for (auto [j, d] : llvm::enumerate(bc.getDims()))
          if (in.getDimSize(j) != 1 && grid.getDimSize(d) != type.getDimSize(d))
            return failure();
      }
      Value r = relaid(b, loc, v, grid, [](int64_t d) { return d; });
      if (!r)
        return failure();
      operands.push_back(r);
    }
    Operation *moved = b.clone(*op);
    moved->setOperands(operands);
    moved->getResult(0).setType(grid.clone(type.getElementType()));
    b.replaceOpWithNewOp<SliceOp>(op, type, moved->getResult(0), slice.getOffsets(),
                                  slice.getStrides());
    return success();
  }
};

/// A concat of more than kMaxConcatParts inputs becomes a concat of
/// concats of at most that many each (recursively, past 128^2). Fusion caps
/// a kernel at 256 inputs and outputs (kMaxKernelParams in Fusion.cpp):
/// LLVM's time grows faster than linearly in a kernel's parameters. Each
/// group becomes a kernel of its own, or joins the outer concat while
/// the cap allows, so no kernel reads more than the cap.
struct SplitWideConcat : OpRewritePattern<ConcatOp> {
  static constexpr size_t kMaxConcatParts = 128;
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op, PatternRewriter &rewriter) const override {
    OperandRange inputs = op.getInputs();
    if (inputs.size() <= kMaxConcatParts)
      return failure();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t dim = static_cast<int64_t>(op.getDim());
    SmallVector<Value> groups;
    for (size_t i = 0; i < inputs.size(); i += kMaxConcatParts) {
      size_t count = std::min(kMaxConcatParts, inputs.size() - i);
      if (count == 1) {
        groups.push_back(inputs[i]);
        continue;
      }
      SmallVector<Value> parts(inputs.begin() + i, inputs.begin() + i + count);
      SmallVector<int64_t> shape(type.getShape());
      shape[dim] = 0;
      for (Value p : parts)
        shape[dim] += cast<RankedTensorType>(p.getType()).getDimSize(dim);
      groups.push_back(ConcatOp::create(rewriter, op.getLoc(), type.clone(shape), parts,
                                        static_cast<uint64_t>(dim)));
    }
    rewriter.replaceOpWithNewOp<ConcatOp>(op, type, groups, static_cast<uint64_t>(dim));
    return success();
  }
};

class DecomposePass : public fusec::impl::DecomposeBase<DecomposePass> {
public:
  using DecomposeBase::DecomposeBase;

  void runOnOperation() override {
    // Variances first: the main set would split their means' reductions.
    // (FUSEC_SPLIT_VARIANCE=0 keeps them as written, for measurement.)
    if (const char *v = std::getenv("FUSEC_SPLIT_VARIANCE"); !v || std::string_view(v) != "0") {
      RewritePatternSet first(&getContext());
      first.add<SplitVariance>(&getContext());
      GreedyRewriteConfig config;
      config.enableFolding(false);
      config.enableConstantCSE(false);
      if (failed(applyPatternsGreedily(getOperation(), std::move(first), config)))
        return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeLayerNorm, DecomposeRMSNorm, DecomposeSoftmax,
                 DecomposeGelu, DecomposeSilu, AbsorbOperandTranspose,
                 HoistOperandScale, MergeRegroupedTranspose, CollapseMatmulRows,
                 SinkReshape, SinkReshapeIntoReduce, SinkReshapeIntoBroadcast,
                 SplitReduceRuns, SplitWideConcat>(
        &getContext());
    // Only the composites are rewritten; no folding of the rest of the graph.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    config.enableConstantCSE(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      signalPassFailure();
  }
};

/// The splat value of a constant (possibly broadcast), if it is one.
std::optional<double> splatValue(Value v) {
  if (auto b = v.getDefiningOp<BroadcastOp>())
    v = b.getInput();
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!attr || !attr.isSplat() || !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// Does `v` (a constant, possibly broadcast over leading dims) hold, at
/// query row i and key column j of its last two dims, `keep(i, j)`-shaped
/// values: kept(i, j) where j <= i + skv - sq, masked(i, j) elsewhere?
bool isCausalConstant(Value v, int64_t sq, int64_t skv,
                      llvm::function_ref<bool(const APFloat &)> kept,
                      llvm::function_ref<bool(const APFloat &)> masked,
                      llvm::function_ref<bool(bool, const APInt &)> keptBool = nullptr) {
  if (auto b = v.getDefiningOp<BroadcastOp>()) {
    auto src = cast<RankedTensorType>(b.getInput().getType());
    auto dst = cast<RankedTensorType>(b.getType());
    // The last two dims must come straight through.
    ArrayRef<int64_t> dims = b.getDims();
    if (src.getRank() < 2 || dims[src.getRank() - 1] != dst.getRank() - 1 ||
        dims[src.getRank() - 2] != dst.getRank() - 2)
      return false;
    v = b.getInput();
  }
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
  auto type = cast<RankedTensorType>(c.getType());
  if (!attr || type.getRank() < 2 || type.getDimSize(type.getRank() - 2) != sq ||
      type.getDimSize(type.getRank() - 1) != skv)
    return false;
  int64_t n = type.getNumElements();
  bool anyMasked = false;
  if (isa<FloatType>(attr.getElementType())) {
    auto values = attr.getValues<APFloat>();
    for (int64_t e = 0; e < n; ++e) {
      int64_t j = e % skv, i = (e / skv) % sq;
      bool keep = j <= i + skv - sq;
      APFloat x = values[e];
      if (keep ? !kept(x) : !masked(x))
        return false;
      anyMasked |= !keep;
    }
    return anyMasked;
  }
  if (!keptBool)
    return false;
  auto values = attr.getValues<APInt>();
  for (int64_t e = 0; e < n; ++e) {
    int64_t j = e % skv, i = (e / skv) % sq;
    if (!keptBool(j <= i + skv - sq, values[e]))
      return false;
  }
  return true;
}

class RecognizeAttentionPass
    : public fusec::impl::RecognizeAttentionBase<RecognizeAttentionPass> {
public:
  using RecognizeAttentionBase::RecognizeAttentionBase;

  void runOnOperation() override {
    SmallVector<MatmulOp> candidates;
    getOperation()->walk([&](MatmulOp m) { candidates.push_back(m); });
    for (MatmulOp m : candidates)
      (void)rewrite(m);
    // FUSEC_ATTENTION_LAYOUTS=0 keeps the transposes (measurement, and the
    // lit tests of fusec-fuse's movement folds around an attention).
    if (const char *v = std::getenv("FUSEC_ATTENTION_LAYOUTS"); v && std::string_view(v) == "0")
      return;
    SmallVector<AttentionOp> attentions;
    getOperation()->walk([&](AttentionOp a) { attentions.push_back(a); });
    for (AttentionOp a : attentions)
      foldLayouts(a);
  }

private:
  /// Transposes that keep the head dim last, into the attention's layout
  /// attributes: an operand's (query_perm, ...), and the result's when a
  /// transpose is its one use (result_perm). The attention then reads and
  /// writes those layouts in place, and the transposes (when nothing else
  /// reads them) are gone. Meaning kept: transpose(transpose(x, p0), p1) is
  /// transpose(x, c) with c[i] = p0[p1[i]].
  static void foldLayouts(AttentionOp a) {
    auto keepsLast = [](ArrayRef<int64_t> perm) { return perm.size() == 4 && perm[3] == 3; };
    auto identity = [](ArrayRef<int64_t> perm) {
      return llvm::equal(perm, llvm::seq<int64_t>(0, 4));
    };
    MLIRContext *ctx = a.getContext();
    const StringRef names[] = {"query_perm", "key_perm", "value_perm"};
    for (unsigned i = 0; i < 3; ++i) {
      SmallVector<int64_t, 4> perm = a.layoutPerm(i);
      Value x = a->getOperand(i);
      bool changed = false;
      while (auto t = x.getDefiningOp<TransposeOp>()) {
        ArrayRef<int64_t> inner = t.getPermutation();
        if (!keepsLast(inner))
          break;
        SmallVector<int64_t, 4> composed(4);
        for (unsigned j = 0; j < 4; ++j)
          composed[j] = inner[perm[j]];
        perm = composed;
        x = t.getInput();
        changed = true;
      }
      if (!changed)
        continue;
      Value old = a->getOperand(i);
      a->setOperand(i, x);
      if (identity(perm))
        a->removeAttr(names[i]);
      else
        a->setAttr(names[i], DenseI64ArrayAttr::get(ctx, perm));
      eraseDeadTransposes(old);
    }
    Value r = a.getResult();
    while (r.hasOneUse()) {
      auto t = dyn_cast<TransposeOp>(*r.getUsers().begin());
      if (!t || !keepsLast(t.getPermutation()))
        break;
      SmallVector<int64_t, 4> perm = a.layoutPerm(3), composed(4);
      ArrayRef<int64_t> outer = t.getPermutation();
      for (unsigned j = 0; j < 4; ++j)
        composed[j] = perm[outer[j]];
      r.setType(t.getType());
      if (identity(composed))
        a->removeAttr("result_perm");
      else
        a->setAttr("result_perm", DenseI64ArrayAttr::get(ctx, composed));
      t.getResult().replaceAllUsesWith(r);
      t.erase();
    }
  }

  /// Erases `v`'s transpose (and the transposes feeding it) once unused.
  static void eraseDeadTransposes(Value v) {
    while (auto t = v.getDefiningOp<TransposeOp>()) {
      if (!t->use_empty())
        return;
      v = t.getInput();
      t.erase();
    }
  }

  LogicalResult rewrite(MatmulOp pv) {
    auto rank4 = [](Value v) { return cast<RankedTensorType>(v.getType()).getRank() == 4; };
    if (pv.getTransposeLhs() || pv.getTransposeRhs() || !rank4(pv.getLhs()) ||
        !rank4(pv.getRhs()))
      return failure();
    SmallVector<Operation *> chain;
    Value p = pv.getLhs();
    // A round trip through a wider float and back (transformers' eager
    // attention: softmax in f32, then .to(f16), as a TorchScript export
    // writes it): the identity, exactly.
    if (auto narrow = p.getDefiningOp<CastOp>(); narrow && p.hasOneUse())
      if (auto wide = narrow.getInput().getDefiningOp<CastOp>();
          wide && narrow.getInput().hasOneUse() &&
          wide.getInput().getType() == p.getType()) {
        auto from = dyn_cast<FloatType>(getElementTypeOrSelf(p.getType()));
        auto mid = dyn_cast<FloatType>(getElementTypeOrSelf(wide.getType()));
        if (from && mid && mid.getWidth() > from.getWidth() &&
            APFloat::isRepresentableAsNormalIn(from.getFloatSemantics(), mid.getFloatSemantics())) {
          chain.append({narrow, wide});
          p = wide.getInput();
        }
      }
    // PyTorch's guard on rows that see no key: select(p != p, 0, p). The
    // intrinsic writes zeros for such rows, as the guard does.
    if (auto sel = p.getDefiningOp<SelectOp>(); sel && p.hasOneUse()) {
      auto cmp = sel.getCondition().getDefiningOp<CompareOp>();
      auto zero = splatValue(sel.getOnTrue());
      if (cmp && cmp.getPredicate() == ComparePredicate::ne && cmp.getLhs() == cmp.getRhs() &&
          cmp.getLhs() == sel.getOnFalse() && zero && *zero == 0.0 &&
          sel.getCondition().hasOneUse()) {
        chain.append({sel, cmp});
        p = sel.getOnFalse();
      }
    }
    auto softmax = p.getDefiningOp<SoftmaxOp>();
    if (!softmax || softmax.getDim() != 3 ||
        !llvm::all_of(softmax->getUsers(),
                      [&](Operation *u) { return u == pv || llvm::is_contained(chain, u); }))
      return failure();
    chain.push_back(softmax);
    Value s = softmax.getInput();
    auto single = [](Value v) { return v.hasOneUse(); };
    auto scoresType = cast<RankedTensorType>(s.getType());
    int64_t batch = scoresType.getDimSize(0);
    int64_t sq = scoresType.getDimSize(2), skv = scoresType.getDimSize(3);
    bool causal = false;
    Value keyPad; // [B, Skv] i1, or null
    SmallVector<Operation *> created; // erased if the match fails
    auto fail = [&] {
      for (Operation *op : llvm::reverse(created))
        op->erase();
      return failure();
    };
    // Mask: s + M, or select(C, s, -inf).
    auto isMasked = [](const APFloat &x) {
      return x.isNegative() && (x.isInfinity() || x.convertToDouble() <= -1e4);
    };
    auto isZero = [](const APFloat &x) { return x.isZero(); };
    auto keptBool = [](bool keep, const APInt &x) { return keep == x.getBoolValue(); };
    // A key padding mask: an i1 value of [B, 1.., Skv] (broadcast over the
    // query rows), as [B, Skv].
    auto keyPadding = [&](Value c) -> Value {
      if (auto b = c.getDefiningOp<BroadcastOp>())
        if (llvm::equal(b.getDims(), llvm::seq<int64_t>(0, cast<RankedTensorType>(
                                                               b.getInput().getType())
                                                               .getRank())))
          c = b.getInput();
      auto t = cast<RankedTensorType>(c.getType());
      if (!t.getElementType().isSignlessInteger(1) || t.getRank() < 2 || !t.hasStaticShape() ||
          t.getDimSize(0) != batch || t.getShape().back() != skv)
        return Value();
      for (int64_t d = 1; d + 1 < t.getRank(); ++d)
        if (t.getDimSize(d) != 1)
          return Value();
      if (t.getRank() == 2)
        return c;
      OpBuilder b(pv);
      auto r = ReshapeOp::create(b, pv.getLoc(), t.clone({batch, skv}), c);
      created.push_back(r);
      return r;
    };
    // select(C, 0, fill) with C causal, a key padding mask, or both (and).
    auto selectMask = [&](Value m) {
      if (auto b = m.getDefiningOp<BroadcastOp>())
        m = b.getInput();
      auto sel = m.getDefiningOp<SelectOp>();
      if (!sel)
        return false;
      auto zero = splatValue(sel.getOnTrue()), fill = splatValue(sel.getOnFalse());
      if (!zero || *zero != 0.0 || !fill || !(std::isinf(*fill) ? *fill < 0 : *fill <= -1e4))
        return false;
      Value c = sel.getCondition();
      if (isCausalConstant(c, sq, skv, isZero, isMasked, keptBool)) {
        causal = true;
        return true;
      }
      if (Value k = keyPadding(c)) {
        keyPad = k;
        return true;
      }
      // An all-true constant (an encoder's "no causal mask") keeps every key.
      auto allTrue = [](Value x) {
        if (auto b = x.getDefiningOp<BroadcastOp>())
          x = b.getInput();
        auto k = x.getDefiningOp<ConstantOp>();
        auto attr = k ? dyn_cast<DenseElementsAttr>(k.getValue()) : nullptr;
        return attr && attr.isSplat() && attr.getElementType().isSignlessInteger(1) &&
               attr.getSplatValue<bool>();
      };
      if (auto a = c.getDefiningOp<AndOp>())
        for (int side = 0; side < 2; ++side) {
          bool isCausal =
              isCausalConstant(a->getOperand(side), sq, skv, isZero, isMasked, keptBool);
          if (!isCausal && !allTrue(a->getOperand(side)))
            continue;
          if (Value k = keyPadding(a->getOperand(1 - side))) {
            causal = isCausal;
            keyPad = k;
            return true;
          }
        }
      return false;
    };
    if (auto add = s.getDefiningOp<AddOp>(); add && single(s)) {
      for (int side = 0; side < 2; ++side) {
        Value mask = add->getOperand(side), other = add->getOperand(1 - side);
        bool matched = false;
        // A mask of zeros (an encoder's "no mask", folded by the export):
        // softmax(s + 0) = softmax(s).
        if (auto z = splatValue(mask); z && *z == 0.0 && mask.getType() == s.getType())
          matched = true;
        else if (isCausalConstant(mask, sq, skv, isZero, isMasked))
          matched = causal = true;
        else
          matched = selectMask(mask);
        if (matched) {
          chain.push_back(add);
          s = other;
          break;
        }
      }
    } else if (auto sel = s.getDefiningOp<SelectOp>(); sel && single(s)) {
      auto fill = splatValue(sel.getOnFalse());
      if (fill && (std::isinf(*fill) ? *fill < 0 : *fill <= -1e4) &&
          isCausalConstant(sel.getCondition(), sq, skv, isZero, isMasked, keptBool)) {
        causal = true;
        chain.push_back(sel);
        s = sel.getOnTrue();
      }
    }
    // Scale: s * c or s / c.
    double scale = 1.0;
    if (auto mul = s.getDefiningOp<MulOp>(); mul && single(s)) {
      for (int side = 0; side < 2; ++side)
        if (auto c = splatValue(mul->getOperand(side))) {
          scale = *c;
          chain.push_back(mul);
          s = mul->getOperand(1 - side);
          break;
        }
    } else if (auto div = s.getDefiningOp<DivOp>(); div && single(s)) {
      if (auto c = splatValue(div.getRhs()); c && *c != 0) {
        scale = 1.0 / *c;
        chain.push_back(div);
        s = div.getLhs();
      }
    }
    auto qk = s.getDefiningOp<MatmulOp>();
    if (!qk || !single(s) || qk.getTransposeLhs() || !rank4(qk.getLhs()) || !rank4(qk.getRhs()))
      return fail();
    Value q = qk.getLhs(), k = qk.getRhs();
    // Scales on the operands (PyTorch splits 1/sqrt(d) over q and kᵀ).
    auto operandScale = [&](Value &x) {
      auto mul = x.getDefiningOp<MulOp>();
      if (!mul || !x.hasOneUse())
        return;
      for (int side = 0; side < 2; ++side)
        if (auto c = splatValue(mul->getOperand(side))) {
          scale *= *c;
          chain.push_back(mul);
          x = mul->getOperand(1 - side);
          return;
        }
    };
    operandScale(q);
    operandScale(k);
    if (!qk.getTransposeRhs()) {
      if (auto t = k.getDefiningOp<TransposeOp>()) {
        // Kᵀ = transpose(x, perm): K is transpose(x, perm with its last two
        // entries swapped), x itself where that is the identity ([0, 1, 3,
        // 2]), else a transpose of its own (K as [B, S, H, D] read through
        // [0, 2, 3, 1], as a TorchScript export writes ViT's).
        ArrayRef<int64_t> perm = t.getPermutation();
        SmallVector<int64_t> kperm = {perm[0], perm[1], perm[3], perm[2]};
        if (llvm::equal(kperm, llvm::seq<int64_t>(0, 4))) {
          k = t.getInput();
        } else {
          auto kt = cast<RankedTensorType>(k.getType());
          OpBuilder b(pv);
          auto keys = TransposeOp::create(
              b, pv.getLoc(),
              kt.clone({kt.getDimSize(0), kt.getDimSize(1), kt.getDimSize(3), kt.getDimSize(2)}),
              t.getInput(), kperm);
          created.push_back(keys);
          k = keys;
        }
      } else if (auto out = k.getDefiningOp<ReshapeOp>()) {
        // kᵀ as exported: reshape(transpose(reshape(K, [B·H, S, D]), (0, 2, 1))).
        auto t3 = out.getInput().getDefiningOp<TransposeOp>();
        auto in = t3 ? t3.getInput().getDefiningOp<ReshapeOp>() : nullptr;
        auto kt = cast<RankedTensorType>(k.getType());
        if (!in || !llvm::equal(t3.getPermutation(), ArrayRef<int64_t>{0, 2, 1}) ||
            cast<RankedTensorType>(in.getType()).getDimSize(0) !=
                kt.getDimSize(0) * kt.getDimSize(1))
          return fail();
        OpBuilder b(pv);
        auto keys = ReshapeOp::create(
            b, pv.getLoc(),
            kt.clone({kt.getDimSize(0), kt.getDimSize(1), kt.getDimSize(3), kt.getDimSize(2)}),
            in.getInput());
        created.push_back(keys);
        k = keys;
      } else {
        return fail();
      }
    }
    // Grouped-query attention as exported: K and V of Hkv heads repeated
    // to Hq (reshape(broadcast(x, [B, Hkv, n, S, D]))); the intrinsic reads
    // x and groups the heads itself.
    auto unrepeat = [&](Value x) -> Value {
      auto r = x.getDefiningOp<ReshapeOp>();
      auto b = r ? r.getInput().getDefiningOp<BroadcastOp>() : nullptr;
      if (!b || !llvm::equal(b.getDims(), ArrayRef<int64_t>{0, 1, 3, 4}))
        return x;
      auto src = cast<RankedTensorType>(b.getInput().getType());
      auto rep = cast<RankedTensorType>(b.getType());
      auto xt = cast<RankedTensorType>(x.getType());
      if (src.getRank() != 4 || xt.getDimSize(1) != rep.getDimSize(1) * rep.getDimSize(2))
        return x;
      return b.getInput();
    };
    k = unrepeat(k);
    Value vIn = unrepeat(pv.getRhs());
    chain.push_back(qk);
    Value v = vIn;
    Type elem = getElementTypeOrSelf(q.getType());
    if (getElementTypeOrSelf(k.getType()) != elem || getElementTypeOrSelf(v.getType()) != elem ||
        getElementTypeOrSelf(pv.getType()) != elem)
      return fail();
    if (intrinsicOnly) {
      // What runtime_kernels/attention_sm90.cu runs (rt::validateAttention).
      auto qt = cast<RankedTensorType>(q.getType()), kt = cast<RankedTensorType>(k.getType());
      auto vt = cast<RankedTensorType>(v.getType());
      int64_t d = qt.getDimSize(3);
      if (!(elem.isBF16() || elem.isF16()) || (d != 64 && d != 128 && d != 256) ||
          vt.getDimSize(3) != d || kt.getDimSize(1) == 0 ||
          qt.getDimSize(1) % kt.getDimSize(1) != 0)
        return fail();
    }
    OpBuilder b(pv);
    if (!std::isfinite(scale) || scale == 0.0 || (intrinsicOnly && scale < 0.0))
      return fail();
    auto attention = AttentionOp::create(b, pv.getLoc(), pv.getType(), q, k, v, keyPad,
                                         b.getF64FloatAttr(scale),
                                         causal ? b.getUnitAttr() : UnitAttr(), nullptr,
                                         nullptr, nullptr, nullptr);
    if (failed(mlir::verify(attention))) {
      attention.erase();
      return fail();
    }
    pv.getResult().replaceAllUsesWith(attention.getResult());
    for (Operation *op : llvm::reverse(created))
      if (op->use_empty())
        op->erase();
    // Erase the chain and whatever fed only it (the scale and mask
    // constants, their broadcasts, K's transpose).
    SmallVector<Operation *> dead = {pv};
    dead.append(chain.begin(), chain.end());
    while (!dead.empty()) {
      Operation *op = dead.pop_back_val();
      if (!op->use_empty())
        continue;
      SmallVector<Operation *> feeders;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && isa<FusecDialect>(def->getDialect()))
          feeders.push_back(def);
      op->erase();
      for (Operation *f : feeders)
        if (!llvm::is_contained(dead, f))
          dead.push_back(f);
    }
    return success();
  }
};

} // namespace

LogicalResult fusec::lowerWindowOps(func::FuncOp func) {
  bool any = false;
  func.walk([&](Operation *op) { any |= isa<ConvOp, PoolOp>(op); });
  if (!any)
    return success();
  GreedyRewriteConfig config;
  config.enableFolding(false);
  config.enableConstantCSE(false);
  // Convolutions first, and the layout between them: each one's
  // channels-first result transpose sinks to the next one's channels-last
  // transpose and cancels; then pools, which run channels last where their
  // input arrives so; then the layout again.
  for (int round = 0; round < 2; ++round) {
    RewritePatternSet patterns(func.getContext());
    if (round == 0)
      patterns.add<DecomposeConv, DecomposeTransposedConv>(func.getContext());
    else
      patterns.add<DecomposePool>(func.getContext());
    patterns.add<SinkChannelsFirst, ComposeTransposes, HoistGridSlice, SinkReshape>(
        func.getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns), config)))
      return failure();
  }
  // One copy of what several lowerings built alike: a transposed
  // convolution's phases each transpose (and pad) the same input.
  IRRewriter rewriter(func.getContext());
  DominanceInfo dominance(func);
  eliminateCommonSubExpressions(rewriter, dominance, func);
  return success();
}
