//===- MatmulWgmma.cpp - matmul_wgmma: tensor-core GEMM for Hopper -*- C++ -*-===//
//
// A warp-specialized, persistent GEMM with its epilogue fused, for sm_90a:
//
// - 384 threads: warpgroup 0 is the producer (setmaxnreg 40; one thread
//   issues the TMA loads), warpgroups 1 and 2 the consumers (setmaxnreg 232),
//   each owning 64 rows of a 128 x N tile (N = 128 or 256) and a
//   64 x N f32 accumulator in registers.
// - A ring of `stages` shared-memory stages of 64 K each, filled by TMA
//   (cp.async.bulk.tensor, 128-byte swizzle) and completing on a "full"
//   mbarrier with its byte count; the consumers release a stage through its
//   "empty" mbarrier once the wgmmas that read it are done (wait_group 1:
//   one k-block stays in flight).
// - The operands as TMA reads them: K-major (row-major lhs, transposed rhs)
//   as one box of 64 K x rows, MN-major (transposed lhs, row-major rhs) as
//   boxes of 64 rows/columns x 64 K; wgmma takes MN-major B (and A) through
//   its transpose bit. Batch dims are the tensor maps' outer dims (a
//   broadcast dim reads coordinate 0). Ragged M, N and K read zeros past the
//   edges (TMA bounds).
// - A persistent grid of one CTA per SM over the tiles in grouped order
//   (8 tile rows a group, so the B columns a group needs stay in L2).
// - The epilogue runs on the accumulator: every element of the kernel's
//   outputs is evaluated with the matmul's value taken from the accumulator
//   (bias, activation, residual, cast) and stored, masked at the edges.
//
// The wgmma, TMA, mbarrier, fence and setmaxnreg ops are NVVM's; the one
// inline PTX is the wgmma wait that takes the accumulators as operands and
// returns them, so that LLVM keeps every read of them after the wait (NVVM's
// wait op has no operands). lit: test/lit/CodeGen/matmul-wgmma.mlir.
//
//===----------------------------------------------------------------------===//

#include "../Matmul.h"
#include "Strategies.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace fusec::codegen {

namespace {

constexpr int kThreads = 384;
constexpr int kConsumerRegs = 232, kProducerRegs = 40;
constexpr int kGroupM = 8;

class MatmulWgmmaEmitter : public KernelEmitter {
public:
  MatmulWgmmaEmitter(const StrategyInput &in, MatmulLayout layout)
      : KernelEmitter(in.kernel, in.launch, in.options, in.module), shape(in.shape),
        l(std::move(layout)) {
    domain = shape.domain;
    auto tile = launch.getTile();
    t.m = tile[0];
    t.n = tile[1];
    t.k = tile[2];
    t.stages = launch.getStages();
  }

  absl::Status build() override;
  /// The tensor maps the kernel's table holds, in order.
  SmallVector<TensorMapAttr> tensorMaps();

protected:
  absl::StatusOr<Value> matmul(MatmulOp, Value, int) override { return accElement; }

private:
  Value i32(int64_t v) { return e.i32c(static_cast<int32_t>(v)); }
  Value sharedAt(Value base, Value byteOffset) { return e.gep(base, e.i8, byteOffset); }
  /// A shared-memory matrix descriptor (128-byte swizzle) for the operand
  /// tile at shared address `addr` (i32): K-major operands step 1024 bytes
  /// between 8-row atoms; MN-major ones also `lbo` bytes between 64-element
  /// blocks.
  Value descriptor(Value addr, int64_t lbo) {
    Value a = e.zext(e.i64, e.band(e.lshr(addr, i32(4)), i32(0x3FFF)));
    int64_t fixed = (((lbo >> 4) & 0x3FFF) << 16) | (int64_t((1024 >> 4) & 0x3FFF) << 32) |
                    (int64_t(1) << 62);
    return e.bor(a, e.i64c(fixed));
  }
  /// Decodes a tile index into (batch, tile row, tile column): tile rows in
  /// groups of 8, columns inside a group.
  std::tuple<Value, Value, Value> decodeTile(Value tile);
  /// The operand's batch coordinates (outer dims of its tensor map,
  /// innermost first) for the result's flattened batch index `b`.
  SmallVector<Value> batchCoords(Value b, ArrayRef<int64_t> operandBatch);
  Value waitAcc(Value acc, int pending);

  void producer(Value smem, Value table);
  absl::Status consumer(Value smem, Value tid);

  const KernelShape &shape;
  MatmulLayout l;
  WgmmaTile t;
  Value accElement;
  int64_t tilesM = 0, tilesN = 0, numTiles = 0, numK = 0;
  Type accType;
  // Byte offsets inside a stage and of the barriers.
  int64_t aBytes = 0, bBytes = 0, barrierOffset = 0;
};

SmallVector<Value> MatmulWgmmaEmitter::batchCoords(Value b, ArrayRef<int64_t> operandBatch) {
  // The result's batch coordinates, outer first.
  SmallVector<Value> outer(l.batch.size());
  Value rest = b;
  for (int64_t d = static_cast<int64_t>(l.batch.size()) - 1; d >= 0; --d) {
    outer[d] = e.urem(rest, i32(l.batch[d]));
    rest = e.udiv(rest, i32(l.batch[d]));
  }
  // Aligned from the right; innermost first for the tensor map.
  SmallVector<Value> coords;
  size_t offset = l.batch.size() - operandBatch.size();
  for (int64_t j = static_cast<int64_t>(operandBatch.size()) - 1; j >= 0; --j)
    coords.push_back(operandBatch[j] == 1 ? i32(0) : outer[offset + j]);
  return coords;
}

std::tuple<Value, Value, Value> MatmulWgmmaEmitter::decodeTile(Value tile) {
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
  return {b, tm, tn};
}

SmallVector<TensorMapAttr> MatmulWgmmaEmitter::tensorMaps() {
  MLIRContext *ctx = kernel.getContext();
  auto map = [&](BlockArgument arg, int64_t inner, int64_t rows, ArrayRef<int64_t> batch,
                 int64_t boxInner, int64_t boxRows) {
    SmallVector<int64_t> dims{inner, rows}, strides{inner * 2}, box{boxInner, boxRows};
    int64_t stride = inner * rows * 2;
    // Strides of dims 1 and up: the rows, then each batch dim outward.
    for (int64_t j = static_cast<int64_t>(batch.size()) - 1; j >= 0; --j) {
      dims.push_back(batch[j]);
      strides.push_back(stride);
      box.push_back(1);
      stride *= batch[j];
    }
    return TensorMapAttr::get(ctx, arg.getArgNumber(), 2, dims, strides, box, 128);
  };
  SmallVector<TensorMapAttr> maps;
  // lhs: row-major [M, K] is K-major (boxes of 64 K x 128 rows); [K, M]
  // (transposed) is MN-major (boxes of 64 M x 64 K).
  maps.push_back(l.transposeLhs ? map(l.lhs, l.m, l.k, l.lhsBatch, 64, t.k)
                                : map(l.lhs, l.k, l.m, l.lhsBatch, t.k, t.m));
  // rhs: row-major [K, N] is MN-major (boxes of 64 N x 64 K); [N, K] is
  // K-major (one box of 64 K x N).
  maps.push_back(l.transposeRhs ? map(l.rhs, l.k, l.n, l.rhsBatch, t.k, t.n)
                                : map(l.rhs, l.n, l.k, l.rhsBatch, 64, t.k));
  return maps;
}

Value MatmulWgmmaEmitter::waitAcc(Value acc, int pending) {
  // wgmma.wait_group with the accumulators as operands and results: reads
  // of them stay after the wait.
  int64_t n = t.n / 2;
  SmallVector<Value> regs;
  std::string constraints;
  for (int64_t i = 0; i < n; ++i)
    absl::StrAppend(&constraints, i ? "," : "", "=f");
  for (int64_t i = 0; i < n; ++i) {
    regs.push_back(e.extractValue(acc, i));
    absl::StrAppend(&constraints, ",", i);
  }
  return ptxAsm(e, accType, absl::StrCat("wgmma.wait_group.sync.aligned ", pending, ";"),
                constraints, regs, /*sideEffects=*/true);
}

void MatmulWgmmaEmitter::producer(Value smem, Value table) {
  Value tma = LLVM::AddrSpaceCastOp::create(builder, LLVM::LLVMPointerType::get(e.ctx, 0), table);
  Value mapA = tma;
  Value mapB = e.gep(tma, e.i8, e.i64c(128));
  Value ticks = i32(0x989680);
  Value txBytes = i32(t.stageBytes());
  e.loop(e.ctaidX(), i32(numTiles), e.nctaidX(), {i32(0)},
         [&](Value tile, ValueRange carried) -> SmallVector<Value> {
    auto [b, tm, tn] = decodeTile(tile);
    Value m0 = e.mul(tm, i32(t.m)), n0 = e.mul(tn, i32(t.n));
    SmallVector<Value> aBatch = batchCoords(b, l.lhsBatch), bBatch = batchCoords(b, l.rhsBatch);
    return e.loop(i32(0), i32(numK), i32(1), carried,
                  [&](Value kb, ValueRange it) -> SmallVector<Value> {
      Value s = e.urem(it[0], i32(t.stages));
      Value phase = e.band(e.udiv(it[0], i32(t.stages)), i32(1));
      Value stage = e.mul(s, i32(t.stageBytes()));
      Value full = sharedAt(smem, e.add(i32(barrierOffset), e.mul(s, i32(8))));
      Value empty = sharedAt(smem, e.add(i32(barrierOffset + 8 * t.stages), e.mul(s, i32(8))));
      // The slot is free once the consumers released its previous use (a
      // fresh barrier's preceding phase counts as complete).
      NVVM::MBarrierTryWaitParityOp::create(builder, empty, e.bxor(phase, i32(1)), ticks);
      NVVM::MBarrierArriveExpectTxOp::create(builder, Type(), full, txBytes,
                                             NVVM::MemScopeKind::CTA, false, Value());
      Value k0 = e.mul(kb, i32(t.k));
      auto load = [&](Value mapPtr, Value dstOffset, SmallVector<Value> coords) {
        Value dst = LLVM::AddrSpaceCastOp::create(builder, LLVM::LLVMPointerType::get(e.ctx, 7),
                                                  sharedAt(smem, dstOffset));
        NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
            builder, dst, mapPtr, coords, full, ValueRange(), Value(), Value(),
            NVVM::TMALoadMode::TILE, false, NVVM::CTAGroupKindAttr(), Value());
      };
      auto withBatch = [](SmallVector<Value> c, ArrayRef<Value> batch) {
        c.append(batch.begin(), batch.end());
        return c;
      };
      if (!l.transposeLhs) {
        load(mapA, stage, withBatch({k0, m0}, aBatch));
      } else {
        for (int64_t c = 0; c < t.m / 64; ++c)
          load(mapA, e.add(stage, i32(c * t.k * 128)),
               withBatch({e.add(m0, i32(64 * c)), k0}, aBatch));
      }
      Value bStage = e.add(stage, i32(aBytes));
      if (l.transposeRhs) {
        load(mapB, bStage, withBatch({k0, n0}, bBatch));
      } else {
        for (int64_t c = 0; c < t.n / 64; ++c)
          load(mapB, e.add(bStage, i32(c * t.k * 128)),
               withBatch({e.add(n0, i32(64 * c)), k0}, bBatch));
      }
      return {e.add(it[0], i32(1))};
    });
  });
}

absl::Status MatmulWgmmaEmitter::consumer(Value smem, Value tid) {
  Value ticks = i32(0x989680);
  Value wg = e.sub(e.udiv(tid, i32(128)), i32(1)); // 0 or 1: rows [64 wg, 64 wg + 64)
  Value warp = e.urem(e.udiv(tid, i32(32)), i32(4));
  Value lane = e.urem(tid, i32(32));
  Value smemBase = e.trunc(e.i32, e.ptrtoint(smem));
  auto elemKind = l.element.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  auto shapeAttr = NVVM::MMAShapeAttr::get(e.ctx, 64, static_cast<int>(t.n), 16);
  Operation *yield = body.getTerminator();
  absl::Status status = absl::OkStatus();

  // Issues the 4 wgmmas of the k-block in stage `it` on `acc` (a null acc:
  // the first k-block of a tile, whose first wgmma does not read it);
  // returns acc.
  auto issue = [&](Value it, Value acc) {
    bool first = !acc;
    if (first)
      acc = LLVM::UndefOp::create(builder, accType);
    Value s = e.urem(it, i32(t.stages));
    Value phase = e.band(e.udiv(it, i32(t.stages)), i32(1));
    Value full = sharedAt(smem, e.add(i32(barrierOffset), e.mul(s, i32(8))));
    NVVM::MBarrierTryWaitParityOp::create(builder, full, phase, ticks);
    Value stage = e.add(smemBase, e.mul(s, i32(t.stageBytes())));
    // Descriptors first: all inputs of the wgmmas are defined before the
    // first is issued.
    SmallVector<Value> da, db;
    for (int64_t kk = 0; kk < t.k / 16; ++kk) {
      Value a = l.transposeLhs
                    ? e.add(stage, e.add(e.mul(wg, i32(t.k * 128)), i32(kk * 16 * 128)))
                    : e.add(stage, e.add(e.mul(wg, i32(64 * 128)), i32(kk * 32)));
      // K-major operands leave the leading offset unused (16, as CUTLASS
      // writes it); MN-major ones step t.k rows of 128 bytes between their
      // 64-element blocks.
      da.push_back(descriptor(a, l.transposeLhs ? t.k * 128 : 16));
      Value bAddr = e.add(stage, i32(aBytes + (l.transposeRhs ? kk * 32 : kk * 16 * 128)));
      db.push_back(descriptor(bAddr, l.transposeRhs ? 16 : t.k * 128));
    }
    NVVM::WgmmaFenceAlignedOp::create(builder);
    for (int64_t kk = 0; kk < t.k / 16; ++kk)
      acc = NVVM::WgmmaMmaAsyncOp::create(
          builder, accType, acc, da[kk], db[kk], shapeAttr, elemKind, elemKind,
          NVVM::WGMMATypes::f32,
          first && kk == 0 ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
          NVVM::WGMMAScaleIn::one,
          NVVM::WGMMAScaleIn::one,
          l.transposeLhs ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          l.transposeRhs ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          NVVM::MMAIntOverflowAttr());
    NVVM::WgmmaGroupSyncAlignedOp::create(builder);
    return acc;
  };
  // Hands the stage of k-block `it` back to the producer.
  auto release = [&](Value it) {
    Value s = e.urem(it, i32(t.stages));
    Value empty = sharedAt(smem, e.add(i32(barrierOffset + 8 * t.stages), e.mul(s, i32(8))));
    NVVM::MBarrierArriveOp::create(builder, Type(), empty, Value(), NVVM::MemScopeKind::CTA,
                                   false);
  };

  e.loop(e.ctaidX(), i32(numTiles), e.nctaidX(), {i32(0)},
         [&](Value tile, ValueRange carried) -> SmallVector<Value> {
    auto [b, tm, tn] = decodeTile(tile);
    Value it0 = carried[0];
    // The first k-block starts from zero; each later one waits for the
    // previous group (one stays in flight) and releases its stage.
    Value acc = issue(it0, Value());
    Value it = e.add(it0, i32(1));
    if (numK > 1) {
      SmallVector<Value> out = e.loop(
          i32(1), i32(numK), i32(1), {it, acc}, [&](Value, ValueRange c) -> SmallVector<Value> {
            Value next = issue(c[0], c[1]);
            next = waitAcc(next, 1);
            release(e.sub(c[0], i32(1)));
            return {e.add(c[0], i32(1)), next};
          });
      it = out[0];
      acc = out[1];
    }
    acc = waitAcc(acc, 0);
    release(e.sub(it, i32(1)));

    // The epilogue: thread (warp, lane) of a consumer warpgroup holds rows
    // 16 warp + lane / 4 (+ 8) and columns 8 j + 2 (lane % 4) (+ 1) of its
    // 64 rows: element 4 j + 2 i + e of the accumulator.
    Value rowBase = e.add(e.add(e.mul(tm, i32(t.m)), e.mul(wg, i32(64))),
                          e.add(e.mul(warp, i32(16)), e.udiv(lane, i32(4))));
    Value colBase = e.add(e.mul(tn, i32(t.n)), e.mul(e.urem(lane, i32(4)), i32(2)));
    Value b64 = e.zext(e.i64, b);
    for (int64_t i = 0; i < 2; ++i) {
      Value row = e.add(rowBase, i32(8 * i));
      Value rowOk = e.icmp(LLVM::ICmpPredicate::ult, row, i32(l.m));
      Value rowFlat = e.mul(e.add(e.mul(b64, e.i64c(l.m)), e.zext(e.i64, row)), e.i64c(l.n));
      for (int64_t j = 0; j < t.n / 8; ++j) {
        Value col = e.add(colBase, i32(8 * j));
        // An even N keeps each pair of columns in bounds together and
        // 4-byte aligned: one guard and one vector store a pair.
        int64_t pairs = l.n % 2 == 0 ? 1 : 2;
        for (int64_t p = 0; p < pairs && status.ok(); ++p) {
          Value c = pairs == 1 ? col : e.add(col, i32(p));
          Value ok = e.band(rowOk, e.icmp(LLVM::ICmpPredicate::ult, c, i32(l.n)));
          e.ifThen(ok, [&] {
            openScope();
            Value flat0 = e.add(rowFlat, e.zext(e.i64, c));
            SmallVector<SmallVector<Value>> values(yield->getNumOperands());
            for (int64_t q = 0; q < (pairs == 1 ? 2 : 1); ++q) {
              int64_t element = 4 * j + 2 * i + (pairs == 1 ? q : p);
              accElement = e.extractValue(acc, element);
              Value flat = q ? e.add(flat0, e.i64c(1)) : flat0;
              for (auto [r, o] : llvm::enumerate(yield->getOperands())) {
                auto v = eval(o, flat, 0);
                if (!v.ok()) {
                  status = v.status();
                  return;
                }
                values[r].push_back(*v);
              }
            }
            for (unsigned r = 0; r < yield->getNumOperands(); ++r) {
              if (values[r].size() == 2)
                storeVector(r, values[r], flat0);
              else
                storeResult(r, values[r][0], flat0);
            }
            closeScope();
          });
        }
      }
    }
    return {it};
  });
  return status;
}

absl::Status MatmulWgmmaEmitter::build() {
  tilesM = (l.m + t.m - 1) / t.m;
  tilesN = (l.n + t.n - 1) / t.n;
  numTiles = tilesM * tilesN * l.batchCount();
  numK = (l.k + t.k - 1) / t.k;
  aBytes = t.m * t.k * 2;
  bBytes = t.n * t.k * 2;
  barrierOffset = t.stages * t.stageBytes();
  if (numTiles >= (int64_t(1) << 31))
    return unimplemented(kernel, "more than 2^31 tiles");
  accType = LLVM::LLVMStructType::getLiteral(e.ctx, SmallVector<Type>(t.n / 2, e.f32));

  // 384 threads a CTA (registers capped for setmaxnreg); the tensor-map
  // table is the last parameter.
  SmallVector<NamedAttribute> attrs{builder.getNamedAttr(
      NVVM::NVVMDialect::getMaxntidAttrName(), builder.getDenseI32ArrayAttr({kThreads}))};
  attrs.push_back(builder.getNamedAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                                       builder.getI32IntegerAttr(1)));
  beginFunction(attrs, /*extra=*/1);
  Value table = extraPtrs[0];

  // Dynamic shared memory, aligned up to 1024 bytes (the 128-byte swizzle's
  // atom) at run time: the declaration promises only 16, so that LLVM
  // cannot fold the alignment away if the driver places it otherwise.
  Value dynamic;
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(builder, LLVM::LLVMArrayType::get(e.i8, 0), false,
                           LLVM::Linkage::External, "__fusec_dynamic_smem", Attribute(), 16, 3);
  }
  dynamic = LLVM::AddressOfOp::create(builder, e.sharedPtr, "__fusec_dynamic_smem");
  Value base32 = e.trunc(e.i32, e.ptrtoint(dynamic));
  Value pad = e.band(e.sub(i32(0), base32), i32(1023));
  Value smem = sharedAt(dynamic, pad);

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
                                   i32(256), Value());
    }
    NVVM::FenceMbarrierInitOp::create(builder);
  });
  e.barrier();

  Block *producerBlock = e.newBlock(), *consumerBlock = e.newBlock(), *exit = e.newBlock();
  e.condBr(e.icmp(LLVM::ICmpPredicate::ult, tid, i32(128)), producerBlock, consumerBlock);

  e.setBlock(producerBlock);
  NVVM::SetMaxRegisterOp::create(builder, kProducerRegs, NVVM::SetMaxRegisterAction::decrease);
  e.ifThen(e.icmp(LLVM::ICmpPredicate::eq, tid, i32(0)), [&] { producer(smem, table); });
  e.br(exit);

  e.moveToEnd(consumerBlock);
  e.setBlock(consumerBlock);
  NVVM::SetMaxRegisterOp::create(builder, kConsumerRegs, NVVM::SetMaxRegisterAction::increase);
  if (auto st = consumer(smem, tid); !st.ok())
    return st;
  e.br(exit);

  e.moveToEnd(exit);
  e.setBlock(exit);
  LLVM::ReturnOp::create(builder, ValueRange());
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<SmallVector<TensorMapAttr>> emitMatmulWgmma(const StrategyInput &in) {
  std::string why;
  auto layout = analyzeMatmul(in.kernel, in.shape, &why);
  if (!layout)
    return unimplemented(in.kernel, "matmul_wgmma cannot take this kernel: " + why);
  auto tile = in.launch.getTile();
  if (tile.size() != 3 || tile[0] != 128 || (tile[1] != 128 && tile[1] != 256) || tile[2] != 64)
    return absl::InvalidArgumentError(
        "matmul_wgmma builds 128 x 128 or 128 x 256 tiles with 64 K a stage");
  if (in.launch.getBlock() != kThreads)
    return absl::InvalidArgumentError("matmul_wgmma runs 384 threads a CTA");
  MatmulWgmmaEmitter emitter(in, *layout);
  if (auto st = emitter.build(); !st.ok())
    return st;
  return emitter.tensorMaps();
}

} // namespace fusec::codegen
