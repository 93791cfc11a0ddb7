//===- Columns.cpp - column: reductions over leading or middle dims -*- C++ -*-===//
//
// The reduced dims lead (or sit between an outer and an inner block): a CTA
// of 8 x 32 threads takes a tile of 32 column groups of `vector` adjacent
// columns (16-byte loads along a row of the input, coalesced across the
// warp); its 8 warps split the reduced rows, then combine their partials in
// shared memory (one barrier per reduction; slots alternate with the tile's
// parity). Sums accumulate in f64: a thread adds rows/8 values in sequence,
// too many for f32 against an f64 reference. Outputs of the element shape
// take another pass over the rows; those of the column shape are stored by
// the first warp. lit: test/lit/CodeGen/columns.mlir.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include <map>

using namespace mlir;

namespace fusec::codegen {

namespace {

class ColumnsEmitter : public ElementwiseEmitter {
public:
  using ElementwiseEmitter::ElementwiseEmitter;
  absl::Status build() override;

protected:
  absl::StatusOr<Value> reduction(ReduceOp op, Value, int lane) override {
    auto it = columnTotals.find({op.getResult().getAsOpaquePointer(), lane});
    if (it == columnTotals.end())
      return absl::InternalError("fusec codegen: a column reduction used before its loop "
                                 "(internal ordering error)");
    return it->second;
  }

private:
  /// The loaded lanes of every full-shape operand at flat index `base`.
  void vectorLoads(Value base) {
    for (BlockArgument arg : body.getArguments())
      if (isFull(arg))
        lanes[arg.getArgNumber()] = unpack(loadRaw(arg, base, vector), false);
  }
  absl::StatusOr<SmallVector<Value>> laneValues(Value v, Value base) {
    laneIndex.clear();
    for (int64_t l = 0; l < vector; ++l)
      laneIndex.push_back(l ? e.add(base, e.i64c(l)) : base);
    SmallVector<Value> out;
    for (int64_t l = 0; l < vector; ++l) {
      auto x = eval(v, laneIndex[l], static_cast<int>(l));
      if (!x.ok())
        return x.status();
      out.push_back(*x);
    }
    return out;
  }

  std::map<std::pair<const void *, int>, Value> columnTotals;
};

absl::Status ColumnsEmitter::build() {
  Operation *yield = body.getTerminator();
  int64_t columns = shape.rows; // the kept extent
  int64_t reducedRows = shape.rowLength;
  int64_t inner = shape.columnInner;
  const int64_t slices = 8, groupsPerTile = 32;
  int64_t numReductions = static_cast<int64_t>(shape.reductions.size());
  if (2 * numReductions * slices * groupsPerTile * vector * 8 > 40 * 1024)
    return unimplemented(kernel, "a column kernel with this many reductions "
                                 "(their partials exceed 40 KiB of shared memory)");
  int64_t groups = (columns + vector - 1) / vector;
  int64_t tiles = (groups + groupsPerTile - 1) / groupsPerTile;
  int64_t regionFloats = slices * groupsPerTile * vector;

  beginFunction();
  Value tid = e.zext64(e.tidX());
  Value ctaid = e.zext64(e.ctaidX());
  Value nctaid = e.zext64(e.nctaidX());
  Value x = e.band(tid, e.i64c(groupsPerTile - 1));
  Value y = e.lshr(tid, e.i64c(5));
  Value partials = e.sharedArray(module, "__fusec_partials", e.f64, 2 * numReductions * regionFloats);
  // Element (row r, column c) of the input: (c / inner) * rows * inner +
  // r * inner + c % inner (c itself when the reduced dims lead).
  Value colCount = e.i64c(inner), rowCount = e.i64c(reducedRows), step = e.i64c(slices);
  absl::Status status = absl::OkStatus();

  e.loop(ctaid, e.i64c(tiles), nctaid, {e.i64c(0)},
         [&](Value tile, ValueRange carried) -> SmallVector<Value> {
    Value parity = carried[0];
    clearMemo();
    columnTotals.clear();
    Value group = e.add(e.mul(tile, e.i64c(groupsPerTile)), x);
    Value valid = e.icmp(LLVM::ICmpPredicate::ult, group, e.i64c(groups));
    // Threads past the last group work on group 0 (they must reach the
    // barriers) and store nothing.
    Value col = e.mul(e.select(valid, group, e.i64c(0)), e.i64c(vector));
    SmallVector<Value> colLane;
    for (int64_t l = 0; l < vector; ++l)
      colLane.push_back(l ? e.add(col, e.i64c(l)) : col);
    Value colStart = inner == columns
                         ? col
                         : e.add(e.mul(e.udiv(col, e.i64c(inner)), e.i64c(reducedRows * inner)),
                                 e.urem(col, e.i64c(inner)));

    for (auto [k, rc] : llvm::enumerate(shape.reductions)) {
      ReduceOp r = rc;
      ReduceKind kind = r.getKind();
      // Float sums accumulate in f64, integers in their own type; the
      // partials cross shared memory as 8 bytes (f64, or i64).
      Type intType = reductionAccType(e, r);
      bool isInt = isa<IntegerType>(intType);
      bool wide = !isInt && (kind == ReduceKind::sum || kind == ReduceKind::mean);
      Type acct = isInt ? intType : wide ? e.f64 : e.f32;
      Type slotType = isInt ? e.i64 : e.f64;
      SmallVector<Value> inits;
      for (int64_t l = 0; l < vector; ++l)
        inits.push_back(reductionIdentity(e, kind, acct));
      SmallVector<Value> acc = e.loop(
          y, rowCount, step, inits, [&](Value rowIv, ValueRange accs) -> SmallVector<Value> {
            openScope();
            Value base = e.add(e.mul(rowIv, colCount), colStart);
            if (vector > 1) {
              vectorPath = true;
              vectorLoads(base);
            }
            auto vals = laneValues(r.getInput(), base);
            vectorPath = false;
            SmallVector<Value> next(accs.begin(), accs.end());
            if (vals.ok()) {
              for (int64_t l = 0; l < vector; ++l)
                next[l] = reductionCombine(e, kind, accs[l],
                                           wide ? e.fpext(e.f64, (*vals)[l]) : (*vals)[l]);
            } else {
              status = vals.status();
            }
            closeScope();
            return next;
          });
      if (!status.ok())
        return {parity};
      // Partials of the 8 slices through shared memory.
      Value region = e.mul(e.add(e.mul(parity, e.i64c(numReductions)), e.i64c(static_cast<int64_t>(k))),
                           e.i64c(regionFloats));
      auto slot = [&](Value slice, int64_t l) {
        Value i = e.add(region, e.add(e.mul(e.add(e.mul(slice, e.i64c(groupsPerTile)), x),
                                            e.i64c(vector)),
                                      e.i64c(l)));
        return e.gep(partials, slotType, i);
      };
      for (int64_t l = 0; l < vector; ++l)
        e.store(isInt  ? (acct == e.i64 ? acc[l] : e.sext(e.i64, acc[l]))
                : wide ? acc[l]
                       : e.fpext(e.f64, acc[l]),
                slot(y, l));
      e.barrier();
      for (int64_t l = 0; l < vector; ++l) {
        Value total;
        for (int64_t s = 0; s < slices; ++s) {
          Value v = e.load(slotType, slot(e.i64c(s), l));
          if (isInt && acct != e.i64)
            v = e.trunc(acct, v);
          else if (!isInt && !wide)
            v = e.fptrunc(e.f32, v);
          total = total ? reductionCombine(e, kind, total, v) : v;
        }
        if (kind == ReduceKind::mean)
          total = e.fdiv(total, e.f64c(static_cast<double>(reducedRows)));
        if (wide)
          total = e.fptrunc(e.f32, total);
        columnTotals[{r.getResult().getAsOpaquePointer(), static_cast<int>(l)}] =
            roundTo(total, r.getType());
      }
    }

    // Outputs of the element shape: another pass over the rows.
    SmallVector<unsigned> full, perColumn;
    for (auto [i, o] : llvm::enumerate(yield->getOperands()))
      (isFull(o) ? full : perColumn).push_back(static_cast<unsigned>(i));
    if (!full.empty())
      e.loop(y, rowCount, step, {}, [&](Value rowIv, ValueRange) -> SmallVector<Value> {
        openScope();
        Value base = e.add(e.mul(rowIv, colCount), colStart);
        if (vector > 1) {
          vectorPath = true;
          vectorLoads(base);
        }
        SmallVector<std::pair<unsigned, SmallVector<Value>>> stores;
        for (unsigned i : full) {
          auto vals = laneValues(yield->getOperand(i), base);
          if (!vals.ok()) {
            status = vals.status();
            break;
          }
          stores.push_back({i, *vals});
        }
        vectorPath = false;
        closeScope();
        e.ifThen(valid, [&] {
          for (auto &[i, lanes] : stores)
            storeVector(i, lanes, base);
        });
        return {};
      });
    // Outputs of the column shape: the first warp stores them.
    if (!perColumn.empty()) {
      SmallVector<std::tuple<unsigned, Value, Value>> stores;
      for (unsigned i : perColumn)
        for (int64_t l = 0; l < vector; ++l) {
          auto v = eval(yield->getOperand(i), colLane[l], static_cast<int>(l));
          if (!v.ok()) {
            status = v.status();
            return {parity};
          }
          stores.push_back({i, *v, colLane[l]});
        }
      e.ifThen(e.band(e.icmp(LLVM::ICmpPredicate::eq, y, e.i64c(0)), valid), [&] {
        for (auto &[i, v, at] : stores)
          storeResult(i, v, at);
      });
    }
    return {e.bxor(parity, e.i64c(1))};
  });
  if (!status.ok())
    return status;
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

} // namespace

absl::Status emitColumns(const StrategyInput &in) { return ColumnsEmitter(in).build(); }

} // namespace fusec::codegen
