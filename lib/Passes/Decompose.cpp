//===- Decompose.cpp - Composite ops to fusec primitives --------*- C++ -*-===//
//
// Rewrites layer_norm, rms_norm, softmax, gelu and silu into primitives so that
// fusion sees every elementwise op and reduction. Low-precision inputs are cast
// to f32 for the math and the result cast back, so the decomposed graph rounds
// where the composite did: at its output.
//
//===----------------------------------------------------------------------===//

#include "fusec/Passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

namespace fusec {
#define GEN_PASS_DEF_DECOMPOSE
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

class DecomposePass : public fusec::impl::DecomposeBase<DecomposePass> {
public:
  using DecomposeBase::DecomposeBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeLayerNorm, DecomposeRMSNorm, DecomposeSoftmax,
                 DecomposeGelu, DecomposeSilu>(&getContext());
    // Only the composites are rewritten; no folding of the rest of the graph.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    config.enableConstantCSE(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      signalPassFailure();
  }
};

} // namespace
