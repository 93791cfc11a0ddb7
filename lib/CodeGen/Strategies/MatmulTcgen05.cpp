//===- MatmulTcgen05.cpp - matmul_tcgen05: tensor-core GEMM for Blackwell -*- C++ -*-===//
//
// A warp-specialized, persistent GEMM with its epilogue fused, for sm_100a,
// with the accumulators in tensor memory (TMEM):
//
// - 256 threads. Warp 0: one thread issues the TMA loads into the ring of
//   shared-memory stages (the producer matmul_wgmma uses: 128-byte swizzle,
//   a "full" and an "empty" mbarrier a stage). Warp 1: allocates TMEM (and
//   frees it at the end); one of its threads issues the MMAs. Warps 4-7:
//   the epilogue warpgroup, warp 4 + w reading TMEM lanes 32 w to 32 w + 31
//   (the lanes a warp may access are fixed by its rank in its warpgroup).
// - The MMA thread issues tcgen05.mma.cta_group::1.kind::f16 of M = 128,
//   N = the tile's columns (128, 192 or 256), K = 16: four a k-block per
//   rhs, both operands from shared memory through descriptors, the f32
//   accumulator in TMEM. tcgen05.commit arrives on a stage's "empty"
//   barrier once the MMAs that read it are done, and on the accumulator's
//   "full" barrier after a unit's last k-block.
// - Two accumulator buffers in TMEM when they fit (2 x columns x rhs <= 512
//   columns): the MMAs of the next unit run while the epilogue reads the
//   previous one; the epilogue hands a buffer back through its "empty"
//   barrier (128 arrivals) after its last tcgen05.ld.
// - The epilogue reads 16 columns at a time (tcgen05.ld.32x32b.x16: a
//   thread holds one row's 16 consecutive columns), evaluates every output
//   at those elements with the matmul's value taken from them (bias,
//   activation, residual, cast: the same evaluation as matmul_wgmma), and
//   stores 16-byte vectors of a row where N keeps them aligned. Interior
//   tiles skip the bounds checks; edge tiles check each element first.
//
// The tcgen05, TMA and mbarrier ops are NVVM's. There is no Blackwell GPU
// here: the kernels are assembled by ptxas -arch=sm_100a in CI (lit:
// test/lit/CodeGen/matmul-tcgen05.mlir), not run.
//
// Split-K (few tiles, long K: decode): a unit is a part of K of a tile. The
// epilogue warpgroup copies the part's accumulators from TMEM to a
// workspace (rows inside M only), hands the TMEM buffer back, and bumps
// the tile's counter; the part that arrives last sums every part's
// partials from the workspace in part order (the result does not depend
// on which part finished last) and runs the epilogue on the sums.
//
//===----------------------------------------------------------------------===//

#include "MatmulTma.h"
#include "fusec/Support/TensorCoreEncoding.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace fusec::codegen {

namespace {

constexpr int64_t kColumnsPerLoad = 16;

class MatmulTcgen05Emitter : public TmaMatmulEmitter {
public:
  using TmaMatmulEmitter::TmaMatmulEmitter;
  absl::Status build() override;
  /// The zeroed device buffers the kernel takes after the table (split-K's
  /// workspace and tile counters), in bytes.
  SmallVector<int64_t> scratch() const {
    if (t.split == 1)
      return {};
    return {numTiles * t.split * accColumns * 128 * 4, numTiles * 4};
  }

private:
  /// TMEM address (lane << 16 | column) as a tensor-memory pointer.
  Value tmemPtr(Value address) {
    return LLVM::IntToPtrOp::create(builder, LLVM::LLVMPointerType::get(e.ctx, 6), address);
  }
  Value accBarrier(Value smem, int64_t which, Value buffer) { // 0: full, 1: empty
    return sharedAt(smem, e.add(i32(flagOffset + 8 * which * buffers), e.mul(buffer, i32(8))));
  }
  void mmaLoop(Value smem, Value tmem);
  absl::Status epilogueLoop(Value smem, Value tmem, Value warp, Value lane, Value workspace,
                            Value counters);
  /// The epilogue of one tile; `chunkValues(chunk)` gives the accumulators'
  /// 16 columns of the chunk at this thread's row (rhs r's at r * 16 + q).
  absl::Status epilogueTile(Value b, Value tm, Value tn, Value warp, Value lane, bool guarded,
                            llvm::function_ref<SmallVector<Value>(Value chunk)> chunkValues);
  /// The TMEM load of chunk `chunk` of every rhs (warp-wide: tcgen05.ld
  /// is .sync.aligned), waited for, as f32.
  SmallVector<Value> loadTmemChunk(Value accBase, Value warp, Value chunk);
  /// Split-K: the workspace address of floats 4 q4 .. 4 q4 + 3 of column
  /// chunk `c` of unit `u` at epilogue thread `thread`.
  Value workspaceAt(Value workspace, Value u, Value c, int64_t q4, Value thread);
  /// The 32-bit instruction descriptor of the kernel's MMAs.
  int64_t instructionDescriptor() const;

  int64_t buffers = 1, accColumns = 0, allocColumns = 32, tmemSlotOffset = 0;
};

int64_t MatmulTcgen05Emitter::instructionDescriptor() const {
  // kind::f16 with an f32 D (fusec/Support/TensorCoreEncoding.h). B as
  // [N, K] (transpose_rhs) is K-major: not transposed.
  return encoding::tcgen05F16InstrDescriptor(l.element.isBF16(), l.transposeLhs,
                                             !l.transposeRhs, static_cast<int>(t.m),
                                             static_cast<int>(t.n));
}

void MatmulTcgen05Emitter::mmaLoop(Value smem, Value tmem) {
  Value ticks = i32(0x989680);
  Value smemBase = e.trunc(e.i32, e.ptrtoint(smem));
  Value idesc = i32(instructionDescriptor());
  auto f16 = NVVM::Tcgen05MMAKind::F16;
  auto group = NVVM::CTAGroupKind::CTA_1;
  e.loop(e.ctaidX(), i32(numTiles * t.split), e.nctaidX(), {i32(0), i32(0)},
         [&](Value unit, ValueRange carried) -> SmallVector<Value> {
    auto [b, tm, tn, part] = decodeUnit(unit);
    auto [kBegin, kEnd] = kRange(part);
    Value count = carried[1];
    Value buffer = e.urem(count, i32(buffers));
    Value use = e.udiv(count, i32(buffers));
    // The buffer is free once the epilogue released its previous use (a
    // fresh barrier's preceding phase counts as complete).
    NVVM::MBarrierTryWaitParityOp::create(builder, accBarrier(smem, 1, buffer),
                                          e.bxor(e.band(use, i32(1)), i32(1)), ticks);
    NVVM::Tcgen05FenceOp::create(builder, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
    Value acc = e.add(tmem, e.mul(buffer, i32(accColumns)));
    SmallVector<Value> out = e.loop(
        kBegin, kEnd, i32(1), {carried[0]}, [&](Value kb, ValueRange it) -> SmallVector<Value> {
          Value s = e.urem(it[0], i32(t.stages));
          Value phase = e.band(e.udiv(it[0], i32(t.stages)), i32(1));
          NVVM::MBarrierTryWaitParityOp::create(builder, barrierAt(smem, 0, s), phase, ticks);
          NVVM::Tcgen05FenceOp::create(builder, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
          Value stage = e.add(smemBase, e.mul(s, i32(t.stageBytes())));
          Value notFirst = e.icmp(LLVM::ICmpPredicate::ne, kb, kBegin);
          for (int64_t kk = 0; kk < t.k / 16; ++kk) {
            // K-major operands step 32 bytes (16 elements) along the
            // swizzled row; MN-major ones 16 rows of 128 bytes.
            Value a = l.transposeLhs ? e.add(stage, i32(kk * 16 * 128))
                                     : e.add(stage, i32(kk * 32));
            Value da = descriptor(a, l.transposeLhs ? t.k * 128 : 16, /*version=*/1);
            for (int64_t r = 0; r < t.rhs; ++r) {
              Value bAddr = e.add(stage, i32(aBytes + r * bBytes +
                                             (l.transposeRhs ? kk * 32 : kk * 16 * 128)));
              Value db = descriptor(bAddr, l.transposeRhs ? 16 : t.k * 128, /*version=*/1);
              Value d = tmemPtr(e.add(acc, i32(r * t.n)));
              NVVM::Tcgen05MMAOp::create(builder, f16, group,
                                         NVVM::Tcgen05MMACollectorOp::DISCARD, false, d, da,
                                         db, idesc, kk == 0 ? notFirst : e.boolc(true), Value(),
                                         Value());
            }
          }
          // The stage is free once these MMAs have read it.
          NVVM::Tcgen05CommitOp::create(builder, barrierAt(smem, 1, s), Value(), group);
          return {e.add(it[0], i32(1))};
        });
    // The accumulator is ready once every MMA of the unit is done.
    NVVM::Tcgen05CommitOp::create(builder, accBarrier(smem, 0, buffer), Value(), group);
    return {out[0], e.add(count, i32(1))};
  });
}

SmallVector<Value> MatmulTcgen05Emitter::loadTmemChunk(Value accBase, Value warp, Value chunk) {
  // The row field of the TMEM address: the warp's 32 lanes.
  Value laneField = e.shl(e.mul(warp, i32(32)), i32(16));
  auto vecType = VectorType::get({kColumnsPerLoad}, e.i32);
  SmallVector<Value> loaded;
  for (int64_t r = 0; r < t.rhs; ++r) {
    Value address = e.add(e.add(accBase, laneField),
                          e.add(e.mul(chunk, i32(kColumnsPerLoad)), i32(r * t.n)));
    loaded.push_back(NVVM::Tcgen05LdOp::create(builder, vecType, false,
                                               NVVM::Tcgen05LdStShape::SHAPE_32X32B,
                                               tmemPtr(address), Value()));
  }
  NVVM::Tcgen05WaitOp::create(builder, NVVM::Tcgen05WaitKind::LOAD);
  SmallVector<Value> values;
  for (Value v : loaded)
    for (int64_t q = 0; q < kColumnsPerLoad; ++q)
      values.push_back(e.bitcast(e.f32, e.extract(v, q)));
  return values;
}

Value MatmulTcgen05Emitter::workspaceAt(Value workspace, Value u, Value c, int64_t q4,
                                        Value thread) {
  // [unit][chunk][q4][thread][4]: a warp's 16-byte accesses are contiguous.
  int64_t chunks = accColumns / kColumnsPerLoad;
  Value index = e.add(e.mul(e.zext(e.i64, u), e.i64c(chunks)), e.zext(e.i64, c));
  index = e.add(e.mul(index, e.i64c(4)), e.i64c(q4));
  index = e.add(e.mul(index, e.i64c(128)), e.zext(e.i64, thread));
  return e.gep(workspace, e.f32, e.mul(index, e.i64c(4)));
}

absl::Status MatmulTcgen05Emitter::epilogueTile(
    Value b, Value tm, Value tn, Value warp, Value lane, bool guarded,
    llvm::function_ref<SmallVector<Value>(Value chunk)> chunkValues) {
  Operation *yield = body.getTerminator();
  absl::Status status = absl::OkStatus();
  // This thread's row of the tile: TMEM lane 32 warp + lane.
  Value row = e.add(e.mul(tm, i32(t.m)), e.add(e.mul(warp, i32(32)), lane));
  Value row64 = e.zext(e.i64, row);
  Value b64 = e.zext(e.i64, b);
  SmallVector<Value> batch(l.batch.size());
  Value rest = b64;
  for (int64_t d = static_cast<int64_t>(l.batch.size()) - 1; d >= 0; --d) {
    batch[d] = e.urem(rest, e.i64c(l.batch[d]));
    rest = e.udiv(rest, e.i64c(l.batch[d]));
  }
  Value rowFlat = e.mul(e.add(e.mul(b64, e.i64c(l.m)), row64), e.i64c(l.n));
  Value rowOk = e.icmp(LLVM::ICmpPredicate::ult, row, i32(l.m));
  SmallVector<std::optional<StoreMap>> maps;
  for (Value o : yield->getOperands())
    maps.push_back(isFull(o) ? std::nullopt : storeMapOf(o, domain));
  e.loop(i32(0), i32(t.n / kColumnsPerLoad), i32(1), {},
         [&](Value chunk, ValueRange) -> SmallVector<Value> {
    Value firstCol = e.add(e.mul(tn, i32(t.n)), e.mul(chunk, i32(kColumnsPerLoad)));
    SmallVector<Value> loaded = chunkValues(chunk);
    // Every output at column q of the chunk.
    auto evaluate = [&](int64_t q, Value col, SmallVectorImpl<SmallVector<Value>> &values) {
      Value col64 = e.zext(e.i64, col);
      accElement.clear();
      for (int64_t r = 0; r < t.rhs; ++r)
        accElement.push_back(loaded[r * kColumnsPerLoad + q]);
      status = evalOutputsAt(maps, batch, row64, col64, e.add(rowFlat, col64), values);
    };
    auto storeMappedAt = [&](unsigned r, Value v, Value col) {
      SmallVector<Value> coords(batch.begin(), batch.end());
      coords.push_back(row64);
      coords.push_back(e.zext(e.i64, col));
      storeMapped(r, *maps[r], v, coords);
    };
    if (guarded) {
      // Each element inside the output by itself: evaluated and stored
      // (an operand past the edge is never read).
      for (int64_t q = 0; q < kColumnsPerLoad && status.ok(); ++q) {
        Value col = e.add(firstCol, i32(q));
        e.ifThen(e.band(rowOk, e.icmp(LLVM::ICmpPredicate::ult, col, i32(l.n))), [&] {
          openScope();
          SmallVector<SmallVector<Value>> values(yield->getNumOperands());
          evaluate(q, col, values);
          for (unsigned r = 0; r < yield->getNumOperands() && status.ok(); ++r) {
            if (maps[r])
              storeMappedAt(r, values[r][0], col);
            else
              storeResult(r, values[r][0], elementIndex);
          }
          elementIndex = Value();
          closeScope();
        });
      }
      return {};
    }
    openScope();
    SmallVector<SmallVector<Value>> values(yield->getNumOperands());
    SmallVector<Value> flats;
    for (int64_t q = 0; q < kColumnsPerLoad && status.ok(); ++q) {
      evaluate(q, e.add(firstCol, i32(q)), values);
      flats.push_back(elementIndex);
    }
    for (unsigned r = 0; r < yield->getNumOperands() && status.ok(); ++r) {
      if (maps[r]) {
        for (int64_t q = 0; q < kColumnsPerLoad; ++q)
          storeMappedAt(static_cast<unsigned>(r), values[r][q], e.add(firstCol, i32(q)));
        continue;
      }
      // 16-byte vectors of the row where N keeps them aligned.
      int64_t bytes = elemTypes(yield->getOperand(r).getType())->bytes;
      int64_t vector = std::min<int64_t>(16 / bytes, kColumnsPerLoad);
      while (vector > 1 && l.n % vector != 0)
        vector /= 2;
      for (int64_t q = 0; q < kColumnsPerLoad; q += vector) {
        if (vector == 1)
          storeResult(r, values[r][q], flats[q]);
        else
          storeVector(r, ArrayRef<Value>(values[r]).slice(q, vector), flats[q]);
      }
    }
    elementIndex = Value();
    closeScope();
    return {};
  });
  return status;
}

absl::Status MatmulTcgen05Emitter::epilogueLoop(Value smem, Value tmem, Value warp, Value lane,
                                                Value workspace, Value counters) {
  Value ticks = i32(0x989680);
  absl::Status status = absl::OkStatus();
  Value thread = e.add(e.mul(warp, i32(32)), lane); // 0..127: the TMEM lane
  e.loop(e.ctaidX(), i32(numTiles * t.split), e.nctaidX(), {i32(0)},
         [&](Value unit, ValueRange carried) -> SmallVector<Value> {
    auto [b, tm, tn, part] = decodeUnit(unit);
    Value count = carried[0];
    Value buffer = e.urem(count, i32(buffers));
    Value use = e.udiv(count, i32(buffers));
    NVVM::MBarrierTryWaitParityOp::create(builder, accBarrier(smem, 0, buffer),
                                          e.band(use, i32(1)), ticks);
    NVVM::Tcgen05FenceOp::create(builder, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
    Value accBase = e.add(tmem, e.mul(buffer, i32(accColumns)));
    // Hands the buffer back: every tcgen05.ld of it is complete
    // (tcgen05.wait::ld), so the MMAs of a later unit may overwrite it.
    auto release = [&] {
      NVVM::Tcgen05FenceOp::create(builder, NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC);
      NVVM::MBarrierArriveOp::create(builder, Type(), accBarrier(smem, 1, buffer), Value(),
                                     NVVM::MemScopeKind::CTA, false);
    };
    if (t.split == 1) {
      // Interior tiles skip the bounds checks.
      absl::Status st = interiorOrEdge(tm, tn, [&](bool guarded) {
        return status.ok() ? epilogueTile(b, tm, tn, warp, lane, guarded,
                                          [&](Value chunk) {
                                            return loadTmemChunk(accBase, warp, chunk);
                                          })
                           : absl::OkStatus();
      });
      if (status.ok())
        status = st;
      release();
      return {e.add(count, i32(1))};
    }
    // Split-K: the part's accumulators to the workspace (a row past M holds
    // nothing the epilogue stores: not written, not summed).
    Value tile = e.udiv(unit, i32(t.split));
    Value rowOk = e.icmp(LLVM::ICmpPredicate::ult, e.add(e.mul(tm, i32(t.m)), thread), i32(l.m));
    e.loop(i32(0), i32(t.n / kColumnsPerLoad), i32(1), {},
           [&](Value chunk, ValueRange) -> SmallVector<Value> {
      SmallVector<Value> values = loadTmemChunk(accBase, warp, chunk);
      e.ifThen(rowOk, [&] {
        for (int64_t r = 0; r < t.rhs; ++r)
          for (int64_t q4 = 0; q4 < 4; ++q4) {
            Value c = e.add(chunk, i32(r * t.n / kColumnsPerLoad));
            e.store(e.pack(ArrayRef<Value>(values).slice(r * kColumnsPerLoad + 4 * q4, 4)),
                    workspaceAt(workspace, unit, c, q4, thread), 16);
          }
      });
      return {};
    });
    release();
    Value last = lastPartOfTile(
        counters, tile, sharedAt(smem, i32(tmemSlotOffset + 4)),
        e.icmp(LLVM::ICmpPredicate::eq, thread, i32(0)), [&] {
          NVVM::BarrierOp::create(builder, Type(), i32(1), i32(128),
                                  NVVM::BarrierReductionAttr(), Value());
        });
    e.ifThen(last, [&] {
      LLVM::FenceOp::create(builder, LLVM::AtomicOrdering::acq_rel, "device");
      // The parts' partials summed in part order, their loads issued
      // together; a row past M sums nothing.
      auto sumChunk = [&](Value chunk) -> SmallVector<Value> {
        int64_t n = t.rhs * kColumnsPerLoad;
        SmallVector<Type> types(n, e.f32);
        Block *yes = e.newBlock(), *join = e.newBlock(types);
        e.condBr(rowOk, yes, join, {}, SmallVector<Value>(n, e.f32c(0)));
        e.setBlock(yes);
        SmallVector<Value> sums(n, e.f32c(0));
        SmallVector<SmallVector<Value>> loaded(t.split);
        for (int64_t p = 0; p < t.split; ++p) {
          Value u = e.add(e.mul(tile, i32(t.split)), i32(p));
          for (int64_t r = 0; r < t.rhs; ++r)
            for (int64_t q4 = 0; q4 < 4; ++q4)
              loaded[p].push_back(LLVM::LoadOp::create(
                  builder, VectorType::get({4}, e.f32),
                  workspaceAt(workspace, u, e.add(chunk, i32(r * t.n / kColumnsPerLoad)), q4,
                              thread),
                  16, /*isVolatile=*/true));
        }
        for (int64_t p = 0; p < t.split; ++p)
          for (int64_t v = 0; v < n / 4; ++v)
            for (int64_t x = 0; x < 4; ++x)
              sums[4 * v + x] = e.fadd(sums[4 * v + x], e.extract(loaded[p][v], x));
        e.br(join, sums);
        e.moveToEnd(join);
        e.setBlock(join);
        return SmallVector<Value>(join->getArguments().begin(), join->getArguments().end());
      };
      absl::Status st = interiorOrEdge(tm, tn, [&](bool guarded) {
        return status.ok() ? epilogueTile(b, tm, tn, warp, lane, guarded, sumChunk)
                           : absl::OkStatus();
      });
      if (status.ok())
        status = st;
    });
    return {e.add(count, i32(1))};
  });
  return status;
}

absl::Status MatmulTcgen05Emitter::build() {
  // Its accumulator barriers sit where a wgmma kernel keeps the resident
  // rhs tiles' barrier, and its MMAs read the rhs from the stages.
  if (t.resident)
    return absl::InvalidArgumentError(
        "matmul_tcgen05 streams its rhs: a plan with resident tiles is for matmul_wgmma "
        "(re-run fusec-tile)");
  layoutTiles();
  if (t.m != 128)
    return absl::InvalidArgumentError(
        "matmul_tcgen05 builds tiles of 128 rows (re-run fusec-tile)");
  if (t.split > 1 && perSplit * (t.split - 1) >= numK)
    return absl::InvalidArgumentError("matmul_tcgen05: a split leaves a part of K empty");
  accColumns = t.n * t.rhs;
  buffers = 2 * accColumns <= 512 ? 2 : 1;
  allocColumns = 32;
  while (allocColumns < buffers * accColumns)
    allocColumns *= 2;
  if (allocColumns > 512)
    return absl::InvalidArgumentError("matmul_tcgen05: the accumulators exceed 512 TMEM columns");
  // After the stage barriers: two accumulator barriers a buffer, then the
  // word tcgen05.alloc writes TMEM's address to, then split-K's flag (the
  // last part of a tile).
  tmemSlotOffset = flagOffset + 16 * buffers;
  if (launch.getSmem() < tcgen05SharedBytes(t))
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul_tcgen05: the plan's shared memory (", launch.getSmem(),
        " bytes) is less than the ", tcgen05SharedBytes(t), " this tile needs (re-run fusec-tile)"));
  if (numTiles * t.split >= (int64_t(1) << 31))
    return unimplemented(kernel, "more than 2^31 work units");

  SmallVector<NamedAttribute> attrs{builder.getNamedAttr(
      NVVM::NVVMDialect::getMaxntidAttrName(), builder.getDenseI32ArrayAttr({256}))};
  attrs.push_back(builder.getNamedAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                                       builder.getI32IntegerAttr(1)));
  // The tensor-map table, then split-K's workspace and counters, are the
  // last parameters.
  beginFunction(attrs, /*extra=*/t.split > 1 ? 3 : 1);
  Value table = extraPtrs[0];
  Value workspace = t.split > 1 ? extraPtrs[1] : Value();
  Value counters = t.split > 1 ? extraPtrs[2] : Value();
  Value smem = alignedSharedMemory();

  Value tid = e.tidX();
  Value warpId = e.udiv(tid, i32(32)), lane = e.urem(tid, i32(32));
  Value slot = sharedAt(smem, i32(tmemSlotOffset));
  // Thread 0 initializes the barriers: a stage's "full" completes on the
  // producer's arrival and the TMA bytes, its "empty" on one
  // tcgen05.commit; an accumulator's "full" on one commit, its "empty" on
  // the epilogue warpgroup's 128 arrivals.
  e.ifThen(e.icmp(LLVM::ICmpPredicate::eq, tid, i32(0)), [&] {
    for (int64_t s = 0; s < 2 * t.stages; ++s)
      NVVM::MBarrierInitOp::create(builder, sharedAt(smem, i32(barrierOffset + 8 * s)), i32(1),
                                   Value());
    for (int64_t q = 0; q < buffers; ++q) {
      NVVM::MBarrierInitOp::create(builder, sharedAt(smem, i32(flagOffset + 8 * q)), i32(1),
                                   Value());
      NVVM::MBarrierInitOp::create(builder, sharedAt(smem, i32(flagOffset + 8 * (buffers + q))),
                                   i32(128), Value());
    }
    NVVM::FenceMbarrierInitOp::create(builder);
  });
  // Warp 1 allocates the accumulators' TMEM columns (a whole warp, one CTA
  // an SM) and gives up the right to allocate more.
  Value isWarp1 = e.icmp(LLVM::ICmpPredicate::eq, warpId, i32(1));
  e.ifThen(isWarp1, [&] {
    NVVM::Tcgen05AllocOp::create(builder, slot, i32(allocColumns), NVVM::CTAGroupKind::CTA_1);
    NVVM::Tcgen05RelinquishAllocPermitOp::create(builder, NVVM::CTAGroupKind::CTA_1);
  });
  NVVM::Tcgen05FenceOp::create(builder, NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC);
  e.barrier();
  NVVM::Tcgen05FenceOp::create(builder, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
  Value tmem = e.load(e.i32, slot);

  Block *producerBlock = e.newBlock(), *mmaBlock = e.newBlock(), *epilogueBlock = e.newBlock(),
        *exit = e.newBlock();
  Block *notProducer = e.newBlock();
  e.condBr(e.icmp(LLVM::ICmpPredicate::eq, tid, i32(0)), producerBlock, notProducer);
  e.setBlock(producerBlock);
  producer(smem, table);
  e.br(exit);

  e.moveToEnd(notProducer);
  e.setBlock(notProducer);
  Block *notMma = e.newBlock();
  e.condBr(e.icmp(LLVM::ICmpPredicate::eq, tid, i32(32)), mmaBlock, notMma);
  e.moveToEnd(mmaBlock);
  e.setBlock(mmaBlock);
  mmaLoop(smem, tmem);
  e.br(exit);

  e.moveToEnd(notMma);
  e.setBlock(notMma);
  e.condBr(e.icmp(LLVM::ICmpPredicate::uge, tid, i32(128)), epilogueBlock, exit);
  e.moveToEnd(epilogueBlock);
  e.setBlock(epilogueBlock);
  if (auto st = epilogueLoop(smem, tmem, e.urem(warpId, i32(4)), lane, workspace, counters);
      !st.ok())
    return st;
  e.br(exit);

  // Everyone is done with TMEM: warp 1 frees it.
  e.moveToEnd(exit);
  e.setBlock(exit);
  NVVM::Tcgen05FenceOp::create(builder, NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC);
  e.barrier();
  e.ifThen(isWarp1, [&] {
    NVVM::Tcgen05FenceOp::create(builder, NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC);
    NVVM::Tcgen05DeallocOp::create(builder, tmemPtr(tmem), i32(allocColumns),
                                   NVVM::CTAGroupKind::CTA_1);
  });
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<TensorCoreKernel> emitMatmulTcgen05(const StrategyInput &in) {
  std::string why;
  auto layout = analyzeMatmul(in.kernel, in.shape, &why);
  if (!layout)
    return unimplemented(in.kernel, "matmul_tcgen05 cannot take this kernel: " + why);
  auto tile = in.launch.getTile();
  int64_t rhs = static_cast<int64_t>(layout->rhs.size());
  if (tile.size() != 3 || tile[0] != 128 ||
      (tile[1] != 128 && tile[1] != 192 && tile[1] != 256) || tile[2] != 64 ||
      tile[1] * rhs > 256)
    return absl::InvalidArgumentError(
        "matmul_tcgen05 builds 128 x 128, 192 or 256 tiles with 64 K a stage, at most 256 "
        "accumulator columns");
  if (in.launch.getBlock() != 256)
    return absl::InvalidArgumentError(
        "matmul_tcgen05 runs 256 threads (producer, MMA and epilogue warps)");
  MatmulTcgen05Emitter emitter(in, *layout);
  if (auto st = emitter.build(); !st.ok())
    return st;
  return TensorCoreKernel{emitter.tensorMaps(), emitter.scratch()};
}

} // namespace fusec::codegen
