//===- Matmul.h - What the tensor-core matmul strategies take ---*- C++ -*-===//
//
// The plan (Plan.cpp) and the tensor-core strategies share one reading of a
// matmul kernel: its operands as the kernel's own arguments (TMA reads them
// from global memory), M, N, K, batch dims with their broadcasts, transposes,
// the element type, and whether the rest of the body is an epilogue on the
// matmul's result (elementwise, at the result's own index). Two matmuls of
// one lhs by two rhs of one shape (SwiGLU's gate and up) are one GEMM with
// two accumulators. A kernel the reading refuses runs on matmul_simt.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CODEGEN_MATMUL_H
#define FUSEC_LIB_CODEGEN_MATMUL_H

#include "fusec/CodeGen/LaunchPlan.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <string>

namespace fusec::codegen {

/// A matmul operand as TMA reads it: a kernel argument, seen through the
/// transposes and reshapes between it and the matmul (an attention output
/// [B, H, S, D] transposed and reshaped into [B S, H D] rows). Each dim of
/// the operand, outer first, is a list of (extent, stride in elements)
/// factors of the argument, outer first: a plain argument has one factor a
/// dim; a transpose permutes dims; a reshape merges dims (factors that are
/// not contiguous stay apart) and splits them. Every factor becomes a dim
/// of the operand's tensor map.
struct OperandView {
  mlir::BlockArgument arg;
  using Factors = llvm::SmallVector<std::pair<int64_t, int64_t>, 2>;
  llvm::SmallVector<Factors, 4> dims;
  /// Tensor-map dims: each factor, innermost first, of the last dim, the
  /// second-to-last, then the batch dims inward out (factors of extent 1
  /// in batch dims dropped).
  bool plain() const {
    return llvm::all_of(dims, [](const Factors &f) { return f.size() == 1; });
  }
};
/// The view of `operand`, or nothing when it is computed inside the kernel
/// (or a reshape splits a factor unevenly).
std::optional<OperandView> operandViewOf(mlir::Value operand);
/// Whether TMA reads the view in boxes of `inner` elements of its last dim
/// by up to 256 of the second-to-last: the last dim's innermost factor is
/// contiguous (and, with more factors, a multiple of `inner`), a split
/// second-to-last dim's innermost factor is a multiple of 256, every other
/// stride a multiple of 16 bytes, at most 5 tensor-map dims.
bool tmaReadable(const OperandView &view, int64_t inner, int64_t elementBytes,
                 std::string *why = nullptr);

/// A kernel output as a TMA store writes it: the output buffer seen from
/// the matmul's [batch..., M, N] domain. `view.dims` are the domain's dims
/// (its factors as in OperandView, their extents those of the output's
/// slices), `offset` the slice's start in each domain dim (a coordinate
/// minus it is the view's). `view.arg` is unused: `slot` is the output's
/// kernel parameter (operands, then results).
struct StoreView {
  OperandView view;
  int64_t slot = 0;
  int64_t elementBytes = 2;
  llvm::SmallVector<int64_t, 4> offset;
};

/// A convolution's lhs as implicit GEMM reads it: the [M, T·C] matrix is
/// the T taps' row windows of one argument [Φ, R, C] (the padded,
/// channels-last input, Φ stride phases of R rows) side by side, tap t the
/// rows [δ_t, δ_t + M) of phase φ_t. C is a multiple of the 64-element
/// k-block, so each k-block reads one tap: a box of 64 channels by the
/// tile's rows, from row m0 + δ_t of phase φ_t.
struct ShiftedLhs {
  int64_t channels = 0;
  llvm::SmallVector<std::pair<int64_t, int64_t>, 9> taps; ///< (φ, δ)
};

/// A convolution's lhs as TMA's im2col mode reads it: the [M, T·C] matrix
/// of a channels-last argument [N, spatial..., C0] (M = N Π O_i output
/// positions), zero-padded by `low`/`high` along each spatial dim and to C
/// channels (C a multiple of 64), tap t's block the strided slice from
/// `taps[t]` (per spatial dim, in padded positions) of stride `strides`,
/// flattened. Each k-block reads one tap's 64 channels for the tile's
/// output positions: one im2col load from the output position's input
/// corner (q_i s_i - low_i) with the tap's offsets, the padding and the
/// channels past C0 read as TMA's out-of-bounds zeros.
struct Im2colLhs {
  int64_t channels = 0;
  llvm::SmallVector<int64_t, 3> input, out, strides, low;
  llvm::SmallVector<llvm::SmallVector<int64_t, 3>, 9> taps;
};

struct MatmulLayout {
  /// One matmul, or two sharing the lhs (each with its rhs).
  llvm::SmallVector<MatmulOp, 2> ops;
  /// The implicit GEMM's windows; then `lhs` and `lhsView` are the
  /// argument the windows read, [Φ, R, C].
  std::optional<ShiftedLhs> shifted;
  /// Or its im2col reading; then `lhs` and `lhsView` are the channels-last
  /// argument [N, spatial..., C0].
  std::optional<Im2colLhs> im2col;
  mlir::BlockArgument lhs;
  llvm::SmallVector<mlir::BlockArgument, 2> rhs;
  /// How TMA reads each (lhs, then each rhs).
  OperandView lhsView;
  llvm::SmallVector<OperandView, 2> rhsViews;
  int64_t m = 0, n = 0, k = 0;
  /// The result's batch dims (outer first) and each operand's (aligned
  /// from the right with the result's; a 1 broadcasts).
  llvm::SmallVector<int64_t> batch, lhsBatch, rhsBatch;
  bool transposeLhs = false, transposeRhs = false;
  /// bf16 or f16 (every operand).
  mlir::Type element;
  /// Bytes of an element of each kernel output of the matmul's own shape;
  /// 0 for an output written through movement ops (a store map).
  llvm::SmallVector<int64_t, 4> outputBytes;
  /// Per kernel output: how a TMA store writes it from shared memory, in
  /// pieces of 128 bytes (64 2-byte or 32 4-byte columns) by 64 rows;
  /// nothing where it cannot (1-byte elements, rows not a multiple of 16
  /// bytes, a movement that splits a piece).
  llvm::SmallVector<std::optional<StoreView>, 4> storeViews;
  int64_t batchCount() const {
    int64_t b = 1;
    for (int64_t d : batch)
      b *= d;
    return b;
  }
};

/// The tensor-core reading of a Matmul kernel, or nothing with the reason in
/// `why`.
std::optional<MatmulLayout> analyzeMatmul(KernelOp kernel, const KernelShape &shape,
                                          std::string *why = nullptr);

/// The wgmma strategy's configuration menu: 64 or 128 rows (one or two
/// consumer warpgroups), 128, 192 or 256 columns of each rhs (over 128 only
/// for one rhs: a consumer holds at most 128 accumulator registers), 64 K a
/// stage,
/// 2 to 8 stages, K split into 1 to 16 parts.
struct WgmmaTile {
  int64_t m = 128, n = 256, k = 64, stages = 4, split = 1, rhs = 1;
  /// With split over 1: the tiles that run whole, the first `unsplit` in
  /// the grid's order of units; the rest (the last wave over the SMs, when
  /// it would leave many idle) run as `split` parts of K each. 0: every
  /// tile is split.
  int64_t unsplit = 0;
  /// Stream-K: the grid's CTAs share the tiles' mainloop iterations
  /// evenly (a CTA's range may start and end inside tiles); no split.
  bool streamK = false;
  /// Work units of a plan over `tiles` tiles.
  int64_t units(int64_t tiles) const { return unsplit + (tiles - unsplit) * split; }
  /// Shared memory of the epilogue's staging (WgmmaStaging), in bytes.
  int64_t staging = 0;
  /// Ping-pong: two consumer warpgroups each own whole 64-row tiles and
  /// take the CTA's units in turn, their mainloops one after the other, so
  /// one's epilogue runs beside the other's wgmmas (m is 64; the launch's
  /// 384 threads with a 64-row tile say so). Else the consumers share each
  /// tile, 64 rows each, and run its epilogue together.
  bool pingpong = false;
  /// Swapped operands (decode): a tile of fewer than 64 rows (8 to 56, a
  /// multiple of 8) takes the rhs as wgmma's A operand, 64 of its columns a
  /// consumer warpgroup (n is 64 or 128), and the lhs rows (the tokens) as
  /// wgmma's N, so that a stage holds the weights and only as many token
  /// rows as there are, and more tiles along M and N fill the SMs without
  /// splitting K. One rhs or two (a dual GEMM), a K-major lhs, no TMA
  /// store.
  bool swapped() const { return m < 64; }
  /// Resident rhs: the CTA loads every k-block of its rhs tiles once into
  /// shared memory (`resident` of them, all of K's) and reads them for each
  /// tile it computes; a stage then holds the lhs alone. For a plan of one
  /// column of tiles, no split and no batch of rhs (a 1x1 convolution's
  /// filter: the same rhs tile for every unit). 0: streamed, a share of
  /// every stage.
  int64_t resident = 0;
  /// Shared memory of the resident rhs tiles.
  int64_t residentBytes() const { return resident * rhs * n * k * 2; }
  int64_t consumers() const { return pingpong ? 2 : swapped() ? n / 64 : m / 64; }
  int64_t threads() const { return 128 * (1 + consumers()); }
  /// Bytes of one pipeline stage.
  int64_t stageBytes() const { return (m + (resident ? 0 : rhs * n)) * k * 2; }
  /// wgmma's N: the columns of a consumer's accumulator.
  int64_t accCols() const { return swapped() ? m : n; }
  /// f32 accumulator registers a consumer thread holds.
  int64_t accRegs() const { return rhs * accCols() / 2; }
};
/// How the epilogue stages its full-shape outputs through shared memory
/// when N is odd, so that they reach global memory in coalesced rows (of
/// the widest vectors N keeps aligned), not the fragment's elements, 8 rows
/// apart. Each consumer warp owns a region: per output, 8 rows of
/// `pieceCols` columns (one half of its 16 rows, one piece of the tile's
/// columns), rows padded against bank conflicts (none for 2-byte outputs,
/// two-way for 4-byte ones). Outputs written through a store map are
/// stored directly.
struct WgmmaStaging {
  int64_t pieceCols = 0; ///< 0: nothing is staged
  int64_t warpBytes = 0; ///< a warp's region
  /// Per kernel output: its byte offset in a warp's region (-1: stored
  /// directly), its row stride there and its vector width in elements.
  llvm::SmallVector<int64_t, 4> offset, rowStride, vector;
  /// The TMA-store epilogue (N even; exclusive with the above): per kernel
  /// output, its buffer's byte offset in a warpgroup's set (-1: stored from
  /// the registers). A set holds, per TMA-stored output, one 64-column
  /// group of the warpgroup's 64 rows: 8 KB for 2-byte elements (one
  /// 128-byte-swizzled piece), 16 KB for 4-byte ones (two). `sets` (1 or
  /// 2) alternate between a tile's column groups, so that a group is
  /// written while the last one's stores still read theirs.
  llvm::SmallVector<int64_t, 4> tmaOffset;
  int64_t tmaSetBytes = 0, tmaSets = 0;
  bool tma() const { return tmaSetBytes > 0; }
  /// The whole staging area of `consumers` warpgroups.
  int64_t bytes(int64_t consumers) const {
    return tma() ? consumers * tmaSets * tmaSetBytes : consumers * 4 * warpBytes;
  }
};
/// Whether FUSEC_TMA_STORE allows the TMA-store epilogue (unset or not
/// "0").
bool tmaStoreEnabled();
/// FUSEC_EPILOGUE_PREFETCH: "1" (any value but "0") turns on the
/// producer's L2 prefetch of the epilogue's full-shape inputs; unset or
/// "0", it is off (measured slower on ResNet-50: MatmulWgmma.cpp).
std::optional<bool> epiloguePrefetchForced();
/// `tmaStore`: whether the epilogue may store through TMA (the escape
/// switch FUSEC_TMA_STORE=0 turns it off).
WgmmaStaging wgmmaStaging(const MatmulLayout &layout, bool tmaStore = tmaStoreEnabled());
/// Chooses the tile, stages and split for `layout` on a target with `sms`
/// SMs and `smemBytes` of shared memory per SM (a ping-pong schedule where
/// allowed and the epilogue is heavy enough).
/// `pingpongAllowed`, `swapAllowed`: whether the ping-pong and the
/// swapped (decode) tiles may be chosen (tcgen05 takes neither).
WgmmaTile chooseWgmmaTile(const MatmulLayout &layout, int64_t sms, int64_t smemBytes,
                          bool pingpongAllowed = true, bool swapAllowed = true);
/// Whether the swapped tile can take `layout` (one rhs or two, a K-major
/// lhs, not an implicit GEMM).
bool swapReadable(const MatmulLayout &layout);
/// Dynamic shared memory of a wgmma kernel: 1 KiB alignment slack, the
/// stages, the resident rhs tiles, two mbarriers a stage, a flag (and the
/// resident tiles' mbarrier beside it) and the epilogue's staging.
inline int64_t wgmmaSharedBytes(const WgmmaTile &t) {
  return 1024 + t.stages * t.stageBytes() + t.residentBytes() + 16 * t.stages + 16 + t.staging;
}
/// Whether the last wave's tiles may be split in parts of K while the
/// full waves' run whole (WgmmaTile::unsplit): FUSEC_WGMMA_TAIL_SPLIT "0"
/// turns it off, any other value on; unset, kTailSplitDefault.
inline constexpr bool kTailSplitDefault = false;
bool tailSplitEnabled();
/// Whether FUSEC_WGMMA_STREAM_K asks for stream-K ("1": where the whole
/// tiles' last wave leaves more than a tenth of the SMs idle; unset or
/// "0": never, the default until measured).
bool streamKRequested();
/// Whether FUSEC_WGMMA_RESIDENT_B asks for resident rhs tiles ("1": where
/// they apply; unset or "0": never, the default until measured).
bool residentRhsRequested();
/// The k-blocks `layout`'s rhs tiles would keep resident under `t` (all of
/// K's), or 0 where the tile cannot: swapped, split, more than one column
/// of tiles, a batch of rhs, or more than `capBytes` of them.
int64_t residentRhsBlocks(const MatmulLayout &layout, const WgmmaTile &t,
                          int64_t capBytes = 96 * 1024);
/// Dynamic shared memory of a tcgen05 kernel: a wgmma kernel's, with two
/// mbarriers per accumulator buffer (two at most) and the word TMEM's
/// address is written to, where the wgmma kernel has its flag.
inline int64_t tcgen05SharedBytes(const WgmmaTile &t) { return wgmmaSharedBytes(t) + 32; }
/// Chooses the tile and stages of a tcgen05 kernel: 128 rows (one MMA of
/// M = 128 fills TMEM's 128 lanes), the columns as for wgmma, split-K as
/// for wgmma's unswapped tiles.
WgmmaTile chooseTcgen05Tile(const MatmulLayout &layout, int64_t sms, int64_t smemBytes);
/// Tiles of the output (batch included).
inline int64_t wgmmaTiles(const MatmulLayout &l, const WgmmaTile &t) {
  return ((l.m + t.m - 1) / t.m) * ((l.n + t.n - 1) / t.n) * l.batchCount();
}

} // namespace fusec::codegen

#endif // FUSEC_LIB_CODEGEN_MATMUL_H
