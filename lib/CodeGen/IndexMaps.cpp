//===- IndexMaps.cpp - Movement ops as index maps ----------------*- C++ -*-===//
//
// A movement op inside a kernel moves no data of its own: its result's flat
// index maps to its source's, and the element is read (or computed) there.
// Every strategy applies these maps to its loads, so a transpose, slice or
// broadcast costs index arithmetic, not a kernel.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "fusec/CodeGen/LaunchPlan.h"

using namespace mlir;

namespace fusec::codegen {

/// Whether index arithmetic over `extent` elements fits in 32 bits: the
/// divisions by constants are then a 32-bit multiply-high and a shift (a
/// 64-bit one is several multiplies in PTX).
static bool fits32(int64_t extent) { return extent < (int64_t(1) << 31); }

SmallVector<Value> coordinates(Emitter &e, Value flat, ArrayRef<int64_t> shape) {
  auto strides = stridesOf(shape);
  int64_t extent = 1;
  for (int64_t d : shape)
    extent *= d;
  SmallVector<Value> c;
  if (fits32(extent) && !shape.empty()) {
    Value f = e.trunc(e.i32, flat);
    for (size_t d = 0; d < shape.size(); ++d) {
      Value q = strides[d] == 1 ? f : e.udiv(f, e.i32c(static_cast<int32_t>(strides[d])));
      if (d > 0)
        q = e.urem(q, e.i32c(static_cast<int32_t>(shape[d])));
      c.push_back(e.zext(e.i64, q));
    }
    return c;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    Value q = e.udiv(flat, e.i64c(strides[d]));
    if (d > 0)
      q = e.urem(q, e.i64c(shape[d]));
    c.push_back(q);
  }
  return c;
}

/// The coordinates in `out` of the element at `c` in `in` (a reshape):
/// dim by dim where the reshape only splits or merges runs of dims, so a
/// coordinate the reshape leaves whole costs nothing and a split costs a
/// division of that coordinate alone (not of the flat index).
SmallVector<Value> reshapeCoordinates(Emitter &e, ArrayRef<Value> c, ArrayRef<int64_t> in,
                                      ArrayRef<int64_t> out) {
  SmallVector<Value> result(out.size(), Value());
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    // Dims of extent 1: an input's coordinate is 0, an output's is 0.
    if (i < in.size() && in[i] == 1) {
      ++i;
      continue;
    }
    if (j < out.size() && out[j] == 1) {
      result[j++] = e.i64c(0);
      continue;
    }
    if (i >= in.size() || j >= out.size())
      return {}; // extents do not match: the caller falls back
    // The shortest runs in[i0, i) and out[j0, j) of equal products.
    size_t i0 = i, j0 = j;
    int64_t pin = in[i++], pout = out[j++];
    while (pin != pout) {
      if (pin < pout) {
        if (i >= in.size())
          return {};
        pin *= in[i++];
      } else {
        if (j >= out.size())
          return {};
        pout *= out[j++];
      }
    }
    SmallVector<int64_t> inRun, outRun;
    SmallVector<Value> coords;
    for (size_t d = i0; d < i; ++d)
      if (in[d] != 1) {
        inRun.push_back(in[d]);
        coords.push_back(c[d]);
      }
    for (size_t d = j0; d < j; ++d)
      outRun.push_back(out[d]);
    if (inRun.size() == 1 && outRun.size() == 1) {
      result[j0] = coords[0];
      continue;
    }
    Value flat = inRun.size() == 1 ? coords[0] : linearize(e, coords, inRun);
    auto split = coordinates(e, flat, outRun);
    for (size_t d = j0; d < j; ++d)
      result[d] = split[d - j0];
  }
  for (Value &v : result)
    if (!v)
      v = e.i64c(0);
  return result;
}

Value linearize(Emitter &e, ArrayRef<Value> coords, ArrayRef<int64_t> shape) {
  auto strides = stridesOf(shape);
  Value acc = e.i64c(0);
  for (size_t d = 0; d < shape.size(); ++d)
    acc = e.add(acc, e.mul(coords[d], e.i64c(strides[d])));
  return acc;
}

Value broadcastIndex(Emitter &e, BroadcastOp op, Value index) {
  // Source dim j reads result dim dims[j] (or 0 if its extent is 1).
  auto shape = cast<RankedTensorType>(op.getType()).getShape();
  auto src = cast<RankedTensorType>(op.getInput().getType()).getShape();
  auto strides = stridesOf(shape), srcStrides = stridesOf(src);
  Value acc = e.i64c(0);
  for (auto [j, d] : llvm::enumerate(op.getDims())) {
    if (src[j] == 1)
      continue;
    Value q = e.udiv(index, e.i64c(strides[d]));
    Value r = e.urem(q, e.i64c(shape[d]));
    acc = e.add(acc, e.mul(r, e.i64c(srcStrides[j])));
  }
  return acc;
}

} // namespace fusec::codegen

bool fusec::isZeroSplat(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  if (!dense || !dense.isSplat())
    return false;
  if (auto f = dyn_cast<FloatAttr>(dense.getSplatValue<Attribute>()))
    return f.getValue().isZero() && !f.getValue().isNegative();
  if (auto i = dyn_cast<IntegerAttr>(dense.getSplatValue<Attribute>()))
    return i.getValue().isZero();
  return false;
}

namespace fusec::codegen {

int64_t concatOffset(ConcatOp concat, Value operand) {
  int64_t offset = 0;
  for (Value o : concat.getOperands()) {
    if (o == operand)
      break;
    offset += cast<RankedTensorType>(o.getType()).getDimSize(concat.getDim());
  }
  return offset;
}

std::optional<StoreMap> storeMapOf(Value output, ArrayRef<int64_t> domain) {
  StoreMap map;
  Value v = output;
  auto shapeOf = [](Value x) { return cast<RankedTensorType>(x.getType()).getShape(); };
  while (shapeOf(v) != domain) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto sl = dyn_cast<SliceOp>(def)) {
      if (llvm::any_of(sl.getStrides(), [](int64_t s) { return s != 1; }))
        return std::nullopt;
    } else if (auto concat = dyn_cast<ConcatOp>(def)) {
      // Padding: the value between zero splats. The zeros are never
      // written; the output's buffer holds them from the start.
      Value inner;
      for (Value operand : concat.getOperands()) {
        if (isZeroSplat(operand))
          continue;
        if (inner)
          return std::nullopt;
        inner = operand;
      }
      if (!inner)
        return std::nullopt;
      map.chain.push_back(def);
      map.zeroFilled = true;
      v = inner;
      continue;
    } else if (!isa<ReshapeOp, TransposeOp>(def)) {
      return std::nullopt;
    }
    map.chain.push_back(def);
    v = def->getOperand(0);
  }
  if (map.chain.empty() || domain.empty())
    return std::nullopt;
  std::reverse(map.chain.begin(), map.chain.end());
  map.source = v;
  // Follow the pair along the chain: `dim` holds it, its first element at an
  // even coordinate.
  bool pairs = domain.back() % 2 == 0;
  int64_t dim = static_cast<int64_t>(domain.size()) - 1;
  for (auto [i, op] : llvm::enumerate(map.chain)) {
    Value from = i == 0 ? map.source : map.chain[i - 1]->getResult(0);
    auto in = shapeOf(from), out = shapeOf(op->getResult(0));
    if (auto sl = dyn_cast<SliceOp>(op)) {
      pairs &= sl.getOffsets()[dim] % 2 == 0 && out[dim] % 2 == 0;
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      pairs &= static_cast<int64_t>(concat.getDim()) != dim || concatOffset(concat, from) % 2 == 0;
    } else if (isa<ReshapeOp>(op)) {
      // Adjacent in the flat index only along the last dim; still in one
      // row of the new shape when its last extent is even.
      pairs &= dim == static_cast<int64_t>(in.size()) - 1 && !out.empty() && out.back() % 2 == 0;
      dim = static_cast<int64_t>(out.size()) - 1;
    } else if (auto t = dyn_cast<TransposeOp>(op)) {
      for (auto [i, p] : llvm::enumerate(t.getPermutation()))
        if (p == dim) {
          dim = static_cast<int64_t>(i);
          break;
        }
    }
  }
  map.pairs = pairs && dim == static_cast<int64_t>(shapeOf(output).size()) - 1;
  return map;
}

std::pair<Value, Value> storeIndex(Emitter &e, const StoreMap &map, ArrayRef<Value> coords) {
  SmallVector<Value> c(coords.begin(), coords.end());
  Value inside;
  for (auto [i, op] : llvm::enumerate(map.chain)) {
    Value from = i == 0 ? map.source : map.chain[i - 1]->getResult(0);
    auto in = cast<RankedTensorType>(from.getType()).getShape();
    auto out = cast<RankedTensorType>(op->getResult(0).getType()).getShape();
    if (auto concat = dyn_cast<ConcatOp>(op)) {
      if (int64_t offset = concatOffset(concat, from))
        c[concat.getDim()] = e.add(c[concat.getDim()], e.i64c(offset));
    } else if (auto sl = dyn_cast<SliceOp>(op)) {
      for (size_t d = 0; d < c.size(); ++d) {
        if (sl.getOffsets()[d] == 0 && out[d] == in[d])
          continue;
        // Unsigned: a coordinate before the offset wraps past the extent.
        c[d] = e.sub(c[d], e.i64c(sl.getOffsets()[d]));
        Value ok = e.icmp(LLVM::ICmpPredicate::ult, c[d], e.i64c(out[d]));
        inside = inside ? e.band(inside, ok) : ok;
      }
    } else if (isa<ReshapeOp>(op)) {
      auto mapped = reshapeCoordinates(e, c, in, out);
      c = mapped.empty() && !out.empty() ? coordinates(e, linearize(e, c, in), out) : mapped;
    } else if (auto t = dyn_cast<TransposeOp>(op)) {
      SmallVector<Value> next;
      for (int64_t p : t.getPermutation())
        next.push_back(c[p]);
      c = next;
    }
  }
  auto shape = cast<RankedTensorType>(map.chain.back()->getResult(0).getType()).getShape();
  return {linearize(e, c, shape), inside};
}

} // namespace fusec::codegen
