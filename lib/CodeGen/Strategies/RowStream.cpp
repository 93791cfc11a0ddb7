//===- RowStream.cpp - row_stream: a warp per row, streamed -----*- C++ -*-===//
//
// Rows too long for registers, and reductions over dims apart
// (MeanVarianceNormalization's 0, 2, 3: each element found through its
// coordinates). A warp per row, 8 rows a CTA, a grid-stride loop over rows.
// For each reduction (in order) a loop over the row's columns, lanes 32
// apart (coalesced), then a shfl.sync butterfly; softmax's max and sum, and
// layer_norm's mean and variance, share one pass (online softmax, Welford),
// so those rows are read twice. A last loop writes the outputs of the
// element shape, and lane 0 those of the row shape.
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

private:
  const KernelShape &shape;
  llvm::DenseMap<Value, Value> rowTotals;
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
    // One pass over the row: `step(x, state)` per element at index `idx`.
    auto pass = [&](Value input, ValueRange init,
                    function_ref<SmallVector<Value>(Value, ValueRange)> step) {
      return e.loop(lane, length, e.i64c(32), init,
                    [&](Value col, ValueRange state) -> SmallVector<Value> {
                      openScope();
                      auto x = eval(input, element(col), 0);
                      SmallVector<Value> next;
                      if (x.ok())
                        next = step(*x, state);
                      else
                        status = x.status(), next.assign(state.begin(), state.end());
                      closeScope();
                      return next;
                    });
    };
    for (size_t k = 0; k < reductions.size() && status.ok(); ++k) {
      PairKind pair = k + 1 < reductions.size() ? pairKind(reductions[k], reductions[k + 1])
                                                : PairKind::None;
      if (pair != PairKind::None) {
        ReduceOp a = reductions[k], b = reductions[k + 1];
        SmallVector<Value> total =
            pass(a.getInput(), pairInit(e, pair), [&](Value x, ValueRange st) {
              return pairUpdate(e, pair, SmallVector<Value>(st), x);
            });
        for (int offset : {16, 8, 4, 2, 1}) {
          SmallVector<Value> other;
          for (Value v : total)
            other.push_back(e.shflBfly(v, offset));
          total = pairCombine(e, pair, total, other);
        }
        if (pair == PairKind::OnlineSoftmax) {
          rowTotals[a.getResult()] = total[0];
          rowTotals[b.getResult()] = total[1];
        } else {
          rowTotals[a.getResult()] = total[1];
          rowTotals[b.getResult()] = e.fdiv(total[2], e.f32c(static_cast<double>(rowLength)));
        }
        ++k;
        continue;
      }
      ReduceOp r = reductions[k];
      ReduceKind kind = r.getKind();
      Value total = pass(r.getInput(), {reductionIdentity(e, kind, reductionAccType(e, r))},
                         [&](Value x, ValueRange acc) -> SmallVector<Value> {
                           return {reductionCombine(e, kind, acc[0], x)};
                         })[0];
      total = warpReduce(e, kind, total);
      if (kind == ReduceKind::mean)
        total = e.fdiv(total, e.f32c(static_cast<double>(rowLength)));
      rowTotals[r.getResult()] = roundTo(total, r.getType());
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
