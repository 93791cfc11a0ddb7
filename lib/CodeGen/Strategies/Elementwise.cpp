//===- Elementwise.cpp - elementwise and movement kernels -------*- C++ -*-===//
//
// One llvm.func: a grid-stride loop over tiles of `chunks` x blockDim
// chunks of `vector` elements (16 bytes of the widest boundary type); thread
// t takes chunks t, t + blockDim, ... of a tile. A full chunk loads each
// full-shape operand with one 16-byte load (cache-hinted per
// fusec.cache_hints), computes every output lane by lane in f32 (or the
// integer type) and stores vectors; in a tile inside the domain every
// chunk's loads come first, so they are all in flight. The last, partial
// chunk goes element by element, each guarded. Operands of other shapes (broadcast sources) and operands read
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
  // A lane of a run (read through movement ops that keep the lanes in a
  // row): the run's vector load, made at lane 0.
  if (auto run = runOf(index))
    if (Value v = runLane(arg, *run))
      return v;
  return load(arg, index);
}

/// The order to walk a movement kernel's domain in, outermost first, when
/// it is not row-major: a kernel that reads one argument through a
/// transpose that keeps the last dim (a head merge, [B, H, S, D] ->
/// [B, S, H, D]) walks in the argument's order when, in the result's order,
/// consecutive rows would be read further apart than, in the argument's,
/// they would be written. Reads then stream, and writes land in rows of the
/// last dim, which L2 gathers: a head merge read 256-byte rows 512 KiB apart
/// and ran at half a head split's bandwidth. Empty for row-major.
static SmallVector<int64_t> walkOrder(Block &body, ArrayRef<int64_t> domain, int64_t vector) {
  int64_t rank = static_cast<int64_t>(domain.size());
  if (rank < 3 || domain.back() % vector != 0)
    return {};
  TransposeOp only;
  for (Operation &op : body) {
    if (auto t = dyn_cast<TransposeOp>(op)) {
      if (only || !isa<BlockArgument>(t.getInput()) ||
          cast<RankedTensorType>(t.getType()).getShape() != domain)
        return {};
      only = t;
    } else if (isa<SliceOp, ConcatOp, GatherOp, ReduceOp, MatmulOp>(op)) {
      return {};
    }
  }
  if (!only)
    return {};
  ArrayRef<int64_t> perm = only.getPermutation();
  if (perm.back() != rank - 1)
    return {};
  auto in = cast<RankedTensorType>(only.getInput().getType()).getShape();
  auto stride = [](ArrayRef<int64_t> shape, int64_t dim) {
    int64_t s = 1;
    for (int64_t i = dim + 1; i < static_cast<int64_t>(shape.size()); ++i)
      s *= shape[i];
    return s;
  };
  // Result order: the next row (result dim rank-2) is perm[rank-2] of the
  // argument. Argument order: its next row, dim rank-2, is the result dim
  // j with perm[j] == rank-2.
  int64_t readJump = stride(in, perm[rank - 2]);
  int64_t j = std::find(perm.begin(), perm.end(), rank - 2) - perm.begin();
  int64_t writeJump = stride(domain, j);
  if (readJump <= writeJump)
    return {};
  SmallVector<int64_t> order(perm.size());
  for (int64_t d = 0; d < rank; ++d)
    order[d] = std::find(perm.begin(), perm.end(), d) - perm.begin();
  return order;
}

absl::Status ElementwiseEmitter::build() {
  int64_t elements = 1;
  for (int64_t d : domain)
    elements *= d;
  // Walk the domain in another order (its chunks stay within the last dim).
  SmallVector<int64_t> order =
      launch.getStrategy() == Strategy::movement ? walkOrder(body, domain, vector)
                                                 : SmallVector<int64_t>{};
  SmallVector<int64_t> walkShape;
  for (int64_t d : order)
    walkShape.push_back(domain[d]);
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
  Value total = e.i64c(elements);
  Value vec = e.i64c(vector);

  // The full chunks `chunks` (each all inside the domain): every full-shape
  // operand's vector load of every chunk first (all in flight at once),
  // then each chunk's lanes computed and stored.
  auto fullChunks = [&](ArrayRef<Value> chunks) -> absl::Status {
    SmallVector<Value> bases;
    for (Value chunk : chunks) {
      Value walked = e.mul(chunk, vec);
      Value base = walked;
      if (!order.empty()) {
        // The walk's flat index to the result's (chunks stay within the
        // last dim).
        auto c = coordinates(walked, walkShape);
        SmallVector<Value> at(domain.size());
        for (auto [k, d] : llvm::enumerate(order))
          at[d] = c[k];
        base = linearize(at, domain);
      }
      bases.push_back(base);
    }
    SmallVector<llvm::DenseMap<unsigned, SmallVector<Value>>> loaded(chunks.size());
    for (auto [u, base] : llvm::enumerate(bases))
      for (BlockArgument arg : body.getArguments())
        if (isFull(arg))
          loaded[u][arg.getArgNumber()] = unpack(loadRaw(arg, base, vector), false);
    for (auto [u, base] : llvm::enumerate(bases)) {
      vectorPath = true;
      lanes = std::move(loaded[u]);
      laneIndex.clear();
      for (int64_t lane = 0; lane < vector; ++lane)
        laneIndex.push_back(e.add(base, e.i64c(lane)));
      // A chunk within a row: its lanes are a run (operands read through
      // broadcasts, slices, concats and transposes that keep the last dim
      // load vectors too).
      if (vector > 1 && !domain.empty() && domain.back() % vector == 0)
        startRuns(vector, laneIndex);
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
      endRuns();
      vectorPath = false;
      for (unsigned i = 0; i < yield->getNumOperands(); ++i) {
        if (!maps[i]) {
          storeVector(i, outLanes[i], base);
          continue;
        }
        for (int64_t lane = 0; lane < vector; ++lane)
          storeMapped(i, *maps[i], outLanes[i][lane], coordinates(laneIndex[lane], domain));
      }
    }
    return absl::OkStatus();
  };

  // One chunk that may be partial or past the end: a full one as above, a
  // partial one element by element, each guarded; then `after`.
  auto oneChunk = [&](Value chunk, Block *after) -> absl::Status {
    Value base = e.mul(chunk, vec);
    Block *some = e.newBlock();
    Block *full = e.newBlock();
    Block *tail = e.newBlock();
    e.condBr(e.icmp(LLVM::ICmpPredicate::ult, base, total), some, after);
    e.setBlock(some);
    e.condBr(e.icmp(LLVM::ICmpPredicate::ule, e.add(base, vec), total), full, tail);
    e.setBlock(full);
    if (auto st = fullChunks({chunk}); !st.ok())
      return st;
    e.br(after);
    // Partial last chunk (never under a walk order: the last dim is a
    // multiple of the vector there).
    e.setBlock(tail);
    for (int64_t lane = 0; lane < vector; ++lane) {
      clearMemo();
      Value idx = e.add(base, e.i64c(lane));
      Block *laneBlock = e.newBlock();
      e.condBr(e.icmp(LLVM::ICmpPredicate::ult, idx, total), laneBlock, after);
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
        e.br(after);
    }
    e.moveToEnd(after);
    e.setBlock(after);
    return absl::OkStatus();
  };

  // A grid-stride loop over tiles of `unroll` x blockDim chunks: thread t
  // takes chunks t, t + blockDim, ... of its tile (each step coalesced). A
  // tile inside the domain runs them together; the last tile one by one.
  int64_t unroll = std::max<int64_t>(1, launch.getChunks());
  Value tid = e.zext64(e.tidX()), ntid = e.zext64(e.ntidX());
  Value tileChunks = e.mul(ntid, e.i64c(unroll));
  Block *head = e.newBlock({e.i64});
  e.br(head, e.zext64(e.ctaidX()));
  e.setBlock(head);
  Value tile = head->getArgument(0);
  Value first = e.mul(tile, tileChunks);
  Block *bodyBlock = e.newBlock();
  Block *fast = e.newBlock();
  Block *slow = e.newBlock();
  Block *next = e.newBlock();
  Block *exit = e.newBlock();
  e.condBr(e.icmp(LLVM::ICmpPredicate::ult, e.mul(first, vec), total), bodyBlock, exit);
  e.setBlock(bodyBlock);
  SmallVector<Value> chunks;
  for (int64_t u = 0; u < unroll; ++u)
    chunks.push_back(e.add(e.add(first, e.mul(ntid, e.i64c(u))), tid));
  e.condBr(e.icmp(LLVM::ICmpPredicate::ule, e.mul(e.add(first, tileChunks), vec), total), fast,
           slow);
  e.setBlock(fast);
  if (auto st = fullChunks(chunks); !st.ok())
    return st;
  e.br(next);
  e.setBlock(slow);
  for (int64_t u = 0; u < unroll; ++u) {
    Block *after = u + 1 == unroll ? next : e.newBlock();
    if (auto st = oneChunk(chunks[u], after); !st.ok())
      return st;
  }
  e.moveToEnd(next);
  e.setBlock(next);
  e.br(head, e.add(tile, e.zext64(e.nctaidX())));
  e.moveToEnd(exit);
  e.setBlock(exit);
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

absl::Status emitElementwise(const StrategyInput &in) {
  return ElementwiseEmitter(in).build();
}

} // namespace fusec::codegen
