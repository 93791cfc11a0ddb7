//===- MatmulWgmma.cpp - matmul_wgmma: tensor-core GEMM for Hopper -*- C++ -*-===//
//
// A warp-specialized, persistent GEMM with its epilogue fused, for sm_90a:
//
// - Warpgroup 0 produces (setmaxnreg 40; one thread issues the TMA loads);
//   one or two consumer warpgroups (setmaxnreg 232) each own 64 rows of an
//   M x N tile (M = 64 or 128, N = 128, 192 or 256) and a 64 x N f32
//   accumulator per rhs in registers. Two matmuls sharing their lhs
//   (SwiGLU's gate and up) run as one GEMM with two accumulators.
// - A ring of `stages` shared-memory stages of 64 K each, filled by TMA
//   (cp.async.bulk.tensor, 128-byte swizzle) and completing on a "full"
//   mbarrier with its byte count; the consumers release a stage through its
//   "empty" mbarrier once the wgmmas that read it are done (wait_group 1:
//   one k-block stays in flight).
// - The operands as TMA reads them: K-major (row-major lhs, transposed rhs)
//   as one box of 64 K x rows, MN-major (transposed lhs, row-major rhs) as
//   boxes of 64 rows/columns x 64 K; wgmma takes MN-major operands through
//   its transpose bits. Batch dims are the tensor maps' outer dims (a
//   broadcast dim reads coordinate 0). Ragged M, N and K read zeros past the
//   edges (TMA bounds). A convolution's implicit GEMM (ShiftedLhs) reads
//   each lhs k-block from its tap's row window of the padded input: row
//   m0 + δ and phase φ of the tap the k-block lies in; by TMA im2col
//   (Im2colLhs) from the channels-last input itself: one im2col load from
//   row m0's output position with the tap's offsets.
// - A persistent grid of at most one CTA per SM over the work units in
//   grouped order (8 tile rows a group, so the columns a group reads stay in
//   L2). With split-K (few tiles, long K: decode) a unit is a part of K of a
//   tile; each part's accumulators go to a workspace, and the last part to
//   finish a tile (an atomic counter) sums all parts in order (the result
//   does not depend on which finished last) and runs the epilogue.
// - The epilogue runs on the accumulator: every element of the kernel's
//   outputs is evaluated with the matmul's value taken from the accumulator
//   (bias, activation, residual, cast). Where N is even, each output a TMA
//   store can write (StoreView: full-shape, or Q, K and V head-major) goes
//   a 64-column group at a time into 128-byte-swizzled pieces of the
//   warpgroup's 64 rows in shared memory, which one thread stores by TMA
//   while the warpgroup goes on (bulk groups; the pieces are reused once
//   their stores have read them); the other outputs store pairs.
//   With N odd (a vocabulary of 50257), where a pair's address is not
//   aligned, the outputs of the matmul's shape are staged (WgmmaStaging):
//   each warp writes 8 rows of a 64-column piece (32 for 4-byte outputs)
//   into a padded shared-memory region of its own, then stores them a row
//   per warp instruction (coalesced), not as the fragment's elements, 8
//   rows apart. Outputs through movement ops are stored from the registers.
//   Interior tiles take a path without bounds checks; broadcast operands (a
//   bias) are read at indices from the element's coordinates.
//
// The wgmma, TMA, mbarrier, fence and setmaxnreg ops are NVVM's; the one
// inline PTX is the wgmma wait that takes the accumulators as operands and
// returns them, so that LLVM keeps every read of them after the wait (NVVM's
// wait op has no operands). lit: test/lit/CodeGen/matmul-wgmma.mlir.
//
//===----------------------------------------------------------------------===//

#include "MatmulTma.h"
#include "fusec/Support/StreamK.h"
#include "fusec/Support/TensorCoreEncoding.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/Builders.h"

#include <array>
#include <optional>

using namespace mlir;

namespace fusec::codegen {

namespace {

constexpr int kConsumerRegs = 232, kProducerRegs = 40;

/// Whether `taps` (each an offset per dim) is a window's grid, row-major:
/// tap j's offset along dim i is first_i + ((j / Π_{i' > i} count_i') mod
/// count_i) step_i. Then (first, count, step) per dim.
std::optional<SmallVector<std::array<int64_t, 3>, 3>>
tapGrid(ArrayRef<SmallVector<int64_t, 3>> taps) {
  if (taps.empty())
    return std::nullopt;
  size_t dims = taps[0].size();
  SmallVector<std::array<int64_t, 3>, 3> grid(dims);
  int64_t inner = 1;
  for (int64_t i = static_cast<int64_t>(dims) - 1; i >= 0; --i) {
    int64_t first = taps[0][i], count = 1;
    while (count * inner < static_cast<int64_t>(taps.size()) &&
           taps[count * inner][i] != first)
      ++count;
    int64_t step = count > 1 ? taps[inner][i] - first : 0;
    grid[i] = {first, count, step};
    inner *= count;
  }
  if (inner != static_cast<int64_t>(taps.size()))
    return std::nullopt;
  for (auto [j, tap] : llvm::enumerate(taps)) {
    int64_t rest = static_cast<int64_t>(j);
    for (int64_t i = static_cast<int64_t>(dims) - 1; i >= 0; --i) {
      auto [first, count, step] = grid[i];
      if (tap[i] != first + (rest % count) * step)
        return std::nullopt;
      rest /= count;
    }
  }
  return grid;
}
constexpr int kGroupM = 8;

class MatmulWgmmaEmitter : public TmaMatmulEmitter {
public:
  using TmaMatmulEmitter::TmaMatmulEmitter;

  absl::Status build() override;
  /// The zeroed device buffers the kernel takes after the table (split-K's
  /// workspace and tile counters), in bytes.
  SmallVector<int64_t> scratch() const {
    // Stream-K: a CTA writes at most two partial tiles (the tile its range
    // starts inside, and the one it ends inside), slots 2c and 2c + 1.
    if (t.streamK)
      return {2 * streamGrid * t.consumers() * 128 * t.accRegs() * 4, numTiles * 4};
    if (t.split == 1)
      return {};
    int64_t split = numTiles - t.unsplit; // tiles split in parts
    return {split * t.split * t.consumers() * 128 * t.accRegs() * 4, split * 4};
  }

protected:
  Value argument(BlockArgument arg, Value index, int lane) override;

private:
  /// wgmma.wait_group with the accumulators as operands and results.
  SmallVector<Value> waitAcc(ArrayRef<Value> accs, int pending);
  absl::Status consumer(Value smem, Value tid, Value workspace, Value counters);
  /// The TMA-store epilogue's steps around column group `g` of a
  /// warpgroup's 64 rows: before it, the set it writes is free (the stores
  /// that last read it are done) for the whole warpgroup; after it, the
  /// writes are visible to the TMA unit and one thread stores each output's
  /// pieces that lie inside it, as one bulk group.
  void tmaAcquire(int64_t g, Value wg, Value leader);
  void tmaRelease(int64_t g, Value smem, Value b, Value tm, Value tn, Value wg, Value leader);
  /// The warpgroup's set for group `g`.
  Value tmaSet(Value smem, int64_t g, Value wg);
  /// bar.sync of consumer warpgroup `wg`'s 128 threads (ids 2 and 3).
  void warpgroupBarrier(Value wg);
  /// Evaluates and stores the outputs at the consumer thread's elements;
  /// `guarded`: checks each against M and N.
  absl::Status epilogue(Value smem, ArrayRef<Value> accs, Value b, Value tm, Value tn,
                        Value wg, Value warp, Value lane, bool guarded);

  Type accType;
  WgmmaStaging staging;
  /// The consumer warpgroup's 64-row slot in its tile: its index when the
  /// consumers share tiles, 0 in ping-pong (each owns whole tiles).
  Value wgRow;
  Value table;
  // A pair's first and second flat index (for pairs of loads).
  Value pairFirst, pairIndex;
  llvm::DenseMap<std::pair<unsigned, Value>, Value> pairLoads;
};

} // namespace

//===----------------------------------------------------------------------===//
// TmaMatmulEmitter: what matmul_wgmma and matmul_tcgen05 share
//===----------------------------------------------------------------------===//

TmaMatmulEmitter::TmaMatmulEmitter(const StrategyInput &in, MatmulLayout layout)
    : KernelEmitter(in.kernel, in.launch, in.options, in.module), shape(in.shape),
      l(std::move(layout)) {
  domain = shape.domain;
  auto tile = launch.getTile();
  t.m = tile[0];
  t.n = tile[1];
  t.k = tile[2];
  t.stages = launch.getStages();
  t.split = launch.getSplit();
  t.unsplit = launch.getUnsplit();
  t.streamK = launch.getStreamk() != 0;
  t.rhs = static_cast<int64_t>(l.rhs.size());
  t.resident = launch.getResident();
  // Two consumer warpgroups with a 64-row tile take turns (ping-pong).
  t.pingpong = t.m == 64 && launch.getBlock() == 384;
}

absl::StatusOr<Value> TmaMatmulEmitter::matmul(MatmulOp op, Value, int) {
  for (auto [i, m] : llvm::enumerate(l.ops))
    if (m == op)
      return accElement[i];
  return absl::InternalError("fusec codegen: an unknown matmul in the epilogue");
}

Value TmaMatmulEmitter::descriptor(Value addr, int64_t lbo, int64_t version) {
  // The address bits at run time, the rest (offsets, version, the 128-byte
  // swizzle) from fusec/Support/TensorCoreEncoding.h with a zero address.
  Value a = e.zext(e.i64, e.band(e.lshr(addr, i32(4)), i32(0x3FFF)));
  uint64_t fixed = version ? encoding::tcgen05Descriptor(0, static_cast<uint32_t>(lbo), 1024)
                           : encoding::wgmmaDescriptor(0, static_cast<uint32_t>(lbo), 1024);
  return e.bor(a, e.i64c(static_cast<int64_t>(fixed)));
}

Value TmaMatmulEmitter::lastPartOfTile(Value counters, Value tile, Value flag, Value leader,
                                       llvm::function_ref<void()> barrier, Value lastIndex) {
  LLVM::FenceOp::create(builder, LLVM::AtomicOrdering::acq_rel, "device");
  barrier();
  e.ifThen(leader, [&] {
    Value counter = e.gep(counters, e.i32, e.zext(e.i64, tile));
    Value old = LLVM::AtomicRMWOp::create(builder, LLVM::AtomicBinOp::add, counter, i32(1),
                                          LLVM::AtomicOrdering::acq_rel, "device");
    Value last = e.icmp(LLVM::ICmpPredicate::eq, old, lastIndex ? lastIndex : i32(t.split - 1));
    e.store(e.zext(e.i32, last), flag);
    // The last part resets the counter for the next launch.
    e.ifThen(last, [&] { e.store(i32(0), counter); });
  });
  barrier();
  // Every thread reads the flag before it reaches the next unit's first
  // barrier, past which alone the leader writes it again.
  return e.icmp(LLVM::ICmpPredicate::ne, e.load(e.i32, flag), i32(0));
}

void TmaMatmulEmitter::layoutTiles() {
  tilesM = (l.m + t.m - 1) / t.m;
  tilesN = (l.n + t.n - 1) / t.n;
  numTiles = tilesM * tilesN * l.batchCount();
  numK = (l.k + t.k - 1) / t.k;
  perSplit = (numK + t.split - 1) / t.split;
  aBytes = t.m * t.k * 2;
  bBytes = t.n * t.k * 2;
  residentOffset = t.stages * t.stageBytes();
  tmaBufferOffset = residentOffset + t.residentBytes();
  barrierOffset = tmaBufferOffset + tmaBufferBytes;
  flagOffset = barrierOffset + 16 * t.stages;
  stagingOffset = flagOffset + 16;
}

Value TmaMatmulEmitter::alignedSharedMemory() {
  // Dynamic shared memory, aligned up to 1024 bytes (the 128-byte swizzle's
  // atom) at run time: the declaration promises only 16, so that LLVM
  // cannot fold the alignment away if the driver places it otherwise.
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(builder, LLVM::LLVMArrayType::get(e.i8, 0), false,
                           LLVM::Linkage::External, "__fusec_dynamic_smem", Attribute(), 16, 3);
  }
  Value dynamic = LLVM::AddressOfOp::create(builder, e.sharedPtr, "__fusec_dynamic_smem");
  Value base32 = e.trunc(e.i32, e.ptrtoint(dynamic));
  Value pad = e.band(e.sub(i32(0), base32), i32(1023));
  return sharedAt(dynamic, pad);
}

absl::Status TmaMatmulEmitter::interiorOrEdge(Value tm, Value tn,
                                              function_ref<absl::Status(bool)> epilogue) {
  Value interior = e.band(
      e.icmp(LLVM::ICmpPredicate::ule, e.add(e.mul(tm, i32(t.m)), i32(t.m)), i32(l.m)),
      e.icmp(LLVM::ICmpPredicate::ule, e.add(e.mul(tn, i32(t.n)), i32(t.n)), i32(l.n)));
  Block *fast = e.newBlock(), *slow = e.newBlock(), *done = e.newBlock();
  e.condBr(interior, fast, slow);
  e.setBlock(fast);
  absl::Status status = epilogue(/*guarded=*/false);
  e.br(done);
  e.moveToEnd(slow);
  e.setBlock(slow);
  if (status.ok())
    status = epilogue(/*guarded=*/true);
  e.br(done);
  e.moveToEnd(done);
  e.setBlock(done);
  return status;
}

absl::Status TmaMatmulEmitter::evalOutputsAt(ArrayRef<std::optional<StoreMap>> maps,
                                              ArrayRef<Value> batch, Value row, Value col,
                                              Value flat,
                                              MutableArrayRef<SmallVector<Value>> values) {
  elementCoords.assign(batch.begin(), batch.end());
  elementCoords.push_back(row);
  elementCoords.push_back(col);
  elementIndex = flat;
  for (auto [r, o] : llvm::enumerate(body.getTerminator()->getOperands())) {
    auto v = eval(maps[r] ? maps[r]->source : o, flat, 0);
    if (!v.ok())
      return v.status();
    values[r].push_back(*v);
  }
  return absl::OkStatus();
}

SmallVector<Value> TmaMatmulEmitter::batchCoords(Value b, ArrayRef<int64_t> operandBatch) {
  SmallVector<Value> outer(l.batch.size());
  Value rest = b;
  for (int64_t d = static_cast<int64_t>(l.batch.size()) - 1; d >= 0; --d) {
    outer[d] = e.urem(rest, i32(l.batch[d]));
    rest = e.udiv(rest, i32(l.batch[d]));
  }
  SmallVector<Value> coords; // outer first; a broadcast dim reads 0
  size_t offset = l.batch.size() - operandBatch.size();
  for (size_t j = 0; j < operandBatch.size(); ++j)
    coords.push_back(operandBatch[j] == 1 ? i32(0) : outer[offset + j]);
  return coords;
}

SmallVector<Value> TmaMatmulEmitter::tmaCoords(const OperandView &view, Value inner, Value rows,
                                                 ArrayRef<Value> batch) {
  SmallVector<Value> coords;
  // A dim's coordinate split over its factors, innermost first.
  auto expand = [&](const OperandView::Factors &f, Value c, bool dropOnes) {
    for (int64_t i = static_cast<int64_t>(f.size()) - 1; i >= 0; --i) {
      if (dropOnes && f[i].first == 1)
        continue;
      bool outermost = llvm::all_of(ArrayRef(f).take_front(i), [&](auto g) {
        return dropOnes && g.first == 1;
      });
      coords.push_back(outermost ? c : e.urem(c, i32(f[i].first)));
      c = e.udiv(c, i32(f[i].first));
    }
  };
  size_t rank = view.dims.size();
  expand(view.dims[rank - 1], inner, false);
  expand(view.dims[rank - 2], rows, false);
  for (int64_t d = static_cast<int64_t>(rank) - 3; d >= 0; --d)
    expand(view.dims[d], batch[d], true);
  return coords;
}

// Stream-K's schedule, as StreamKSchedule (fusec/Support/StreamK.h) defines
// and its unit test checks, in i64.
Value TmaMatmulEmitter::streamBegin(Value cta) {
  return e.udiv(e.mul(e.zext(e.i64, cta), e.i64c(numTiles * numK)), e.i64c(streamGrid));
}

Value TmaMatmulEmitter::streamCta(Value it) {
  // The largest c with c I / G <= it: c = ceil((it + 1) G / I) - 1.
  Value num = e.sub(e.mul(e.add(it, e.i64c(1)), e.i64c(streamGrid)), e.i64c(1));
  return e.trunc(e.i32, e.udiv(num, e.i64c(numTiles * numK)));
}

std::tuple<Value, Value, Value> TmaMatmulEmitter::unitLoop() {
  if (!t.streamK)
    return {e.ctaidX(), i32(units()), e.nctaidX()};
  Value c = e.ctaidX();
  Value first = e.trunc(e.i32, e.udiv(streamBegin(c), e.i64c(numK)));
  Value last = e.trunc(e.i32, e.udiv(e.sub(streamBegin(e.add(c, i32(1))), e.i64c(1)),
                                     e.i64c(numK)));
  return {first, e.add(last, i32(1)), i32(1)};
}

std::pair<Value, Value> TmaMatmulEmitter::kRange(Value unit, Value part) {
  if (!t.streamK)
    return kRange(part);
  Value c = e.ctaidX();
  Value base = e.mul(e.zext(e.i64, unit), e.i64c(numK));
  Value from = e.sub(e.smax(streamBegin(c), base), base);
  Value to = e.sub(e.umin(streamBegin(e.add(c, i32(1))), e.add(base, e.i64c(numK))), base);
  return {e.trunc(e.i32, from), e.trunc(e.i32, to)};
}

Value TmaMatmulEmitter::wholeUnit(Value unit) {
  return t.split > 1 && t.unsplit > 0 ? e.icmp(LLVM::ICmpPredicate::ult, unit, i32(t.unsplit))
                                      : e.boolc(t.split == 1);
}

Value TmaMatmulEmitter::splitTile(Value unit) {
  return e.udiv(t.unsplit ? e.sub(unit, i32(t.unsplit)) : unit, i32(t.split));
}

std::tuple<Value, Value, Value, Value> TmaMatmulEmitter::decodeUnit(Value unit) {
  Value part = t.split > 1 ? e.urem(unit, i32(t.split)) : i32(0);
  Value tile = t.split > 1 ? e.udiv(unit, i32(t.split)) : unit;
  // Whole tiles first (units 0 .. unsplit - 1, part `split`), then the
  // split ones' parts.
  if (t.split > 1 && t.unsplit > 0) {
    Value whole = wholeUnit(unit);
    Value rest = e.sub(unit, i32(t.unsplit));
    part = e.select(whole, i32(t.split), e.urem(rest, i32(t.split)));
    tile = e.select(whole, unit, e.add(e.udiv(rest, i32(t.split)), i32(t.unsplit)));
  }
  int64_t perBatch = tilesM * tilesN;
  Value b = e.udiv(tile, i32(perBatch));
  Value within = e.urem(tile, i32(perBatch));
  int64_t groupTiles = kGroupM * tilesN;
  Value group = e.udiv(within, i32(groupTiles));
  Value firstM = e.mul(group, i32(kGroupM));
  Value rowsInGroup = e.smin(e.sub(i32(tilesM), firstM), i32(kGroupM));
  Value inGroup = e.urem(within, i32(groupTiles));
  Value tm = e.add(firstM, e.urem(inGroup, rowsInGroup));
  Value tn = e.udiv(inGroup, rowsInGroup);
  return {b, tm, tn, part};
}

std::pair<Value, Value> TmaMatmulEmitter::kRange(Value part) {
  if (t.split == 1)
    return {i32(0), i32(numK)};
  Value begin = e.mul(part, i32(perSplit));
  Value end = e.smin(e.add(begin, i32(perSplit)), i32(numK));
  if (t.unsplit == 0)
    return {begin, end};
  Value whole = e.icmp(LLVM::ICmpPredicate::eq, part, i32(t.split));
  return {e.select(whole, i32(0), begin), e.select(whole, i32(numK), end)};
}

TensorMapAttr TmaMatmulEmitter::tensorMap(const OperandView &view, int64_t slot, int64_t bytes,
                                          int64_t boxInner, int64_t boxRows) {
  // Every factor a dim (tmaCoords' order).
  SmallVector<int64_t> dims, strides, box;
  auto add = [&](const OperandView::Factors &f, int64_t boxFirst, bool dropOnes) {
    for (int64_t i = static_cast<int64_t>(f.size()) - 1; i >= 0; --i) {
      if (dropOnes && f[i].first == 1)
        continue;
      int64_t stride = f[i].second * bytes;
      if (f[i].second == 0) // extent 1: any stride; TMA wants 16-byte multiples
        stride = 16;
      if (!dims.empty())
        strides.push_back(stride);
      dims.push_back(f[i].first);
      box.push_back(i + 1 == static_cast<int64_t>(f.size()) ? boxFirst : 1);
    }
  };
  size_t rank = view.dims.size();
  add(view.dims[rank - 1], boxInner, false);
  add(view.dims[rank - 2], boxRows, false);
  for (int64_t d = static_cast<int64_t>(rank) - 3; d >= 0; --d)
    add(view.dims[d], 1, true);
  return TensorMapAttr::get(kernel.getContext(), slot, bytes, dims, strides, box, 128, {}, {},
                            {});
}

SmallVector<TensorMapAttr> TmaMatmulEmitter::tensorMaps() {
  int64_t bytes = l.element.getIntOrFloatBitWidth() / 8;
  auto map = [&](const OperandView &view, int64_t boxInner, int64_t boxRows) {
    return tensorMap(view, view.arg.getArgNumber(), bytes, boxInner, boxRows);
  };
  SmallVector<TensorMapAttr> maps;
  // lhs: row-major [M, K] is K-major (one box of 64 K x M rows); [K, M]
  // (transposed) is MN-major (boxes of 64 M x 64 K). A convolution's
  // im2col lhs: the channels-last input [N, spatial..., C0] as [C0,
  // spatial (innermost first)..., N], 64 channels by the tile's rows of
  // output positions a load; the pixel box runs from -low_i over (O_i - 1)
  // s_i + 1 positions of each spatial dim (its upper corner relative to the
  // last position), traversed at the convolution's strides.
  if (l.im2col) {
    const Im2colLhs &c = *l.im2col;
    auto type = cast<RankedTensorType>(l.lhsView.arg.getType());
    int64_t rank = type.getRank(), sp = rank - 2;
    SmallVector<int64_t> dims, strides, box = {t.k, t.m}, lower, upper, steps = {1};
    int64_t stride = bytes;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (d != rank - 1)
        strides.push_back(stride);
      dims.push_back(type.getDimSize(d));
      stride *= type.getDimSize(d);
    }
    for (int64_t i = sp - 1; i >= 0; --i) {
      lower.push_back(-c.low[i]);
      upper.push_back((c.out[i] - 1) * c.strides[i] + 1 - c.input[i] - c.low[i]);
      steps.push_back(c.strides[i]);
      box.push_back(1);
    }
    steps.push_back(1);
    bool strided = llvm::any_of(c.strides, [](int64_t v) { return v != 1; });
    maps.push_back(TensorMapAttr::get(kernel.getContext(), l.lhsView.arg.getArgNumber(), bytes,
                                      dims, strides, box, 128, lower, upper,
                                      strided ? steps : SmallVector<int64_t>()));
  } else {
    maps.push_back(l.transposeLhs ? map(l.lhsView, 64, t.k) : map(l.lhsView, t.k, t.m));
  }
  // rhs: row-major [K, N] is MN-major (boxes of 64 N x 64 K); [N, K] is
  // K-major (one box of 64 K x N).
  for (const OperandView &rhs : l.rhsViews)
    maps.push_back(l.transposeRhs ? map(rhs, t.k, t.n) : map(rhs, 64, t.k));
  // Outputs: pieces of 128 bytes of columns by 64 rows.
  for (unsigned r : tmaOutputs) {
    const StoreView &sv = *l.storeViews[r];
    maps.push_back(tensorMap(sv.view, sv.slot, sv.elementBytes, 128 / sv.elementBytes, 64));
  }
  return maps;
}

SmallVector<Value> MatmulWgmmaEmitter::waitAcc(ArrayRef<Value> accs, int pending) {
  int64_t n = t.accCols() / 2;
  SmallVector<Value> regs;
  SmallVector<Type> types;
  std::string constraints;
  for (size_t a = 0; a < accs.size(); ++a)
    for (int64_t i = 0; i < n; ++i) {
      absl::StrAppend(&constraints, constraints.empty() ? "" : ",", "=f");
      types.push_back(e.f32);
    }
  for (Value acc : accs)
    for (int64_t i = 0; i < n; ++i) {
      absl::StrAppend(&constraints, ",", regs.size());
      regs.push_back(e.extractValue(acc, i));
    }
  auto all = LLVM::LLVMStructType::getLiteral(e.ctx, types);
  Value out = ptxAsm(e, all, absl::StrCat("wgmma.wait_group.sync.aligned ", pending, ";"),
                     constraints, regs, /*sideEffects=*/true);
  SmallVector<Value> result;
  for (size_t a = 0; a < accs.size(); ++a) {
    Value acc = LLVM::UndefOp::create(builder, accType);
    for (int64_t i = 0; i < n; ++i)
      acc = LLVM::InsertValueOp::create(builder, acc, e.extractValue(out, a * n + i),
                                        ArrayRef<int64_t>{i});
    result.push_back(acc);
  }
  return result;
}

void TmaMatmulEmitter::producer(Value smem, Value table) {
  Value tma = LLVM::AddrSpaceCastOp::create(builder, LLVM::LLVMPointerType::get(e.ctx, 0), table);
  Value ticks = i32(0x989680);
  Value txBytes = i32(t.stageBytes());
  SmallVector<BlockArgument> prefetched = epilogueInputs();
  // The operands' tensor maps (128 bytes each, in the table in global
  // memory) into the TMA unit's cache before the first loads need them:
  // one fetch latency off the start. FUSEC_TENSORMAP_PREFETCH=0 turns it
  // off.
  if (const char *v = std::getenv("FUSEC_TENSORMAP_PREFETCH"); !v || std::string(v) != "0")
    for (int64_t map = 0; map < 1 + t.rhs; ++map)
      NVVM::PrefetchOp::create(builder, NVVM::PrefetchCacheLevelAttr(),
                               NVVM::CacheEvictionPriorityAttr(),
                               map ? e.gep(tma, e.i8, e.i64c(128 * map)) : tma, Value(),
                               /*tensormap=*/true);
  // Programmatic dependent launch (deferGridWait): the maps of operands no
  // kernel writes (weights: inputs and constants) may load before
  // griddepcontrol.wait, while the previous kernel drains. The first
  // stages of this CTA's first unit go out for them first; the others'
  // loads of those stages follow the wait.
  SmallVector<bool> early;
  for (int64_t map = 0; map < 1 + t.rhs; ++map) {
    const OperandView &view = map ? l.rhsViews[map - 1] : l.lhsView;
    early.push_back(deferGridWait && readableBeforeWait(view.arg.getArgNumber()));
  }
  bool anyEarly = llvm::is_contained(early, true);
  // The k-block `kb` of the unit at (b, m0, n0) into `stage`, arriving on
  // `full`: the maps `want` picks.
  // A TMA load of map `map` at `coords` into shared memory at `dstOffset`,
  // arriving on `full`.
  auto loadTo = [&](Value full, int64_t map, Value dstOffset, SmallVector<Value> coords,
                    ValueRange offsets = ValueRange()) {
    Value dst = LLVM::AddrSpaceCastOp::create(builder, LLVM::LLVMPointerType::get(e.ctx, 7),
                                              sharedAt(smem, dstOffset));
    Value mapPtr = map ? e.gep(tma, e.i8, e.i64c(128 * map)) : tma;
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        builder, dst, mapPtr, coords, full, offsets, Value(), Value(),
        offsets.empty() ? NVVM::TMALoadMode::TILE : NVVM::TMALoadMode::IM2COL, false,
        NVVM::CTAGroupKindAttr(), Value());
  };
  // Rhs r's k-block `kb` of the columns from n0 into `dst`.
  auto loadRhs = [&](int64_t r, Value kb, Value dst, Value full, Value n0,
                     ArrayRef<Value> bBatch) {
    Value k0 = e.mul(kb, i32(t.k));
    if (l.transposeRhs) {
      loadTo(full, 1 + r, dst, tmaCoords(l.rhsViews[r], k0, n0, bBatch));
    } else {
      for (int64_t c = 0; c < t.n / 64; ++c)
        loadTo(full, 1 + r, e.add(dst, i32(c * t.k * 128)),
               tmaCoords(l.rhsViews[r], e.add(n0, i32(64 * c)), k0, bBatch));
    }
  };
  auto issueLoads = [&](Value kb, Value stage, Value full, Value m0, Value n0,
                        ArrayRef<Value> aBatch, ArrayRef<Value> bBatch,
                        function_ref<bool(int64_t)> want) {
    Value k0 = e.mul(kb, i32(t.k));
    auto load = [&](int64_t map, Value dstOffset, SmallVector<Value> coords,
                    ValueRange offsets = ValueRange()) {
      loadTo(full, map, dstOffset, std::move(coords), offsets);
    };
    if (want(0)) {
      if (l.im2col) {
        // Implicit GEMM by TMA im2col: k-block kb reads tap kb / (C / 64),
        // channels from (kb mod C / 64) 64, for the tile's output positions
        // from row m0's, (n, q...): the load starts at the input position
        // q_i s_i - low_i, each spatial dim shifted by the tap's offset
        // (a select chain over the taps; one thread, once a k-block).
        const Im2colLhs &c = *l.im2col;
        int64_t sp = static_cast<int64_t>(c.out.size()), perTap = c.channels / t.k;
        Value tap = e.udiv(kb, i32(perTap));
        Value c0 = e.mul(e.urem(kb, i32(perTap)), i32(t.k));
        SmallVector<Value> coords = {c0};
        Value rest = m0;
        for (int64_t i = sp - 1; i >= 0; --i) {
          Value q = e.urem(rest, i32(c.out[i]));
          rest = e.udiv(rest, i32(c.out[i]));
          coords.push_back(e.sub(e.mul(q, i32(c.strides[i])), i32(c.low[i])));
        }
        coords.push_back(rest);
        // A window's taps (row-major over the kernel's dims, offsets
        // first + t_i d_i) by arithmetic on the tap's index; other lists by
        // a select chain.
        SmallVector<Value> offsets;
        Type i16 = builder.getI16Type();
        std::optional<SmallVector<std::array<int64_t, 3>, 3>> grid = tapGrid(c.taps);
        Value within = tap;
        for (int64_t i = sp - 1; i >= 0; --i) {
          Value off;
          if (grid) {
            auto [first, count, step] = (*grid)[i];
            Value ti = i == 0 ? within : e.urem(within, i32(count));
            within = e.udiv(within, i32(count));
            off = e.add(e.mul(ti, i32(step)), i32(first));
          } else {
            off = i32(c.taps[0][i]);
            for (auto [j, taps] : llvm::enumerate(c.taps))
              if (j && taps[i] != c.taps[0][i])
                off = e.select(e.icmp(LLVM::ICmpPredicate::eq, tap, i32(static_cast<int64_t>(j))),
                               i32(taps[i]), off);
          }
          offsets.push_back(e.trunc(i16, off));
        }
        load(0, stage, coords, offsets);
      } else if (l.shifted) {
        // Implicit GEMM: k-block kb reads tap kb / (C / 64), channels from
        // (kb mod C / 64) 64, rows from m0 + δ of phase φ (a select chain
        // over the taps: one thread, once a k-block).
        int64_t perTap = l.shifted->channels / t.k;
        Value tap = e.udiv(kb, i32(perTap));
        Value c0 = e.mul(e.urem(kb, i32(perTap)), i32(t.k));
        Value phase = i32(l.shifted->taps[0].first), delta = i32(l.shifted->taps[0].second);
        for (auto [i, pd] : llvm::enumerate(l.shifted->taps)) {
          if (i == 0)
            continue;
          Value is = e.icmp(LLVM::ICmpPredicate::eq, tap, i32(static_cast<int64_t>(i)));
          phase = e.select(is, i32(pd.first), phase);
          delta = e.select(is, i32(pd.second), delta);
        }
        load(0, stage, tmaCoords(l.lhsView, c0, e.add(m0, delta), {phase}));
      } else if (!l.transposeLhs) {
        load(0, stage, tmaCoords(l.lhsView, k0, m0, aBatch));
      } else {
        for (int64_t c = 0; c < t.m / 64; ++c)
          load(0, e.add(stage, i32(c * t.k * 128)),
               tmaCoords(l.lhsView, e.add(m0, i32(64 * c)), k0, aBatch));
      }
    }
    // Resident rhs tiles are loaded once, below; a stage holds the lhs.
    for (int64_t r = 0; r < t.rhs && !t.resident; ++r)
      if (want(1 + r))
        loadRhs(r, kb, e.add(stage, i32(aBytes + r * bBytes)), full, n0, bBatch);
  };
  auto all = [](int64_t) { return true; };
  auto earlyOnly = [&](int64_t map) { return early[map]; };
  auto lateOnly = [&](int64_t map) { return !early[map]; };
  // Resident rhs: every k-block of the CTA's one column of rhs tiles (the
  // plan has one: n0 = 0, no batch of rhs) into their region, on their own
  // barrier, armed once for all their bytes. The early maps (weights, under
  // programmatic dependent launch) go before the grid's wait, the others
  // after it.
  Value residentFull = sharedAt(smem, i32(flagOffset + 8));
  auto loadResident = [&](function_ref<bool(int64_t)> want) {
    SmallVector<Value> bBatch = batchCoords(i32(0), l.rhsBatch);
    for (int64_t kb = 0; kb < numK; ++kb)
      for (int64_t r = 0; r < t.rhs; ++r)
        if (want(1 + r))
          loadRhs(r, i32(kb), i32(residentOffset + (kb * t.rhs + r) * bBytes), residentFull,
                  i32(0), bBatch);
  };
  if (t.resident) {
    // The CTA's first unit exists (the grid is at most the units), so the
    // bytes always arrive.
    NVVM::MBarrierArriveExpectTxOp::create(builder, Type(), residentFull,
                                           i32(t.residentBytes()), NVVM::MemScopeKind::CTA,
                                           false, Value());
    loadResident(anyEarly ? function_ref<bool(int64_t)>(earlyOnly)
                          : function_ref<bool(int64_t)>(all));
  }
  Value preCount = i32(0);
  if (anyEarly) {
    // The ring is empty: no slot to wait for. The first unit's first
    // min(stages, its k-blocks) k-blocks of the early maps.
    auto [unit, unitsEnd, unitStep] = unitLoop();
    (void)unitStep;
    auto [b, tm, tn, part] = decodeUnit(unit);
    auto [kBegin, kEnd] = kRange(unit, part);
    Value m0 = e.mul(tm, i32(t.m)), n0 = e.mul(tn, i32(t.n));
    SmallVector<Value> aBatch = batchCoords(b, l.lhsBatch), bBatch = batchCoords(b, l.rhsBatch);
    preCount = e.select(e.icmp(LLVM::ICmpPredicate::ult, unit, unitsEnd),
                        e.smin(i32(t.stages), e.sub(kEnd, kBegin)), i32(0));
    e.loop(i32(0), preCount, i32(1), {}, [&](Value i, ValueRange) -> SmallVector<Value> {
      Value full = barrierAt(smem, 0, i);
      NVVM::MBarrierArriveExpectTxOp::create(builder, Type(), full, txBytes,
                                             NVVM::MemScopeKind::CTA, false, Value());
      issueLoads(e.add(kBegin, i), e.mul(i, i32(t.stageBytes())), full, m0, n0, aBatch, bBatch,
                 earlyOnly);
      return {};
    });
    gridWait();
    if (t.resident)
      loadResident(lateOnly);
  }
  auto [loopFirst, loopEnd, loopStep] = unitLoop();
  e.loop(loopFirst, loopEnd, loopStep, {i32(0)},
         [&](Value unit, ValueRange carried) -> SmallVector<Value> {
    auto [b, tm, tn, part] = decodeUnit(unit);
    auto [kBegin, kEnd] = kRange(unit, part);
    Value m0 = e.mul(tm, i32(t.m)), n0 = e.mul(tn, i32(t.n));
    SmallVector<Value> aBatch = batchCoords(b, l.lhsBatch), bBatch = batchCoords(b, l.rhsBatch);
    SmallVector<Value> next = e.loop(kBegin, kEnd, i32(1), carried,
                  [&](Value kb, ValueRange it) -> SmallVector<Value> {
      Value s = e.urem(it[0], i32(t.stages));
      Value phase = e.band(e.udiv(it[0], i32(t.stages)), i32(1));
      Value stage = e.mul(s, i32(t.stageBytes()));
      Value full = barrierAt(smem, 0, s), empty = barrierAt(smem, 1, s);
      // The slot is free once the consumers released its previous use (a
      // fresh barrier's preceding phase counts as complete).
      auto claim = [&] {
        NVVM::MBarrierTryWaitParityOp::create(builder, empty, e.bxor(phase, i32(1)), ticks);
        NVVM::MBarrierArriveExpectTxOp::create(builder, Type(), full, txBytes,
                                               NVVM::MemScopeKind::CTA, false, Value());
      };
      if (!anyEarly) {
        claim();
        issueLoads(kb, stage, full, m0, n0, aBatch, bBatch, all);
      } else {
        // The stages issued before the wait have their slot and their
        // early maps' loads already.
        e.ifThen(e.icmp(LLVM::ICmpPredicate::uge, it[0], preCount), [&] {
          claim();
          issueLoads(kb, stage, full, m0, n0, aBatch, bBatch, earlyOnly);
        });
        issueLoads(kb, stage, full, m0, n0, aBatch, bBatch, lateOnly);
      }
      return {e.add(it[0], i32(1))};
    });
    // The unit's k-blocks are on their way: its tile of each full-shape
    // input the epilogue reads (a residual) goes to L2 now, behind them.
    prefetchEpilogueInputs(prefetched, b, m0, n0);
    return next;
  });
}

SmallVector<BlockArgument> TmaMatmulEmitter::epilogueInputs() {
  SmallVector<BlockArgument> inputs;
  // Split-K: only the tile's last part (known at run time) runs the
  // epilogue; decode's residual rows are few.
  // Off unless FUSEC_EPILOGUE_PREFETCH=1. The producer runs `stages`
  // k-blocks ahead of the consumers, which with a short K is several tiles
  // whose prefetched inputs (on every CTA) must stay in L2 until their
  // epilogues. Measured on the H200 (bench/results/
  // 2026-12-03-h200-conv-pad-fold): a 128 x 256 tile with K = 64 (4 tiles
  // ahead, 35 MB in flight) ran 1.13-1.14x slower with it, K = 128 (17 MB)
  // 8-10% faster, and ResNet-50 end to end 1.41 ms without, 1.45 ms with it
  // where the ahead tiles fit in half the L2, 1.55 ms with it everywhere.
  std::optional<bool> enabled = epiloguePrefetchForced();
  if (splits() || !options.aggressivePtx || !enabled || !*enabled)
    return inputs;
  for (BlockArgument arg : body.getArguments()) {
    if (arg == l.lhs || llvm::is_contained(l.rhs, arg) || !isFull(arg))
      continue;
    // Read at the epilogue's own element: no movement op or matmul between.
    bool elementwise = llvm::all_of(arg.getUsers(), [](Operation *user) {
      return !isa<BroadcastOp, ReshapeOp, TransposeOp, SliceOp, ConcatOp, GatherOp, ReduceOp,
                  MatmulOp>(user);
    });
    auto et = elemTypes(arg.getType());
    // Rows start 16-byte aligned (bulk copies move 16-byte multiples).
    if (elementwise && !arg.use_empty() && et && (l.n * et->bytes) % 16 == 0)
      inputs.push_back(arg);
  }
  return inputs;
}

void TmaMatmulEmitter::prefetchEpilogueInputs(ArrayRef<BlockArgument> inputs, Value b, Value m0,
                                              Value n0) {
  if (inputs.empty())
    return;
  Value rows = e.smin(i32(t.m), e.sub(i32(l.m), m0));
  // A tile as wide as the output covers whole rows: one contiguous run.
  bool whole = t.n >= l.n;
  Value cols = whole ? i32(l.n) : e.smin(i32(t.n), e.sub(i32(l.n), n0));
  Value first = e.add(e.mul(e.add(e.mul(e.zext(e.i64, b), e.i64c(l.m)), e.zext(e.i64, m0)),
                            e.i64c(l.n)),
                      e.zext(e.i64, n0));
  for (BlockArgument arg : inputs) {
    int64_t bytes = elemTypes(arg.getType())->bytes;
    Value base = argPtrs[arg.getArgNumber()];
    Value start = e.gep(base, e.i8, e.mul(first, e.i64c(bytes)));
    // A caller's buffer need not be 16-byte aligned (the hint is skipped).
    Value aligned = e.icmp(LLVM::ICmpPredicate::eq,
                           e.band(e.trunc(e.i32, e.ptrtoint(base)), i32(15)), i32(0));
    e.ifThen(aligned, [&] {
      if (whole) {
        NVVM::CpAsyncBulkPrefetchOp::create(builder, start, e.mul(rows, i32(l.n * bytes)),
                                            Value());
        return;
      }
      Value rowBytes = e.mul(cols, i32(bytes));
      e.loop(i32(0), rows, i32(1), {}, [&](Value r, ValueRange) -> SmallVector<Value> {
        Value at = e.gep(start, e.i8, e.mul(e.zext(e.i64, r), e.i64c(l.n * bytes)));
        NVVM::CpAsyncBulkPrefetchOp::create(builder, at, rowBytes, Value());
        return {};
      });
    });
  }
}

std::optional<Value> TmaMatmulEmitter::broadcastSource(BroadcastOp b, Value index) {
  // At the epilogue's element, a broadcast's source index from the
  // element's coordinates (no division of the flat index).
  if (index != elementIndex || !isFull(b.getResult()))
    return std::nullopt;
  auto src = cast<RankedTensorType>(b.getInput().getType()).getShape();
  auto strides = stridesOf(src);
  Value acc = e.i64c(0);
  for (auto [j, d] : llvm::enumerate(b.getDims()))
    if (src[j] != 1)
      acc = e.add(acc, e.mul(elementCoords[d], e.i64c(strides[j])));
  return acc;
}

Value MatmulWgmmaEmitter::argument(BlockArgument arg, Value index, int lane) {
  // A full-shape operand (a residual) read at both elements of a pair: one
  // 4-byte (or 8-byte) load.
  if (pairIndex && isFull(arg) && (index == pairFirst || index == pairIndex)) {
    Value first = pairFirst;
    auto key = std::make_pair(arg.getArgNumber(), first);
    auto it = pairLoads.find(key);
    if (it == pairLoads.end()) {
      ElemTypes et = *elemTypes(arg.getType());
      Value vec = e.load(VectorType::get({2}, et.storage),
                         e.gep(argPtrs[arg.getArgNumber()], et.storage, first), 2 * et.bytes);
      pairLoads[key] = vec;
      pairLoads[std::make_pair(arg.getArgNumber(), pairIndex)] = vec;
      it = pairLoads.find(key);
    }
    ElemTypes et = *elemTypes(arg.getType());
    return toCompute(e.extract(it->second, index == first ? 0 : 1), et);
  }
  return load(arg, index);
}

void MatmulWgmmaEmitter::warpgroupBarrier(Value wg) {
  NVVM::BarrierOp::create(builder, Type(), e.add(wg, i32(2)), i32(128),
                          NVVM::BarrierReductionAttr(), Value());
}

Value MatmulWgmmaEmitter::tmaSet(Value smem, int64_t g, Value wg) {
  int64_t set = staging.tmaSets == 2 ? g % 2 : 0;
  return sharedAt(smem, e.add(i32(tmaBufferOffset + set * staging.tmaSetBytes),
                              e.mul(wg, i32(staging.tmaSets * staging.tmaSetBytes))));
}

void MatmulWgmmaEmitter::tmaAcquire(int64_t g, Value wg, Value leader) {
  // A tile's first group waits for every store (the last tile's had its
  // whole mainloop to finish); later ones for all but the newest group,
  // which reads the other set.
  int64_t pending = g == 0 ? 0 : staging.tmaSets - 1;
  e.ifThen(leader, [&] {
    NVVM::CpAsyncBulkWaitGroupOp::create(builder, static_cast<uint32_t>(pending),
                                         builder.getUnitAttr());
  });
  warpgroupBarrier(wg);
}

void MatmulWgmmaEmitter::tmaRelease(int64_t g, Value smem, Value b, Value tm, Value tn,
                                    Value wg, Value leader) {
  NVVM::FenceProxyOp::create(builder, NVVM::ProxyKind::async_shared,
                             NVVM::SharedSpaceAttr::get(e.ctx, NVVM::SharedSpace::shared_cta));
  warpgroupBarrier(wg);
  e.ifThen(leader, [&] {
    Value tma =
        LLVM::AddrSpaceCastOp::create(builder, LLVM::LLVMPointerType::get(e.ctx, 0), table);
    Value set = tmaSet(smem, g, wg);
    // The domain coordinates of the pieces' first element: the batch dims
    // outer first, the warpgroup's first row, the group's first column.
    SmallVector<Value> batch(l.batch.size());
    Value rest = b;
    for (int64_t d = static_cast<int64_t>(l.batch.size()) - 1; d >= 0; --d) {
      batch[d] = e.urem(rest, i32(l.batch[d]));
      rest = e.udiv(rest, i32(l.batch[d]));
    }
    Value row = e.add(e.mul(tm, i32(t.m)), e.mul(wgRow, i32(64)));
    Value col0 = e.add(e.mul(tn, i32(t.n)), i32(64 * g));
    SmallVector<int64_t> domain(l.batch.begin(), l.batch.end());
    domain.push_back(l.m);
    domain.push_back(l.n);
    for (auto [m, r] : llvm::enumerate(tmaOutputs)) {
      const StoreView &sv = *l.storeViews[r];
      int64_t cols = 128 / sv.elementBytes;
      for (int64_t pp = 0; pp < 64 / cols; ++pp) {
        SmallVector<Value> c(batch.begin(), batch.end());
        c.push_back(row);
        c.push_back(e.add(col0, i32(pp * cols)));
        // Inside the output's slices (a piece is wholly in or out).
        Value inside;
        for (size_t d = 0; d < c.size(); ++d) {
          int64_t extent = 1;
          for (auto f : sv.view.dims[d])
            extent *= f.first;
          if (sv.offset[d] == 0 && extent == domain[d])
            continue;
          c[d] = e.sub(c[d], i32(sv.offset[d]));
          Value ok = e.icmp(LLVM::ICmpPredicate::ult, c[d], i32(extent));
          inside = inside ? e.band(inside, ok) : ok;
        }
        Value inner = c.back(), rows = c[c.size() - 2];
        c.resize(c.size() - 2);
        SmallVector<Value> coords = tmaCoords(sv.view, inner, rows, c);
        Value src = sharedAt(set, i32(staging.tmaOffset[r] + pp * 8192));
        Value map = e.gep(tma, e.i8, e.i64c(128 * (1 + t.rhs + static_cast<int64_t>(m))));
        auto store = [&] {
          NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
              builder, map, src, coords, Value(), NVVM::TMAStoreMode::TILE, Value());
        };
        if (inside)
          e.ifThen(inside, store);
        else
          store();
      }
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(builder);
  });
}

absl::Status MatmulWgmmaEmitter::epilogue(Value smem, ArrayRef<Value> accs,
                                          Value b, Value tm, Value tn, Value wg,
                                          Value warp, Value lane,
                                          bool guarded) {
  // Thread (warp, lane) of a consumer warpgroup holds rows 16 warp + lane / 4
  // (+ 8) and columns 8 j + 2 (lane % 4) (+ 1) of its 64 rows: element
  // 4 j + 2 i + e of each accumulator.
  Operation *yield = body.getTerminator();
  Value rowBase = e.add(e.add(e.mul(tm, i32(t.m)), e.mul(wgRow, i32(64))),
                        e.add(e.mul(warp, i32(16)), e.udiv(lane, i32(4))));
  Value colBase =
      e.add(e.mul(tn, i32(t.n)), e.mul(e.urem(lane, i32(4)), i32(2)));
  // Swapped, the fragment's rows are the output's columns (the rhs's) and
  // its columns the output's rows (the tokens): thread (warp, lane) holds
  // columns 64 wgRow + 16 warp + lane / 4 (+ 8) and rows 8 j + 2 (lane % 4)
  // (+ 1), element 4 j + 2 i + e, each stored by itself.
  bool swap = t.swapped();
  Value weightBase, tokenBase;
  if (swap) {
    weightBase = e.add(e.add(e.mul(tn, i32(t.n)), e.mul(wgRow, i32(64))),
                       e.add(e.mul(warp, i32(16)), e.udiv(lane, i32(4))));
    tokenBase = e.add(e.mul(tm, i32(t.m)), e.mul(e.urem(lane, i32(4)), i32(2)));
  }
  Value b64 = e.zext(e.i64, b);
  // The batch coordinates of the tile, outer first.
  SmallVector<Value> batch(l.batch.size());
  Value rest = b64;
  for (int64_t d = static_cast<int64_t>(l.batch.size()) - 1; d >= 0; --d) {
    batch[d] = e.urem(rest, e.i64c(l.batch[d]));
    rest = e.udiv(rest, e.i64c(l.batch[d]));
  }
  absl::Status status = absl::OkStatus();
  // Pairs of columns when N is even (one guard, vector stores); else
  // each element by itself.
  bool pairs = !swap && l.n % 2 == 0;
  // Outputs of other shapes: images of a full-shape value through movement
  // ops (analyzeMatmul accepted each).
  SmallVector<std::optional<StoreMap>> maps;
  for (Value o : yield->getOperands())
    maps.push_back(isFull(o) ? std::nullopt : storeMapOf(o, domain));
  // Full-shape outputs go through the warp's staging region, a piece of
  // `pieceCols` columns of the half's 8 rows at a time.
  auto staged = [&](unsigned r) {
    return staging.pieceCols > 0 && r < staging.offset.size() &&
           staging.offset[r] >= 0;
  };
  // Pieces of columns: the odd-N staging's, the TMA store's 64-column
  // groups, or the whole tile.
  int64_t pieceCols =
      staging.tma() ? 64 : staging.pieceCols > 0 ? staging.pieceCols : t.accCols();
  Value quad = e.urem(lane, i32(4)), warpRow = e.udiv(lane, i32(4));
  bool tma = staging.tma();
  auto tmaStored = [&](unsigned r) { return tma && staging.tmaOffset[r] >= 0; };
  Value leader = e.band(e.icmp(LLVM::ICmpPredicate::eq, warp, i32(0)),
                        e.icmp(LLVM::ICmpPredicate::eq, lane, i32(0)));
  // A pair's place in a 128-byte-swizzled piece of 64 rows: row
  // 16 warp + lane / 4 (+ 8 i), 16-byte chunk j ^ (row % 8) (row % 8 is
  // lane / 4); 2-byte elements: 4 (lane % 4) bytes into the chunk; 4-byte:
  // chunk 2 (j % 4) + (lane % 4) / 2 of piece j / 4, 8 (lane % 2) bytes in.
  Value tmaLane2 = e.add(e.mul(e.add(e.mul(warp, i32(16)), warpRow), i32(128)),
                         e.mul(quad, i32(4)));
  Value tmaLane4 = e.add(e.mul(e.add(e.mul(warp, i32(16)), warpRow), i32(128)),
                         e.mul(e.urem(lane, i32(2)), i32(8)));
  Value quadHalf = e.udiv(quad, i32(2));
  Value tmaGroup; // the warpgroup's set of the current group
  Value region =
      staging.pieceCols > 0
          ? sharedAt(smem, e.add(i32(stagingOffset),
                                 e.mul(e.add(e.mul(wg, i32(4)), warp),
                                       i32(staging.warpBytes))))
          : Value();
  // The copy to global memory: per output, a lane's row and column in the
  // 8 x pieceCols block and its offsets (shared, global), computed once;
  // each vector adds constants. `rows[i]`: the output at the half's first
  // row and the tile's first column.
  struct CopyOut {
    int64_t vector = 1, bytes = 1, perRow = 1;
    Type type;
    Value laneRow, laneCol, sharedLane, globalLane;
    Value rows[2];
  };
  SmallVector<CopyOut> copyOut(yield->getNumOperands());
  Value warpRow0 = e.add(e.add(e.mul(tm, i32(t.m)), e.mul(wgRow, i32(64))),
                         e.mul(warp, i32(16)));
  Value colsLeft = e.sub(i32(l.n), e.mul(tn, i32(t.n)));
  Value rowsLeft = e.sub(i32(l.m), warpRow0);
  for (unsigned r = 0; r < yield->getNumOperands(); ++r) {
    if (!staged(r))
      continue;
    CopyOut &c = copyOut[r];
    ElemTypes et = *elemTypes(yield->getOperand(r).getType());
    c.vector = staging.vector[r];
    c.bytes = et.bytes;
    c.perRow = pieceCols / c.vector;
    int64_t width = c.vector * c.bytes;
    c.type = width >= 8   ? Type(VectorType::get({width / 4}, e.i32))
             : width == 4 ? e.i32
             : width == 2 ? Type(builder.getI16Type())
                          : e.i8;
    c.laneRow = c.perRow <= 32 ? e.udiv(lane, i32(c.perRow)) : i32(0);
    c.laneCol = c.perRow <= 32
                    ? e.mul(e.urem(lane, i32(c.perRow)), i32(c.vector))
                    : e.mul(lane, i32(c.vector));
    c.sharedLane = e.add(e.mul(c.laneRow, i32(staging.rowStride[r])),
                         e.mul(c.laneCol, i32(c.bytes)));
    c.globalLane = e.add(e.mul(e.zext(e.i64, c.laneRow), e.i64c(l.n * c.bytes)),
                         e.mul(e.zext(e.i64, c.laneCol), e.i64c(c.bytes)));
    for (int64_t i = 0; i < 2; ++i) {
      Value row = e.zext(e.i64, e.add(warpRow0, i32(8 * i)));
      Value first =
          e.add(e.mul(e.add(e.mul(b64, e.i64c(l.m)), row), e.i64c(l.n)),
                e.zext(e.i64, e.mul(tn, i32(t.n))));
      c.rows[i] = e.gep(outPtrs[r], e.i8, e.mul(first, e.i64c(c.bytes)));
    }
  }
  int64_t groups = tma ? t.n / 64 : 1;
  for (int64_t g = 0; g < groups && status.ok(); ++g) {
  if (tma) {
    tmaAcquire(g, wg, leader);
    tmaGroup = tmaSet(smem, g, wg);
  }
  for (int64_t i = 0; i < 2 && status.ok(); ++i) {
    Value row, row64, rowOk, rowFlat;
    auto atRow = [&](Value r) {
      row = r;
      row64 = e.zext(e.i64, row);
      rowOk = e.icmp(LLVM::ICmpPredicate::ult, row, i32(l.m));
      rowFlat = e.mul(e.add(e.mul(b64, e.i64c(l.m)), row64), e.i64c(l.n));
    };
    if (!swap)
      atRow(e.add(rowBase, i32(8 * i)));
    int64_t pieceBegin = tma ? g : 0, pieceEnd = tma ? g + 1 : t.accCols() / pieceCols;
    for (int64_t piece = pieceBegin; piece < pieceEnd && status.ok(); ++piece) {
      for (int64_t jj = 0; jj < pieceCols / 8 && status.ok(); ++jj) {
        int64_t j = piece * (pieceCols / 8) + jj;
        for (int64_t p = 0; p < (pairs ? 1 : 2) && status.ok(); ++p) {
          Value col;
          if (swap) {
            col = e.add(weightBase, i32(8 * i));
            atRow(e.add(tokenBase, i32(8 * j + p)));
          } else {
            col = e.add(colBase, i32(8 * j + p));
          }
          auto body = [&] {
            openScope();
            pairLoads.clear();
            Value col64 = e.zext(e.i64, col);
            Value flat0 = e.add(rowFlat, col64);
            SmallVector<SmallVector<Value>> values(yield->getNumOperands());
            pairFirst = flat0;
            pairIndex = pairs ? e.add(flat0, e.i64c(1)) : Value();
            for (int64_t q = 0; q < (pairs ? 2 : 1); ++q) {
              int64_t element = 4 * j + 2 * i + (pairs ? q : p);
              accElement.clear();
              for (Value acc : accs)
                accElement.push_back(e.extractValue(acc, element));
              Value flat = q ? pairIndex : flat0;
              status = evalOutputsAt(maps, batch, row64, q ? e.add(col64, e.i64c(1)) : col64,
                                     flat, values);
              if (!status.ok())
                return;
            }
            for (unsigned r = 0; r < yield->getNumOperands(); ++r) {
              if (tmaStored(r)) {
                // Into the group's piece (pairs: N is even).
                ElemTypes et = *elemTypes(yield->getOperand(r).getType());
                SmallVector<Value> stored;
                for (Value v : values[r])
                  stored.push_back(toStorage(v, et));
                Value offset;
                if (et.bytes == 2) {
                  Value chunk = e.bxor(i32(jj), warpRow);
                  offset = e.add(tmaLane2, e.mul(chunk, i32(16)));
                } else {
                  Value chunk = e.bxor(e.add(i32(2 * (jj % 4)), quadHalf), warpRow);
                  offset = e.add(tmaLane4, e.mul(chunk, i32(16)));
                }
                offset = e.add(offset, i32(staging.tmaOffset[r] + (jj / 4) * 8192 * (et.bytes / 4) +
                                           8 * i * 128));
                e.store(e.pack(stored), sharedAt(tmaGroup, offset),
                        static_cast<unsigned>(stored.size() * et.bytes));
              } else if (staged(r)) {
                // Into the staging region at (row of the half, column in the
                // piece).
                ElemTypes et = *elemTypes(yield->getOperand(r).getType());
                SmallVector<Value> stored;
                for (Value v : values[r])
                  stored.push_back(toStorage(v, et));
                Value column = e.add(e.mul(quad, i32(2)), i32(8 * jj + p));
                Value offset =
                    e.add(i32(staging.offset[r]),
                          e.add(e.mul(warpRow, i32(staging.rowStride[r])),
                                e.mul(column, i32(et.bytes))));
                e.store(stored.size() == 1 ? stored[0] : e.pack(stored),
                        sharedAt(region, offset),
                        static_cast<unsigned>(stored.size() * et.bytes));
              } else if (maps[r]) {
                // Through the output's slices, reshapes and transposes: a
                // pair where it stays one, else element by element.
                SmallVector<Value> coords(batch.begin(), batch.end());
                coords.push_back(row64);
                coords.push_back(col64);
                if (values[r].size() == 2 && maps[r]->pairs) {
                  storeMapped(r, *maps[r], values[r], coords);
                  continue;
                }
                for (auto [q, v] : llvm::enumerate(values[r])) {
                  coords.back() = q ? e.add(col64, e.i64c(1)) : col64;
                  storeMapped(r, *maps[r], v, coords);
                }
              } else if (values[r].size() == 2) {
                storeVector(r, values[r], flat0);
              } else {
                storeResult(r, values[r][0], flat0);
              }
            }
            elementIndex = pairFirst = pairIndex = Value();
            closeScope();
          };
          if (guarded)
            e.ifThen(
                e.band(rowOk, e.icmp(LLVM::ICmpPredicate::ult, col, i32(l.n))),
                body);
          else
            body();
        }
      }
      if (staging.pieceCols == 0 || !status.ok())
        continue;
      // The half's 8 rows of the piece from the staging region to global
      // memory: `vector` contiguous elements a lane, consecutive lanes along
      // a row (coalesced); then the region is free for the next piece.
      NVVM::SyncWarpOp::create(builder, i32(-1));
      for (unsigned r = 0; r < yield->getNumOperands(); ++r) {
        if (!staged(r))
          continue;
        const CopyOut &c = copyOut[r];
        for (int64_t it = 0; it < 8 * c.perRow / 32; ++it) {
          // Vector 32 it + lane of the 8 x perRow: its row and column.
          int64_t itRow =
              c.perRow <= 32 ? it * (32 / c.perRow) : it / (c.perRow / 32);
          int64_t itCol =
              c.perRow <= 32 ? 0 : (it % (c.perRow / 32)) * 32 * c.vector;
          int64_t col0 = piece * pieceCols + itCol;
          auto copy = [&] {
            Value from = sharedAt(
                region, e.add(c.sharedLane, i32(staging.offset[r] +
                                                itRow * staging.rowStride[r] +
                                                itCol * c.bytes)));
            Value data =
                e.load(c.type, from, static_cast<unsigned>(c.vector * c.bytes));
            Value to = e.gep(
                c.rows[i], e.i8,
                e.add(c.globalLane, e.i64c((itRow * l.n + col0) * c.bytes)));
            e.store(data, to, static_cast<unsigned>(c.vector * c.bytes));
          };
          if (guarded)
            // rowsLeft is negative for a warp below the last row.
            e.ifThen(
                e.band(e.icmp(LLVM::ICmpPredicate::slt,
                              e.add(c.laneRow, i32(8 * i + itRow)), rowsLeft),
                       e.icmp(LLVM::ICmpPredicate::ult,
                              e.add(c.laneCol, i32(col0)), colsLeft)),
                copy);
          else
            copy();
        }
      }
      NVVM::SyncWarpOp::create(builder, i32(-1));
    }
  }
  if (tma && status.ok())
    tmaRelease(g, smem, b, tm, tn, wg, leader);
  }
  return status;
}

absl::Status MatmulWgmmaEmitter::consumer(Value smem, Value tid, Value workspace,
                                          Value counters) {
  Value ticks = i32(0x989680);
  Value wg = e.sub(e.udiv(tid, i32(128)), i32(1));
  wgRow = t.pingpong ? i32(0) : wg; // rows [64 wgRow, 64 wgRow + 64) of the tile
  Value warp = e.urem(e.udiv(tid, i32(32)), i32(4));
  Value lane = e.urem(tid, i32(32));
  Value ctid = e.sub(tid, i32(128)); // among the consumer threads
  int64_t consumerThreads = 128 * t.consumers();
  Value smemBase = e.trunc(e.i32, e.ptrtoint(smem));
  auto elemKind = l.element.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  auto shapeAttr = NVVM::MMAShapeAttr::get(e.ctx, 64, static_cast<int>(t.accCols()), 16);
  absl::Status status = absl::OkStatus();

  // Issues the wgmmas of k-block `kb`, in stage `it`, on `accs` (empty:
  // the first k-block of a unit, whose first wgmmas do not read them).
  // Resident rhs tiles are read from their region at `kb`.
  auto issue = [&](Value it, Value kb, SmallVector<Value> accs) {
    bool first = accs.empty();
    if (first)
      for (int64_t r = 0; r < t.rhs; ++r)
        accs.push_back(LLVM::UndefOp::create(builder, accType));
    Value s = e.urem(it, i32(t.stages));
    Value phase = e.band(e.udiv(it, i32(t.stages)), i32(1));
    NVVM::MBarrierTryWaitParityOp::create(builder, barrierAt(smem, 0, s), phase, ticks);
    Value stage = e.add(smemBase, e.mul(s, i32(t.stageBytes())));
    // Descriptors first: every input of the wgmmas is defined before the
    // first is issued. K-major operands leave the leading offset unused (16,
    // as CUTLASS writes it); MN-major ones step t.k rows of 128 bytes
    // between their 64-element blocks.
    SmallVector<Value> da;
    SmallVector<SmallVector<Value>> db(t.rhs);
    // Swapped: wgmma's A is the consumer's 64 columns of each rhs (K-major
    // for a [N, K] rhs, else MN-major: one box of 64 columns by t.k), in
    // db; its B the stage's token rows (K-major), in da.
    bool swap = t.swapped();
    for (int64_t kk = 0; kk < t.k / 16 && swap; ++kk) {
      da.push_back(descriptor(e.add(stage, i32(kk * 32)), 16));
      for (int64_t r = 0; r < t.rhs; ++r) {
        Value a = l.transposeRhs
                      ? e.add(stage, e.add(e.mul(wgRow, i32(64 * 128)),
                                           i32(aBytes + r * bBytes + kk * 32)))
                      : e.add(stage, e.add(e.mul(wgRow, i32(t.k * 128)),
                                           i32(aBytes + r * bBytes + kk * 16 * 128)));
        db[r].push_back(descriptor(a, l.transposeRhs ? 16 : t.k * 128));
      }
    }
    for (int64_t kk = 0; kk < t.k / 16 && !swap; ++kk) {
      Value a = l.transposeLhs
                    ? e.add(stage, e.add(e.mul(wgRow, i32(t.k * 128)), i32(kk * 16 * 128)))
                    : e.add(stage, e.add(e.mul(wgRow, i32(64 * 128)), i32(kk * 32)));
      da.push_back(descriptor(a, l.transposeLhs ? t.k * 128 : 16));
      for (int64_t r = 0; r < t.rhs; ++r) {
        int64_t within = l.transposeRhs ? kk * 32 : kk * 16 * 128;
        Value bAddr =
            t.resident ? e.add(smemBase, e.add(e.mul(kb, i32(t.rhs * bBytes)),
                                               i32(residentOffset + r * bBytes + within)))
                       : e.add(stage, i32(aBytes + r * bBytes + within));
        db[r].push_back(descriptor(bAddr, l.transposeRhs ? 16 : t.k * 128));
      }
    }
    NVVM::WgmmaFenceAlignedOp::create(builder);
    for (int64_t kk = 0; kk < t.k / 16; ++kk)
      for (int64_t r = 0; r < t.rhs; ++r)
        accs[r] = NVVM::WgmmaMmaAsyncOp::create(
            builder, accType, accs[r], swap ? db[r][kk] : da[kk], swap ? da[kk] : db[r][kk],
            shapeAttr, elemKind, elemKind,
            NVVM::WGMMATypes::f32,
            first && kk == 0 ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
            NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
            swap ? (l.transposeRhs ? NVVM::MMALayout::row : NVVM::MMALayout::col)
                 : (l.transposeLhs ? NVVM::MMALayout::col : NVVM::MMALayout::row),
            swap || l.transposeRhs ? NVVM::MMALayout::col : NVVM::MMALayout::row,
            NVVM::MMAIntOverflowAttr());
    NVVM::WgmmaGroupSyncAlignedOp::create(builder);
    return accs;
  };
  // Hands the stage of k-block `it` back to the producer.
  auto release = [&](Value it) {
    Value s = e.urem(it, i32(t.stages));
    NVVM::MBarrierArriveOp::create(builder, Type(), barrierAt(smem, 1, s), Value(),
                                   NVVM::MemScopeKind::CTA, false);
  };
  auto consumerBarrier = [&] {
    NVVM::BarrierOp::create(builder, Type(), i32(1), i32(consumerThreads),
                            NVVM::BarrierReductionAttr(), Value());
  };

  // Ping-pong: warpgroup w takes the CTA's units w, w + 2, ... of its
  // sequence ctaid, ctaid + nctaid, ...; its first k-block of the unit is the
  // unit's place in the sequence times numK (split-K is never ping-pong).
  // The mainloops alternate on named barriers 4 + w: a warpgroup starts a
  // unit's after the other's previous unit has passed its last "full"
  // wait, so no stage's barrier can be two phases behind the use it is
  // waited for (the other's uses lie between), and the tensor cores serve
  // one warpgroup at a time while the other runs its epilogue.
  Value firstUnit, total, unitStep;
  if (t.pingpong) {
    total = i32(units());
    firstUnit = e.add(e.ctaidX(), e.mul(wg, e.nctaidX()));
    unitStep = e.mul(e.nctaidX(), i32(2));
  } else {
    std::tie(firstUnit, total, unitStep) = unitLoop();
  }
  Value firstIt = t.pingpong ? e.mul(wg, i32(numK)) : i32(0);
  // Resident rhs tiles: their one phase completes once, when all their
  // bytes have landed; every consumer thread waits for it before its first
  // wgmma (the barrier is never armed again, so the wait stays passed).
  if (t.resident) {
    // In statements of their own: the order of a call's arguments is the
    // host compiler's, and the IR's order with it.
    Value barrier = sharedAt(smem, i32(flagOffset + 8));
    Value parity = i32(0);
    NVVM::MBarrierTryWaitParityOp::create(builder, barrier, parity, ticks);
  }
  e.loop(firstUnit, total, unitStep, {firstIt},
         [&](Value unit, ValueRange carried) -> SmallVector<Value> {
    auto [b, tm, tn, part] = decodeUnit(unit);
    auto [kBegin, kEnd] = kRange(unit, part);
    Value it0 = carried[0];
    if (t.pingpong)
      e.ifThen(e.icmp(LLVM::ICmpPredicate::uge, unit, e.nctaidX()), [&] {
        NVVM::BarrierOp::create(builder, Type(), e.add(wg, i32(4)), i32(256),
                                NVVM::BarrierReductionAttr(), Value());
      });
    // The first k-block starts the accumulators; each later one waits for
    // the previous group (one stays in flight) and releases its stage.
    SmallVector<Value> accs = issue(it0, kBegin, {});
    Value it = e.add(it0, i32(1));
    SmallVector<Value> inits{it};
    inits.append(accs.begin(), accs.end());
    SmallVector<Value> out = e.loop(
        e.add(kBegin, i32(1)), kEnd, i32(1), inits,
        [&](Value kb, ValueRange c) -> SmallVector<Value> {
          SmallVector<Value> next = issue(c[0], kb, SmallVector<Value>(c.drop_front()));
          next = waitAcc(next, 1);
          release(e.sub(c[0], i32(1)));
          SmallVector<Value> r{e.add(c[0], i32(1))};
          r.append(next.begin(), next.end());
          return r;
        });
    it = out[0];
    accs.assign(out.begin() + 1, out.end());
    // Ping-pong: every wait on a "full" barrier of the unit is behind; the
    // other warpgroup's next unit (the next of the sequence) may start.
    if (t.pingpong)
      e.ifThen(e.icmp(LLVM::ICmpPredicate::ult, e.add(unit, e.nctaidX()), total), [&] {
        NVVM::BarrierArriveOp::create(builder, e.sub(i32(5), wg), i32(256));
      });
    accs = waitAcc(accs, 0);
    // A fence before the epilogue: ptxas would otherwise hoist the
    // epilogue's loads (a bias) above the wait, into the last wgmmas'
    // pipeline stage, and then serialize every wgmma of the kernel (C7514).
    NVVM::MembarOp::create(builder, NVVM::MemScopeKind::CTA);
    release(e.sub(it, i32(1)));

    auto runEpilogue = [&](ArrayRef<Value> finals) {
      // Interior tiles skip the bounds checks.
      absl::Status st = interiorOrEdge(tm, tn, [&](bool guarded) {
        return status.ok() ? epilogue(smem, finals, b, tm, tn, wg, warp, lane, guarded)
                           : absl::OkStatus();
      });
      if (status.ok())
        status = st;
    };

    if (!splits()) {
      runEpilogue(accs);
      // Past the other warpgroup's unit, which comes next in the sequence.
      return {t.pingpong ? e.add(it, i32(numK)) : it};
    }
    // Split-K: this part's accumulators to the workspace, then the last part
    // of the tile (counted atomically) sums every part in order and runs the
    // epilogue. Where only the last wave's tiles are split, a whole tile's
    // accumulators go to the same epilogue (one copy of its code) directly.
    // Stream-K: the tile is whole where the CTA's range covers its K, else
    // its parts are the CTAs first .. last that share it, part p CTA
    // first + p, whose partial sits in slot 2 c (the tile its range starts
    // inside) or 2 c + 1 (the one it ends inside).
    Block *epilogueBlock = nullptr, *after = nullptr;
    if (t.unsplit || t.streamK) {
      Value whole = t.streamK ? e.band(e.icmp(LLVM::ICmpPredicate::eq, kBegin, i32(0)),
                                       e.icmp(LLVM::ICmpPredicate::eq, kEnd, i32(numK)))
                              : wholeUnit(unit);
      epilogueBlock = e.newBlock(SmallVector<Type>(t.rhs, accType));
      Block *parts = e.newBlock();
      after = e.newBlock();
      e.condBr(whole, epilogueBlock, parts, accs, {});
      e.moveToEnd(parts);
      e.setBlock(parts);
    }
    Value tile = t.streamK ? unit : splitTile(unit);
    Value firstCta, lastCta;
    if (t.streamK) {
      Value base = e.mul(e.zext(e.i64, tile), e.i64c(numK));
      firstCta = streamCta(base);
      lastCta = streamCta(e.add(base, e.i64c(numK - 1)));
    }
    auto streamSlot = [&](Value cta) {
      Value startsHere = e.icmp(LLVM::ICmpPredicate::eq,
                                e.trunc(e.i32, e.udiv(streamBegin(cta), e.i64c(numK))), tile);
      return e.add(e.mul(cta, i32(2)), e.select(startsHere, i32(0), i32(1)));
    };
    int64_t regs = t.accRegs();
    // Part p of the tile holds regs floats a consumer thread, in groups of
    // four: group g of every thread, then group g + 1, so that a warp's
    // 16-byte accesses are contiguous.
    auto slot = [&](Value p) { // the thread's first group of part p
      Value u = t.streamK ? streamSlot(e.umin(e.add(firstCta, p), lastCta))
                          : e.add(e.mul(tile, i32(t.split)), p);
      Value index = e.add(e.mul(e.zext(e.i64, u), e.i64c(regs * consumerThreads)),
                          e.mul(e.zext(e.i64, ctid), e.i64c(4)));
      return e.gep(workspace, e.f32, index);
    };
    auto group = [&](Value from, int64_t q) { // floats q..q+3 of the thread
      return e.gep(from, e.f32, e.i64c(q / 4 * 4 * consumerThreads));
    };
    // A thread whose rows (16 warp + lane / 4, and 8 below) are past M holds
    // nothing the epilogue stores: it neither writes nor sums its partials
    // (at decode, M = 1 of a 64-row tile, 4 threads of 128 do).
    Value holds; // null: every thread holds rows
    // Swapped, a thread holds tokens 2 (lane % 4) (+ 1, + 8 j) of the tile.
    if (t.swapped() && l.m % t.m != 0)
      holds = e.icmp(LLVM::ICmpPredicate::slt,
                     e.add(e.mul(tm, i32(t.m)), e.mul(e.urem(lane, i32(4)), i32(2))), i32(l.m));
    else if (l.m % t.m != 0)
      holds = e.icmp(LLVM::ICmpPredicate::slt,
                     e.add(e.add(e.mul(tm, i32(t.m)), e.mul(wgRow, i32(64))),
                           e.add(e.mul(warp, i32(16)), e.udiv(lane, i32(4)))),
                     i32(l.m));
    Value mine = t.streamK ? slot(e.sub(e.ctaidX(), firstCta)) : slot(part);
    auto storePartial = [&] {
      for (int64_t r = 0; r < t.rhs; ++r)
        for (int64_t q = 0; q < t.accCols() / 2; q += 4) {
          SmallVector<Value> four;
          for (int64_t x = 0; x < 4; ++x)
            four.push_back(e.extractValue(accs[r], q + x));
          e.store(e.pack(four), group(mine, r * t.accCols() / 2 + q), 16);
        }
    };
    if (holds)
      e.ifThen(holds, storePartial);
    else
      storePartial();
    Value last = lastPartOfTile(counters, tile, sharedAt(smem, i32(flagOffset)),
                                e.icmp(LLVM::ICmpPredicate::eq, ctid, i32(0)), consumerBarrier,
                                t.streamK ? e.sub(lastCta, firstCta) : Value());
    // Parts to sum: split's, or under stream-K the most CTAs that share a
    // tile, those past the tile's last adding zero (read from its last).
    int64_t partsMost = t.streamK ? streamMaxParts : t.split;
    auto sumAndFinish = [&] {
      LLVM::FenceOp::create(builder, LLVM::AtomicOrdering::acq_rel, "device");
      // The parts summed in order, their loads issued ahead of the sums:
      // chunks of the thread's floats whose loads of every part (at most
      // 128 floats) are in flight together, one round trip to L2 a chunk,
      // not one a part (with the sums, at most 192 floats live). A thread
      // that holds nothing the epilogue stores sums nothing.
      int64_t chunk =
          std::max<int64_t>(4, std::min<int64_t>(regs, std::max<int64_t>(0, 192 - regs) /
                                                           partsMost / 4 * 4));
      auto sumParts = [&]() -> SmallVector<Value> {
        SmallVector<Value> sums(regs, e.f32c(0));
        for (int64_t q0 = 0; q0 < regs; q0 += chunk) {
          int64_t q1 = std::min(regs, q0 + chunk);
          SmallVector<SmallVector<Value>> loaded(partsMost);
          for (int64_t p = 0; p < partsMost; ++p) {
            Value from = slot(i32(p));
            for (int64_t q = q0; q < q1; q += 4)
              loaded[p].push_back(LLVM::LoadOp::create(builder, VectorType::get({4}, e.f32),
                                                       group(from, q), 16,
                                                       /*isVolatile=*/true));
          }
          for (int64_t p = 0; p < partsMost; ++p) {
            Value real = t.streamK && p > 0
                             ? e.icmp(LLVM::ICmpPredicate::ule, e.add(firstCta, i32(p)), lastCta)
                             : Value();
            for (int64_t q = q0; q < q1; q += 4)
              for (int64_t x = 0; x < 4; ++x) {
                Value v = e.extract(loaded[p][(q - q0) / 4], x);
                Value sum = e.fadd(sums[q + x], v);
                sums[q + x] = real ? e.select(real, sum, sums[q + x]) : sum;
              }
          }
        }
        return sums;
      };
      SmallVector<Value> total;
      if (holds) {
        SmallVector<Type> types(regs, e.f32);
        Block *yes = e.newBlock(), *join = e.newBlock(types);
        e.condBr(holds, yes, join, {}, SmallVector<Value>(regs, e.f32c(0)));
        e.setBlock(yes);
        e.br(join, sumParts());
        e.moveToEnd(join);
        e.setBlock(join);
        total.assign(join->getArguments().begin(), join->getArguments().end());
      } else {
        total = sumParts();
      }
      int64_t cols = t.accCols() / 2;
      SmallVector<Value> finals;
      for (int64_t r = 0; r < t.rhs; ++r) {
        Value acc = LLVM::UndefOp::create(builder, accType);
        for (int64_t q = 0; q < cols; ++q)
          acc = LLVM::InsertValueOp::create(builder, acc, total[r * cols + q],
                                            ArrayRef<int64_t>{q});
        finals.push_back(acc);
      }
      if (epilogueBlock)
        e.br(epilogueBlock, finals);
      else
        runEpilogue(finals);
    };
    if (!epilogueBlock) {
      e.ifThen(last, sumAndFinish);
    } else {
      Block *sum = e.newBlock();
      e.condBr(last, sum, after);
      e.moveToEnd(sum);
      e.setBlock(sum);
      sumAndFinish();
      e.moveToEnd(epilogueBlock);
      e.setBlock(epilogueBlock);
      runEpilogue(SmallVector<Value>(epilogueBlock->getArguments()));
      e.br(after);
      e.moveToEnd(after);
      e.setBlock(after);
    }
    // The flag is read before anyone writes the next unit's.
    consumerBarrier();
    return {it};
  });
  // The last stores have read their pieces before the CTA (and its shared
  // memory) ends; their writes complete with the grid.
  if (staging.tma())
    e.ifThen(e.icmp(LLVM::ICmpPredicate::eq, e.urem(ctid, i32(128)), i32(0)), [&] {
      NVVM::CpAsyncBulkWaitGroupOp::create(builder, 0u, builder.getUnitAttr());
    });
  return status;
}

absl::Status MatmulWgmmaEmitter::build() {
  // The swapped tile stores each element from its registers.
  staging = t.swapped() ? WgmmaStaging{} : wgmmaStaging(l);
  t.staging = staging.bytes(t.consumers());
  if (staging.tma()) {
    for (auto [r, offset] : llvm::enumerate(staging.tmaOffset))
      if (offset >= 0)
        tmaOutputs.push_back(static_cast<unsigned>(r));
    tmaBufferBytes = t.staging;
  }
  layoutTiles();
  // The launch gives the kernel the plan's shared memory: a plan made by
  // an older fusec (no staging) must not let the epilogue write past it.
  if (launch.getSmem() < wgmmaSharedBytes(t))
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul_wgmma: the plan's shared memory (", launch.getSmem(), " bytes) is less than the ",
        wgmmaSharedBytes(t), " this tile needs (re-run fusec-tile)"));
  if (numTiles * t.split >= (int64_t(1) << 31))
    return unimplemented(kernel, "more than 2^31 work units");
  if (t.pingpong && t.split > 1)
    return absl::InvalidArgumentError("matmul_wgmma: a ping-pong plan cannot split K");
  if (t.streamK) {
    streamGrid = launch.getGrid();
    StreamKSchedule schedule{numTiles, numK, streamGrid};
    if (t.split != 1 || t.pingpong || t.swapped() || t.resident || !schedule.valid())
      return absl::InvalidArgumentError(absl::StrCat(
          "matmul_wgmma: stream-K over ", schedule.iterations(), " iterations on a grid of ",
          streamGrid,
          " needs a cooperative tile, no split, no resident rhs, fewer than 2^31 iterations and "
          "at most one CTA an iteration (re-run fusec-tile)"));
    // The most CTAs that share one tile: the parts its last one sums.
    streamMaxParts = schedule.maxParts();
  }
  if (t.unsplit && (t.split == 1 || t.unsplit >= numTiles))
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul_wgmma: ", t.unsplit, " unsplit tiles of ", numTiles, " with a split of ", t.split,
        " (re-run fusec-tile)"));
  if (t.resident && t.resident != numK)
    return absl::InvalidArgumentError(
        absl::StrCat("matmul_wgmma: resident rhs tiles hold all ", numK, " k-blocks of K, not ",
                     t.resident, " (re-run fusec-tile)"));
  if (t.resident && residentRhsBlocks(l, t, /*capBytes=*/232448) != numK)
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul_wgmma: resident rhs tiles need one column of tiles (this plan has ", tilesN,
        "), no split, no swapped tile and no batch of rhs (re-run fusec-tile)"));
  if (t.split > 1 && perSplit * (t.split - 1) >= numK)
    return absl::InvalidArgumentError("matmul_wgmma: a split leaves a part of K empty");
  accType = LLVM::LLVMStructType::getLiteral(e.ctx, SmallVector<Type>(t.accCols() / 2, e.f32));

  // Registers capped for setmaxnreg (one CTA an SM); the tensor-map table,
  // then split-K's workspace and counters, are the last parameters.
  SmallVector<NamedAttribute> attrs{builder.getNamedAttr(
      NVVM::NVVMDialect::getMaxntidAttrName(),
      builder.getDenseI32ArrayAttr({static_cast<int32_t>(t.threads())}))};
  attrs.push_back(builder.getNamedAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                                       builder.getI32IntegerAttr(1)));
  // Under programmatic dependent launch the producer loads the weights'
  // first stages before it waits (TmaMatmulEmitter::producer); every other
  // thread waits before the mainloop.
  deferGridWait = pdl() && (readableBeforeWait(l.lhsView.arg.getArgNumber()) ||
                            llvm::any_of(l.rhsViews, [&](const OperandView &v) {
                              return readableBeforeWait(v.arg.getArgNumber());
                            }));
  beginFunction(attrs, /*extra=*/splits() ? 3 : 1);
  table = extraPtrs[0];
  Value workspace = splits() ? extraPtrs[1] : Value();
  Value counters = splits() ? extraPtrs[2] : Value();

  Value smem = alignedSharedMemory();

  Value tid = e.tidX();
  // One thread initializes the barriers: "full" completes on the
  // producer's arrival and the TMA bytes, "empty" on every consumer
  // thread's arrival.
  e.ifThen(e.icmp(LLVM::ICmpPredicate::eq, tid, i32(0)), [&] {
    for (int64_t s = 0; s < t.stages; ++s) {
      NVVM::MBarrierInitOp::create(builder, sharedAt(smem, i32(barrierOffset + 8 * s)), i32(1),
                                   Value());
      NVVM::MBarrierInitOp::create(builder,
                                   sharedAt(smem, i32(barrierOffset + 8 * (t.stages + s))),
                                   i32(128 * (t.pingpong ? 1 : t.consumers())), Value());
    }
    // The resident rhs tiles' barrier: the producer's one arrival and
    // their bytes.
    if (t.resident)
      NVVM::MBarrierInitOp::create(builder, sharedAt(smem, i32(flagOffset + 8)), i32(1), Value());
    NVVM::FenceMbarrierInitOp::create(builder);
  });
  e.barrier();

  Block *producerBlock = e.newBlock(), *consumerBlock = e.newBlock(), *exit = e.newBlock();
  e.condBr(e.icmp(LLVM::ICmpPredicate::ult, tid, i32(128)), producerBlock, consumerBlock);

  // Two consumer warpgroups need more registers than an even share of 384
  // threads: the producer gives them back. With one, 256 threads have 255
  // each and nothing moves.
  bool rebalance = t.consumers() > 1;
  e.setBlock(producerBlock);
  if (rebalance)
    NVVM::SetMaxRegisterOp::create(builder, kProducerRegs, NVVM::SetMaxRegisterAction::decrease);
  e.ifThen(e.icmp(LLVM::ICmpPredicate::eq, tid, i32(0)), [&] { producer(smem, table); });
  e.br(exit);

  e.moveToEnd(consumerBlock);
  e.setBlock(consumerBlock);
  if (rebalance)
    NVVM::SetMaxRegisterOp::create(builder, kConsumerRegs, NVVM::SetMaxRegisterAction::increase);
  if (deferGridWait)
    gridWait();
  if (auto st = consumer(smem, tid, workspace, counters); !st.ok())
    return st;
  e.br(exit);

  e.moveToEnd(exit);
  e.setBlock(exit);
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

absl::StatusOr<TensorCoreKernel> emitMatmulWgmma(const StrategyInput &in) {
  std::string why;
  auto layout = analyzeMatmul(in.kernel, in.shape, &why);
  if (!layout)
    return unimplemented(in.kernel, "matmul_wgmma cannot take this kernel: " + why);
  auto tile = in.launch.getTile();
  int64_t rhs = static_cast<int64_t>(layout->rhs.size());
  // A swapped (decode) tile: 8 to 56 token rows by 64 or 128 weights.
  if (tile.size() == 3 && tile[0] < 64) {
    if (tile[0] < 8 || tile[0] % 8 != 0 || (tile[1] != 64 && tile[1] != 128) || tile[2] != 64)
      return absl::InvalidArgumentError("matmul_wgmma's swapped tile is 8 to 56 rows (a multiple "
                                        "of 8) by 64 or 128 columns with 64 K a stage");
    if (!swapReadable(*layout))
      return absl::InvalidArgumentError("matmul_wgmma's swapped tile takes at most two rhs and a K-major "
                                        "lhs (re-run fusec-tile)");
    if (in.launch.getBlock() != 128 * (1 + tile[1] / 64))
      return absl::InvalidArgumentError("matmul_wgmma's swapped tile runs a producer and a "
                                        "consumer warpgroup per 64 columns");
    MatmulWgmmaEmitter emitter(in, *layout);
    if (auto st = emitter.build(); !st.ok())
      return st;
    return TensorCoreKernel{emitter.tensorMaps(), emitter.scratch()};
  }
  if (tile.size() != 3 || (tile[0] != 64 && tile[0] != 128) ||
      (tile[1] != 64 && tile[1] != 128 && tile[1] != 192 && tile[1] != 256) ||
      tile[2] != 64 || tile[1] * rhs > 256)
    return absl::InvalidArgumentError(
        "matmul_wgmma builds 64 or 128 x 64, 128, 192 or 256 tiles with 64 K a stage, at most "
        "256 accumulator columns");
  if (in.launch.getBlock() != 128 * (1 + tile[0] / 64) &&
      !(tile[0] == 64 && in.launch.getBlock() == 384))
    return absl::InvalidArgumentError("matmul_wgmma runs a producer and a consumer warpgroup "
                                      "per 64 rows of the tile, or two ping-pong consumers of "
                                      "64-row tiles (384 threads)");
  MatmulWgmmaEmitter emitter(in, *layout);
  if (auto st = emitter.build(); !st.ok())
    return st;
  return TensorCoreKernel{emitter.tensorMaps(), emitter.scratch()};
}

} // namespace fusec::codegen
