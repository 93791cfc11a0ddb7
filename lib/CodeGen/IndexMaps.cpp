//===- IndexMaps.cpp - Movement ops as index maps ----------------*- C++ -*-===//
//
// A movement op inside a kernel moves no data of its own: its result's flat
// index maps to its source's, and the element is read (or computed) there.
// Every strategy applies these maps to its loads, so a transpose, slice or
// broadcast costs index arithmetic, not a kernel.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;

namespace fusec::codegen {

SmallVector<Value> coordinates(Emitter &e, Value flat, ArrayRef<int64_t> shape) {
  auto strides = stridesOf(shape);
  SmallVector<Value> c;
  for (size_t d = 0; d < shape.size(); ++d) {
    Value q = e.udiv(flat, e.i64c(strides[d]));
    if (d > 0)
      q = e.urem(q, e.i64c(shape[d]));
    c.push_back(q);
  }
  return c;
}

Value linearize(Emitter &e, ArrayRef<Value> coords, ArrayRef<int64_t> shape) {
  auto strides = stridesOf(shape);
  Value acc = e.i64c(0);
  for (size_t d = 0; d < shape.size(); ++d)
    acc = e.add(acc, e.mul(coords[d], e.i64c(strides[d])));
  return acc;
}

Value transposeIndex(Emitter &e, TransposeOp op, Value index) {
  // Result dim i is input dim perm[i].
  auto shape = cast<RankedTensorType>(op.getType()).getShape();
  auto src = cast<RankedTensorType>(op.getInput().getType()).getShape();
  auto c = coordinates(e, index, shape);
  SmallVector<Value> in(src.size());
  for (auto [i, p] : llvm::enumerate(op.getPermutation()))
    in[p] = c[i];
  return linearize(e, in, src);
}

Value sliceIndex(Emitter &e, SliceOp op, Value index) {
  auto shape = cast<RankedTensorType>(op.getType()).getShape();
  auto src = cast<RankedTensorType>(op.getInput().getType()).getShape();
  auto c = coordinates(e, index, shape);
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = e.add(e.i64c(op.getOffsets()[i]), e.mul(c[i], e.i64c(op.getStrides()[i])));
  return linearize(e, c, src);
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
  for (Operation *op : map.chain) {
    auto in = shapeOf(op->getOperand(0)), out = shapeOf(op->getResult(0));
    if (auto sl = dyn_cast<SliceOp>(op)) {
      pairs &= sl.getOffsets()[dim] % 2 == 0 && out[dim] % 2 == 0;
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
  for (Operation *op : map.chain) {
    auto in = cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
    auto out = cast<RankedTensorType>(op->getResult(0).getType()).getShape();
    if (auto sl = dyn_cast<SliceOp>(op)) {
      for (size_t d = 0; d < c.size(); ++d) {
        if (sl.getOffsets()[d] == 0 && out[d] == in[d])
          continue;
        // Unsigned: a coordinate before the offset wraps past the extent.
        c[d] = e.sub(c[d], e.i64c(sl.getOffsets()[d]));
        Value ok = e.icmp(LLVM::ICmpPredicate::ult, c[d], e.i64c(out[d]));
        inside = inside ? e.band(inside, ok) : ok;
      }
    } else if (isa<ReshapeOp>(op)) {
      c = coordinates(e, linearize(e, c, in), out);
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
