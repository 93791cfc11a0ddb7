//===- StreamK.h - the stream-K schedule of a tensor-core GEMM -*- C++ -*-===//
//
// Stream-K (matmul_wgmma's `streamk` plan): a GEMM of `tiles` output tiles,
// each `blocks` k-blocks deep, runs on a grid of `grid` CTAs, which share
// the I = tiles x blocks mainloop iterations evenly. Iteration x is k-block
// x mod blocks of tile x / blocks; CTA c takes [c I / G, (c + 1) I / G).
// A tile whose iterations fall to one CTA is computed whole; a tile shared
// by CTAs first .. last is computed in parts, part p by CTA first + p, each
// written to the workspace, and the part that finishes last sums them in
// part order and runs the epilogue. A CTA writes at most two partial tiles:
// the one its range starts inside (slot 2c) and the one it ends inside
// (slot 2c + 1), so 2G slots hold every partial of a launch.
//
// The code generator (lib/CodeGen/Strategies/MatmulWgmma.cpp) emits these
// same formulas as IR; this header is their reference, checked by
// test/unit/Support/StreamKTest.cpp, and gives the plan's static figures.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_SUPPORT_STREAMK_H
#define FUSEC_SUPPORT_STREAMK_H

#include <algorithm>
#include <cstdint>

namespace fusec {

struct StreamKSchedule {
  int64_t tiles = 0, blocks = 0, grid = 0;

  int64_t iterations() const { return tiles * blocks; }
  /// CTA `cta`'s first iteration (cta = grid: one past the last).
  int64_t begin(int64_t cta) const { return cta * iterations() / grid; }
  /// The CTA whose range holds iteration `it`: the largest c with
  /// begin(c) <= it, i.e. ceil((it + 1) G / I) - 1.
  int64_t ctaOf(int64_t it) const { return ((it + 1) * grid - 1) / iterations(); }
  /// The tiles CTA `cta`'s range meets: firstTile .. lastTile.
  int64_t firstTile(int64_t cta) const { return begin(cta) / blocks; }
  int64_t lastTile(int64_t cta) const { return (begin(cta + 1) - 1) / blocks; }
  /// CTA `cta`'s k-blocks of tile `tile`: [from, to).
  int64_t from(int64_t cta, int64_t tile) const {
    return std::max(begin(cta), tile * blocks) - tile * blocks;
  }
  int64_t to(int64_t cta, int64_t tile) const {
    return std::min(begin(cta + 1), (tile + 1) * blocks) - tile * blocks;
  }
  /// The CTAs that share tile `tile`: firstCta .. lastCta.
  int64_t firstCta(int64_t tile) const { return ctaOf(tile * blocks); }
  int64_t lastCta(int64_t tile) const { return ctaOf((tile + 1) * blocks - 1); }
  /// The workspace slot of CTA `cta`'s partial of tile `tile`.
  int64_t slot(int64_t cta, int64_t tile) const {
    return 2 * cta + (firstTile(cta) == tile ? 0 : 1);
  }
  /// The most CTAs that share one tile (the parts its last one sums).
  int64_t maxParts() const {
    int64_t most = 0;
    for (int64_t t = 0; t < tiles; ++t)
      most = std::max(most, lastCta(t) - firstCta(t) + 1);
    return most;
  }
  /// Whether the schedule is one: every CTA has an iteration (G <= I) and
  /// the products stay in range.
  bool valid() const {
    return tiles > 0 && blocks > 0 && grid > 0 && grid <= iterations() &&
           iterations() < (int64_t(1) << 31);
  }
};

} // namespace fusec

#endif // FUSEC_SUPPORT_STREAMK_H
