//===- TensorCoreEncodingTest.cpp - Descriptor bit layouts on the CPU ------===//
//
// The wgmma and tcgen05 descriptors fusec builds, decoded field by field
// with the PTX ISA's tables written out here on their own (bit positions
// and widths, not the encoder's shifts), so a wrong shift or mask fails
// here instead of on a GPU (and the Blackwell ones have no GPU here).
//
//===----------------------------------------------------------------------===//

#include "fusec/Support/TensorCoreEncoding.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace fusec::encoding;

struct Field {
  const char *name;
  int lo, width;
};

uint64_t get(uint64_t word, const Field &f) {
  return (word >> f.lo) & ((uint64_t(1) << f.width) - 1);
}

/// The bits of a word no field of `fields` covers.
uint64_t uncovered(uint64_t word, const std::vector<Field> &fields, int bits) {
  uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  for (const Field &f : fields)
    mask &= ~(((uint64_t(1) << f.width) - 1) << f.lo);
  return word & mask;
}

// PTX ISA, warpgroup-level matrix descriptor.
const Field kWgStart{"start address >> 4", 0, 14}, kWgLbo{"LBO >> 4", 16, 14},
    kWgSbo{"SBO >> 4", 32, 14}, kWgBase{"base offset", 49, 3}, kWgSwizzle{"swizzle", 62, 2};
// PTX ISA, tcgen05 shared memory descriptor.
const Field kTcStart{"start address >> 4", 0, 14}, kTcLbo{"LBO >> 4", 16, 14},
    kTcSbo{"SBO >> 4", 32, 14}, kTcFixed{"fixed 0b001", 46, 3}, kTcBase{"base offset", 49, 3},
    kTcLboMode{"LBO mode", 52, 1}, kTcFixedZero{"fixed 0", 53, 8}, kTcSwizzle{"swizzle", 61, 3};
// PTX ISA, tcgen05.mma instruction descriptor for .kind::f16 and .kind::tf32.
const Field kIdSparseSel{"sparsity selector", 0, 2}, kIdSparse{"sparsity", 2, 1},
    kIdSaturate{"saturate", 3, 1}, kIdD{"D type", 4, 2}, kIdA{"A type", 7, 3},
    kIdB{"B type", 10, 3}, kIdNegA{"negate A", 13, 1}, kIdNegB{"negate B", 14, 1},
    kIdTransA{"transpose A", 15, 1}, kIdTransB{"transpose B", 16, 1}, kIdN{"N >> 3", 17, 6},
    kIdM{"M >> 4", 24, 5}, kIdShift{"max shift", 30, 2};

TEST(TensorCoreEncoding, WgmmaDescriptorFields) {
  // Addresses anywhere in the 227 KiB shared window, 16-byte aligned;
  // the offsets fusec uses (16, 1024, a 64-column block of 128 or 256 rows).
  for (uint32_t addr : {0u, 16u, 1024u, 0x1F3F0u, 0x38000u})
    for (uint32_t lbo : {16u, 1024u, 128u * 128, 256u * 128})
      for (uint32_t sbo : {16u, 1024u, 8192u}) {
        uint64_t d = wgmmaDescriptor(addr, lbo, sbo);
        std::string at = std::to_string(addr) + "/" + std::to_string(lbo) + "/" +
                         std::to_string(sbo);
        EXPECT_EQ(get(d, kWgStart), (addr & 0x3FFFF) >> 4) << at;
        EXPECT_EQ(get(d, kWgLbo), lbo >> 4) << at;
        EXPECT_EQ(get(d, kWgSbo), sbo >> 4) << at;
        EXPECT_EQ(get(d, kWgBase), 0u) << at;
        EXPECT_EQ(get(d, kWgSwizzle), 1u) << at << ": 128-byte swizzle is 1";
        EXPECT_EQ(uncovered(d, {kWgStart, kWgLbo, kWgSbo, kWgBase, kWgSwizzle}, 64), 0u) << at;
      }
  // A generic address's window bits above the 18-bit shared offset drop.
  EXPECT_EQ(get(wgmmaDescriptor(0x40000u | 0x100u, 16, 1024), kWgStart), 0x10u);
  // One value by hand: start 0x400 (64), LBO 16 (1), SBO 1024 (64), swizzle 1.
  EXPECT_EQ(wgmmaDescriptor(0x400, 16, 1024), 0x4000004000010040ull);
}

TEST(TensorCoreEncoding, Tcgen05SharedMemoryDescriptorFields) {
  for (uint32_t addr : {0u, 16u, 1024u, 0x1F3F0u, 0x38000u})
    for (uint32_t lbo : {16u, 1024u, 64u * 128})
      for (uint32_t sbo : {1024u, 8192u}) {
        uint64_t d = tcgen05Descriptor(addr, lbo, sbo);
        EXPECT_EQ(get(d, kTcStart), (addr & 0x3FFFF) >> 4);
        EXPECT_EQ(get(d, kTcLbo), lbo >> 4);
        EXPECT_EQ(get(d, kTcSbo), sbo >> 4);
        EXPECT_EQ(get(d, kTcFixed), 1u) << "bits 46-48 must be 0b001";
        EXPECT_EQ(get(d, kTcBase), 0u);
        EXPECT_EQ(get(d, kTcLboMode), 0u);
        EXPECT_EQ(get(d, kTcFixedZero), 0u);
        EXPECT_EQ(get(d, kTcSwizzle), 2u) << "128-byte swizzle is 2 in tcgen05's encoding";
        EXPECT_EQ(uncovered(d, {kTcStart, kTcLbo, kTcSbo, kTcFixed, kTcBase, kTcLboMode,
                                kTcFixedZero, kTcSwizzle},
                            64),
                  0u);
      }
  // Both generations set bit 62 for the 128-byte swizzle (wgmma's 1 in
  // bits 62-63, tcgen05's 2 in bits 61-63); tcgen05 adds bit 46.
  EXPECT_EQ(tcgen05Descriptor(0x400, 16, 1024) ^ wgmmaDescriptor(0x400, 16, 1024),
            uint64_t(1) << 46);
}

TEST(TensorCoreEncoding, Tcgen05F16InstructionDescriptorFields) {
  for (bool bf16 : {false, true})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int m : {64, 128})
          for (int n = 8; n <= 256; n += 8) {
            if (!tcgen05F16ShapeIsValid(m, n))
              continue;
            uint32_t d = tcgen05F16InstrDescriptor(bf16, ta, tb, m, n);
            std::string at = std::to_string(m) + "x" + std::to_string(n);
            EXPECT_EQ(get(d, kIdSparseSel), 0u) << at;
            EXPECT_EQ(get(d, kIdSparse), 0u) << at;
            EXPECT_EQ(get(d, kIdSaturate), 0u) << at;
            EXPECT_EQ(get(d, kIdD), 1u) << at << ": an f32 accumulator is 1";
            EXPECT_EQ(get(d, kIdA), bf16 ? 1u : 0u) << at;
            EXPECT_EQ(get(d, kIdB), bf16 ? 1u : 0u) << at;
            EXPECT_EQ(get(d, kIdNegA), 0u) << at;
            EXPECT_EQ(get(d, kIdNegB), 0u) << at;
            EXPECT_EQ(get(d, kIdTransA), ta ? 1u : 0u) << at;
            EXPECT_EQ(get(d, kIdTransB), tb ? 1u : 0u) << at;
            EXPECT_EQ(get(d, kIdN), uint64_t(n) >> 3) << at;
            EXPECT_EQ(get(d, kIdM), uint64_t(m) >> 4) << at;
            EXPECT_EQ(get(d, kIdShift), 0u) << at;
            EXPECT_EQ(uncovered(d,
                                {kIdSparseSel, kIdSparse, kIdSaturate, kIdD, kIdA, kIdB, kIdNegA,
                                 kIdNegB, kIdTransA, kIdTransB, kIdN, kIdM, kIdShift},
                                32),
                      0u)
                << at << ": reserved bits 6, 23 and 29 stay 0";
          }
  // The value test/lit/CodeGen/matmul-tcgen05.mlir expects of the code
  // generator (bf16, B MN-major, 128 x 256), and one by hand for the
  // attention kernel's S GEMM (bf16, both K-major, 128 x 128): D 1 << 4,
  // A and B 1 << 7 and 1 << 10, N 16 << 17, M 8 << 24.
  EXPECT_EQ(tcgen05F16InstrDescriptor(true, false, true, 128, 256), 0x08410490u);
  EXPECT_EQ(tcgen05F16InstrDescriptor(true, false, false, 128, 128), 0x08200490u);
  EXPECT_EQ(tcgen05F16InstrDescriptor(false, false, false, 64, 8), 0x04020010u);
}

TEST(TensorCoreEncoding, Tcgen05F16Shapes) {
  EXPECT_TRUE(tcgen05F16ShapeIsValid(128, 256));
  EXPECT_TRUE(tcgen05F16ShapeIsValid(128, 16));
  EXPECT_TRUE(tcgen05F16ShapeIsValid(64, 8));
  EXPECT_FALSE(tcgen05F16ShapeIsValid(128, 8));   // M 128 steps N by 16
  EXPECT_FALSE(tcgen05F16ShapeIsValid(128, 264)); // N at most 256
  EXPECT_FALSE(tcgen05F16ShapeIsValid(96, 64));
  // Every shape the encoder takes fits its fields (N >> 3 in 6 bits, M >> 4
  // in 5).
  for (int m : {64, 128})
    for (int n = 8; n <= 256; n += 8)
      if (tcgen05F16ShapeIsValid(m, n)) {
        EXPECT_LT(n >> 3, 64);
        EXPECT_LT(m >> 4, 32);
      }
}

TEST(TensorCoreEncoding, TmemAddresses) {
  // Lane in bits 16-31, column in 0-15, on top of the allocation's base.
  EXPECT_EQ(tmemAddress(0, 0, 0), 0u);
  EXPECT_EQ(tmemAddress(0, 32, 0), 32u << 16);
  EXPECT_EQ(tmemAddress(0, 96, 255), (96u << 16) | 255u);
  EXPECT_EQ(tmemAddress(128, 64, 16), (64u << 16) | 144u);
}

} // namespace
