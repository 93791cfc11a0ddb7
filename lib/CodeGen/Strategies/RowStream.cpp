//===- RowStream.cpp - row_stream: a warp per row, streamed -----*- C++ -*-===//
//
// Rows too long for registers, and reductions over dims apart
// (MeanVarianceNormalization's 0, 2, 3: each element found through its
// coordinates). A warp per row, 8 rows a CTA, a grid-stride loop over rows.
// For each pass (below) a loop over the row's columns, lanes 32
// apart (coalesced), then a shfl.sync butterfly; softmax's max and sum, and
// layer_norm's mean and variance, share one pass (online softmax, Welford),
// and reductions that do not depend on each other share a pass too
// (rowStreamPasses: cross-entropy reads its row once). A last loop writes
// the outputs of the element shape, and lane 0 those of the row shape.
// lit: test/lit/CodeGen/row-stream.mlir.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

using namespace mlir;

namespace fusec::codegen {

namespace {

class RowStreamEmitter : public KernelEmitter {
public:
  RowStreamEmitter(const StrategyInput &in)
      : KernelEmitter(in.kernel, in.launch, in.options, in.module), shape(in.shape) {
    domain = shape.domain;
    vec = std::max<int64_t>(1, launch.getVector());
    if (shape.kind != KernelShape::Kind::Rows || shape.rowLength % vec != 0)
      vec = 1;
  }

  absl::Status build() override;

protected:
  absl::StatusOr<Value> reduction(ReduceOp op, Value, int) override {
    auto it = rowTotals.find(op.getResult());
    if (it == rowTotals.end())
      return absl::InternalError("fusec codegen: a reduction used before its row loop "
                                 "(internal ordering error)");
    return it->second;
  }

  /// A lane of a run (a lane's `vec` adjacent columns, read through
  /// movement ops that keep them adjacent): the run's vector load, made at
  /// lane 0.
  Value argument(BlockArgument arg, Value index, int lane) override {
    if (auto run = runOf(index))
      if (Value v = runLane(arg, *run))
        return v;
    return load(arg, index);
  }

private:
  const KernelShape &shape;
  llvm::DenseMap<Value, Value> rowTotals;
  /// Adjacent columns a lane reads at once in the reduction passes (the
  /// launch's vector: 16 bytes of the widest full-shape input; 1 for dims
  /// apart or a row length it does not divide).
  int64_t vec = 1;
};

absl::Status RowStreamEmitter::build() {
  bool apart = shape.kind == KernelShape::Kind::RowsApart;
  int64_t rowLength = shape.rowLength;
  const auto &reductions = shape.reductions;
  Operation *yield = body.getTerminator();
  beginFunction();
  Value tid = e.tidX();
  Value ctaid = e.zext64(e.ctaidX());
  Value ntid = e.ntidX();
  Value nctaid = e.zext64(e.nctaidX());
  Value lane = e.zext64(e.band(tid, e.i32c(31)));
  Value warp = e.zext64(e.lshr(tid, e.i32c(5)));
  Value warps = e.zext64(e.lshr(ntid, e.i32c(5)));
  Value row0 = e.add(e.mul(ctaid, warps), warp);
  Value rowStep = e.mul(nctaid, warps);
  Value length = e.i64c(rowLength);
  absl::Status status = absl::OkStatus();

  e.loop(row0, e.i64c(shape.rows), rowStep, {}, [&](Value row, ValueRange) -> SmallVector<Value> {
    Value rowBase = e.mul(row, length);
    clearMemo();
    rowTotals.clear();
    // The flat domain index of column `col` of this row: rowBase + col, or
    // through the coordinates when the reduced dims are apart.
    auto extents = [&](ArrayRef<int64_t> dims) {
      SmallVector<int64_t> s;
      for (int64_t d : dims)
        s.push_back(domain[d]);
      return s;
    };
    SmallVector<Value> keptCoords;
    if (apart)
      keptCoords = coordinates(row, extents(shape.keptDims));
    auto element = [&](Value col) {
      if (!apart)
        return e.add(rowBase, col);
      SmallVector<Value> rc = coordinates(col, extents(shape.reducedDims));
      SmallVector<Value> all(domain.size());
      for (auto [i, d] : llvm::enumerate(shape.keptDims))
        all[d] = keptCoords[i];
      for (auto [i, d] : llvm::enumerate(shape.reducedDims))
        all[d] = rc[i];
      return linearize(all, domain);
    };
    // The passes over the row (rowStreamPasses): each reads the row once
    // for all of its units, every unit with its own state.
    for (const auto &units : rowStreamPasses(reductions)) {
      if (!status.ok())
        break;
      SmallVector<Value> init;
      SmallVector<unsigned> at; // each unit's first state slot
      for (const PassUnit &u : units) {
        at.push_back(static_cast<unsigned>(init.size()));
        if (u.pair != PairKind::None) {
          llvm::append_range(init, pairInit(e, u.pair));
        } else {
          ReduceOp r = reductions[u.first];
          init.push_back(reductionIdentity(e, r.getKind(), reductionAccType(e, r)));
        }
      }
      // Lane l starts at column l * vec; a step is 32 * vec columns.
      SmallVector<Value> total =
          e.loop(vec > 1 ? e.mul(lane, e.i64c(vec)) : lane, length, e.i64c(32 * vec), init,
                 [&](Value col, ValueRange state) -> SmallVector<Value> {
                   openScope();
                   SmallVector<Value> idx{element(col)};
                   for (int64_t l = 1; l < vec; ++l)
                     idx.push_back(e.add(idx[0], e.i64c(l)));
                   if (vec > 1)
                     startRuns(vec, idx);
                   SmallVector<Value> next(state.begin(), state.end());
                   for (int64_t l = 0; l < vec && status.ok(); ++l)
                   for (auto [i, u] : llvm::enumerate(units)) {
                     ReduceOp r = reductions[u.first];
                     auto x = eval(r.getInput(), idx[l], static_cast<int>(l));
                     if (!x.ok()) {
                       status = x.status();
                       break;
                     }
                     unsigned n = u.pair == PairKind::None ? 1 : u.pair == PairKind::OnlineSoftmax ? 2 : 3;
                     SmallVector<Value> st(next.begin() + at[i], next.begin() + at[i] + n);
                     SmallVector<Value> upd =
                         u.pair != PairKind::None
                             ? pairUpdate(e, u.pair, st, *x)
                             : SmallVector<Value>{reductionCombine(
                                   e, r.getKind(), st[0], *x)};
                     std::copy(upd.begin(), upd.end(), next.begin() + at[i]);
                   }
                   endRuns();
                   closeScope();
                   return next;
                 });
      if (!status.ok())
        break;
      for (auto [i, u] : llvm::enumerate(units)) {
        ReduceOp a = reductions[u.first];
        if (u.pair == PairKind::None) {
          ReduceKind kind = a.getKind();
          Value t = warpReduce(e, kind, total[at[i]]);
          if (kind == ReduceKind::mean)
            t = e.fdiv(t, e.f32c(static_cast<double>(rowLength)));
          rowTotals[a.getResult()] = roundTo(t, a.getType());
          continue;
        }
        unsigned n = u.pair == PairKind::OnlineSoftmax ? 2 : 3;
        SmallVector<Value> pt(total.begin() + at[i], total.begin() + at[i] + n);
        for (int offset : {16, 8, 4, 2, 1}) {
          SmallVector<Value> other;
          for (Value v : pt)
            other.push_back(e.shflBfly(v, offset));
          pt = pairCombine(e, u.pair, pt, other);
        }
        ReduceOp b = reductions[u.first + 1];
        if (u.pair == PairKind::OnlineSoftmax) {
          rowTotals[a.getResult()] = pt[0];
          rowTotals[b.getResult()] = pt[1];
        } else {
          rowTotals[a.getResult()] = pt[1];
          rowTotals[b.getResult()] = e.fdiv(pt[2], e.f32c(static_cast<double>(rowLength)));
        }
      }
    }
    if (!status.ok())
      return {};

    // Outputs of the element shape: a last pass over the row.
    SmallVector<unsigned> full, perRow;
    for (auto [i, o] : llvm::enumerate(yield->getOperands()))
      (isFull(o) ? full : perRow).push_back(static_cast<unsigned>(i));
    if (!full.empty())
      e.loop(lane, length, e.i64c(32), {}, [&](Value col, ValueRange) -> SmallVector<Value> {
        openScope();
        Value idx = element(col);
        for (unsigned i : full) {
          auto v = eval(yield->getOperand(i), idx, 0);
          if (!v.ok()) {
            status = v.status();
            break;
          }
          storeResult(i, *v, idx);
        }
        closeScope();
        return {};
      });
    // Outputs of the row shape: lane 0 writes them.
    e.ifThen(e.icmp(LLVM::ICmpPredicate::eq, lane, e.i64c(0)), [&] {
      openScope();
      for (unsigned i : perRow) {
        auto v = eval(yield->getOperand(i), row, 0);
        if (!v.ok()) {
          status = v.status();
          break;
        }
        storeResult(i, *v, row);
      }
      closeScope();
    });
    return {};
  });
  if (!status.ok())
    return status;
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

} // namespace

absl::Status emitRowStream(const StrategyInput &in) { return RowStreamEmitter(in).build(); }

} // namespace fusec::codegen
