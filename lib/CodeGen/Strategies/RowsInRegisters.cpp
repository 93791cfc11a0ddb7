//===- RowsInRegisters.cpp - row_warp / row_cta: the row held in registers -*- C++ -*-===//
//
// Row reductions with the row read from HBM exactly once: a group of threads
// per row (a warp, or a CTA of up to 1024 threads), each loading its chunks
// of 16 bytes of every full-shape operand up front. Every reduction then
// runs over the registers (a thread's lanes, a shfl.sync butterfly, and
// across the CTA's warps through shared memory with one barrier), and the
// outputs are computed from the same registers and stored 16 bytes at a
// time. A division by a row value (softmax's sum) is one IEEE reciprocal per
// row times each element. With 1024 threads a row (64 registers a thread),
// each pass converts again from the packed words (ptxLaunder) instead of
// keeping an earlier pass's f32 values alive.
// lit: test/lit/CodeGen/rows-in-registers.mlir.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include <algorithm>
#include <cstdlib>

#include <map>

using namespace mlir;

namespace fusec::codegen {

namespace {

class RowsInRegistersEmitter : public KernelEmitter {
public:
  RowsInRegistersEmitter(const StrategyInput &in)
      : KernelEmitter(in.kernel, in.launch, in.options, in.module), shape(in.shape) {
    domain = shape.domain;
    rowLength = shape.rowLength;
    rowVector = launch.getVector();
    rowChunks = launch.getChunks();
    groupThreads = launch.getBlock() / std::max<int64_t>(1, launch.getRows());
  }

  absl::Status build() override;

protected:
  Value argument(BlockArgument arg, Value index, int lane) override {
    auto at = indexInfo.find(index);
    if (at != indexInfo.end()) {
      int64_t elements = cast<RankedTensorType>(arg.getType()).getNumElements();
      if ((isFull(arg) && at->second.kind == IndexKind::Full) ||
          (at->second.kind == IndexKind::Column && elements == rowLength))
        return laneValue(arg, at->second);
    }
    return load(arg, index);
  }

  absl::StatusOr<Value> reduction(ReduceOp op, Value, int) override {
    auto it = rowTotals.find(op.getResult());
    if (it == rowTotals.end())
      return absl::InternalError("fusec codegen: a reduction used before its row "
                                 "(internal ordering error)");
    return it->second;
  }

  std::optional<Value> broadcastSource(BroadcastOp b, Value index) override;

  Value divide(DivOp op, Value a, Value b, Value index) override {
    // Dividing by a value of the row (softmax's sum): one IEEE division per
    // row for the reciprocal, then a multiply per element (at most 1.5 ulp
    // of f32 from the quotient).
    auto bc = op.getRhs().getDefiningOp<BroadcastOp>();
    if (!bc || quotientRounded(op) || broadcastSource(bc, index) != row)
      return KernelEmitter::divide(op, a, b, index);
    auto it = reciprocals.find(b);
    if (it == reciprocals.end())
      it = reciprocals.try_emplace(b, e.fdiv(e.f32c(1), b)).first;
    return e.fmul(a, it->second);
  }

private:
  enum class IndexKind { Full, Column };
  struct IndexInfo {
    IndexKind kind;
    int64_t chunk, lane;
  };
  Value laneValue(BlockArgument arg, const IndexInfo &at);
  void newPass(bool launder);

  const KernelShape &shape;
  int64_t rowLength, rowVector, rowChunks, groupThreads;
  /// The row being reduced (the index of row-shaped values).
  Value row;
  llvm::DenseMap<Value, IndexInfo> indexInfo;
  std::vector<SmallVector<Value>> colIndex; // [chunk][lane]
  SmallVector<Value> chunkBase;             // [chunk]: safe column of lane 0
  std::map<std::pair<unsigned, int64_t>, RawChunk> rawChunks;
  std::map<std::pair<unsigned, int64_t>, SmallVector<Value>> passLanes, columnLanes;
  bool launderPass = false, tight = false;
  llvm::DenseMap<Value, Value> reciprocals, rowTotals;
};

/// A lane of a full-shape operand (Full) or of an operand of the row's
/// trailing shape (Column), at the chunk and lane of the row.
Value RowsInRegistersEmitter::laneValue(BlockArgument arg, const IndexInfo &at) {
  auto key = std::make_pair(arg.getArgNumber(), at.chunk);
  if (at.kind == IndexKind::Full) {
    auto it = passLanes.find(key);
    if (it == passLanes.end())
      it = passLanes.emplace(key, unpack(rawChunks.at(key), launderPass)).first;
    return it->second[at.lane];
  }
  auto it = columnLanes.find(key);
  if (it == columnLanes.end())
    it = columnLanes.emplace(key, unpack(loadRaw(arg, chunkBase[at.chunk], rowVector), false))
             .first;
  return it->second[at.lane];
}

/// For a broadcast to the full shape: the source's index when the source is
/// the row's trailing shape (the column) or its leading shape (the row);
/// nothing otherwise (the general remap applies).
std::optional<Value> RowsInRegistersEmitter::broadcastSource(BroadcastOp b, Value index) {
  if (!isFull(b.getResult()))
    return std::nullopt;
  auto at = indexInfo.find(index);
  if (at == indexInfo.end() || at->second.kind != IndexKind::Full)
    return std::nullopt;
  auto src = cast<RankedTensorType>(b.getInput().getType()).getShape();
  int64_t rank = static_cast<int64_t>(domain.size());
  int64_t reducedFrom = rank;
  for (int64_t p = 1, d = rank - 1; d >= 0 && p < rowLength; --d)
    p *= domain[d], reducedFrom = d;
  SmallVector<int64_t> used, column, leading;
  for (auto [j, d] : llvm::enumerate(b.getDims())) {
    if (src[j] == 1)
      continue;
    if (src[j] != domain[d])
      return std::nullopt;
    used.push_back(d);
  }
  for (int64_t d = 0; d < rank; ++d)
    if (domain[d] != 1)
      (d >= reducedFrom ? column : leading).push_back(d);
  if (used == column)
    return colIndex[at->second.chunk][at->second.lane];
  if (used == leading)
    return row;
  return std::nullopt;
}

/// With up to 512 threads a row, a thread may hold 128 registers: values of
/// one pass stay live for the next (softmax's exp is computed once). With
/// 1024 (64 registers) each pass converts again from the packed words.
void RowsInRegistersEmitter::newPass(bool launder) {
  if (!tight)
    return;
  clearMemo();
  passLanes.clear();
  columnLanes.clear();
  reciprocals.clear();
  launderPass = launder;
}

absl::Status RowsInRegistersEmitter::build() {
  Operation *yield = body.getTerminator();
  bool cta = groupThreads > 32;
  int64_t block = launch.getBlock();
  int64_t rowsPerCta = launch.getRows();
  int64_t groupWarps = groupThreads / 32;
  int64_t numReductions = static_cast<int64_t>(shape.reductions.size());
  tight = groupThreads >= 1024;
  SmallVector<BlockArgument> fullArgs;
  for (BlockArgument a : body.getArguments())
    if (isFull(a))
      fullArgs.push_back(a);

  // 1024 threads must fit in 64 registers: say so (.maxntid). Below that the
  // bound is left out: with it ptxas trades registers for occupancy and
  // spilled (layer_norm, 256 threads: 48 registers and a spill).
  // A thread that holds at most 32 elements of one input for one reduction
  // and computes no transcendental per element asks for 64 registers
  // (.maxntid and .minnctapersm: 64K / (64 x block) CTAs an SM). On the
  // H200 ptxas left alone took 72 for fp8 row quantization (3 CTAs of 256
  // an SM), 10% slower than at 64; with two inputs (softmax's backward) the
  // cap ran 11% slower, and with two reductions (softmax over 8192 bf16,
  // layer_norm) it spilled for sm_100a.
  // (FUSEC_ROW_MIN_CTAS=N, for measurement: N CTAs an SM instead; 0: none.)
  SmallVector<NamedAttribute> attrs;
  bool transcendental = false;
  body.walk([&](CostOpInterface op) {
    for (Value r : op->getResults())
      if (isFull(r) && op.getCost().sfuOps > 0)
        transcendental = true;
  });
  int64_t held = static_cast<int64_t>(fullArgs.size()) * launch.getVector() * launch.getChunks();
  int64_t minCtas =
      block < 1024 && fullArgs.size() == 1 && numReductions == 1 && held <= 32 && !transcendental
          ? 65536 / (64 * block)
          : 0;
  if (const char *v = std::getenv("FUSEC_ROW_MIN_CTAS"); v && *v)
    minCtas = std::clamp<int64_t>(std::atoll(v), 0, 32);
  if (block >= 1024 || minCtas > 0)
    attrs.push_back(builder.getNamedAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                                         builder.getDenseI32ArrayAttr({static_cast<int32_t>(block)})));
  if (minCtas > 0 && block < 1024)
    attrs.push_back(builder.getNamedAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                                         builder.getI32IntegerAttr(static_cast<int32_t>(minCtas))));
  beginFunction(attrs);

  Value tid32 = e.tidX();
  Value tid = e.zext64(tid32);
  Value ctaid = e.zext64(e.ctaidX());
  Value nctaid = e.zext64(e.nctaidX());
  Value lane32 = e.band(tid32, e.i32c(31));
  Value inGroup = e.band(tid, e.i64c(groupThreads - 1));
  Value group = e.udiv(tid, e.i64c(groupThreads));
  Value row0 = e.add(e.mul(ctaid, e.i64c(rowsPerCta)), group);
  Value rowStep = e.mul(nctaid, e.i64c(rowsPerCta));
  Value length = e.i64c(rowLength);
  Value partials, warpSlot;
  if (cta) {
    // Cross-warp partials: one accumulator (f32, or an integer: 8 bytes
    // apart when any is i64) per warp per reduction, two parities.
    bool wide = llvm::any_of(shape.reductions,
                             [&](ReduceOp r) { return reductionAccType(e, r) == e.i64; });
    partials = e.sharedArray(module, "__fusec_partials", wide ? e.i64 : e.f32,
                             2 * numReductions * 32);
    warpSlot = e.lshr(tid, e.i64c(5));
  }
  // Column of lane 0 of each chunk for this thread; chunks that may run past
  // the row are clamped to column 0 (loaded, then ignored).
  SmallVector<Value> chunkInRange(rowChunks);
  chunkBase.assign(rowChunks, Value());
  colIndex.assign(rowChunks, {});
  for (int64_t c = 0; c < rowChunks; ++c) {
    Value col = e.mul(e.add(inGroup, e.i64c(c * groupThreads)), e.i64c(rowVector));
    if ((c + 1) * groupThreads * rowVector <= rowLength) {
      chunkBase[c] = col;
    } else {
      chunkInRange[c] = e.icmp(LLVM::ICmpPredicate::ult, col, length);
      chunkBase[c] = e.select(chunkInRange[c], col, e.i64c(0));
    }
    for (int64_t l = 0; l < rowVector; ++l)
      colIndex[c].push_back(l ? e.add(chunkBase[c], e.i64c(l)) : chunkBase[c]);
  }

  absl::Status status = absl::OkStatus();
  e.loop(row0, e.i64c(shape.rows), rowStep, {e.i32c(0)},
         [&](Value rowIv, ValueRange carried) -> SmallVector<Value> {
    row = rowIv;
    Value parity = carried[0];
    Value rowBase = e.mul(row, length);
    clearMemo();
    rowTotals.clear();
    rawChunks.clear();
    indexInfo.clear();
    passLanes.clear();
    columnLanes.clear();
    reciprocals.clear();
    // Flat indices of every (chunk, lane); all loads of the row, up front.
    std::vector<SmallVector<Value>> flat(rowChunks);
    for (int64_t c = 0; c < rowChunks; ++c) {
      for (int64_t l = 0; l < rowVector; ++l) {
        flat[c].push_back(e.add(rowBase, colIndex[c][l]));
        indexInfo[flat[c][l]] = {IndexKind::Full, c, l};
        indexInfo[colIndex[c][l]] = {IndexKind::Column, c, l};
      }
      for (BlockArgument a : fullArgs)
        rawChunks[{a.getArgNumber(), c}] = loadRaw(a, flat[c][0], rowVector);
    }

    for (auto [k, rc] : llvm::enumerate(shape.reductions)) {
      ReduceOp r = rc;
      newPass(k > 0);
      ReduceKind kind = r.getKind();
      Type accType = reductionAccType(e, r);
      Value identity = reductionIdentity(e, kind, accType);
      Value acc;
      for (int64_t c = 0; c < rowChunks; ++c) {
        Value chunkAcc;
        for (int64_t l = 0; l < rowVector; ++l) {
          auto v = eval(r.getInput(), flat[c][l], static_cast<int>(l));
          if (!v.ok()) {
            status = v.status();
            return {parity};
          }
          chunkAcc = chunkAcc ? reductionCombine(e, kind, chunkAcc, *v) : *v;
        }
        if (chunkInRange[c])
          chunkAcc = e.select(chunkInRange[c], chunkAcc, identity);
        acc = acc ? reductionCombine(e, kind, acc, chunkAcc) : chunkAcc;
      }
      acc = warpReduce(e, kind, acc);
      if (cta) {
        // Every lane of a warp stores the warp's total (one transaction);
        // one barrier; each lane reads warp (lane mod warps) and a butterfly
        // over the warps finishes. Slots alternate with the row's parity, so
        // a fast warp's next row cannot overwrite a slot still being read.
        Value slot0 = e.mul(e.add(e.mul(e.zext64(parity), e.i64c(numReductions)),
                                  e.i64c(static_cast<int64_t>(k))),
                            e.i64c(32));
        e.store(acc, e.gep(partials, accType, e.add(slot0, warpSlot)));
        e.barrier();
        Value which = e.band(e.zext64(lane32), e.i64c(groupWarps - 1));
        acc = e.load(accType, e.gep(partials, accType, e.add(slot0, which)));
        acc = warpReduce(e, kind, acc, static_cast<int>(groupWarps));
      }
      if (kind == ReduceKind::mean)
        acc = e.fdiv(acc, e.f32c(static_cast<double>(rowLength)));
      rowTotals[r.getResult()] = roundTo(acc, r.getType());
    }

    // Outputs of the element shape, from the registers, 16 bytes at a time.
    newPass(!shape.reductions.empty());
    for (int64_t c = 0; c < rowChunks; ++c) {
      SmallVector<std::pair<unsigned, SmallVector<Value>>> stores;
      for (auto [i, o] : llvm::enumerate(yield->getOperands())) {
        if (!isFull(o))
          continue;
        SmallVector<Value> lanes;
        for (int64_t l = 0; l < rowVector; ++l) {
          auto v = eval(o, flat[c][l], static_cast<int>(l));
          if (!v.ok()) {
            status = v.status();
            return {parity};
          }
          lanes.push_back(*v);
        }
        stores.push_back({static_cast<unsigned>(i), lanes});
      }
      if (stores.empty())
        break;
      auto storeAll = [&] {
        for (auto &[i, lanes] : stores)
          storeVector(i, lanes, flat[c][0]);
      };
      if (chunkInRange[c])
        e.ifThen(chunkInRange[c], storeAll);
      else
        storeAll();
    }
    // Outputs of the row shape: the group's first thread writes them.
    SmallVector<std::pair<unsigned, Value>> rowValues;
    for (auto [i, o] : llvm::enumerate(yield->getOperands())) {
      if (isFull(o))
        continue;
      auto v = eval(o, row, 0);
      if (!v.ok()) {
        status = v.status();
        return {parity};
      }
      rowValues.push_back({static_cast<unsigned>(i), *v});
    }
    if (!rowValues.empty())
      e.ifThen(e.icmp(LLVM::ICmpPredicate::eq, inGroup, e.i64c(0)), [&] {
        for (auto &[i, v] : rowValues)
          storeResult(i, v, row);
      });
    return {e.bxor(parity, e.i32c(1))};
  });
  if (!status.ok())
    return status;
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

} // namespace

absl::Status emitRowsInRegisters(const StrategyInput &in) {
  return RowsInRegistersEmitter(in).build();
}

} // namespace fusec::codegen
