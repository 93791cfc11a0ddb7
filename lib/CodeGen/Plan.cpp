//===- Plan.cpp - The launch plan: one place chooses the strategy -*- C++ -*-===//
//
// analyzeKernel finds what a kernel iterates over; planLaunch turns that into
// a #fusec.launch on a target. fusec-tile writes the plan on every kernel,
// and the code generator builds exactly what it says (it plans a kernel that
// carries none with this same function).
//
// The rules (measured on the H200, bench/results/2026-11-30-h200-rows-tuned):
// - elementwise and movement kernels: 256 threads, 16-byte chunks of the
//   widest boundary type, a grid-stride loop over at most 32 CTAs per SM;
// - reductions over trailing dims: the row in registers by a warp or a CTA
//   (RowPlan.h), else streamed by a warp (online softmax, Welford);
// - reductions over leading or middle dims: 8 warps x 32 column groups per
//   CTA, f64 partials in shared memory;
// - matmuls: tensor cores where the architecture has a strategy for them,
//   else the SIMT fallback.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"
#include "Matmul.h"
#include "Strategies/Strategies.h"
#include "fusec/CodeGen/LaunchPlan.h"
#include "fusec/CodeGen/RowPlan.h"
#include "fusec/Target/Target.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <limits>
#include <cstdlib>
#include <string_view>
#include <string>

using namespace mlir;

namespace fusec {

namespace {
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
/// a * b, stopping at INT64_MAX: a product of some of an empty tensor's
/// dims may pass int64 though its element count (0) does not.
int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
} // namespace

KernelShape analyzeKernel(KernelOp kernel) {
  KernelShape s;
  Block &body = kernel.getBody().front();
  body.walk([&](Operation *op) {
    if (auto r = dyn_cast<ReduceOp>(op))
      s.reductions.push_back(r);
    else if (auto m = dyn_cast<MatmulOp>(op))
      s.matmul = m;
    else if (isa<TransposeOp, SliceOp, ConcatOp, GatherOp>(op))
      s.movement = true;
  });
  if (!s.reductions.empty()) {
    // Fusion groups reductions of one signature: the first one's input is
    // the domain, its dims the reduced ones.
    auto in = cast<RankedTensorType>(s.reductions[0].getInput().getType());
    s.domain.assign(in.getShape().begin(), in.getShape().end());
    SmallVector<int64_t> dims(s.reductions[0].getDims());
    llvm::sort(dims);
    int64_t rank = in.getRank();
    s.rowLength = 1;
    bool trailing = true, contiguous = true;
    for (auto [i, d] : llvm::enumerate(dims)) {
      trailing &= d == rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(i);
      contiguous &= d == dims[0] + static_cast<int64_t>(i);
      s.rowLength = satMul(s.rowLength, in.getDimSize(d));
    }
    // The results' elements (the kept dims' product): with a reduced dim of
    // extent 0 there are still results (the reduction's identity), and a
    // column plan divides by its tiles of them.
    s.rows = 1;
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(dims, d))
        s.rows = satMul(s.rows, in.getDimSize(d));
    if (!trailing && !contiguous) {
      s.kind = KernelShape::Kind::RowsApart;
      for (int64_t d = 0; d < rank; ++d)
        (llvm::is_contained(dims, d) ? s.reducedDims : s.keptDims).push_back(d);
    } else if (!trailing) {
      s.kind = KernelShape::Kind::Columns;
      for (int64_t d = dims.back() + 1; d < rank; ++d)
        s.columnInner = satMul(s.columnInner, in.getDimSize(d));
    } else {
      s.kind = KernelShape::Kind::Rows;
    }
    return s;
  }
  if (s.matmul) {
    // The matmul's result: outputs of other shapes are its images through
    // movement ops (written through them, see StoreMap).
    auto t = cast<RankedTensorType>(s.matmul.getType());
    s.domain.assign(t.getShape().begin(), t.getShape().end());
  } else if (body.getTerminator()->getNumOperands())
    s.domain.assign(
        cast<RankedTensorType>(body.getTerminator()->getOperand(0).getType()).getShape().begin(),
        cast<RankedTensorType>(body.getTerminator()->getOperand(0).getType()).getShape().end());
  if (s.matmul)
    s.kind = KernelShape::Kind::Matmul;
  return s;
}

namespace codegen {

/// Reshapes a view's dims into `out`: the factors in order (extent 1
/// dropped, contiguous neighbours merged), dealt out to the new dims from
/// the outside in. False where a factor would split unevenly.
bool reshapeView(SmallVector<OperandView::Factors, 4> &dims, ArrayRef<int64_t> out) {
  OperandView::Factors flat;
  for (const auto &dim : dims)
    for (auto f : dim) {
      if (f.first == 1)
        continue;
      if (!flat.empty() && flat.back().second == f.second * f.first)
        flat.back() = {flat.back().first * f.first, f.second};
      else
        flat.push_back(f);
    }
  SmallVector<OperandView::Factors, 4> next(out.size());
  size_t at = 0;
  for (auto [d, extent] : llvm::enumerate(out)) {
    int64_t need = extent;
    while (need > 1) {
      if (at == flat.size())
        return false;
      auto [size, st] = flat[at];
      if (size <= need) {
        if (need % size)
          return false;
        next[d].push_back(flat[at++]);
        need /= size;
      } else {
        if (size % need)
          return false;
        // The outer part of the factor; its inner rest stays for the
        // next dims.
        next[d].push_back({need, st * (size / need)});
        flat[at] = {size / need, st};
        need = 1;
      }
    }
    if (next[d].empty())
      next[d].push_back({1, 0}); // extent 1: any stride
  }
  dims = std::move(next);
  return true;
}

std::optional<OperandView> operandViewOf(Value operand) {
  SmallVector<Operation *> chain;
  Value v = operand;
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<TransposeOp, ReshapeOp>(def))
      return std::nullopt;
    chain.push_back(def);
    v = def->getOperand(0);
  }
  OperandView view;
  view.arg = dyn_cast<BlockArgument>(v);
  if (!view.arg)
    return std::nullopt;
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  // An empty operand has nothing to read, and its strides (products of
  // the dims after each) may pass int64 (fuzz_mlir, seed 5403).
  if (llvm::is_contained(shape, 0))
    return std::nullopt;
  int64_t stride = 1;
  view.dims.resize(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    view.dims[d].push_back({shape[d], stride});
    stride *= shape[d];
  }
  for (Operation *op : llvm::reverse(chain)) {
    if (auto t = dyn_cast<TransposeOp>(op)) {
      SmallVector<OperandView::Factors, 4> next;
      for (int64_t p : t.getPermutation())
        next.push_back(view.dims[p]);
      view.dims = std::move(next);
      continue;
    }
    if (!reshapeView(view.dims, cast<RankedTensorType>(op->getResult(0).getType()).getShape()))
      return std::nullopt;
  }
  return view;
}

bool tmaStoreEnabled() {
  const char *v = std::getenv("FUSEC_TMA_STORE");
  return !v || std::string(v) != "0";
}

std::optional<bool> epiloguePrefetchForced() {
  const char *v = std::getenv("FUSEC_EPILOGUE_PREFETCH");
  if (!v || !*v)
    return std::nullopt;
  return std::string(v) != "0";
}

/// How a TMA store writes kernel output `output` (parameter `slot`) from
/// the [batch..., M, N] domain: the output buffer (row-major) walked back
/// through the movement ops that made it (a transpose permutes the dims, a
/// reshape deals the factors out anew, a slice adds its offsets), in pieces
/// of 128 bytes of columns by 64 rows that no movement splits.
std::optional<StoreView> storeViewOf(Value output, ArrayRef<int64_t> domain, int64_t slot) {
  auto type = cast<RankedTensorType>(output.getType());
  if (!isa<FloatType>(type.getElementType()))
    return std::nullopt;
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  if (bytes != 2 && bytes != 4)
    return std::nullopt;
  SmallVector<Operation *, 4> chain; // the output's side first
  if (type.getShape() != domain) {
    auto map = storeMapOf(output, domain);
    if (!map)
      return std::nullopt;
    chain.assign(map->chain.rbegin(), map->chain.rend());
  }
  StoreView sv;
  sv.slot = slot;
  sv.elementBytes = bytes;
  auto shape = type.getShape();
  int64_t stride = 1;
  sv.view.dims.resize(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    sv.view.dims[d].push_back({shape[d], stride});
    stride *= shape[d];
  }
  SmallVector<int64_t, 4> offset(shape.size(), 0);
  for (Operation *op : chain) {
    // Padding (zeros the kernel does not write) is not a box of the output.
    if (isa<ConcatOp>(op))
      return std::nullopt;
    if (auto t = dyn_cast<TransposeOp>(op)) {
      // Result dim i is input dim perm[i].
      auto perm = t.getPermutation();
      SmallVector<OperandView::Factors, 4> dims(perm.size());
      SmallVector<int64_t, 4> off(perm.size());
      for (auto [i, p] : llvm::enumerate(perm)) {
        dims[p] = sv.view.dims[i];
        off[p] = offset[i];
      }
      sv.view.dims = std::move(dims);
      offset = std::move(off);
    } else if (auto sl = dyn_cast<SliceOp>(op)) {
      for (auto [d, o] : llvm::enumerate(sl.getOffsets()))
        offset[d] += o;
    } else {
      // A reshape: the dims a slice narrowed or moved must be a suffix it
      // keeps (a [B S, 3 H D] -> [B, S, 3 H D] before Q, K and V are
      // sliced); the dims before it are dealt out anew.
      auto in = cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
      auto out = cast<RankedTensorType>(op->getResult(0).getType()).getShape();
      size_t keep = 0;
      for (size_t d = 0; d < out.size(); ++d) {
        int64_t extent = 1;
        for (auto f : sv.view.dims[d])
          extent *= f.first;
        if (offset[d] != 0 || extent != out[d])
          keep = std::max(keep, out.size() - d);
      }
      if (keep > in.size() || !llvm::equal(out.take_back(keep), in.take_back(keep)))
        return std::nullopt;
      SmallVector<OperandView::Factors, 4> prefix(sv.view.dims.begin(),
                                                  sv.view.dims.end() - keep);
      if (!reshapeView(prefix, in.drop_back(keep)))
        return std::nullopt;
      prefix.append(sv.view.dims.end() - keep, sv.view.dims.end());
      sv.view.dims = std::move(prefix);
      SmallVector<int64_t, 4> off(in.size() - keep, 0);
      off.append(offset.end() - keep, offset.end());
      offset = std::move(off);
    }
  }
  size_t rank = sv.view.dims.size();
  if (rank != domain.size() || rank < 2)
    return std::nullopt;
  const auto &cols = sv.view.dims[rank - 1], &rows = sv.view.dims[rank - 2];
  int64_t pieceCols = 128 / bytes;
  if (cols.back().second != 1 || offset[rank - 1] % pieceCols || offset[rank - 2] % 64)
    return std::nullopt;
  if (cols.size() > 1 && cols.back().first % pieceCols)
    return std::nullopt;
  if (rows.size() > 1 && rows.back().first % 64)
    return std::nullopt;
  // A dim split into factors: a piece inside its slice must not wrap.
  for (size_t d = 0; d + 2 < rank; ++d)
    if (sv.view.dims[d].size() > 1 && offset[d] != 0)
      return std::nullopt;
  int64_t count = 0;
  for (auto [d, dim] : llvm::enumerate(sv.view.dims))
    for (auto [i, f] : llvm::enumerate(dim)) {
      bool innermost = d + 1 == rank && i + 1 == dim.size();
      if (d + 2 < rank && f.first == 1)
        continue;
      ++count;
      if (innermost || (f.first == 1 && f.second == 0))
        continue;
      if (f.second <= 0 || (f.second * bytes) % 16)
        return std::nullopt;
    }
  if (count > 5)
    return std::nullopt;
  sv.offset = std::move(offset);
  return sv;
}

bool tmaReadable(const OperandView &view, int64_t inner, int64_t elementBytes, std::string *why) {
  auto refuse = [&](const std::string &reason) {
    if (why)
      *why = reason;
    return false;
  };
  size_t rank = view.dims.size();
  if (rank < 2)
    return refuse("an operand of rank below 2");
  const auto &last = view.dims[rank - 1], &rows = view.dims[rank - 2];
  if (last.back().second != 1)
    return refuse("an operand's last dim is not contiguous in memory");
  if (last.size() > 1 && last.back().first % inner)
    return refuse("an operand's last dim is split into runs that are not a multiple of the box");
  if (rows.size() > 1 && rows.back().first % 256)
    return refuse("an operand's rows are split into runs that are not a multiple of 256");
  int64_t count = 0;
  for (auto [d, dim] : llvm::enumerate(view.dims))
    for (auto [i, f] : llvm::enumerate(dim)) {
      bool innermost = d + 1 == rank && i + 1 == dim.size();
      bool batch = d + 2 < rank;
      if (batch && f.first == 1)
        continue;
      ++count;
      if (innermost || (f.first == 1 && f.second == 0))
        continue;
      if (f.second <= 0 || (f.second * elementBytes) % 16)
        return refuse("an operand's rows are not a multiple of 16 bytes (TMA strides)");
    }
  if (count > 5)
    return refuse("an operand needs more than 5 tensor-map dims");
  return true;
}

/// The implicit GEMM's lhs (ShiftedLhs): a concat along K of reshaped
/// slices [1, M, C] -> [M, C] of one argument [Φ, R, C], unit stride, each
/// read only there; C a multiple of 64. `source` is the argument.
struct ShiftedLhsOf : ShiftedLhs {
  Value source;
};
/// An implicit GEMM's lhs blocks along K: the operands of a concat along
/// dim 1 read only by the matmul (several taps), or the lhs itself (one);
/// nothing for a transposed lhs.
std::optional<SmallVector<Value>> lhsBlocks(MatmulOp op) {
  auto concat = op.getLhs().getDefiningOp<ConcatOp>();
  if (op.getTransposeLhs() || (concat && (concat.getDim() != 1 || !concat->hasOneUse())))
    return std::nullopt;
  if (!concat)
    return SmallVector<Value>{op.getLhs()};
  return SmallVector<Value>(concat.getOperands().begin(), concat.getOperands().end());
}

std::optional<ShiftedLhsOf> shiftedLhsOf(MatmulOp op) {
  auto parts = lhsBlocks(op);
  if (!parts)
    return std::nullopt;
  ShiftedLhsOf s;
  for (Value part : *parts) {
    auto r = part.getDefiningOp<ReshapeOp>();
    auto sl = r ? r.getInput().getDefiningOp<SliceOp>() : SliceOp();
    if (!sl || !r->hasOneUse() || !sl->hasOneUse() || !isa<BlockArgument>(sl.getInput()))
      return std::nullopt;
    auto src = cast<RankedTensorType>(sl.getInput().getType());
    auto shape = cast<RankedTensorType>(sl.getType()).getShape();
    auto rows = cast<RankedTensorType>(r.getType()).getShape();
    if (src.getRank() != 3 || (s.source && s.source != sl.getInput()) || shape[0] != 1 ||
        shape[2] != src.getDimSize(2) || rows.size() != 2 || rows[0] != shape[1] ||
        llvm::any_of(sl.getStrides(), [](int64_t v) { return v != 1; }) ||
        sl.getOffsets()[2] != 0 || src.getDimSize(2) % 64)
      return std::nullopt;
    s.source = sl.getInput();
    s.channels = src.getDimSize(2);
    s.taps.push_back({sl.getOffsets()[0], sl.getOffsets()[1]});
  }
  return s;
}

/// The im2col reading of a convolution's lhs (Im2colLhs): a concat along
/// K of reshaped strided slices [N, O..., C] -> [M, C] of one tensor, that
/// tensor an argument [N, spatial..., C0] grown along its dims by zero
/// concats only (C0 to C along the channels, at the high end; low and high
/// along the spatial dims). `source` is the argument.
struct Im2colLhsOf : Im2colLhs {
  Value source;
};
std::optional<Im2colLhsOf> im2colLhsOf(MatmulOp op) {
  auto parts = lhsBlocks(op);
  if (!parts)
    return std::nullopt;
  Im2colLhsOf s;
  Value padded;
  int64_t rank = 0, sp = 0;
  for (Value part : *parts) {
    auto r = part.getDefiningOp<ReshapeOp>();
    auto sl = r ? r.getInput().getDefiningOp<SliceOp>() : SliceOp();
    if (!sl || !r->hasOneUse() || (padded && padded != sl.getInput()))
      return std::nullopt;
    auto src = cast<RankedTensorType>(sl.getInput().getType());
    auto shape = cast<RankedTensorType>(sl.getType()).getShape();
    auto rows = cast<RankedTensorType>(r.getType()).getShape();
    rank = src.getRank();
    sp = rank - 2;
    if (rank < 3 || rank > 5 || rows.size() != 2 || shape[0] != src.getDimSize(0) ||
        shape.back() != src.getDimSize(rank - 1) || sl.getOffsets()[0] != 0 ||
        sl.getOffsets().back() != 0 || sl.getStrides()[0] != 1 || sl.getStrides().back() != 1 ||
        rows[1] != shape.back())
      return std::nullopt;
    SmallVector<int64_t, 3> out(shape.begin() + 1, shape.end() - 1),
        strides(sl.getStrides().begin() + 1, sl.getStrides().end() - 1);
    if (padded && (out != s.out || strides != s.strides))
      return std::nullopt;
    padded = sl.getInput();
    s.out = out;
    s.strides = strides;
    s.taps.emplace_back(sl.getOffsets().begin() + 1, sl.getOffsets().end() - 1);
  }
  // Peel the zero concats down to the argument.
  s.low.assign(sp, 0);
  Value v = padded;
  int64_t channelPad = 0;
  while (auto c = v.getDefiningOp<ConcatOp>()) {
    int64_t dim = static_cast<int64_t>(c.getDim());
    Value middle;
    int64_t low = 0, high = 0;
    for (Value o : c.getOperands()) {
      int64_t extent = cast<RankedTensorType>(o.getType()).getDimSize(dim);
      if (isZeroSplat(o)) {
        (middle ? high : low) += extent;
        continue;
      }
      if (middle)
        return std::nullopt;
      middle = o;
    }
    if (!middle || dim == 0)
      return std::nullopt;
    if (dim == rank - 1) {
      if (low)
        return std::nullopt;
      channelPad += high;
    } else {
      s.low[dim - 1] += low;
    }
    v = middle;
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return std::nullopt;
  auto in = cast<RankedTensorType>(arg.getType());
  s.source = arg;
  s.channels = in.getDimSize(rank - 1) + channelPad;
  if (s.channels % 64)
    return std::nullopt;
  for (int64_t i = 0; i < sp; ++i)
    s.input.push_back(in.getDimSize(i + 1));
  return s;
}

/// Whether TMA's im2col mode reads `l.im2col` of `arg` (the driver's
/// ranges), else why not.
bool im2colReadable(const Im2colLhs &c, RankedTensorType arg, int64_t tileRows,
                    std::string *why) {
  auto refuse = [&](const std::string &reason) {
    if (why)
      *why = reason;
    return false;
  };
  int64_t rank = arg.getRank(), bytes = arg.getElementTypeBitWidth() / 8;
  int64_t bound = rank == 3 ? 32768 : rank == 4 ? 128 : 16;
  if ((arg.getDimSize(rank - 1) * bytes) % 16)
    return refuse("an im2col input's channels are not a multiple of 16 bytes");
  for (int64_t d : arg.getShape())
    if (d > (int64_t(1) << 31) - 1)
      return refuse("an im2col input dim past 2^31");
  if (arg.getNumElements() * bytes >= (int64_t(1) << 40))
    return refuse("an im2col input of 2^40 bytes or more");
  for (size_t i = 0; i < c.out.size(); ++i) {
    // Each operand in range before the arithmetic (no overflow).
    if (c.strides[i] < 1 || c.strides[i] > 8)
      return refuse("an im2col traversal stride past 8");
    if (c.low[i] > bound || c.out[i] < 1 || c.out[i] >= (int64_t(1) << 31) ||
        c.input[i] >= (int64_t(1) << 31))
      return refuse("an im2col corner out of the driver's range");
    int64_t lower = -c.low[i], upper = (c.out[i] - 1) * c.strides[i] + 1 - c.input[i] - c.low[i];
    if (lower < -bound || upper < -bound || upper >= bound)
      return refuse("an im2col corner out of the driver's range");
    for (const auto &tap : c.taps)
      if (tap[i] < 0 || tap[i] >= bound)
        return refuse("an im2col tap offset out of the driver's range");
  }
  if (tileRows < 64 || tileRows > 256)
    return refuse("an im2col tile of fewer than 64 or more than 256 rows");
  return true;
}

std::optional<MatmulLayout> analyzeMatmul(KernelOp kernel, const KernelShape &s,
                                          std::string *why) {
  auto refuse = [&](const std::string &reason) -> std::optional<MatmulLayout> {
    if (why)
      *why = reason;
    return std::nullopt;
  };
  if (s.kind != KernelShape::Kind::Matmul || !s.matmul)
    return refuse("not a matmul kernel");
  MatmulLayout l;
  kernel.getBody().walk([&](MatmulOp op) { l.ops.push_back(op); });
  if (l.ops.size() > 2)
    return refuse("more than two matmuls in the kernel");
  MatmulOp first = l.ops.front();
  auto shifted = shiftedLhsOf(first);
  if (shifted)
    l.shifted = ShiftedLhs(*shifted);
  std::optional<Im2colLhsOf> im2col;
  if (!shifted && (im2col = im2colLhsOf(first))) {
    l.im2col = Im2colLhs(*im2col);
    std::string reason;
    if (!im2colReadable(*l.im2col, cast<RankedTensorType>(im2col->source.getType()), 128,
                        &reason))
      return refuse(reason);
  }
  auto lhsView = operandViewOf(shifted  ? shifted->source
                               : im2col ? im2col->source
                                        : first.getLhs());
  if (!lhsView)
    return refuse("an operand is computed inside the kernel (TMA reads operands from memory)");
  l.lhsView = *lhsView;
  l.lhs = lhsView->arg;
  for (MatmulOp op : l.ops) {
    auto rhs = operandViewOf(op.getRhs());
    if (!rhs || op.getLhs() != first.getLhs())
      return refuse(l.ops.size() > 1
                        ? "two matmuls that do not share their lhs, or an operand computed "
                          "inside the kernel"
                        : "an operand is computed inside the kernel (TMA reads operands "
                          "from memory)");
    if (op.getRhs().getType() != first.getRhs().getType() || op.getType() != first.getType() ||
        op.getTransposeLhs() != first.getTransposeLhs() ||
        op.getTransposeRhs() != first.getTransposeRhs())
      return refuse("two matmuls of different shapes");
    l.rhs.push_back(rhs->arg);
    l.rhsViews.push_back(*rhs);
  }
  Type a = getElementTypeOrSelf(first.getLhs().getType()),
       b = getElementTypeOrSelf(first.getRhs().getType());
  if (a != b || !(a.isBF16() || a.isF16()))
    return refuse("operands are not both bf16 or both f16");
  l.element = a;
  auto out = cast<RankedTensorType>(first.getType());
  if (!isa<FloatType>(out.getElementType()))
    return refuse("an integer result");
  if (out.getShape() != ArrayRef<int64_t>(s.domain))
    return refuse("the kernel's outputs are not the matmul's shape");
  // The epilogue: everything computed from the matmuls' results is
  // elementwise at the result's own index, or a movement op on the way to
  // an output written through it (StoreMap).
  Operation *yield = kernel.getBody().front().getTerminator();
  llvm::SmallPtrSet<Operation *, 8> storeChains;
  for (Value o : yield->getOperands()) {
    auto type = cast<RankedTensorType>(o.getType());
    l.outputBytes.push_back(0);
    if (type.getShape() == ArrayRef<int64_t>(s.domain)) {
      l.outputBytes.back() =
          std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() / 8);
      continue;
    }
    auto map = storeMapOf(o, s.domain);
    if (!map)
      return refuse("an output is not of the matmul's shape nor a slice, reshape or transpose "
                    "of a value of it");
    if (Operation *def = map->source.getDefiningOp();
        def && isa<SliceOp, ReshapeOp, TransposeOp>(def))
      return refuse("an output's movement ops pass through a value of the matmul's shape");
    storeChains.insert(map->chain.begin(), map->chain.end());
  }
  llvm::SmallPtrSet<Operation *, 16> dependent;
  for (MatmulOp op : l.ops)
    dependent.insert(op);
  for (Operation &op : kernel.getBody().front()) {
    if (isa<MatmulOp, YieldOp>(op))
      continue;
    bool uses = llvm::any_of(op.getOperands(), [&](Value v) {
      return v.getDefiningOp() && dependent.contains(v.getDefiningOp());
    });
    if (!uses)
      continue;
    if (storeChains.contains(&op)) {
      // Only other movement ops of a chain, or the yield, read it.
      for (Operation *user : op.getUsers())
        if (!isa<YieldOp>(user) && !storeChains.contains(user))
          return refuse("a value written through movement ops is also computed on");
      continue;
    }
    if (!isa<CastOp, CompareOp, SelectOp, AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, AndOp,
             OrOp, NotOp, NegOp, AbsOp, SignOp, FloorOp, CeilOp, RoundOp, ExpOp, Exp2Op, LogOp, TanhOp,
             ErfOp, SigmoidOp, RsqrtOp, SqrtOp, SinOp, CosOp>(op))
      return refuse("'" + op.getName().getStringRef().str() +
                    "' reads the matmul's result at another index");
    dependent.insert(&op);
  }
  auto lhs = cast<RankedTensorType>(first.getLhs().getType()).getShape();
  auto rhs = cast<RankedTensorType>(first.getRhs().getType()).getShape();
  l.transposeLhs = first.getTransposeLhs();
  l.transposeRhs = first.getTransposeRhs();
  l.m = out.getDimSize(out.getRank() - 2);
  l.n = out.getDimSize(out.getRank() - 1);
  l.k = l.transposeLhs ? lhs[lhs.size() - 2] : lhs.back();
  l.batch.assign(out.getShape().begin(), out.getShape().end() - 2);
  l.lhsBatch.assign(lhs.begin(), lhs.end() - 2);
  l.rhsBatch.assign(rhs.begin(), rhs.end() - 2);
  if (l.batch.size() > 3 || l.lhsBatch.size() > 3 || l.rhsBatch.size() > 3)
    return refuse("more than 3 batch dims (a tensor map has at most 5)");
  if (l.m < 1 || l.n < 1 || l.k < 1)
    return refuse("an empty matmul");
  // TMA: every stride a multiple of 16 bytes, at most 5 dims, boxes of 64
  // elements of the contiguous dim; coordinates within int32.
  int64_t bytes = l.element.getIntOrFloatBitWidth() / 8;
  std::string reason;
  for (const OperandView *v : {&l.lhsView, &l.rhsViews[0], &l.rhsViews.back()})
    if (!(v == &l.lhsView && l.im2col) && !tmaReadable(*v, 64, bytes, &reason))
      return refuse(reason);
  if (l.m >= (int64_t(1) << 31) || l.n >= (int64_t(1) << 31) || l.k >= (int64_t(1) << 31))
    return refuse("a dim past 2^31");
  for (auto [r, o] : llvm::enumerate(yield->getOperands()))
    l.storeViews.push_back(storeViewOf(o, s.domain, kernel.getNumOperands() + r));
  return l;
}

WgmmaStaging wgmmaStaging(const MatmulLayout &l, bool tmaStore) {
  WgmmaStaging st;
  // An even N: the outputs a TMA store can write go through shared memory
  // (a 64-column group of a warpgroup's 64 rows at a time); the rest store
  // aligned pairs from the registers.
  if (l.n % 2 == 0) {
    if (!tmaStore)
      return st;
    for (const auto &v : l.storeViews) {
      // At most 24 KB a warpgroup's set: one 2-byte and one 4-byte output
      // (a residual kept in both precisions), or three 2-byte ones (Q, K
      // and V); more would cost pipeline stages.
      int64_t bytes = v ? 8192 * (v->elementBytes / 2) : 0;
      if (bytes == 0 || st.tmaSetBytes + bytes > 24 * 1024) {
        st.tmaOffset.push_back(-1);
        continue;
      }
      st.tmaOffset.push_back(st.tmaSetBytes);
      st.tmaSetBytes += bytes;
    }
    if (st.tmaSetBytes == 0)
      return WgmmaStaging();
    // Two sets where they cost at most 32 KB (one 2-byte output: the
    // usual case).
    st.tmaSets = st.tmaSetBytes <= 8192 ? 2 : 1;
    return st;
  }
  int64_t widest = 0;
  for (int64_t b : l.outputBytes)
    widest = std::max(widest, b);
  if (widest == 0)
    return st;
  // 128 bytes of the widest output a row of a piece (64 columns of 2-byte
  // elements, 32 of 4-byte ones), 8 rows (one half of the warp's 16); rows
  // padded by 16 or 32 bytes: the 8 rows of a fragment's 2-byte store fall
  // in distinct banks (4-byte ones: rows r and r + 4 share one, two-way).
  st.pieceCols = widest >= 4 ? 32 : 64;
  for (int64_t b : l.outputBytes) {
    if (b == 0) {
      st.offset.push_back(-1);
      st.rowStride.push_back(0);
      st.vector.push_back(0);
      continue;
    }
    int64_t stride = st.pieceCols * b + (b >= 4 ? 32 : 16);
    // The widest vector (up to 16 bytes) that every row's start keeps
    // aligned: N a multiple of it.
    int64_t vector = std::min<int64_t>(16 / b, st.pieceCols);
    while (vector > 1 && l.n % vector != 0)
      vector /= 2;
    st.offset.push_back(st.warpBytes);
    st.rowStride.push_back(stride);
    st.vector.push_back(vector);
    st.warpBytes += 8 * stride;
  }
  // Many wide outputs would cost pipeline stages: store those directly.
  if (st.bytes(2) > 40 * 1024)
    return WgmmaStaging();
  return st;
}

static int64_t narrowRowsMost() {
  const char *v = std::getenv("FUSEC_WGMMA_NARROW_M");
  return v && *v ? std::atoll(v) : std::numeric_limits<int64_t>::max();
}

bool tailSplitEnabled() {
  const char *v = std::getenv("FUSEC_WGMMA_TAIL_SPLIT");
  return v && *v ? std::string(v) != "0" : kTailSplitDefault;
}

bool streamKRequested() {
  const char *v = std::getenv("FUSEC_WGMMA_STREAM_K");
  return v && *v && std::string(v) != "0";
}

bool residentRhsRequested() {
  const char *v = std::getenv("FUSEC_WGMMA_RESIDENT_B");
  return v && *v && std::string(v) != "0";
}

int64_t residentRhsBlocks(const MatmulLayout &l, const WgmmaTile &t, int64_t capBytes) {
  if (t.swapped() || t.split != 1 || l.n > t.n ||
      llvm::any_of(l.rhsBatch, [](int64_t d) { return d != 1; }))
    return 0;
  int64_t numK = (l.k + t.k - 1) / t.k;
  return numK * t.rhs * t.n * t.k * 2 <= capBytes ? numK : 0;
}

bool swapReadable(const MatmulLayout &l) {
  return l.rhs.size() <= 2 && !l.shifted && !l.im2col && !l.transposeLhs;
}

WgmmaTile chooseWgmmaTile(const MatmulLayout &l, int64_t sms, int64_t smemBytes,
                          bool pingpongAllowed, bool swapAllowed) {
  WgmmaTile t;
  t.rhs = static_cast<int64_t>(l.rhs.size());
  // 64 rows (one consumer warpgroup) when M is that small: decode.
  t.m = l.m <= 64 ? 64 : 128;
  // Decode (M <= 32): swapped operands, the weights as wgmma's A (64 of
  // them a consumer) and the tokens as its N, rounded up to 8 (WgmmaTile::
  // swapped). A stage then holds the weights and the tokens there are,
  // not 64 rows of which M are real, and 64-weight tiles fill the SMs
  // with less split-K. A dual GEMM swaps only when forced: Llama's
  // gate/up at 32 tokens took 20.4-20.7 us swapped against 19.2-19.7 with
  // the 64-row tile (bench/results/2026-12-03-h200-decode-swap, run3 and
  // run2). FUSEC_WGMMA_SWAP=0 turns it off; =1 forces it wherever it can
  // read the operands (tiles of 32 tokens past M = 32).
  const char *swapKnob = std::getenv("FUSEC_WGMMA_SWAP");
  bool swap = swapAllowed && swapReadable(l) &&
              (swapKnob && *swapKnob ? std::string(swapKnob) != "0"
                                     : l.m <= 32 && l.rhs.size() == 1);
  if (swap) {
    t.m = std::min<int64_t>((l.m + 7) / 8 * 8, 32);
    pingpongAllowed = false;
  }
  // Ping-pong over a short K: two warpgroups of 64-row tiles in turn, one's
  // epilogue (and the next tile's start) beside the other's mainloop.
  // Measured on the H200 (bench/results/2026-12-03-h200-pingpong), against
  // the cooperative 128-row tile: 5-10% faster at K = 256 and 768 where the
  // epilogue is a large share of a tile (ViT's bias + erf GELU 0.082 ->
  // 0.074 ms, its QKV + bias 0.056 -> 0.053, a bare K = 256 0.034 ->
  // 0.033), even with a light one; 4-14% slower from K = 2048 on (8192^3
  // 1.35 -> 1.54 ms: each B tile is read for 64 rows, not 128, and one
  // warpgroup at a time feeds the tensor cores), the SwiGLU dual GEMM and
  // ViT's K = 3072 projection included. FUSEC_WGMMA_PINGPONG=0 / 1 turns
  // it off / on wherever it applies.
  int64_t numK = (l.k + t.k - 1) / t.k;
  if (t.m == 128 && pingpongAllowed) {
    const char *knob = std::getenv("FUSEC_WGMMA_PINGPONG");
    bool rule = numK <= 12;
    t.pingpong = knob && *knob ? std::string(knob) != "0" : rule;
    if (t.pingpong)
      t.m = 64;
  }
  t.staging = wgmmaStaging(l).bytes(t.consumers());
  auto tiles = [&](int64_t bn) { return ((l.m + t.m - 1) / t.m) * ((l.n + bn - 1) / bn) * l.batchCount(); };
  // 256 columns: each consumer warpgroup holds a 64 x 256 f32 accumulator
  // (128 registers a thread). Two rhs (two accumulators) and narrow outputs
  // take 128. Else the width whose last wave wastes least: a tile's time
  // grows with its columns, plus a share that does not (the A tile, the
  // barriers: 16 columns' worth), so the cost is waves x (columns + 16),
  // the widest on a tie. GPT-2's projections (N = 768 or 2304 on 4096 rows)
  // fill 132 SMs in 1 and 3 full waves of 192 columns where 256 leave 27%
  // of the last wave idle; 8192 x 8192 keeps 256 (16 waves against 21).
  t.n = 128;
  if (swap)
    t.n = 64;
  // Decode (the 64-row tile) with K at most 3072 (48 k-blocks): 64
  // columns, twice the CTAs streaming weights for short mainloops and fewer
  // split-K reductions. Measured on the H200 over GPT-2's and Llama's
  // decode GEMMs (bench/results/2026-12-01-h200-decode-sweep): 1.06-1.42x
  // faster than 128 columns; at K = 4096 128 columns stay ahead.
  else if (!t.pingpong && t.m == 64 && l.k <= 3072 && l.n > 64)
    t.n = 64;
  // At most 64 columns (a ResNet's first stage, its stem): a 128-column
  // tile would compute as many zero columns as real ones.
  else if (l.n <= 64)
    t.n = 64;
  // Few tiles of 128 rows over a long K (a decode or verify batch of 128 to
  // 256 tokens): 64 columns, twice the tiles, where 128 columns would need
  // split-K to fill the SMs (its partials cost a round trip through L2 and
  // a counter a tile). Measured on the H100 in one run (bench/results/
  // 2026-12-06-h100-stop46-checks, chains of 8 GEMMs of 4096 x 4096, CUDA
  // graphs): at 256 tokens 22.5 us a GEMM with 128 columns in split 2,
  // 19.0 with 64 columns unsplit (cuBLAS 18.5). FUSEC_WGMMA_NARROW_M, for
  // measurement: the most rows the rule applies to (ResNet-50's last 3x3,
  // 1,568 rows, was 0.028 ms with 128 columns in split 2 against 0.031).
  else if (!t.pingpong && t.m == 128 && t.rhs == 1 && l.n > 64 && numK >= 8 &&
           2 * tiles(128) <= sms && l.m <= narrowRowsMost())
    t.n = 64;
  else if (t.rhs == 1 && l.n > 128) {
    int64_t best = 0;
    for (int64_t n : {256, 192, 128}) {
      int64_t cost = (tiles(n) + sms - 1) / sms * (n + 16);
      if (best == 0 || cost < best) {
        best = cost;
        t.n = n;
      }
    }
  }
  // Tuning switches (measurement, not defaults): FUSEC_WGMMA_N forces the
  // tile's columns (64 included), FUSEC_WGMMA_STAGES the most stages (up
  // to 16, as many as fit), FUSEC_WGMMA_SPLIT the K split.
  auto knob = [](const char *name) -> int64_t {
    const char *v = std::getenv(name);
    return v && *v ? std::atoll(v) : 0;
  };
  if (int64_t n = knob("FUSEC_WGMMA_N");
      (n == 64 || n == 128 || n == 192 || n == 256) && n * t.rhs <= 256 && (!swap || n <= 128))
    t.n = n;
  // The swapped tile stores from its registers (no staging) and has room
  // for up to 16 of its small stages: the weights in flight.
  if (swap)
    t.staging = 0;
  int64_t budget = std::min<int64_t>(smemBytes, 232448) - 1024 - 1024 - t.staging;
  t.stages = std::clamp<int64_t>(budget / t.stageBytes(), 2, swap ? 16 : 8);
  if (int64_t stages = knob("FUSEC_WGMMA_STAGES"); stages >= 2)
    t.stages = std::clamp<int64_t>(budget / t.stageBytes(), 2, std::min<int64_t>(stages, 16));
  // Split-K when the tiles fill less than half the SMs and K is long: every
  // part at least 4 k-blocks, none empty (never in ping-pong).
  int64_t n = tiles(t.n);
  int64_t forced = knob("FUSEC_WGMMA_SPLIT");
  auto valid = [&](int64_t split) { // no part of K empty
    return split == 1 || ((numK + split - 1) / split) * (split - 1) < numK;
  };
  // The swapped tile streams weights in one wave: of 64 or 128 columns
  // and a split whose units fit the SMs (parts of at least 4 k-blocks),
  // the most units, then the smaller split; where even 128-column tiles
  // outnumber the SMs, 128 columns unsplit. A CTA that takes several
  // split units serializes their partials' fences and counters between
  // mainloops. Measured on the H200 under ncu (bench/results/
  // 2026-12-03-h200-decode-swap): Llama's QKV at 32 tokens (96 tiles) in
  // split 4 took 18.2 us against 12.1 unsplit, its up projection
  // (11008 columns at 16 tokens) 32.3 in 516 units against 29.6-29.7 in
  // 86 CTAs.
  if (swap && forced < 1) {
    int64_t bestUnits = 0;
    for (int64_t cols : {64, 128}) {
      if (knob("FUSEC_WGMMA_N") && cols != t.n)
        continue;
      int64_t count = tiles(cols);
      for (int64_t split = 1; split <= std::min<int64_t>(16, std::max<int64_t>(1, numK / 4));
           ++split) {
        if (!valid(split) || count * split > sms)
          continue;
        if (count * split > bestUnits) {
          bestUnits = count * split;
          t.n = cols;
          t.split = split;
        }
      }
    }
    if (bestUnits == 0) {
      t.n = knob("FUSEC_WGMMA_N") ? t.n : 128;
      t.split = 1;
    }
    t.stages = std::clamp<int64_t>(budget / t.stageBytes(), 2, 16);
    if (int64_t stages = knob("FUSEC_WGMMA_STAGES"); stages >= 2)
      t.stages = std::clamp<int64_t>(budget / t.stageBytes(), 2, std::min<int64_t>(stages, 16));
    return t;
  }
  if (!t.pingpong && (forced >= 1 || (2 * n <= sms && numK >= 8))) {
    int64_t split = forced >= 1 ? std::min<int64_t>({forced, numK, 16})
                                : std::min<int64_t>({sms / n, numK / 4, 16});
    while (split > 1 && ((numK + split - 1) / split) * (split - 1) >= numK)
      --split;
    t.split = std::max<int64_t>(split, 1);
  } else if (!t.pingpong && tailSplitEnabled() && n > sms && numK >= 8 && n % sms > 0 &&
             2 * (n % sms) <= sms) {
    // A last wave of at most half the SMs' tiles (ResNet-50's 28 x 28 3x3
    // at batch 32: 196 tiles of 128 x 128 on 132 SMs, 64 in the second
    // wave): the full waves' tiles run whole and the last wave's are split
    // into parts of K that fill the SMs, so that no SM computes a whole
    // second tile while half of them idle. Parts of at least 4 k-blocks;
    // the split tiles' partials take a round trip through L2.
    int64_t tail = n % sms;
    int64_t split = std::min<int64_t>({sms / tail, numK / 4, 16});
    while (split > 1 && !valid(split))
      --split;
    if (split > 1) {
      t.split = split;
      t.unsplit = n - tail;
    }
  }
  // Stream-K (FUSEC_WGMMA_STREAM_K=1, for measurement): where whole
  // 128-row tiles would leave over a tenth of the SMs idle in their last
  // wave (ResNet-50's 7 x 7 3x3: 52 tiles of 128 x 128 over 72 k-blocks on
  // 132 SMs), the CTAs share the iterations evenly: 28.4 k-blocks each
  // where split-K in two gave 104 CTAs 36. Tiles of at least 128 columns
  // (the narrow rule's 64 columns traded the SMs' fill for more loads),
  // no split.
  if (streamKRequested() && !t.pingpong && t.m == 128 && numK >= 8 && forced < 1) {
    int64_t cols = l.n > 64 ? std::max<int64_t>(t.n, 128) : t.n;
    int64_t count = tiles(cols);
    int64_t waves = (count + sms - 1) / sms;
    if (count * numK >= sms && 10 * count < 9 * waves * sms) {
      t.n = cols;
      t.split = 1;
      t.unsplit = 0;
      t.streamK = true;
      t.stages = std::clamp<int64_t>(budget / t.stageBytes(), 2, 8);
      if (int64_t stages = knob("FUSEC_WGMMA_STAGES"); stages >= 2)
        t.stages = std::clamp<int64_t>(budget / t.stageBytes(), 2, std::min<int64_t>(stages, 16));
      return t;
    }
  }
  // Resident rhs (FUSEC_WGMMA_RESIDENT_B=1, for measurement): a plan of
  // one column of tiles reads the same rhs tile for every unit, and with a
  // short K (a 1x1 convolution: K = 64 channels by 256 filters) each tile
  // reloaded all of it, 32 KB from L2 for 8 KB of activations a 64-row
  // tile. Loaded once a CTA, a stage holds the lhs alone, and more stages
  // fit in what is left.
  // At most 96 KB of them, and at least two stages of the lhs beside.
  if (residentRhsRequested())
    if (int64_t blocks = residentRhsBlocks(
            l, t, std::min<int64_t>(96 * 1024, budget - 2 * t.m * t.k * 2))) {
      t.resident = blocks;
      int64_t left = budget - t.residentBytes();
      int64_t most = 8;
      if (int64_t stages = knob("FUSEC_WGMMA_STAGES"); stages >= 2)
        most = std::min<int64_t>(stages, 16);
      t.stages = std::clamp<int64_t>(left / t.stageBytes(), 2, most);
    }
  return t;
}

WgmmaTile chooseTcgen05Tile(const MatmulLayout &l, int64_t sms, int64_t smemBytes) {
  WgmmaTile t = chooseWgmmaTile(l, sms, smemBytes, /*pingpongAllowed=*/false,
                                /*swapAllowed=*/false);
  t.m = 128;
  t.n = std::max<int64_t>(t.n, 128); // tcgen05's tiles are 128 columns or more
  t.staging = 0; // the epilogue stores each row's 16-column pieces directly
  t.resident = 0; // tcgen05 streams its rhs with every stage
  t.unsplit = 0; // tcgen05 splits every tile or none (below)
  t.streamK = false;
  int64_t budget = std::min<int64_t>(smemBytes, 232448) - 1024 - 1024;
  t.stages = std::clamp<int64_t>(budget / t.stageBytes(), 2, 8);
  // Split-K as for wgmma's tiles: when the 128-row tiles fill less than
  // half the SMs and K has at least 8 k-blocks (decode: a 128-row tile
  // serves M of 1 to 128), parts of at least 4 k-blocks, none empty, at
  // most 16; FUSEC_WGMMA_SPLIT forces one here too.
  t.split = 1;
  int64_t tiles = wgmmaTiles(l, t), numK = (l.k + t.k - 1) / t.k;
  const char *forcedText = std::getenv("FUSEC_WGMMA_SPLIT");
  int64_t forced = forcedText && *forcedText ? std::atoll(forcedText) : 0;
  if (forced >= 1 || (2 * tiles <= sms && numK >= 8)) {
    int64_t split = forced >= 1 ? std::min<int64_t>({forced, numK, 16})
                                : std::min<int64_t>({sms / tiles, numK / 4, 16});
    while (split > 1 && ((numK + split - 1) / split) * (split - 1) >= numK)
      --split;
    t.split = std::max<int64_t>(split, 1);
  }
  return t;
}

} // namespace codegen

namespace {
/// Whether reductions k and k + 1 of a column kernel are a mean and the
/// variance about it, which Columns.cpp takes as one pair of shifted sums
/// (FUSEC_COLUMN_SHIFTED=0: never).
bool columnWelfordAt(ArrayRef<ReduceOp> reductions, size_t k) {
  static const bool shifted = [] {
    const char *v = std::getenv("FUSEC_COLUMN_SHIFTED");
    return !(v && std::string_view(v) == "0");
  }();
  return shifted && k + 1 < reductions.size() &&
         codegen::pairKind(reductions[k], reductions[k + 1]) == codegen::PairKind::Welford;
}

bool hasColumnWelford(const KernelShape &s) {
  SmallVector<ReduceOp> reductions(s.reductions.begin(), s.reductions.end());
  for (size_t k = 0; k < reductions.size(); ++k)
    if (columnWelfordAt(reductions, k))
      return true;
  return false;
}

/// Whether a column kernel's rows may be split into parts combined at the
/// end: every output has the reduced shape and no reduction's input depends
/// on a reduction.
bool columnsSplittable(KernelOp kernel, const KernelShape &s) {
  Block &body = kernel.getBody().front();
  for (Value o : body.getTerminator()->getOperands())
    if (cast<RankedTensorType>(o.getType()).getShape() == ArrayRef<int64_t>(s.domain))
      return false;
  // A mean and the variance about it are a pair of shifted sums there
  // (Columns.cpp): the variance's read of its mean does not count.
  bool reads = false;
  SmallVector<ReduceOp> reductions(s.reductions.begin(), s.reductions.end());
  for (size_t k = 0; k < reductions.size(); ++k) {
    codegen::reductionsRead(reductions[k].getInput(), [&](ReduceOp) { reads = true; });
    if (columnWelfordAt(reductions, k)) {
      ReduceOp mean = reductions[k];
      codegen::reductionsRead(reductions[k + 1].getInput(),
                              [&](ReduceOp d) { reads |= d != mean; });
      ++k;
    }
  }
  return !reads;
}
} // namespace

bool matmulOnTensorCores(KernelOp kernel, std::string *why) {
  return codegen::analyzeMatmul(kernel, analyzeKernel(kernel), why).has_value();
}

bool transposeTiled(KernelOp kernel) {
  KernelShape s = analyzeKernel(kernel);
  return s.kind == KernelShape::Kind::Elementwise && s.movement &&
         codegen::tiledTransposeOf(kernel, s.domain).has_value();
}

bool strategyRunsOn(Strategy strategy, const std::string &arch) {
  if (strategy == Strategy::matmul_wgmma)
    return arch == "sm_90a";
  if (strategy == Strategy::matmul_tcgen05)
    return arch == "sm_100a";
  return true;
}

LaunchAttr planLaunch(KernelOp kernel, const Target &target, const PlanOptions &options) {
  MLIRContext *ctx = kernel.getContext();
  KernelShape s = analyzeKernel(kernel);
  Block &body = kernel.getBody().front();
  int64_t sms = std::max<int64_t>(1, static_cast<int64_t>(target.value("sm_count")));
  auto isFull = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape() == ArrayRef<int64_t>(s.domain);
  };
  // The widest element of the boundary (of the full-shape boundary, for
  // reductions) sets the 16-byte vector.
  auto widest = [&](bool fullOnly) {
    int64_t w = 1;
    for (Value v : llvm::concat<Value>(body.getArguments(), body.getTerminator()->getOperands()))
      if (!fullOnly || isFull(v))
        w = std::max(w, elementBytes(getElementTypeOrSelf(v.getType())));
    return w;
  };
  // Registers a thread needs: the boundary inputs, the body's results and
  // the reductions' accumulators, each times the elements a thread holds,
  // plus 24 for addressing and loop state (an estimate, capped at 255).
  auto regs = [&](int64_t elementsPerThread) {
    int64_t live = kernel.getInputs().size() + 2 + s.reductions.size();
    return std::min<int64_t>(255, 24 + live * elementsPerThread);
  };
  int64_t reductions = static_cast<int64_t>(s.reductions.size());

  switch (s.kind) {
  case KernelShape::Kind::Rows: {
    std::vector<int64_t> inputBytes;
    for (BlockArgument a : body.getArguments())
      if (isFull(a))
        inputBytes.push_back(elementBytes(getElementTypeOrSelf(a.getType())));
    RowPlan p = planRow(s.rowLength, s.rows, widest(true), inputBytes, options.rowChunks);
    // A row that needs a CTA of 1024 threads and more than 8 registers a
    // thread for its elements leaves one row in flight an SM (64k
    // registers), its loads idle through each CTA-wide reduction
    // (cross-entropy over a 50k bf16 vocabulary: 47% of DRAM bandwidth).
    // Where every reduction is read in one streamed pass and no output has
    // the row's shape (so nothing reads the row again), a warp a row
    // streams it instead, dozens of rows in flight an SM.
    // FUSEC_ROW_STREAM_LONG=0 keeps such rows in registers (measurement).
    bool streamLong = true;
    if (const char *v = std::getenv("FUSEC_ROW_STREAM_LONG"); v && *v)
      streamLong = std::atoi(v) != 0;
    if (p.inRegisters && p.threads >= 1024 && p.words > 8 && streamLong &&
        codegen::rowStreamPasses(s.reductions).size() == 1 &&
        llvm::none_of(body.getTerminator()->getOperands(), isFull))
      p.inRegisters = false;
    if (p.inRegisters) {
      bool cta = p.threads > 32;
      int64_t block = p.block(), perCta = p.rowsPerCta();
      // Cross-warp partials of a CTA per row: one f32 per warp slot per
      // reduction, two parities.
      return LaunchAttr::get(
          ctx, cta ? Strategy::row_cta : Strategy::row_warp,
          std::clamp<int64_t>(ceilDiv(s.rows, perCta), 1, sms * (2048 / block) * 4), block,
          p.vector, p.chunks, perCta, {}, 0, 1, 1, cta ? 2 * reductions * 32 * 4 : 0,
          regs(p.chunks * p.vector), 0, 0, 0);
    }
    [[fallthrough]];
  }
  case KernelShape::Kind::RowsApart: {
    // A warp per row, 8 rows a CTA; a pass over the row per group of
    // reductions that do not depend on each other. Over trailing dims a
    // lane reads 16 bytes of adjacent columns at a time where the row
    // length allows (FUSEC_ROW_STREAM_VECTOR=1: an element at a time, for
    // measurement).
    int64_t vector = s.kind == KernelShape::Kind::Rows ? 16 / widest(true) : 1;
    if (const char *v = std::getenv("FUSEC_ROW_STREAM_VECTOR"); v && *v)
      vector = std::clamp<int64_t>(std::atoll(v), 1, vector);
    if (vector < 1 || s.rowLength % vector != 0)
      vector = 1;
    return LaunchAttr::get(ctx, Strategy::row_stream,
                           std::clamp<int64_t>(ceilDiv(s.rows, 8), 1, sms * 32), 256, vector, 1,
                           8, {}, 0, 1, 1, 0, regs(vector), 0, 0, 0);
  }
  case KernelShape::Kind::Columns: {
    int64_t vector = 16 / widest(true);
    if (s.columnInner % vector != 0)
      vector = 1;
    // A CTA of 256 threads: `slices` rows at once, each read by `groups`
    // threads of `vector` adjacent columns side by side (the launch's rows
    // is the slices). 32 groups (a warp a row, 512 bytes of bf16) while the
    // column tiles fill the SMs; with fewer columns, 16 or 8 groups (a
    // 128-byte line: 32 slices, their warp's 4 combined by shuffles) give
    // more, smaller tiles, so that the rows split into fewer parts: a 16k x
    // 4k -> 4k bias gradient 12% faster, a mean over 4k of 32 x 4k x 1k 9%
    // (bench/results/2026-12-05-h200-column-geometry). FUSEC_COLUMN_GROUPS
    // (1 to 32, a power of two), for measurement: that width always.
    int64_t block = 256, warps = block / 32;
    // Rows in flight a thread: 4, or 8 where the kernel reads its rows once
    // a reduction (a variance after its mean: each pass fills and drains
    // its own pipeline; NHWC BatchNorm statistics 15% faster, a single sum
    // level or 1-2% slower at 8).
    int64_t perSm = 4, unroll = reductions > 1 ? 8 : 4;
    if (const char *v = std::getenv("FUSEC_COLUMN_CTAS_PER_SM"); v && *v)
      perSm = std::clamp<int64_t>(std::atoll(v), 1, 64);
    if (const char *v = std::getenv("FUSEC_COLUMN_UNROLL"); v && *v)
      unroll = std::clamp<int64_t>(std::atoll(v), 1, 16);
    auto tilesOf = [&](int64_t groups) {
      return std::max<int64_t>(1, ceilDiv(ceilDiv(s.rows, vector), groups));
    };
    // f64 partials of the warps x groups, two parities, under 40 KiB.
    auto vectorAt = [&](int64_t groups) {
      int64_t v = vector;
      while (v > 1 && 2 * reductions * warps * groups * v * 8 > 40 * 1024)
        v /= 2;
      return v;
    };
    auto tilesAt = [&](int64_t groups) {
      return std::max<int64_t>(1, ceilDiv(ceilDiv(s.rows, vectorAt(groups)), groups));
    };
    // Few column tiles over many rows (a bias gradient: 16k rows, 4k
    // columns): the rows split into parts, each a CTA, until at most
    // `perSm` CTAs an SM read, all in one wave (each thread has `unroll`
    // rows' loads in flight); each part at least 512 rows.
    // Only where every output has the column shape and no reduction reads
    // another's result (the parts combine at the end).
    // (FUSEC_COLUMN_CTAS_PER_SM and FUSEC_COLUMN_UNROLL, 1 to 16, for
    // measurement: another aim and another count of rows in flight.)
    bool splittable = columnsSplittable(kernel, s);
    auto splitAt = [&](int64_t groups) {
      int64_t tiles = tilesAt(groups), split = 1;
      if (tiles < perSm * sms && splittable)
        split = std::clamp<int64_t>(std::min(perSm * sms / tiles, s.rowLength / 512), 1, 256);
      while (split > 1 && ceilDiv(s.rowLength, split) * (split - 1) >= s.rowLength)
        --split;
      return split;
    };
    // A Welford pair (a mean and the variance about it as shifted sums)
    // keeps 32 groups (a warp a row) while its tiles times its parts fill
    // the SMs: its kernel holds two f64 sums a lane (about 60 registers at
    // 32 groups of 4 lanes, 128 at 8 groups of 8). On the H200,
    // channels-last BatchNorm statistics of 64x56x56x256 bf16 in 48 us
    // against 72 at 8 groups, 46 against 54 summed over three other
    // ResNet shapes; at 16x28x28x256, where 32 groups make 2 tiles of 24
    // parts (48 CTAs), 8 groups (96 CTAs) take 10.2 us against 11.9
    // (bench/results/2026-12-06-h200-stop52).
    int64_t groups = 32;
    if (hasColumnWelford(s)) {
      while (groups > 8 && tilesAt(groups) * splitAt(groups) < sms)
        groups /= 2;
    } else {
      while (groups > 8 && tilesOf(groups) < perSm * sms)
        groups /= 2;
    }
    if (const char *v = std::getenv("FUSEC_COLUMN_GROUPS"); v && *v)
      groups = std::clamp<int64_t>(int64_t{1} << llvm::Log2_64(std::max<int64_t>(1, std::atoll(v))),
                                   1, 32);
    vector = vectorAt(groups);
    int64_t tiles = tilesAt(groups);
    int64_t split = splitAt(groups);
    return LaunchAttr::get(ctx, Strategy::column, std::clamp<int64_t>(tiles * split, 1, sms * 8),
                           block, vector, unroll, block / groups, {}, 0, 1, split,
                           2 * reductions * warps * groups * vector * 8 + (split > 1 ? 16 : 0),
                           regs(vector), 0, 0, 0);
  }
  case KernelShape::Kind::Matmul: {
    // Tensor cores (wgmma on sm_90a, tcgen05 on sm_100a) where the operands
    // fit TMA; else the SIMT fallback below.
    std::string arch = options.arch.empty() ? target.arch() : options.arch;
    if (arch == "sm_100a")
      if (auto l = codegen::analyzeMatmul(kernel, s)) {
        int64_t smemPerSm = static_cast<int64_t>(target.value("smem_kib_per_sm") * 1024);
        codegen::WgmmaTile t =
            codegen::chooseTcgen05Tile(*l, sms, smemPerSm > 0 ? smemPerSm : 232448);
        int64_t units = codegen::wgmmaTiles(*l, t) * t.split;
        return LaunchAttr::get(ctx, Strategy::matmul_tcgen05, std::min(units, sms), 256, 1, 1, 0,
                               {t.m, t.n, t.k}, t.stages, 1, t.split,
                               codegen::tcgen05SharedBytes(t), 255, 0, 0, 0);
      }
    if (arch == "sm_90a")
      if (auto l = codegen::analyzeMatmul(kernel, s)) {
        int64_t smemPerSm = static_cast<int64_t>(target.value("smem_kib_per_sm") * 1024);
        codegen::WgmmaTile t = codegen::chooseWgmmaTile(*l, sms, smemPerSm > 0 ? smemPerSm : 232448);
        int64_t units = t.units(codegen::wgmmaTiles(*l, t));
        // Stream-K: every CTA takes a share of the iterations, at least 4
        // k-blocks (as a split's part), so that few CTAs share a tile.
        if (t.streamK)
          units = std::max<int64_t>(1, codegen::wgmmaTiles(*l, t) * ((l->k + t.k - 1) / t.k) / 4);
        return LaunchAttr::get(ctx, Strategy::matmul_wgmma, std::min(units, sms), t.threads(), 1,
                               1, 0, {t.m, t.n, t.k}, t.stages, 1, t.split,
                               codegen::wgmmaSharedBytes(t), 232, t.resident, t.unsplit,
                               t.streamK ? 1 : 0);
      }
    [[fallthrough]];
  }
  case KernelShape::Kind::Elementwise: {
    int64_t elements = 1;
    for (int64_t d : s.domain)
      elements *= d;
    // A thread per output element of a matmul: its K loop is the work, so
    // vector lanes would only multiply the code.
    bool matmul = s.kind == KernelShape::Kind::Matmul;
    // The widest full-shape operand or output sets the vector; operands of
    // other shapes are read by element or as lane runs of it (an
    // embedding's i32 ids do not halve its bf16 rows' loads).
    int64_t wide = 1;
    for (Value v : body.getArguments())
      if (isFull(v))
        wide = std::max(wide, elementBytes(getElementTypeOrSelf(v.getType())));
    for (Value v : body.getTerminator()->getOperands())
      wide = std::max(wide, elementBytes(getElementTypeOrSelf(v.getType())));
    int64_t vector = matmul ? 1 : std::max<int64_t>(1, 16 / wide);
    int64_t chunks = ceilDiv(elements, vector);
    Strategy strategy = matmul       ? Strategy::matmul_simt
                        : s.movement ? Strategy::movement
                                     : Strategy::elementwise;
    // A transpose that moves the last dim: tiles through shared memory (64
    // x 64, or 16 or 32 wide to fit a narrow last dim unless
    // FUSEC_TRANSPOSE_NARROW=0), 8 CTAs of 256 threads an SM, a grid-stride loop over the
    // tiles (Transpose.cpp).
    if (s.movement && !matmul)
      if (auto t = codegen::tiledTransposeOf(kernel, s.domain)) {
        int64_t rank = static_cast<int64_t>(s.domain.size());
        int64_t tiles =
            ceilDiv(s.domain[t->inner], t->tileJ) * ceilDiv(s.domain[rank - 1], t->tileL);
        for (int64_t d = 0; d < rank; ++d)
          if (d != t->inner && d != rank - 1)
            tiles *= s.domain[d];
        auto slot = codegen::elemTypes(t->source.getType());
        int64_t slotBytes = slot && slot->compute.getIntOrFloatBitWidth() == 64 ? 8 : 4;
        // A thread's lanes on either side: 16 bytes of 1- and 4-byte
        // elements, halved until they divide both sides of the plane and
        // fit the tile's passes. A vector's lanes meet a second bank in
        // shared memory (a warp spans two rows of 32 slots), which only
        // pays where it saves many global accesses: on an H100
        // (bench/results/2026-12-06-h100-stop53, run2) 16 fp8 lanes were
        // 1.20x an element a thread, 4 f32 lanes 1.03x, but 8 bf16 lanes
        // 0.96x (a head transpose 0.90x): 2- and 8-byte elements and
        // booleans keep one. FUSEC_TRANSPOSE_VECTOR caps it, for
        // measurement (1: an element a thread).
        int64_t lanes = slot && !slot->isBool() && slot->bytes != 2 && slot->bytes != 8
                            ? std::max<int64_t>(1, 16 / slot->bytes)
                            : 1;
        if (const char *v = std::getenv("FUSEC_TRANSPOSE_VECTOR"); v && *v)
          lanes = std::min<int64_t>(lanes, std::max<int64_t>(1, std::atoll(v)));
        lanes = t->lanes(s.domain, lanes);
        return LaunchAttr::get(ctx, Strategy::transpose_tiled,
                               std::clamp<int64_t>(tiles, 1, sms * 8), 256, lanes, 1, 0, {}, 0,
                               1, 1, t->tileL * t->pitch() * slotBytes, regs(16), 0, 0, 0);
      }
    // Elementwise and movement kernels: one trip, a CTA of 128 threads per
    // 256 chunks (Triton's shape: on the H200, 2.5-6.5% faster than 256
    // threads looping over a grid of 32 CTAs an SM, and level with
    // Inductor, over cast, Adam and a head split:
    // bench/results/2026-12-02-h200-elementwise-probe). The SIMT matmul
    // keeps at most 32 CTAs of 256 threads an SM, each looping over the
    // grid's stride. (FUSEC_ELEMENTWISE_CTAS_PER_SM, for measurement: a cap
    // of that many CTAs an SM with the loop; 0: no cap, no loop.)
    int64_t perSm = matmul ? 32 : 0;
    if (const char *v = std::getenv("FUSEC_ELEMENTWISE_CTAS_PER_SM"); v && *v)
      perSm = std::max<int64_t>(0, std::atoll(v));
    // Two chunks a thread a trip (their loads in flight together), one for
    // a matmul (its K loop is the work). For measurement:
    // FUSEC_ELEMENTWISE_UNROLL (1-8) and FUSEC_ELEMENTWISE_THREADS (64-1024,
    // a multiple of 32) set another unroll and CTA size.
    int64_t unroll = matmul ? 1 : 2, threads = matmul ? 256 : 128;
    if (const char *v = std::getenv("FUSEC_ELEMENTWISE_UNROLL"); v && *v && !matmul)
      unroll = std::clamp<int64_t>(std::atoll(v), 1, 8);
    // A concat of many parts: an element a thread, which finds its part by
    // branches and reads that part alone (a chunk's lanes would each take
    // their own branch tree; 2000 parts compiled in 90 s with 8 lanes).
    bool wideConcat = false;
    kernel.getBody().walk([&](ConcatOp c) { wideConcat |= codegen::picksPartByBranches(c); });
    if (wideConcat && !matmul) {
      vector = unroll = 1;
      chunks = elements;
    }
    if (const char *v = std::getenv("FUSEC_ELEMENTWISE_THREADS"); v && *v)
      threads = std::clamp<int64_t>(std::atoll(v) / 32 * 32, 64, 1024);
    int64_t cap = perSm ? sms * perSm * 256 / threads : ceilDiv(chunks, threads * unroll);
    return LaunchAttr::get(ctx, strategy,
                           std::clamp<int64_t>(ceilDiv(chunks, threads * unroll), 1,
                                               std::max<int64_t>(cap, 1)),
                           threads, vector, unroll, 0, {}, 0, 1, 1, 0, regs(vector * unroll), 0, 0, 0);
  }
  }
  llvm_unreachable("unknown kernel kind");
}

} // namespace fusec
