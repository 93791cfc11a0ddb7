//===- Columns.cpp - column: reductions over leading or middle dims -*- C++ -*-===//
//
// The reduced dims lead (or sit between an outer and an inner block): a CTA
// of 256 threads is `groups` threads side by side on a row (each a group of
// `vector` adjacent columns: 16-byte loads along the row, coalesced) times
// `slices` = 256 / groups rows at once (the launch's rows; fusec-tile takes
// 32 groups while the column tiles fill the SMs, else 16 or 8). The slices
// split the reduced rows; a warp's slices (32 / groups of them) combine by
// butterfly shuffles, then the 8 warps' partials go through shared memory
// (one barrier per reduction; slots alternate with the tile's parity) and
// are added in warp order. Sums accumulate in f64: a thread adds rows/slices
// values in sequence, too many for f32 against an f64 reference. Outputs of
// the element shape take another pass over the rows; those of the column
// shape are stored by the first slice.
//
// Split (launch split > 1; few column tiles over many rows, as a bias
// gradient's 16k x 4k -> 4k): the reduced rows are cut into `split` parts,
// a work unit is (tile, part), and each unit writes its columns' partials (8
// bytes each) to a workspace; in the unit that finishes a tile last (an
// atomic counter) helper y < 8 sums parts y, y + 8, ... and the first slice
// sums the 8 helpers' sums, in that fixed order (the result does not depend
// on which finished last), stores the column outputs and resets the
// counter. Only kernels whose outputs all have the column shape and whose
// reductions do not read each other split. lit: test/lit/CodeGen/columns.mlir,
// column-geometry.mlir.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include <cstdlib>
#include <map>
#include <string_view>

using namespace mlir;

namespace fusec::codegen {

namespace {

/// Whether `a` and `b` are a mean and the variance about it that one pass
/// takes as shifted sums (below). FUSEC_COLUMN_SHIFTED=0: not (the variance
/// reads the mean in a second pass over the rows), for measurement.
bool columnPair(ReduceOp a, ReduceOp b) {
  static const bool off = [] {
    const char *v = std::getenv("FUSEC_COLUMN_SHIFTED");
    return v && std::string_view(v) == "0";
  }();
  return !off && pairKind(a, b) == PairKind::Welford;
}

class ColumnsEmitter : public ElementwiseEmitter {
public:
  using ElementwiseEmitter::ElementwiseEmitter;
  absl::Status build() override { return buildSplit().status(); }
  /// Builds the kernel; returns its scratch buffers' sizes (split's
  /// workspace and counters).
  absl::StatusOr<SmallVector<int64_t>> buildSplit();

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

absl::StatusOr<SmallVector<int64_t>> ColumnsEmitter::buildSplit() {
  Operation *yield = body.getTerminator();
  int64_t columns = shape.rows; // the kept extent
  int64_t reducedRows = shape.rowLength;
  // Rows a thread loads before it combines them (all in flight at once):
  // the launch's chunks.
  int64_t kUnroll = launch.getChunks();
  int64_t inner = shape.columnInner;
  // The CTA's geometry: `slices` rows at once (the launch's rows), each
  // read by `groupsPerTile` threads side by side; a warp holds 32 /
  // groupsPerTile slices, which it combines by shuffles before the warps
  // combine through shared memory.
  int64_t block = launch.getBlock();
  int64_t slices = launch.getRows() ? launch.getRows() : 8;
  int64_t groupsPerTile = block / slices;
  int64_t warps = block / 32;
  if (block % 32 != 0 || groupsPerTile < 1 || groupsPerTile > 32 ||
      32 % groupsPerTile != 0 || groupsPerTile * slices != block)
    return absl::InvalidArgumentError(
        "column: the block must be whole warps of slices of 1 to 32 (a power of two) groups");
  int64_t slicesPerWarp = 32 / groupsPerTile;
  // The split's last part sums the parts with one helper a warp.
  const int64_t helpers = warps;
  int64_t numReductions = static_cast<int64_t>(shape.reductions.size());
  if (2 * numReductions * warps * groupsPerTile * vector * 8 > 40 * 1024)
    return unimplemented(kernel, "a column kernel with this many reductions "
                                 "(their partials exceed 40 KiB of shared memory)");
  int64_t groups = (columns + vector - 1) / vector;
  int64_t tiles = (groups + groupsPerTile - 1) / groupsPerTile;
  int64_t regionFloats = warps * groupsPerTile * vector;
  int64_t split = launch.getSplit();
  int64_t perPart = (reducedRows + split - 1) / split;
  if (split > 1 && perPart * (split - 1) >= reducedRows)
    return absl::InvalidArgumentError("column: a split leaves a part of the rows empty");
  if (split > 1)
    for (Value o : yield->getOperands())
      if (isFull(o))
        return absl::InvalidArgumentError(
            "column: a split kernel has outputs of the column shape only (re-run fusec-tile)");
  // A unit's partials in the workspace: numReductions x 32 groups x vector.
  int64_t unitSlots = numReductions * groupsPerTile * vector;

  // No register bound by default. A kernel with a Welford pair (two f64
  // sums a lane) takes 128 registers at 8 lanes (two CTAs an SM; at 80,
  // three, ptxas spills about 90 bytes unless 4 rows are in flight).
  // (FUSEC_COLUMN_MIN_CTAS=N, for measurement: .maxntid and .minnctapersm
  // N.)
  int64_t minCtas = 0;
  if (const char *v = std::getenv("FUSEC_COLUMN_MIN_CTAS"); v && *v)
    minCtas = std::clamp<int64_t>(std::atoll(v), 0, 8);
  SmallVector<NamedAttribute> attrs;
  if (minCtas > 0) {
    attrs.push_back(builder.getNamedAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                                         builder.getDenseI32ArrayAttr({static_cast<int32_t>(block)})));
    attrs.push_back(builder.getNamedAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                                         builder.getI32IntegerAttr(static_cast<int32_t>(minCtas))));
  }
  beginFunction(attrs, /*extra=*/split > 1 ? 2 : 0);
  Value workspace = split > 1 ? extraPtrs[0] : Value();
  Value counters = split > 1 ? extraPtrs[1] : Value();
  Value flag = split > 1 ? e.sharedArray(module, "__fusec_last", e.i32, 1) : Value();
  Value tid = e.zext64(e.tidX());
  Value ctaid = e.zext64(e.ctaidX());
  Value nctaid = e.zext64(e.nctaidX());
  Value x = e.band(tid, e.i64c(groupsPerTile - 1));
  Value y = e.udiv(tid, e.i64c(groupsPerTile));
  Value warp = e.lshr(tid, e.i64c(5));
  // The thread of its warp that writes the warp's partials (slice 0 of it).
  Value warpWriter = e.icmp(LLVM::ICmpPredicate::eq, e.band(y, e.i64c(slicesPerWarp - 1)),
                            e.i64c(0));
  Value partials = e.sharedArray(module, "__fusec_partials", e.f64, 2 * numReductions * regionFloats);
  // Element (row r, column c) of the input: (c / inner) * rows * inner +
  // r * inner + c % inner (c itself when the reduced dims lead).
  Value colCount = e.i64c(inner), rowCount = e.i64c(reducedRows), step = e.i64c(slices);
  // rows x inner: wraps (as the strides do) where it passes int64, which
  // only a tensor with an empty dim reaches; none of its elements is indexed.
  Value rowBlock = e.i64c(static_cast<int64_t>(static_cast<uint64_t>(reducedRows) *
                                            static_cast<uint64_t>(inner)));
  absl::Status status = absl::OkStatus();

  e.loop(ctaid, e.i64c(tiles * split), nctaid, {e.i64c(0)},
         [&](Value unit, ValueRange carried) -> SmallVector<Value> {
    Value parity = carried[0];
    // Units run tile by tile: a tile's parts side by side. (Part by part,
    // so that the CTAs running at once read whole rows, measured 2-18%
    // slower on the H200: bench/results/2026-12-05-h200-column-geometry.)
    Value tile = split > 1 ? e.udiv(unit, e.i64c(split)) : unit;
    Value part = split > 1 ? e.urem(unit, e.i64c(split)) : Value();
    // This unit's rows: [rowBegin, rowEnd), the warps 8 apart.
    Value rowBegin = split > 1 ? e.mul(part, e.i64c(perPart)) : e.i64c(0);
    Value rowEnd = split > 1 ? e.umin(e.add(rowBegin, e.i64c(perPart)), rowCount) : rowCount;
    // The 8-byte partial of every reduction and lane, before its
    // conversion: combined across the parts when split.
    SmallVector<SmallVector<Value>> slotTotals;
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
                         : e.add(e.mul(e.udiv(col, e.i64c(inner)), rowBlock),
                                 e.urem(col, e.i64c(inner)));

    // A Welford pair's shift (below): the column's first element, a lane
    // each, by the pair's first reduction.
    std::map<size_t, SmallVector<Value>> shifts;
    // A reduction's totals as the outputs read them: divided (means),
    // narrowed.
    auto finishOne = [&](ReduceOp r, ArrayRef<Value> totals) {
      ReduceKind kind = r.getKind();
      bool wide = isa<FloatType>(getElementTypeOrSelf(r.getType())) &&
                  (kind == ReduceKind::sum || kind == ReduceKind::mean);
      for (int64_t l = 0; l < vector; ++l) {
        Value total = totals[l];
        if (kind == ReduceKind::mean)
          total = e.fdiv(total, e.f64c(static_cast<double>(reducedRows)));
        if (wide)
          total = e.fptrunc(e.f32, total);
        columnTotals[{r.getResult().getAsOpaquePointer(), static_cast<int>(l)}] =
            roundTo(total, r.getType());
      }
    };
    // A Welford pair's shifted sums S1, S2 (f64): the mean s + S1 / n and the
    // variance S2 / n - (S1 / n)^2, not below 0.
    auto finishPair = [&](size_t k, ArrayRef<Value> s1, ArrayRef<Value> s2) {
      ReduceOp mean = shape.reductions[k], var = shape.reductions[k + 1];
      ArrayRef<Value> shift = shifts[k];
      Value n = e.f64c(static_cast<double>(reducedRows));
      for (int64_t l = 0; l < vector; ++l) {
        Value d = e.fdiv(s1[l], n);
        Value m = e.fadd(e.fpext(e.f64, shift[l]), d);
        Value v = e.fsub(e.fdiv(s2[l], n), e.fmul(d, d));
        v = e.select(e.fcmp(LLVM::FCmpPredicate::olt, v, e.f64c(0)), e.f64c(0), v);
        columnTotals[{mean.getResult().getAsOpaquePointer(), static_cast<int>(l)}] =
            roundTo(e.fptrunc(e.f32, m), mean.getType());
        columnTotals[{var.getResult().getAsOpaquePointer(), static_cast<int>(l)}] =
            roundTo(e.fptrunc(e.f32, v), var.getType());
      }
    };
    // A mean and the variance about it (the variance reads the mean) make
    // a Welford pair: one pass takes both as sums shifted by the column's
    // first element s, S1 = sum(x - s) and S2 = sum((x - s)^2), which
    // combine by addition like any sum (so the kernel may split its rows);
    // then mean = s + S1 / n and var = S2 / n - (S1 / n)^2 (in f64). The
    // shift keeps the difference well conditioned: its error, relative to
    // the variance, is about 2^-24 (1 + (s - mean)^2 / var) from the f32
    // squares. FUSEC_COLUMN_SHIFTED=0: the variance reads the mean in a
    // second pass over the rows, as before (for measurement).
    for (size_t k = 0; k < shape.reductions.size(); ++k) {
      ReduceOp r = shape.reductions[k];
      bool pair = k + 1 < shape.reductions.size() && columnPair(r, shape.reductions[k + 1]);
      ReduceKind kind = r.getKind();
      int nacc = pair ? 2 : 1;
      if (pair) {
        clearMemo();
        auto first = laneValues(r.getInput(), colStart);
        if (!first.ok()) {
          status = first.status();
          return {parity};
        }
        shifts[k] = *first;
      }
      // Float sums accumulate in f64, integers in their own type; the
      // partials cross shared memory as 8 bytes (f64, or i64).
      Type intType = reductionAccType(e, r);
      bool isInt = isa<IntegerType>(intType);
      bool wide = !isInt && (kind == ReduceKind::sum || kind == ReduceKind::mean);
      Type acct = isInt ? intType : wide ? e.f64 : e.f32;
      Type slotType = isInt ? e.i64 : e.f64;
      SmallVector<Value> inits;
      for (int64_t l = 0; l < vector * nacc; ++l)
        inits.push_back(reductionIdentity(e, kind, acct));
      // Float sums into f64: the rows of a trip first add in f32 (up to
      // four), then widen once. A conversion to f64 issues at a quarter of
      // an f64 add's rate: one per element held the bias-gradient sums at
      // 74% of copy. From inputs of 16 bits or fewer, the sum of four is
      // exact in f32 but for exponents more than 14 apart; from f32 inputs
      // each of its three adds rounds (a relative 2^-24 of the partial sum)
      // before the f64 sum (FUSEC_COLUMN_PRESUM=0, for measurement: one
      // conversion per element).
      Type inElem = getElementTypeOrSelf(r.getInput().getType());
      static const bool presumOff = [] {
        const char *v = std::getenv("FUSEC_COLUMN_PRESUM");
        return v && std::string_view(v) == "0";
      }();
      bool presumType = wide && !presumOff && isa<FloatType>(inElem) &&
                        inElem.getIntOrFloatBitWidth() <= 32;
      // `count` rows of this thread (`slices` apart) from `rowIv`: every
      // row's loads first, so that they are all in flight, then the combines
      // in row order.
      auto rowsStep = [&](Value rowIv, ValueRange accs, int64_t count) -> SmallVector<Value> {
        openScope();
        SmallVector<Value> bases;
        SmallVector<llvm::DenseMap<unsigned, SmallVector<Value>>> loaded;
        for (int64_t u = 0; u < count; ++u) {
          bases.push_back(e.add(e.mul(e.add(rowIv, e.i64c(u * slices)), colCount), colStart));
          if (vector > 1) {
            vectorLoads(bases.back());
            loaded.push_back(lanes);
          }
        }
        SmallVector<Value> next(accs.begin(), accs.end());
        bool presum = pair || (presumType && count > 1);
        SmallVector<Value> trip(vector * nacc);
        for (int64_t u = 0; u < count && status.ok(); ++u) {
          if (vector > 1) {
            vectorPath = true;
            lanes = loaded[u];
          }
          clearMemo();
          auto vals = laneValues(r.getInput(), bases[u]);
          vectorPath = false;
          if (!vals.ok()) {
            status = vals.status();
            break;
          }
          for (int64_t l = 0; l < vector; ++l) {
            if (pair) { // x - s and its square, in f32 (presum is on)
              Value d = e.fsub((*vals)[l], shifts[k][l]);
              trip[l] = trip[l] ? e.fadd(trip[l], d) : d;
              Value d2 = e.fmul(d, d);
              trip[vector + l] = trip[vector + l] ? e.fadd(trip[vector + l], d2) : d2;
              continue;
            }
            if (presum) {
              Value v = (*vals)[l];
              if (v.getType() != e.f32)
                v = e.fpext(e.f32, v);
              trip[l] = trip[l] ? e.fadd(trip[l], v) : v;
              continue;
            }
            next[l] = reductionCombine(e, kind, next[l],
                                       wide ? e.fpext(e.f64, (*vals)[l]) : (*vals)[l]);
          }
          // Four rows at most in each f32 presum.
          if (presum && (u % 4 == 3 || u == count - 1))
            for (int64_t l = 0; l < vector * nacc; ++l) {
              next[l] = reductionCombine(e, kind, next[l], e.fpext(e.f64, trip[l]));
              trip[l] = Value();
            }
        }
        closeScope();
        return next;
      };
      // kUnroll rows a trip while they last (the loop carries the next row
      // after its accumulators), then one at a time.
      Value first = e.add(rowBegin, y);
      Value span = e.i64c(slices * (kUnroll - 1));
      Value mainEnd = e.select(e.icmp(LLVM::ICmpPredicate::ugt, rowEnd, span),
                               e.sub(rowEnd, span), e.i64c(0));
      SmallVector<Value> mainInits(inits);
      mainInits.push_back(first);
      SmallVector<Value> carried = e.loop(
          first, mainEnd, e.i64c(slices * kUnroll), mainInits,
          [&](Value rowIv, ValueRange state) -> SmallVector<Value> {
            SmallVector<Value> next = rowsStep(rowIv, state.drop_back(), kUnroll);
            next.push_back(e.add(rowIv, e.i64c(slices * kUnroll)));
            return next;
          });
      SmallVector<Value> acc = e.loop(
          carried.back(), rowEnd, step, ValueRange(carried).drop_back(),
          [&](Value rowIv, ValueRange accs) -> SmallVector<Value> {
            return rowsStep(rowIv, accs, 1);
          });
      if (!status.ok())
        return {parity};
      // Partials of the 8 slices through shared memory (a pair's two sums
      // in slots k and k + 1).
      for (int j = 0; j < nacc; ++j) {
      Value region = e.mul(e.add(e.mul(parity, e.i64c(numReductions)),
                                 e.i64c(static_cast<int64_t>(k) + j)),
                           e.i64c(regionFloats));
      auto slot = [&](Value slice, int64_t l) {
        Value i = e.add(region, e.add(e.mul(e.add(e.mul(slice, e.i64c(groupsPerTile)), x),
                                            e.i64c(vector)),
                                      e.i64c(l)));
        return e.gep(partials, slotType, i);
      };
      // The warp's slices combine by butterflies (every lane of a group ends
      // with the same sum), then its slice-0 threads write them.
      SmallVector<Value> toStore;
      for (int64_t l = 0; l < vector; ++l) {
        Value v = acc[j * vector + l];
        for (int64_t off = groupsPerTile; off < 32; off *= 2) {
          Value other = v.getType() == e.f64
                            ? e.bitcast(e.f64, e.shflBfly(e.bitcast(e.i64, v), static_cast<int>(off)))
                            : e.shflBfly(v, static_cast<int>(off));
          v = reductionCombine(e, kind, v, other);
        }
        toStore.push_back(isInt  ? (acct == e.i64 ? v : e.sext(e.i64, v))
                          : wide ? v
                                 : e.fpext(e.f64, v));
      }
      auto storePartials = [&] {
        for (int64_t l = 0; l < vector; ++l)
          e.store(toStore[l], slot(warp, l));
      };
      if (slicesPerWarp > 1)
        e.ifThen(warpWriter, storePartials);
      else
        storePartials();
      e.barrier();
      slotTotals.emplace_back();
      auto partial = [&](Value s, int64_t l) {
        Value v = e.load(slotType, slot(s, l));
        if (isInt && acct != e.i64)
          v = e.trunc(acct, v);
        else if (!isInt && !wide)
          v = e.fptrunc(e.f32, v);
        return v;
      };
      if (pair) {
        // Lane l's sum over the warps, in warp order, by the thread of
        // slice l mod slices (a thread may take two lanes where they
        // outnumber the slices), written over warp 0's slot; then every
        // thread reads the totals.
        // (Every thread summing every lane held all the warps' partials of
        // both sums in registers at once: 250 a thread at 8 lanes, one CTA
        // an SM.)
        auto laneSlot = [&](int64_t s, Value l) {
          Value i = e.add(region, e.add(e.mul(e.add(e.i64c(s * groupsPerTile), x),
                                              e.i64c(vector)),
                                        l));
          return e.gep(partials, slotType, i);
        };
        for (int64_t l0 = 0; l0 < vector; l0 += slices) {
          Value lane = l0 ? e.add(y, e.i64c(l0)) : y;
          e.ifThen(e.icmp(LLVM::ICmpPredicate::ult, lane, e.i64c(vector)), [&] {
            Value total;
            for (int64_t s = 0; s < warps; ++s) {
              Value v = e.load(slotType, laneSlot(s, lane));
              total = total ? reductionCombine(e, kind, total, v) : v;
            }
            e.store(total, laneSlot(0, lane));
          });
        }
        e.barrier();
        for (int64_t l = 0; l < vector; ++l)
          slotTotals.back().push_back(partial(e.i64c(0), l));
      } else {
        for (int64_t l = 0; l < vector; ++l) {
          Value total;
          for (int64_t s = 0; s < warps; ++s) {
            Value v = partial(e.i64c(s), l);
            total = total ? reductionCombine(e, kind, total, v) : v;
          }
          slotTotals.back().push_back(total);
        }
      }
      }
      // Unsplit, a later reduction may read this one (a variance, its mean).
      if (split == 1) {
        if (pair)
          finishPair(k, slotTotals[k], slotTotals[k + 1]);
        else
          finishOne(r, slotTotals.back());
      }
      if (pair)
        ++k;
    }
    // Outputs of the column shape: the first warp stores them.
    auto storeColumns = [&](Value when) {
      SmallVector<std::tuple<unsigned, Value, Value>> stores;
      for (auto [i, o] : llvm::enumerate(yield->getOperands())) {
        if (isFull(o))
          continue;
        for (int64_t l = 0; l < vector; ++l) {
          auto v = eval(o, colLane[l], static_cast<int>(l));
          if (!v.ok()) {
            status = v.status();
            return;
          }
          stores.push_back({static_cast<unsigned>(i), *v, colLane[l]});
        }
      }
      if (stores.empty())
        return;
      e.ifThen(when, [&] {
        for (auto &[i, v, at] : stores)
          storeResult(i, v, at);
      });
    };
    Value firstWarp = e.band(e.icmp(LLVM::ICmpPredicate::eq, y, e.i64c(0)), valid);
    if (split > 1) {
      // This part's partials to the workspace (slot per reduction, group,
      // lane; 8 bytes: f64 or i64, f32 maxima widened), then the tile's
      // counter; the last part to arrive combines all of them in order.
      auto wide8 = [&](Value v) {
        if (v.getType() == e.f32)
          return e.fpext(e.f64, v);
        if (v.getType() == e.i32)
          return e.sext(e.i64, v);
        return v;
      };
      auto slotAt = [&](Value u, int64_t k, int64_t l) {
        Value index = e.add(e.mul(u, e.i64c(unitSlots)),
                            e.add(e.mul(x, e.i64c(vector)),
                                  e.i64c(k * groupsPerTile * vector + l)));
        return e.gep(workspace, slotTotals[k][l].getType() == e.f32 ||
                                        slotTotals[k][l].getType() == e.f64
                                    ? e.f64
                                    : e.i64,
                     index);
      };
      e.ifThen(firstWarp, [&] {
        for (size_t k = 0; k < slotTotals.size(); ++k)
          for (int64_t l = 0; l < vector; ++l)
            e.store(wide8(slotTotals[k][l]), slotAt(unit, static_cast<int64_t>(k), l));
        LLVM::FenceOp::create(builder, LLVM::AtomicOrdering::acq_rel, "device");
      });
      e.barrier();
      e.ifThen(e.icmp(LLVM::ICmpPredicate::eq, tid, e.i64c(0)), [&] {
        Value counter = e.gep(counters, e.i32, tile);
        Value old = LLVM::AtomicRMWOp::create(builder, LLVM::AtomicBinOp::add, counter,
                                              e.i32c(1), LLVM::AtomicOrdering::acq_rel,
                                              "device");
        Value last = e.icmp(LLVM::ICmpPredicate::eq, old, e.i32c(static_cast<int32_t>(split - 1)));
        e.store(e.zext(e.i32, last), flag);
        // The last part resets the counter for the next launch.
        e.ifThen(last, [&] { e.store(e.i32c(0), counter); });
      });
      e.barrier();
      Value last = e.icmp(LLVM::ICmpPredicate::ne, e.load(e.i32, flag), e.i32c(0));
      // The last part's CTA combines the parts: warp y sums parts y, y + 8,
      // ... in order (each round's loads of every lane issued together),
      // then the first warp sums the 8 warps' results in order (the order
      // does not depend on which part finished last). One warp reading
      // every part in turn waited for each load: 16k x 4k bf16 columns in
      // 32 parts took twice the kernel's streaming time.
      int64_t rounds = (split + helpers - 1) / helpers;
      Value helper = e.icmp(LLVM::ICmpPredicate::ult, y, e.i64c(helpers));
      e.ifThen(e.band(e.band(last, valid), helper), [&] {
        LLVM::FenceOp::create(builder, LLVM::AtomicOrdering::acq_rel, "device");
        for (auto [k, rc] : llvm::enumerate(shape.reductions)) {
          ReduceOp r = rc;
          SmallVector<Value> acc(vector);
          // Rounds in batches of up to 32 values a thread: a batch's loads
          // all issue before its sums (in round order), so that the last
          // part waits for one L2 round trip a batch, not one a round.
          int64_t batch = std::max<int64_t>(1, 32 / vector);
          for (int64_t j0 = 0; j0 < rounds; j0 += batch) {
          SmallVector<std::pair<Value, SmallVector<Value>>> loadedRounds;
          for (int64_t j = j0; j < std::min(rounds, j0 + batch); ++j) {
            Value p = e.add(y, e.i64c(j * helpers));
            Value inRange = e.icmp(LLVM::ICmpPredicate::ult, p, e.i64c(split));
            Value u = e.add(e.mul(tile, e.i64c(split)),
                            e.select(inRange, p, e.i64c(split - 1)));
            SmallVector<Value> got;
            for (int64_t l = 0; l < vector; ++l) {
              Type t = slotTotals[k][l].getType();
              got.push_back(LLVM::LoadOp::create(builder, t == e.f32 || t == e.f64 ? e.f64 : e.i64,
                                                 slotAt(u, static_cast<int64_t>(k), l), 8,
                                                 /*isVolatile=*/true));
            }
            loadedRounds.push_back({inRange, std::move(got)});
          }
          for (auto [jj, entry] : llvm::enumerate(loadedRounds)) {
            int64_t j = j0 + static_cast<int64_t>(jj);
            Value inRange = entry.first;
            SmallVector<Value> &got = entry.second;
            for (int64_t l = 0; l < vector; ++l) {
              Type t = slotTotals[k][l].getType();
              Value v = got[l];
              if (t == e.f32)
                v = e.fptrunc(e.f32, v);
              else if (t == e.i32)
                v = e.trunc(e.i32, v);
              // Warps past the last part add nothing (round 0 always has one).
              if (j > 0)
                v = e.select(inRange, v, reductionIdentity(e, r.getKind(), t));
              acc[l] = acc[l] ? reductionCombine(e, r.getKind(), acc[l], v) : v;
            }
          }
          }
          // Warps 0..split-1 hold a round-0 part; a warp beyond them holds the
          // last part again: its sum must not count.
          Value region = e.mul(e.add(e.mul(parity, e.i64c(numReductions)),
                                     e.i64c(static_cast<int64_t>(k))),
                               e.i64c(regionFloats));
          for (int64_t l = 0; l < vector; ++l) {
            Type t = slotTotals[k][l].getType();
            Value v = e.select(e.icmp(LLVM::ICmpPredicate::ult, y, e.i64c(split)), acc[l],
                               reductionIdentity(e, r.getKind(), t));
            bool isInt = isa<IntegerType>(t);
            Value wide = isInt ? (t == e.i64 ? v : e.sext(e.i64, v)) : (t == e.f64 ? v : e.fpext(e.f64, v));
            Value i = e.add(region, e.add(e.mul(e.add(e.mul(y, e.i64c(groupsPerTile)), x),
                                                e.i64c(vector)),
                                          e.i64c(l)));
            e.store(wide, e.gep(partials, isInt ? e.i64 : e.f64, i));
          }
        }
      });
      e.barrier();
      e.ifThen(e.band(last, firstWarp), [&] {
        SmallVector<SmallVector<Value>> totals(slotTotals.size());
        for (auto [k, rc] : llvm::enumerate(shape.reductions)) {
          ReduceOp r = rc;
          Value region = e.mul(e.add(e.mul(parity, e.i64c(numReductions)),
                                     e.i64c(static_cast<int64_t>(k))),
                               e.i64c(regionFloats));
          for (int64_t l = 0; l < vector; ++l) {
            Type t = slotTotals[k][l].getType();
            bool isInt = isa<IntegerType>(t);
            Value total;
            for (int64_t w = 0; w < std::min(helpers, split); ++w) {
              Value i = e.add(region, e.add(e.mul(e.add(e.i64c(w * groupsPerTile), x),
                                                  e.i64c(vector)),
                                            e.i64c(l)));
              Value v = e.load(isInt ? e.i64 : e.f64, e.gep(partials, isInt ? e.i64 : e.f64, i));
              if (t == e.f32)
                v = e.fptrunc(e.f32, v);
              else if (t == e.i32)
                v = e.trunc(e.i32, v);
              total = total ? reductionCombine(e, r.getKind(), total, v) : v;
            }
            totals[k].push_back(total);
          }
        }
        for (size_t k = 0; k < shape.reductions.size(); ++k) {
          if (shifts.count(k)) {
            finishPair(k, totals[k], totals[k + 1]);
            ++k;
            continue;
          }
          finishOne(shape.reductions[k], totals[k]);
        }
        storeColumns(e.boolc(true));
      });
      // The flag is read before the next unit writes it.
      e.barrier();
      return {e.bxor(parity, e.i64c(1))};
    }

    // Outputs of the element shape: another pass over the rows.
    SmallVector<unsigned> full;
    for (auto [i, o] : llvm::enumerate(yield->getOperands()))
      if (isFull(o))
        full.push_back(static_cast<unsigned>(i));
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
    storeColumns(firstWarp);
    return {e.bxor(parity, e.i64c(1))};
  });
  if (!status.ok())
    return status;
  LLVM::ReturnOp::create(builder, ValueRange());
  if (split == 1)
    return SmallVector<int64_t>{};
  return SmallVector<int64_t>{tiles * split * unitSlots * 8, tiles * 4};
}

} // namespace

absl::StatusOr<SmallVector<int64_t>> emitColumns(const StrategyInput &in) {
  return ColumnsEmitter(in).buildSplit();
}

} // namespace fusec::codegen
