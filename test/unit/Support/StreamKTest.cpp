// The stream-K schedule (include/fusec/Support/StreamK.h), the reference for
// the formulas matmul_wgmma emits: over many shapes, every (tile, k-block)
// iteration is computed by exactly one CTA, the CTAs that share a tile are
// consecutive and each holds a contiguous, non-empty run of its k-blocks in
// part order, no two partials of a launch share a workspace slot, and the
// figures the plan uses (the most parts, a CTA's tiles) agree with a direct
// count.
#include "fusec/Support/StreamK.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <vector>

using fusec::StreamKSchedule;

namespace {

void checkSchedule(const StreamKSchedule &s) {
  SCOPED_TRACE(::testing::Message() << s.tiles << " tiles x " << s.blocks << " k-blocks on "
                                    << s.grid << " CTAs");
  ASSERT_TRUE(s.valid());
  std::vector<int> covered(static_cast<size_t>(s.iterations()), 0);
  std::map<int64_t, std::vector<std::tuple<int64_t, int64_t, int64_t>>> parts; // tile -> (cta, from, to)
  std::set<int64_t> slots;
  int64_t partials = 0;
  for (int64_t c = 0; c < s.grid; ++c) {
    ASSERT_LT(s.begin(c), s.begin(c + 1)) << "CTA " << c << " has no iteration";
    for (int64_t t = s.firstTile(c); t <= s.lastTile(c); ++t) {
      int64_t from = s.from(c, t), to = s.to(c, t);
      ASSERT_LT(from, to) << "CTA " << c << " tile " << t;
      ASSERT_LE(to, s.blocks);
      for (int64_t k = from; k < to; ++k)
        ++covered[static_cast<size_t>(t * s.blocks + k)];
      parts[t].emplace_back(c, from, to);
      if (from != 0 || to != s.blocks) { // a partial: its slot is its own
        ++partials;
        EXPECT_TRUE(slots.insert(s.slot(c, t)).second) << "slot " << s.slot(c, t) << " twice";
        EXPECT_LT(s.slot(c, t), 2 * s.grid);
      }
    }
  }
  for (int64_t i = 0; i < s.iterations(); ++i)
    ASSERT_EQ(covered[static_cast<size_t>(i)], 1) << "iteration " << i;
  int64_t most = 0;
  for (auto &[t, list] : parts) {
    // The sharers are firstCta .. lastCta, in order, their runs abutting.
    ASSERT_EQ(std::get<0>(list.front()), s.firstCta(t));
    ASSERT_EQ(std::get<0>(list.back()), s.lastCta(t));
    ASSERT_EQ(static_cast<int64_t>(list.size()), s.lastCta(t) - s.firstCta(t) + 1);
    for (size_t p = 0; p < list.size(); ++p) {
      EXPECT_EQ(std::get<0>(list[p]), s.firstCta(t) + static_cast<int64_t>(p));
      EXPECT_EQ(std::get<1>(list[p]), p == 0 ? 0 : std::get<2>(list[p - 1]));
    }
    EXPECT_EQ(std::get<2>(list.back()), s.blocks);
    most = std::max<int64_t>(most, static_cast<int64_t>(list.size()));
  }
  EXPECT_EQ(s.maxParts(), most);
  EXPECT_LE(partials, 2 * s.grid);
}

TEST(StreamK, EveryIterationOnceAndEveryPartialInItsOwnSlot) {
  // ResNet-50's 7 x 7 and 28 x 28 3x3 convolutions at batch 32 (52 and 196
  // tiles of 128 x 128), a 256-token GEMM of 4096 x 4096, and shapes at the
  // edges: fewer tiles than CTAs, a CTA's share shorter than a tile, one
  // tile, one k-block, a grid that divides the work exactly.
  for (auto [tiles, blocks, grid] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{52, 72, 132},
                                                          {196, 18, 132},
                                                          {64, 64, 132},
                                                          {1, 8, 8},
                                                          {1, 100, 7},
                                                          {3, 1, 3},
                                                          {5, 1, 2},
                                                          {132, 8, 132},
                                                          {264, 12, 132},
                                                          {7, 13, 11}})
    checkSchedule({tiles, blocks, grid});
  for (int64_t tiles = 1; tiles <= 40; ++tiles)
    for (int64_t blocks = 1; blocks <= 20; ++blocks)
      for (int64_t grid : {1, 2, 3, 7, 16, 33, 132})
        if (grid <= tiles * blocks)
          checkSchedule({tiles, blocks, grid});
}

TEST(StreamK, SharesAreEvenAndPartsFew) {
  // ResNet-50's last 3x3: 3,744 iterations on 132 CTAs, 28 or 29 each
  // (split-K in two gave 104 CTAs 36); a tile of 72 k-blocks meets at most
  // four CTAs.
  StreamKSchedule s{52, 72, 132};
  for (int64_t c = 0; c < s.grid; ++c) {
    int64_t n = s.begin(c + 1) - s.begin(c);
    EXPECT_TRUE(n == 28 || n == 29) << n;
  }
  EXPECT_EQ(s.maxParts(), 4);
  // A grid that divides the tiles: every tile whole, one part.
  EXPECT_EQ((StreamKSchedule{264, 12, 132}.maxParts()), 1);
}

TEST(StreamK, ValidNeedsAnIterationPerCta) {
  EXPECT_FALSE((StreamKSchedule{2, 3, 7}.valid()));
  EXPECT_FALSE((StreamKSchedule{0, 3, 1}.valid()));
  EXPECT_FALSE((StreamKSchedule{int64_t(1) << 20, int64_t(1) << 12, 132}.valid()));
  EXPECT_TRUE((StreamKSchedule{2, 3, 6}.valid()));
}

} // namespace
