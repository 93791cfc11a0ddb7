//===- Elementwise.cpp - elementwise and movement kernels -------*- C++ -*-===//
//
// One llvm.func: a grid-stride loop over chunks of `vector` elements (16
// bytes of the widest boundary type). A full chunk loads each full-shape
// operand with one 16-byte load (cache-hinted per fusec.cache_hints),
// computes every output lane by lane in f32 (or the integer type) and stores
// vectors; the last, partial chunk does the same element by element, each
// guarded. Operands of other shapes (broadcast sources) and operands read
// through a movement op's index map are read element by element at their
// remapped index. lit: test/lit/CodeGen/elementwise.mlir.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

using namespace mlir;

namespace fusec::codegen {

ElementwiseEmitter::ElementwiseEmitter(const StrategyInput &in)
    : KernelEmitter(in.kernel, in.launch, in.options, in.module), shape(in.shape) {
  domain = shape.domain;
  vector = launch.getVector();
}

Value ElementwiseEmitter::argument(BlockArgument arg, Value index, int lane) {
  if (vectorPath && isFull(arg) && lane < static_cast<int>(laneIndex.size()) &&
      laneIndex[lane] == index)
    return lanes[arg.getArgNumber()][lane];
  return load(arg, index);
}

absl::Status ElementwiseEmitter::build() {
  int64_t elements = 1;
  for (int64_t d : domain)
    elements *= d;
  Operation *yield = body.getTerminator();
  // Outputs of another shape are written through their movement ops (a
  // matmul's result sliced and transposed head-major).
  SmallVector<std::optional<StoreMap>> maps;
  for (Value r : yield->getOperands()) {
    maps.push_back(isFull(r) ? std::nullopt : storeMapOf(r, domain));
    if (!isFull(r) && !maps.back())
      return absl::InvalidArgumentError(
          "fusec codegen: an output is neither of the kernel's shape nor a slice, reshape or "
          "transpose of a value of it");
  }
  beginFunction();

  // Entry: the chunk this thread starts at, and the grid stride.
  Value tid = e.tidX(), ctaid = e.ctaidX(), ntid = e.ntidX(), nctaid = e.nctaidX();
  Value start = e.add(e.mul(e.zext64(ctaid), e.zext64(ntid)), e.zext64(tid));
  Value stride = e.mul(e.zext64(nctaid), e.zext64(ntid));
  Block *head = e.newBlock({e.i64});
  e.br(head, start);

  // ^head(chunk): base = chunk * vector < elements?
  e.setBlock(head);
  Value chunk = head->getArgument(0);
  Value vec = e.i64c(vector);
  Value base = e.mul(chunk, vec);
  Value total = e.i64c(elements);
  Block *bodyBlock = e.newBlock();
  Block *full = e.newBlock();
  Block *tail = e.newBlock();
  Block *next = e.newBlock();
  Block *exit = e.newBlock();
  e.condBr(e.icmp(LLVM::ICmpPredicate::ult, base, total), bodyBlock, exit);

  e.setBlock(bodyBlock);
  Value end = e.add(base, vec);
  e.condBr(e.icmp(LLVM::ICmpPredicate::ule, end, total), full, tail);

  // Full chunk: vector loads, lane-by-lane compute, vector stores.
  e.setBlock(full);
  vectorPath = true;
  for (BlockArgument arg : body.getArguments())
    if (isFull(arg))
      lanes[arg.getArgNumber()] = unpack(loadRaw(arg, base, vector), false);
  laneIndex.clear();
  for (int64_t lane = 0; lane < vector; ++lane)
    laneIndex.push_back(e.add(base, e.i64c(lane)));
  std::vector<SmallVector<Value>> outLanes(yield->getNumOperands());
  for (int64_t lane = 0; lane < vector; ++lane) {
    clearMemo();
    for (auto [i, r] : llvm::enumerate(yield->getOperands())) {
      auto v = eval(maps[i] ? maps[i]->source : r, laneIndex[lane], static_cast<int>(lane));
      if (!v.ok())
        return v.status();
      outLanes[i].push_back(*v);
    }
  }
  for (unsigned i = 0; i < yield->getNumOperands(); ++i) {
    if (!maps[i]) {
      storeVector(i, outLanes[i], base);
      continue;
    }
    for (int64_t lane = 0; lane < vector; ++lane)
      storeMapped(i, *maps[i], outLanes[i][lane], coordinates(laneIndex[lane], domain));
  }
  e.br(next);

  // Partial last chunk: element by element, each guarded.
  e.setBlock(tail);
  vectorPath = false;
  for (int64_t lane = 0; lane < vector; ++lane) {
    clearMemo();
    Value idx = e.add(base, e.i64c(lane));
    Block *laneBlock = e.newBlock();
    e.condBr(e.icmp(LLVM::ICmpPredicate::ult, idx, total), laneBlock, next);
    e.setBlock(laneBlock);
    for (auto [i, r] : llvm::enumerate(yield->getOperands())) {
      auto v = eval(maps[i] ? maps[i]->source : r, idx, static_cast<int>(lane));
      if (!v.ok())
        return v.status();
      if (maps[i])
        storeMapped(static_cast<unsigned>(i), *maps[i], *v, coordinates(idx, domain));
      else
        storeResult(static_cast<unsigned>(i), *v, idx);
    }
    if (lane + 1 == vector)
      e.br(next);
  }

  e.moveToEnd(next);
  e.setBlock(next);
  e.br(head, e.add(chunk, stride));
  e.moveToEnd(exit);
  e.setBlock(exit);
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

absl::Status emitElementwise(const StrategyInput &in) {
  return ElementwiseEmitter(in).build();
}

} // namespace fusec::codegen
