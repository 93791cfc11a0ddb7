//===- Transpose.cpp - transpose_tiled: transposes through shared memory -*- C++ -*-===//
//
// A kernel that reads an argument through a transpose that moves its last
// dim (a matrix transpose, [B, H, S, D] -> [B, D, S, H]) reads it in one
// order and writes in another: element by element, one of the two walks
// strides through memory and each 32-byte sector serves one element. Here
// a CTA of 256 threads takes a tile of the output's plane (dim j, where the
// argument's last dim lands, and the output's last dim) for one position of
// the other dims: 64 x 64, or (unless FUSEC_TRANSPOSE_NARROW=0) 16 or 32
// wide along a last dim that narrow and up to 4096 / that long along j (a
// head transpose to [B, D, S, H] with 16 heads otherwise leaves three
// quarters of its threads past the edge). A thread takes `vector`
// consecutive elements on either side (the plan's; 1 for booleans or sides
// it does not divide):
//  1. it reads the tile from the argument along the argument's last dim
//     (one vector load a thread a pass, all passes in flight) into shared
//     memory, in the compute type, rows padded (by 1, or by 2 at 16 wide,
//     where a warp writes two rows) so that at one element a thread
//     neither phase has bank conflicts (8-byte integers two-way; vectors
//     two-way);
//  2. after a barrier, it computes every output element of the tile along
//     the output's last dim: the transposed argument's element comes from
//     shared memory, every other operand is read at the output's index (so
//     a full-shape operand streams too), and each output's lanes are
//     stored as one vector.
// A grid-stride loop over the tiles, a barrier before shared memory is
// reused. Threads past a ragged edge read a valid element (index 0) and
// store nothing. lit: test/lit/CodeGen/transpose-tiled.mlir.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include <cstdlib>

using namespace mlir;

namespace fusec::codegen {

std::optional<TiledTranspose> tiledTransposeOf(KernelOp kernel, ArrayRef<int64_t> domain) {
  Block &body = kernel.getBody().front();
  int64_t rank = static_cast<int64_t>(domain.size());
  if (rank < 2)
    return std::nullopt;
  TransposeOp only;
  for (Operation &op : body) {
    if (auto t = dyn_cast<TransposeOp>(op)) {
      if (only)
        return std::nullopt;
      only = t;
    } else if (isa<SliceOp, ConcatOp, GatherOp, ReduceOp, MatmulOp, KernelOp>(op)) {
      return std::nullopt;
    }
  }
  if (!only || cast<RankedTensorType>(only.getType()).getShape() != domain)
    return std::nullopt;
  // Its input an argument read by nothing else (every read of it is then
  // the tile's element).
  auto source = dyn_cast<BlockArgument>(only.getInput());
  if (!source || !source.hasOneUse())
    return std::nullopt;
  ArrayRef<int64_t> perm = only.getPermutation();
  if (perm.back() == rank - 1)
    return std::nullopt; // the last dim stays: the plain walk streams both sides
  int64_t j = std::find(perm.begin(), perm.end(), rank - 1) - perm.begin();
  // Both sides of the tile worth a tile.
  if (domain[j] < 16 || domain[rank - 1] < 16)
    return std::nullopt;
  // Every output of the domain's shape (no store maps).
  for (Value r : body.getTerminator()->getOperands())
    if (cast<RankedTensorType>(r.getType()).getShape() != domain)
      return std::nullopt;
  TiledTranspose t{only, source, j};
  // Narrow tiles where the output's last dim is narrow (FUSEC_TRANSPOSE_
  // NARROW=0: always 64 x 64). They match the interpreter on the GPU (125
  // transposes, memcheck clean: bench/results/2026-12-07-h100-stop54); in
  // one run on an H100 (bench/results/2026-12-07-h100-stop56), [8, 2048,
  // 16, 128] bf16 to [B, D, S, H] took 59-60 us against 74-75, and with 32
  // heads 108 against 108-110.
  if (const char *v = std::getenv("FUSEC_TRANSPOSE_NARROW"); v && *v == '0')
    return t;
  t.tileL = domain[rank - 1] <= 16 ? 16 : domain[rank - 1] <= 32 ? 32 : 64;
  t.tileJ = 64;
  while (t.tileJ * t.tileL < 4096 && t.tileJ < domain[j])
    t.tileJ *= 2;
  return t;
}

int64_t TiledTranspose::lanes(ArrayRef<int64_t> domain, int64_t wanted) const {
  constexpr int64_t threads = 256;
  int64_t last = static_cast<int64_t>(domain.size()) - 1, v = std::max<int64_t>(1, wanted);
  // Read: tileJ / v threads a row of L, threads / that rows a pass, at most
  // tileL; write: tileL / v threads a row of J, at most tileJ rows a pass.
  while (v > 1 && (domain[inner] % v != 0 || domain[last] % v != 0 || tileL % v != 0 ||
                   threads * v / tileJ > tileL || threads * v / tileL > tileJ))
    v /= 2;
  return v;
}

namespace {

constexpr int64_t kThreads = 256;

class TransposeEmitter : public ElementwiseEmitter {
public:
  TransposeEmitter(const StrategyInput &in, TiledTranspose t)
      : ElementwiseEmitter(in), t(t) {}
  absl::Status build() override;

protected:
  Value argument(BlockArgument arg, Value index, int lane) override {
    if (arg == t.source && tileValue)
      return tileValue;
    return load(arg, index);
  }

private:
  TiledTranspose t;
  /// The transposed argument's element of the output element being
  /// computed (from shared memory).
  Value tileValue;
};

absl::Status TransposeEmitter::build() {
  int64_t rank = static_cast<int64_t>(domain.size());
  int64_t j = t.inner, last = rank - 1;
  ArrayRef<int64_t> perm = t.op.getPermutation();
  auto inShape = cast<RankedTensorType>(t.source.getType()).getShape();
  SmallVector<int64_t> inStride = stridesOf(inShape), outStride = stridesOf(domain);
  // The other dims: one tile position each.
  SmallVector<int64_t> batchDims, batchShape;
  for (int64_t d = 0; d < rank; ++d)
    if (d != j && d != last) {
      batchDims.push_back(d);
      batchShape.push_back(domain[d]);
    }
  int64_t batches = 1;
  for (int64_t d : batchShape)
    batches *= d;
  const int64_t tileJ = t.tileJ, tileL = t.tileL, pitch = t.pitch();
  int64_t tilesJ = (domain[j] + tileJ - 1) / tileJ, tilesL = (domain[last] + tileL - 1) / tileL;
  int64_t tiles = batches * tilesJ * tilesL;
  ElemTypes st = *elemTypes(t.source.getType());
  // Shared memory holds the compute type (booleans as i32).
  Type slotType = st.compute.isInteger(1) ? e.i32 : st.compute;
  // `vector` lanes a thread on either side (the plan's, dividing both sides
  // of the plane, so that a vector is wholly inside or outside a ragged
  // edge and aligned). Reading, a row of the tile (along J) is tileJ /
  // lanes threads, a pass `kThreads / that` rows of L; writing, a row of
  // the output (along L) is tileL / lanes threads.
  int64_t lanesV = slotType != st.compute ? 1 : t.lanes(domain, vector);
  int64_t readPerRow = tileJ / lanesV, readRows = kThreads / readPerRow;
  int64_t readPasses = tileL / readRows;
  int64_t writePerRow = tileL / lanesV, writeRows = kThreads / writePerRow;
  int64_t writePasses = tileJ / writeRows;

  Operation *yield = body.getTerminator();
  beginFunction();
  Value smem = e.sharedArray(module, "__fusec_tile", slotType, tileL * pitch);
  Value tid = e.zext64(e.tidX());
  // Along the side read (written) contiguously, the thread's first lane,
  // and its row.
  Value readCol = e.mul(e.urem(tid, e.i64c(readPerRow)), e.i64c(lanesV));
  Value readRow = e.udiv(tid, e.i64c(readPerRow));
  Value writeCol = e.mul(e.urem(tid, e.i64c(writePerRow)), e.i64c(lanesV));
  Value writeRow = e.udiv(tid, e.i64c(writePerRow));
  absl::Status status = absl::OkStatus();

  e.loop(e.zext64(e.ctaidX()), e.i64c(tiles), e.zext64(e.nctaidX()), {},
         [&](Value tile, ValueRange) -> SmallVector<Value> {
    // tile = (batch * tilesJ + tj) * tilesL + tl.
    Value tl = e.urem(tile, e.i64c(tilesL));
    Value rest = e.udiv(tile, e.i64c(tilesL));
    Value tj = e.urem(rest, e.i64c(tilesJ));
    Value batch = e.udiv(rest, e.i64c(tilesJ));
    Value j0 = e.mul(tj, e.i64c(tileJ)), l0 = e.mul(tl, e.i64c(tileL));
    // The tile origin's flat index in the output and in the argument (output
    // dim d is the argument's dim perm[d]).
    Value outBase = e.add(e.mul(j0, e.i64c(outStride[j])), l0);
    Value inBase = e.add(e.mul(j0, e.i64c(inStride[perm[j]])),
                         e.mul(l0, e.i64c(inStride[perm[last]])));
    if (!batchDims.empty()) {
      auto bc = coordinates(batch, batchShape);
      for (auto [k, d] : llvm::enumerate(batchDims)) {
        outBase = e.add(outBase, e.mul(bc[k], e.i64c(outStride[d])));
        inBase = e.add(inBase, e.mul(bc[k], e.i64c(inStride[perm[d]])));
      }
    }
    Value extentJ = e.i64c(domain[j]), extentL = e.i64c(domain[last]);

    // 1. Read: thread (row, col) takes output elements (j0 + col + v,
    // l0 + row + readRows k), i.e. `lanesV` consecutive elements of the
    // argument's last dim, one vector load a pass; all passes in flight.
    Value inRowStep = e.i64c(inStride[perm[last]]);
    Value col = readCol, row = readRow;
    Value okJ = e.icmp(LLVM::ICmpPredicate::ult, e.add(j0, col), extentJ);
    SmallVector<SmallVector<Value>> loaded;
    SmallVector<Value> slots;
    for (int64_t k = 0; k < readPasses; ++k) {
      Value r = e.add(row, e.i64c(k * readRows));
      Value ok = e.band(okJ, e.icmp(LLVM::ICmpPredicate::ult, e.add(l0, r), extentL));
      Value at = e.select(ok, e.add(inBase, e.add(col, e.mul(r, inRowStep))), e.i64c(0));
      if (lanesV == 1) {
        Value v = load(t.source, at);
        loaded.push_back({slotType == st.compute ? v : e.zext(e.i32, v)});
      } else {
        loaded.push_back(unpack(loadRaw(t.source, at, lanesV), false));
      }
      // Shared tile [l - l0][j - j0].
      slots.push_back(e.add(e.mul(r, e.i64c(pitch)), col));
    }
    for (auto [vs, s] : llvm::zip(loaded, slots))
      for (auto [v, value] : llvm::enumerate(vs))
        e.store(value, e.gep(smem, slotType, e.add(s, e.i64c(static_cast<int64_t>(v)))));
    e.barrier();

    // 2. Compute and write: thread (row, col) takes output elements
    // (j0 + row + writeRows k, l0 + col + v), along the output's last
    // dim, and stores each output's lanes as one vector.
    col = writeCol;
    row = writeRow;
    Value okL = e.icmp(LLVM::ICmpPredicate::ult, e.add(l0, col), extentL);
    Value outRowStep = e.i64c(outStride[j]);
    for (int64_t k = 0; k < writePasses && status.ok(); ++k) {
      Value r = e.add(row, e.i64c(k * writeRows));
      Value ok = e.band(okL, e.icmp(LLVM::ICmpPredicate::ult, e.add(j0, r), extentJ));
      Value at = e.select(ok, e.add(outBase, e.add(col, e.mul(r, outRowStep))), e.i64c(0));
      std::vector<SmallVector<Value>> outLanes(yield->getNumOperands());
      for (int64_t v = 0; v < lanesV && status.ok(); ++v) {
        Value slot = e.load(slotType, e.gep(smem, slotType,
                                            e.add(e.mul(e.add(col, e.i64c(v)), e.i64c(pitch)), r)));
        tileValue = slotType == st.compute ? slot : e.trunc(st.compute, slot);
        clearMemo();
        Value index = v == 0 ? at : e.add(at, e.i64c(v));
        for (auto [i, out] : llvm::enumerate(yield->getOperands())) {
          auto value = eval(out, index, 0);
          if (!value.ok()) {
            status = value.status();
            break;
          }
          outLanes[i].push_back(*value);
        }
        tileValue = Value();
      }
      if (!status.ok())
        break;
      e.ifThen(ok, [&] {
        for (auto [i, lanes] : llvm::enumerate(outLanes)) {
          if (lanesV == 1)
            storeResult(static_cast<unsigned>(i), lanes[0], at);
          else
            storeVector(static_cast<unsigned>(i), lanes, at);
        }
      });
    }
    // The next tile's reads overwrite shared memory.
    e.barrier();
    return {};
  });
  if (!status.ok())
    return status;
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

} // namespace

absl::Status emitTransposeTiled(const StrategyInput &in) {
  auto t = tiledTransposeOf(in.kernel, in.shape.domain);
  if (!t)
    return absl::InvalidArgumentError(
        "fusec codegen: transpose_tiled needs one transpose of an argument that moves its last "
        "dim, outputs of the domain's shape and no other movement (re-run fusec-tile)");
  return TransposeEmitter(in, *t).build();
}

} // namespace fusec::codegen
