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

} // namespace fusec::codegen
