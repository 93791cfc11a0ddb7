//===- TensorCoreEncoding.h - Tensor-core descriptor bit layouts -*- C++ -*-===//
//
// The 64-bit shared-memory matrix descriptors of Hopper's wgmma and
// Blackwell's tcgen05.mma, the 32-bit instruction descriptor of
// tcgen05.mma's kind::f16, and TMEM addresses: one definition for the code
// generator (lib/CodeGen/Strategies) and the hand-written runtime kernels
// (runtime_kernels/, compiled by nvcc, where the functions are also device
// functions). Plain C++17 without dependencies. Checked field by field
// against the PTX ISA's tables on the CPU (test/unit/Support/
// TensorCoreEncodingTest.cpp), so an encoding bug shows without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_SUPPORT_TENSORCOREENCODING_H
#define FUSEC_SUPPORT_TENSORCOREENCODING_H

#include <cstdint>

#if defined(__CUDACC__)
#define FUSEC_HOST_DEVICE __host__ __device__
#else
#define FUSEC_HOST_DEVICE
#endif

namespace fusec::encoding {

/// The shared-memory layouts fusec uses: 128-byte swizzle (what TMA writes
/// with CU_TENSOR_MAP_SWIZZLE_128B: rows of 128 bytes, 8-row atoms of 1024
/// bytes, atoms 1024-byte aligned so the base offset is 0).
///
/// wgmma (PTX ISA, "Matrix Descriptor Format" of warpgroup-level MMA):
///   bits  0-13  matrix start address >> 4 (shared window, 18 bits)
///   bits 16-29  leading dimension byte offset >> 4
///   bits 32-45  stride dimension byte offset >> 4
///   bits 49-51  matrix base offset (0)
///   bits 62-63  swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
FUSEC_HOST_DEVICE constexpr uint64_t wgmmaDescriptor(uint32_t smemAddress, uint32_t lbo,
                                                     uint32_t sbo) {
  return static_cast<uint64_t>((smemAddress & 0x3FFFFu) >> 4) |
         (static_cast<uint64_t>((lbo >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFFu) << 32) | (uint64_t(1) << 62);
}

/// tcgen05 (PTX ISA, "Shared memory descriptor" of the tcgen05 family):
///   bits  0-13  matrix start address >> 4
///   bits 16-29  leading dimension byte offset >> 4
///   bits 32-45  stride dimension byte offset >> 4
///   bits 46-48  the fixed constant 0b001 (the descriptor's version)
///   bits 49-51  matrix base offset (0)
///   bit  52     leading dimension stride mode (0: relative offsets)
///   bits 53-60  fixed 0
///   bits 61-63  swizzle mode: 0 none, 1 128-byte with 32-byte atomic
///               granularity, 2 128-byte, 4 64-byte, 6 32-byte
FUSEC_HOST_DEVICE constexpr uint64_t tcgen05Descriptor(uint32_t smemAddress, uint32_t lbo,
                                                       uint32_t sbo) {
  return static_cast<uint64_t>((smemAddress & 0x3FFFFu) >> 4) |
         (static_cast<uint64_t>((lbo >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFFu) << 32) | (uint64_t(1) << 46) |
         (uint64_t(2) << 61);
}

/// The instruction descriptor of tcgen05.mma .kind::f16 with an f32
/// accumulator (PTX ISA, "Instruction descriptor" of tcgen05.mma, the
/// table for .kind::f16 and .kind::tf32):
///   bits  0-1   sparsity selector (0)      bit  2   sparsity (0: dense)
///   bit   3     saturate (0)               bits 4-5 D type: 0 f16, 1 f32
///   bit   6     reserved                   bits 7-9 A type: 0 f16, 1 bf16
///   bits 10-12  B type (as A)              bit 13   negate A (0)
///   bit  14     negate B (0)               bit 15   transpose A (1: MN-major)
///   bit  16     transpose B (1: MN-major)  bits 17-22 N >> 3
///   bit  23     reserved                   bits 24-28 M >> 4
///   bit  29     reserved                   bits 30-31 max shift (.ws only, 0)
/// A K-major A is [M, K] with K contiguous; a K-major B is [N, K].
FUSEC_HOST_DEVICE constexpr uint32_t tcgen05F16InstrDescriptor(bool bf16, bool transposeA,
                                                               bool transposeB, int m, int n) {
  return (1u << 4) | ((bf16 ? 1u : 0u) << 7) | ((bf16 ? 1u : 0u) << 10) |
         ((transposeA ? 1u : 0u) << 15) | ((transposeB ? 1u : 0u) << 16) |
         ((static_cast<uint32_t>(n >> 3) & 0x3Fu) << 17) |
         ((static_cast<uint32_t>(m >> 4) & 0x1Fu) << 24);
}

/// Whether tcgen05.mma .kind::f16 (cta_group::1) takes an M x N tile: M 64
/// with N a multiple of 8, or M 128 with N a multiple of 16, N in [8, 256]
/// (PTX ISA, "Matrix shape" of tcgen05.mma).
FUSEC_HOST_DEVICE constexpr bool tcgen05F16ShapeIsValid(int m, int n) {
  return (m == 64 && n >= 8 && n <= 256 && n % 8 == 0) ||
         (m == 128 && n >= 16 && n <= 256 && n % 16 == 0);
}

/// A TMEM address: the lane in the high 16 bits, the column in the low 16.
FUSEC_HOST_DEVICE constexpr uint32_t tmemAddress(uint32_t base, uint32_t lane,
                                                 uint32_t column) {
  return base + (lane << 16) + column;
}

} // namespace fusec::encoding

#endif // FUSEC_SUPPORT_TENSORCOREENCODING_H
