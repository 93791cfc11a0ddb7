//===- MatmulTma.h - What the tensor-core GEMMs share -----------*- C++ -*-===//
//
// matmul_wgmma (Hopper) and matmul_tcgen05 (Blackwell) read their operands
// the same way: a persistent grid over the work units in grouped order, one
// producer thread that fills a ring of shared-memory stages by TMA (128-byte
// swizzle) with a "full" and an "empty" mbarrier a stage, tensor maps with
// one dim per factor of an operand's view, and an epilogue that evaluates
// the kernel's outputs with the matmul's value taken from the accumulator.
// TmaMatmulEmitter holds those parts; each strategy adds its mainloop and
// the way its accumulators reach the epilogue.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CODEGEN_STRATEGIES_MATMULTMA_H
#define FUSEC_LIB_CODEGEN_STRATEGIES_MATMULTMA_H

#include "../Matmul.h"
#include "Strategies.h"

namespace fusec::codegen {

class TmaMatmulEmitter : public KernelEmitter {
public:
  TmaMatmulEmitter(const StrategyInput &in, MatmulLayout layout);

  /// The tensor maps the kernel's table holds, in order: the lhs, each
  /// rhs, then each output a TMA store writes (storeViews).
  llvm::SmallVector<TensorMapAttr> tensorMaps();

protected:
  absl::StatusOr<mlir::Value> matmul(MatmulOp op, mlir::Value, int) override;
  std::optional<mlir::Value> broadcastSource(BroadcastOp b, mlir::Value index) override;

  mlir::Value i32(int64_t v) { return e.i32c(static_cast<int32_t>(v)); }
  mlir::Value sharedAt(mlir::Value base, mlir::Value byteOffset) {
    return e.gep(base, e.i8, byteOffset);
  }
  /// A shared-memory matrix descriptor (128-byte swizzle) for the operand
  /// tile at shared address `addr` (i32): 1024 bytes between 8-row atoms;
  /// MN-major operands `lbo` bytes between their 64-element blocks.
  /// `version`: the descriptor version field (bits 46-47: 1 for tcgen05,
  /// 0 for wgmma); the swizzle bits mean 128 bytes in both.
  mlir::Value descriptor(mlir::Value addr, int64_t lbo, int64_t version = 0);
  /// A work unit's (batch, tile row, tile column, K part): tile rows in
  /// groups of 8, columns inside a group, parts innermost. The plan's
  /// first `unsplit` units are whole tiles, part `t.split` (all of K).
  std::tuple<mlir::Value, mlir::Value, mlir::Value, mlir::Value> decodeUnit(mlir::Value unit);
  /// The k-blocks of part `part`: [begin, end) (all of K for part
  /// `t.split`, an unsplit tile's).
  std::pair<mlir::Value, mlir::Value> kRange(mlir::Value part);
  /// Whether `unit` is a whole (unsplit) tile; false where the plan splits
  /// every tile.
  mlir::Value wholeUnit(mlir::Value unit);
  /// A split unit's tile among the split tiles (its workspace slots and
  /// counter).
  mlir::Value splitTile(mlir::Value unit);
  /// The plan's work units.
  int64_t units() const { return t.units(numTiles); }
  /// Whether some tiles are computed in parts (split-K or stream-K).
  bool splits() const { return t.split > 1 || t.streamK; }
  /// The CTA's loop over its units: first, end and step. A unit is a part
  /// of a tile under split-K; under stream-K, a tile the CTA's range of
  /// iterations meets (tiles t0 .. t1 of that range, step 1).
  std::tuple<mlir::Value, mlir::Value, mlir::Value> unitLoop();
  /// The k-blocks of `unit` (part `part`): kRange(part), or under stream-K
  /// the CTA's share of the tile's.
  std::pair<mlir::Value, mlir::Value> kRange(mlir::Value unit, mlir::Value part);
  /// Stream-K: the first iteration of CTA `cta` (i32), as i64: cta * I / G.
  mlir::Value streamBegin(mlir::Value cta);
  /// Stream-K: the CTA whose range holds iteration `it` (i64), as i32.
  mlir::Value streamCta(mlir::Value it);
  /// Stream-K: the grid (G) and the most CTAs that share one tile.
  int64_t streamGrid = 0, streamMaxParts = 0;
  /// The operand's batch coordinates, outer first, for the result's
  /// flattened batch index `b` (a broadcast dim reads 0).
  llvm::SmallVector<mlir::Value> batchCoords(mlir::Value b, llvm::ArrayRef<int64_t> operandBatch);
  /// The tensor-map coordinates of the view's element at (batch..., rows,
  /// inner): each dim's coordinate split over its factors.
  llvm::SmallVector<mlir::Value> tmaCoords(const OperandView &view, mlir::Value inner,
                                           mlir::Value rows, llvm::ArrayRef<mlir::Value> batch);
  /// Mbarrier `which` (0: full, 1: empty) of stage `s`.
  mlir::Value barrierAt(mlir::Value smem, int64_t which, mlir::Value s) {
    return sharedAt(smem, e.add(i32(barrierOffset + 8 * which * t.stages), e.mul(s, i32(8))));
  }
  /// The tile counts and shared-memory offsets of the plan.
  void layoutTiles();
  /// The dynamic shared memory, aligned up to 1024 bytes at run time.
  mlir::Value alignedSharedMemory();
  /// The producer thread's loop: every unit's k-blocks into the ring, then
  /// the unit's tile of the epilogue's full-shape inputs into L2.
  void producer(mlir::Value smem, mlir::Value table);
  /// The kernel inputs of the matmul's shape that the epilogue reads at its
  /// own elements (a residual), prefetched to L2 by the producer where
  /// FUSEC_EPILOGUE_PREFETCH=1 asks (off by default); none with split-K or
  /// aggressive PTX off.
  llvm::SmallVector<mlir::BlockArgument> epilogueInputs();
  /// cp.async.bulk.prefetch.L2 of the tile at (batch `b`, row `m0`,
  /// column `n0`) of each input: one run when the tile spans whole rows,
  /// else one a row.
  void prefetchEpilogueInputs(llvm::ArrayRef<mlir::BlockArgument> inputs, mlir::Value b,
                              mlir::Value m0, mlir::Value n0);
  /// Emits `epilogue(guarded)` twice: unguarded for a tile wholly inside
  /// the output (tile row `tm`, column `tn`), guarded for an edge tile.
  absl::Status interiorOrEdge(mlir::Value tm, mlir::Value tn,
                              llvm::function_ref<absl::Status(bool guarded)> epilogue);
  /// Points the epilogue at the element (batch..., row, col) of flat index
  /// `flat` and evaluates every output there (an output written through
  /// movement ops at its map's source), appending to `values[output]`.
  absl::Status evalOutputsAt(llvm::ArrayRef<std::optional<StoreMap>> maps,
                             llvm::ArrayRef<mlir::Value> batch, mlir::Value row,
                             mlir::Value col, mlir::Value flat,
                             llvm::MutableArrayRef<llvm::SmallVector<mlir::Value>> values);

  /// Split-K, once this part's partials are written: fences them, and one
  /// thread (`leader`) bumps the tile's counter in `counters`; the part
  /// that arrives last resets it for the next launch. Returns, in every
  /// thread (the shared word `flag`, read between two `barrier`s), whether
  /// this part is the tile's last: the one that finds the counter at
  /// `lastIndex` (null: split - 1).
  mlir::Value lastPartOfTile(mlir::Value counters, mlir::Value tile, mlir::Value flag,
                             mlir::Value leader, llvm::function_ref<void()> barrier,
                             mlir::Value lastIndex = {});
  /// A tensor map over parameter `slot` seen as `view`, boxes of
  /// `boxInner` x `boxRows` on the innermost factors of its last two dims.
  TensorMapAttr tensorMap(const OperandView &view, int64_t slot, int64_t bytes, int64_t boxInner,
                          int64_t boxRows);

  const KernelShape &shape;
  MatmulLayout l;
  WgmmaTile t;
  /// The outputs a TMA store writes (index into storeViews), in the order
  /// of their tensor maps; and the shared memory of their buffers, placed
  /// 1024-aligned right after the stages.
  llvm::SmallVector<unsigned, 4> tmaOutputs;
  int64_t tmaBufferBytes = 0;
  /// The matmuls' values at the element the epilogue is at.
  llvm::SmallVector<mlir::Value, 2> accElement;
  int64_t tilesM = 0, tilesN = 0, numTiles = 0, numK = 0, perSplit = 0;
  int64_t aBytes = 0, bBytes = 0, barrierOffset = 0, flagOffset = 0, stagingOffset = 0;
  int64_t tmaBufferOffset = 0;
  /// Resident rhs tiles (WgmmaTile::resident): their shared memory, right
  /// after the stages (1024-aligned: a stage is a multiple of 8 KB), k-block
  /// kb's rhs r at residentOffset + (kb * rhs + r) * bBytes; their mbarrier
  /// sits beside the flag, at flagOffset + 8.
  int64_t residentOffset = 0;
  /// The element the epilogue is at: its flat index and its coordinates in
  /// the domain (i64).
  mlir::Value elementIndex;
  llvm::SmallVector<mlir::Value> elementCoords;
};

} // namespace fusec::codegen

#endif // FUSEC_LIB_CODEGEN_STRATEGIES_MATMULTMA_H
