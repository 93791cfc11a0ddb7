//===- HostTensorTest.cpp - Storage rounding and host tensors ---*- C++ -*-===//

#include "fusec/Support/HostTensor.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

using namespace fusec;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

TEST(RoundTo, BF16TiesToEven) {
  // bf16 keeps 8 significand bits: the spacing above 1 is 2^-7.
  EXPECT_EQ(roundTo(DType::BF16, 1.0 + 0x1p-8), 1.0);             // tie -> even
  EXPECT_EQ(roundTo(DType::BF16, 1.0 + 3 * 0x1p-8), 1.0 + 0x1p-6); // tie -> even
  EXPECT_EQ(roundTo(DType::BF16, 1.0 + 0x1p-8 + 0x1p-20), 1.0 + 0x1p-7);
  EXPECT_EQ(roundTo(DType::BF16, 3.14159265), 3.140625);
  EXPECT_EQ(roundTo(DType::BF16, -1.001), -1.0);
}

TEST(RoundTo, BF16OverflowAndSubnormals) {
  const double max = 0x1.FEp127;
  EXPECT_EQ(roundTo(DType::BF16, max), max);
  EXPECT_EQ(roundTo(DType::BF16, 0x1.FFp127), kInf); // tie above max -> inf
  EXPECT_EQ(roundTo(DType::BF16, -1e39), -kInf);
  EXPECT_EQ(roundTo(DType::BF16, 0x1p-133), 0x1p-133); // smallest subnormal
  EXPECT_EQ(roundTo(DType::BF16, 0x1p-134), 0.0);      // tie -> even (zero)
  EXPECT_TRUE(std::signbit(roundTo(DType::BF16, -0x1p-140)));
}

/// The bit-level round-to-nearest-even of f32 to bf16 that GPU libraries use.
double bf16ByBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  bits &= 0xffff0000u;
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

TEST(RoundTo, BF16MatchesBitLevelConversion) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<uint32_t> bitsDist;
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = bitsDist(rng);
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isfinite(f) || std::fabs(f) > 3.3e38f)
      continue;
    ASSERT_EQ(roundTo(DType::BF16, f), bf16ByBits(f)) << "bits " << std::hex << bits;
    ++checked;
  }
  EXPECT_GT(checked, 100000);
}

TEST(RoundTo, F16) {
  EXPECT_EQ(roundTo(DType::F16, 65504.0), 65504.0);
  EXPECT_EQ(roundTo(DType::F16, 65519.0), 65504.0);
  EXPECT_EQ(roundTo(DType::F16, 65520.0), kInf); // tie -> 65536 -> inf
  EXPECT_EQ(roundTo(DType::F16, 1.0 + 0x1p-11), 1.0);
  EXPECT_EQ(roundTo(DType::F16, 1.0 + 0x1p-10), 1.0 + 0x1p-10);
  EXPECT_EQ(roundTo(DType::F16, 0x1p-24), 0x1p-24);       // smallest subnormal
  EXPECT_EQ(roundTo(DType::F16, 0x1p-25), 0.0);           // tie -> zero
  EXPECT_EQ(roundTo(DType::F16, 0x1.8p-25), 0x1p-24);
  EXPECT_EQ(roundTo(DType::F16, 0.1), 0.0999755859375);
}

TEST(RoundTo, F32IsTheCompilersFloat) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1e6, 1e6);
  for (int i = 0; i < 10000; ++i) {
    double v = dist(rng);
    ASSERT_EQ(roundTo(DType::F32, v), static_cast<double>(static_cast<float>(v)));
  }
}

TEST(RoundTo, F8E4M3FNSaturates) {
  EXPECT_EQ(roundTo(DType::F8E4M3FN, 448.0), 448.0);
  EXPECT_EQ(roundTo(DType::F8E4M3FN, 464.0), 448.0);
  EXPECT_EQ(roundTo(DType::F8E4M3FN, 1e6), 448.0);
  EXPECT_EQ(roundTo(DType::F8E4M3FN, kInf), 448.0);
  EXPECT_EQ(roundTo(DType::F8E4M3FN, -kInf), -448.0);
  EXPECT_TRUE(std::isnan(roundTo(DType::F8E4M3FN, NAN)));
  // Three mantissa bits: 1.0625 is halfway between 1 and 1.125.
  EXPECT_EQ(roundTo(DType::F8E4M3FN, 1.0625), 1.0);
  EXPECT_EQ(roundTo(DType::F8E4M3FN, 1.1875), 1.25);
  EXPECT_EQ(roundTo(DType::F8E4M3FN, 0x1p-9), 0x1p-9); // smallest subnormal
  EXPECT_EQ(roundTo(DType::F8E4M3FN, 0x1p-10), 0.0);
  EXPECT_EQ(roundTo(DType::F8E4M3FN, 0.3), 0.3125);
}

TEST(RoundTo, F8E5M2Saturates) {
  EXPECT_EQ(roundTo(DType::F8E5M2, 57344.0), 57344.0);
  EXPECT_EQ(roundTo(DType::F8E5M2, 1e9), 57344.0);
  EXPECT_EQ(roundTo(DType::F8E5M2, kInf), 57344.0);
  EXPECT_EQ(roundTo(DType::F8E5M2, 1.125), 1.0); // tie -> even
  EXPECT_EQ(roundTo(DType::F8E5M2, 1.375), 1.5); // tie -> even
  EXPECT_EQ(roundTo(DType::F8E5M2, 0x1p-16), 0x1p-16);
}

TEST(RoundTo, Integers) {
  EXPECT_EQ(roundTo(DType::I32, 0x1p31), -0x1p31); // wraps
  EXPECT_EQ(roundTo(DType::I32, -7.9), -7.0);      // truncates
  EXPECT_EQ(roundTo(DType::I32, NAN), 0.0);
  EXPECT_EQ(roundTo(DType::I64, 12345678901.0), 12345678901.0);
  EXPECT_EQ(roundTo(DType::I1, -3.0), 1.0);
  EXPECT_EQ(roundTo(DType::I1, 0.0), 0.0);
  EXPECT_EQ(saturateToInt(DType::I32, 1e12), 0x1p31 - 1);
  EXPECT_EQ(saturateToInt(DType::I32, -1e12), -0x1p31);
  EXPECT_EQ(saturateToInt(DType::I32, -2.5), -2.0);
}

TEST(HostTensor, RandomIsSeededAndOnTheGrid) {
  HostTensor a = randomTensor(DType::BF16, {16, 33}, 5);
  HostTensor b = randomTensor(DType::BF16, {16, 33}, 5);
  HostTensor c = randomTensor(DType::BF16, {16, 33}, 6);
  EXPECT_EQ(a.data, b.data);
  EXPECT_NE(a.data, c.data);
  for (double v : a.data) {
    EXPECT_EQ(v, roundTo(DType::BF16, v));
    EXPECT_GE(v, -2.0);
    EXPECT_LE(v, 2.0);
  }
  HostTensor idx = randomTensor(DType::I32, {1000}, 1, 0, 10);
  EXPECT_TRUE(idx.data.empty()) << "integers are held exactly, not in doubles";
  for (double v : idx.values()) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 10);
    EXPECT_EQ(v, std::trunc(v));
  }
}

TEST(HostTensor, IntegersStayExactThroughFilesAndDeviceBytes) {
  HostTensor a(DType::I64, {3});
  a.ints = {(int64_t{1} << 62) + 1, std::numeric_limits<int64_t>::min(), -1};
  std::string path = ::testing::TempDir() + "/exact_i64.npy";
  ASSERT_TRUE(writeNpy(path, a).ok());
  auto b = readNpy(path, DType::I64);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->ints, a.ints);
  auto c = fromDeviceBytes(DType::I64, {3}, toDeviceBytes(a));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ints, a.ints);
  // Exact comparison tells neighbours past 2^53 apart.
  HostTensor d = a;
  d.ints[0] += 1;
  EXPECT_FALSE(compareTensors(a, d, toleranceFor(DType::I64)).ok);
  // A float stored into an integer tensor converts like a cast: truncated
  // and saturated.
  HostTensor e(DType::I32, {2});
  e.set(0, -2.7);
  e.set(1, 1e12);
  EXPECT_EQ(e.ints[0], -2);
  EXPECT_EQ(e.ints[1], std::numeric_limits<int32_t>::max());
}

TEST(HostTensor, CompareTolerancesAndNaN) {
  HostTensor ref(DType::F32, {3});
  ref.data = {1.0, 2.0, NAN};
  HostTensor got = ref;
  EXPECT_TRUE(compareTensors(ref, got, toleranceFor(DType::F32)).ok);
  got.data[1] = 2.0 + 1e-6;
  EXPECT_TRUE(compareTensors(ref, got, toleranceFor(DType::F32)).ok);
  got.data[1] = 2.001;
  Comparison c = compareTensors(ref, got, toleranceFor(DType::F32));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.firstMismatch, 1);
  got.data[1] = 2.0;
  got.data[2] = 0.0; // NaN expected, number given
  EXPECT_FALSE(compareTensors(ref, got, toleranceFor(DType::F32)).ok);
  HostTensor other(DType::F32, {4});
  EXPECT_FALSE(compareTensors(ref, other, toleranceFor(DType::F32)).ok);
}

TEST(Npy, RoundTripsEveryType) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F8E4M3FN,
                  DType::I32, DType::I64, DType::I1}) {
    HostTensor a = randomTensor(t, {3, 5}, 11);
    std::string path = ::testing::TempDir() + "/rt_" + dtypeName(t) + ".npy";
    ASSERT_TRUE(writeNpy(path, a).ok());
    auto b = readNpy(path, t);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->shape, a.shape) << dtypeName(t);
    EXPECT_EQ(b->values(), a.values()) << dtypeName(t);
    EXPECT_EQ(b->ints, a.ints) << dtypeName(t);
  }
}

TEST(Npy, RejectsBadFiles) {
  std::string path = ::testing::TempDir() + "/bad.npy";
  FILE *f = std::fopen(path.c_str(), "wb");
  std::fputs("not numpy", f);
  std::fclose(f);
  EXPECT_FALSE(readNpy(path, DType::F32).ok());
  EXPECT_FALSE(readNpy(path + ".missing", DType::F32).ok());

  // A valid header with its data cut short.
  HostTensor a = randomTensor(DType::F32, {100}, 1);
  ASSERT_TRUE(writeNpy(path, a).ok());
  std::string truncated = path + ".cut";
  FILE *in = std::fopen(path.c_str(), "rb");
  FILE *out = std::fopen(truncated.c_str(), "wb");
  char buf[200];
  size_t n = std::fread(buf, 1, sizeof(buf), in);
  std::fwrite(buf, 1, n, out);
  std::fclose(in);
  std::fclose(out);
  auto r = readNpy(truncated, DType::F32);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("truncated"), std::string::npos);
}

/// A version-1 .npy of `header` (the dict) and `data`.
std::string npyBytes(const std::string &header, const std::string &data) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64)
    h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

TEST(Npy, ParsesBytesAndRejectsHostileHeaders) {
  // A good one: two int32.
  std::string two("\x05\x00\x00\x00\xfe\xff\xff\xff", 8);
  auto ok = parseNpy(npyBytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", two),
                     DType::I64);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->ints, (std::vector<int64_t>{5, -2}));
  // The stream reader this replaced threw std::invalid_argument (an
  // uncaught exception: abort) on a dim that is not a number, out_of_range
  // on one past int64, a length_error on a negative one, and allocated dims
  // whose product wrapped or reached terabytes before reading the data. Each
  // is an error naming the file now.
  for (const char *shape : {"(x,)", "(-3, 4)", "(4294967296, 4294967296)",
                            "(99999999999999999999,)", "(1099511627777,)"}) {
    auto r = parseNpy(npyBytes(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") +
                                   shape + ", }",
                               ""),
                      DType::F32, "hostile.npy");
    ASSERT_FALSE(r.ok()) << shape;
    EXPECT_NE(std::string(r.status().message()).find("hostile.npy"), std::string::npos) << shape;
  }
  // Elements the data does not hold.
  auto big = parseNpy(npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1000, 1000), }",
                               std::string(64, '\0')),
                      DType::F32);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(std::string(big.status().message()).find("truncated data"), std::string::npos);
  // A header longer than the bytes, and an unknown version.
  std::string cut = npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcd");
  EXPECT_FALSE(parseNpy(cut.substr(0, 20), DType::F32).ok());
  cut[6] = 9;
  EXPECT_FALSE(parseNpy(cut, DType::F32).ok());
}

} // namespace

namespace {

TEST(DeviceBytes, KnownBitPatterns) {
  EXPECT_EQ(encodeFloat(DType::BF16, 1.0), 0x3f80u);
  EXPECT_EQ(encodeFloat(DType::BF16, -2.0), 0xc000u);
  EXPECT_EQ(encodeFloat(DType::F16, 1.0), 0x3c00u);
  EXPECT_EQ(encodeFloat(DType::F16, 65504.0), 0x7bffu);
  EXPECT_EQ(encodeFloat(DType::F16, 0x1p-24), 0x0001u);
  EXPECT_EQ(encodeFloat(DType::F16, -std::numeric_limits<double>::infinity()), 0xfc00u);
  EXPECT_EQ(encodeFloat(DType::F8E4M3FN, 448.0), 0x7eu);
  EXPECT_EQ(encodeFloat(DType::F8E4M3FN, 1.0), 0x38u);
  EXPECT_EQ(encodeFloat(DType::F8E4M3FN, 0x1p-9), 0x01u);
  EXPECT_EQ(encodeFloat(DType::F8E4M3FN, NAN), 0x7fu);
  EXPECT_EQ(encodeFloat(DType::F8E5M2, 57344.0), 0x7bu);
  EXPECT_EQ(encodeFloat(DType::F8E5M2, -1.0), 0xbcu);
  EXPECT_TRUE(std::isnan(decodeFloat(DType::F8E4M3FN, 0xff)));
  EXPECT_EQ(decodeFloat(DType::F8E4M3FN, 0xfe), -448.0);
}

TEST(DeviceBytes, RoundTripEveryValueOfNarrowTypes) {
  // Every bit pattern of the 8- and 16-bit formats decodes to a value on the
  // grid that encodes back to the same bits (NaNs aside).
  for (DType t : {DType::F8E4M3FN, DType::F8E5M2, DType::F16, DType::BF16}) {
    uint32_t count = dtypeBytes(t) == 1 ? 256 : 65536;
    for (uint32_t bits = 0; bits < count; ++bits) {
      double v = decodeFloat(t, bits);
      if (std::isnan(v))
        continue;
      // Conversions to fp8 saturate (satfinite), so an E5M2 infinity is not
      // a fixed point of roundTo; it still encodes to its own bits.
      if (!std::isinf(v)) {
        ASSERT_EQ(roundTo(t, v), v) << dtypeName(t) << " bits " << bits;
      }
      ASSERT_EQ(encodeFloat(t, v), bits) << dtypeName(t) << " bits " << bits;
    }
  }
}

TEST(DeviceBytes, TensorsRoundTrip) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F8E4M3FN,
                  DType::F8E5M2, DType::I32, DType::I64, DType::I1}) {
    HostTensor a = randomTensor(t, {7, 3}, 3);
    std::string bytes = toDeviceBytes(a);
    EXPECT_EQ(static_cast<int64_t>(bytes.size()), 21 * dtypeBytes(t));
    auto b = fromDeviceBytes(t, {7, 3}, bytes);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->values(), a.values()) << dtypeName(t);
    EXPECT_EQ(b->ints, a.ints) << dtypeName(t);
  }
  EXPECT_FALSE(fromDeviceBytes(DType::F32, {2}, "abc").ok());
}

} // namespace

TEST(ElementCount, SaturatesAndIsZeroWithAnyEmptyDim) {
  EXPECT_EQ(fusec::elementCount({}), 1);
  EXPECT_EQ(fusec::elementCount({3, 4, 5}), 60);
  // A zero dim makes the count 0 whatever the others (no overflow first).
  EXPECT_EQ(fusec::elementCount({int64_t(1) << 62, int64_t(1) << 62, 0}), 0);
  // A product past int64 saturates instead of wrapping (fuzz_onnx's
  // Gather of [3, 4, 2^31, 2, 4, 2^31, 2] wrapped to a small count).
  EXPECT_EQ(fusec::elementCount({3, 4, int64_t(1) << 31, 2, 4, int64_t(1) << 31, 2}), INT64_MAX);
  EXPECT_EQ(fusec::elementCount({int64_t(1) << 32, int64_t(1) << 32}), INT64_MAX);
  EXPECT_EQ(fusec::elementCount({int64_t(1) << 31, int64_t(1) << 31}), int64_t(1) << 62);
}
