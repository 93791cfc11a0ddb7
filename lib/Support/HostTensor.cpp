//===- HostTensor.cpp - Tensors on the host, storage rounding ---*- C++ -*-===//

#include "fusec/Support/HostTensor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>

namespace fusec {

namespace {

struct FloatFormat {
  int precision;   // significand bits, the implicit one included
  int minExponent; // exponent of the smallest normal number
  double maxFinite;
  bool saturate; // satfinite conversion: no infinities
};

FloatFormat formatOf(DType type) {
  switch (type) {
  case DType::F32:
    return {24, -126, static_cast<double>(std::numeric_limits<float>::max()),
            false};
  case DType::F16:
    return {11, -14, 65504.0, false};
  case DType::BF16:
    return {8, -126, std::ldexp(255.0, 120), false}; // (2 - 2^-7) * 2^127
  case DType::F8E4M3FN:
    return {4, -6, 448.0, true};
  case DType::F8E5M2:
    return {3, -14, 57344.0, true};
  default:
    return {53, -1022, std::numeric_limits<double>::max(), false};
  }
}

double roundFloat(const FloatFormat &f, double x) {
  if (std::isnan(x))
    return x;
  if (std::isinf(x))
    return f.saturate ? std::copysign(f.maxFinite, x) : x;
  if (x == 0)
    return x;
  int e;
  std::frexp(x, &e); // |x| = m * 2^e, m in [0.5, 1)
  int exponent = std::max(e - 1, f.minExponent);
  double quantum = std::ldexp(1.0, exponent - (f.precision - 1));
  // x / quantum is exact (a power-of-two scaling); nearbyint rounds to
  // nearest even in the default rounding mode.
  double r = std::nearbyint(x / quantum) * quantum;
  if (std::fabs(r) > f.maxFinite)
    return f.saturate ? std::copysign(f.maxFinite, x)
                      : std::copysign(std::numeric_limits<double>::infinity(), x);
  if (r == 0)
    return std::copysign(0.0, x);
  return r;
}

double wrapDouble(double x, int bits) {
  if (std::isnan(x))
    return 0;
  double t = std::trunc(x);
  if (bits == 64) {
    if (t >= 0x1p63 || t < -0x1p63)
      t = std::fmod(t, 0x1p64);
    if (t >= 0x1p63)
      t -= 0x1p64;
    else if (t < -0x1p63)
      t += 0x1p64;
    return t;
  }
  double m = std::fmod(t, 0x1p32);
  if (m >= 0x1p31)
    m -= 0x1p32;
  else if (m < -0x1p31)
    m += 0x1p32;
  return m;
}

} // namespace

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F8E4M3FN:
    return "f8E4M3FN";
  case DType::F8E5M2:
    return "f8E5M2";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::I1:
    return "i1";
  }
  return "?";
}

std::optional<DType> parseDType(absl::string_view name) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F8E4M3FN,
                  DType::F8E5M2, DType::I32, DType::I64, DType::I1})
    if (name == dtypeName(t))
      return t;
  return std::nullopt;
}

int64_t dtypeBytes(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  default:
    return 1;
  }
}

bool isInteger(DType type) { return type == DType::I32 || type == DType::I64; }

int64_t wrapInt(DType type, int64_t value) {
  if (type == DType::I32)
    return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(value)));
  if (type == DType::I1)
    return value != 0;
  return value;
}

bool isFloat(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 ||
         type == DType::F8E4M3FN || type == DType::F8E5M2;
}

double roundTo(DType type, double value) {
  switch (type) {
  case DType::I32:
    return wrapDouble(value, 32);
  case DType::I64:
    return wrapDouble(value, 64);
  case DType::I1:
    return value != 0 ? 1.0 : 0.0;
  default:
    return roundFloat(formatOf(type), value);
  }
}

double saturateToInt(DType type, double value) {
  if (std::isnan(value))
    return 0;
  double t = std::trunc(value);
  switch (type) {
  case DType::I32:
    return std::clamp(t, -0x1p31, 0x1p31 - 1);
  case DType::I64:
    return std::clamp(t, -0x1p63, 0x1p63);
  case DType::I1:
    return t != 0 ? 1.0 : 0.0;
  default:
    return roundTo(type, value);
  }
}

Tolerance toleranceFor(DType type) {
  switch (type) {
  case DType::F32:
    return {2e-5, 1e-5};
  case DType::F16:
    return {2e-3, 1e-4};
  case DType::BF16:
    return {1.6e-2, 1e-3};
  case DType::F8E4M3FN:
    return {0.13, 2e-2};
  case DType::F8E5M2:
    return {0.26, 2e-2};
  default:
    return {0, 0};
  }
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  for (int64_t d : shape)
    if (d == 0)
      return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX; // saturates: any limit check then fails
  return n;
}

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape)
    : dtype(dtype), shape(std::move(shape)) {
  size_t n = static_cast<size_t>(elementCount(this->shape));
  if (isInteger())
    ints.assign(n, 0);
  else
    data.assign(n, 0.0);
}

int64_t HostTensor::getInt(int64_t i) const {
  if (isInteger())
    return ints[i];
  double v = data[i];
  if (std::isnan(v))
    return 0;
  if (v >= 0x1p63)
    return std::numeric_limits<int64_t>::max();
  if (v < -0x1p63)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

void HostTensor::set(int64_t i, double v) {
  if (!isInteger()) {
    data[i] = v;
    return;
  }
  double t = std::isnan(v) ? 0 : std::trunc(v);
  int64_t x = t >= 0x1p63    ? std::numeric_limits<int64_t>::max()
              : t < -0x1p63 ? std::numeric_limits<int64_t>::min()
                            : static_cast<int64_t>(t);
  if (dtype == DType::I32)
    x = std::clamp<int64_t>(x, std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int32_t>::max());
  ints[i] = x;
}

HostTensor HostTensor::fromValues(DType dtype, std::vector<int64_t> shape,
                                  const std::vector<double> &values) {
  HostTensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numElements() && i < static_cast<int64_t>(values.size()); ++i)
    t.set(i, values[i]);
  return t;
}

std::vector<double> HostTensor::values() const {
  if (!isInteger())
    return data;
  return std::vector<double>(ints.begin(), ints.end());
}

void HostTensor::roundInPlace() {
  for (double &v : data)
    v = roundTo(dtype, v);
  for (int64_t &v : ints)
    v = wrapInt(dtype, v);
}

std::string HostTensor::typeString() const {
  std::string s = "tensor<";
  for (int64_t d : shape)
    absl::StrAppend(&s, d, "x");
  return absl::StrCat(s, dtypeName(dtype), ">");
}

HostTensor randomTensor(DType dtype, std::vector<int64_t> shape, uint64_t seed,
                        int64_t intLo, int64_t intHi) {
  HostTensor t(dtype, std::move(shape));
  std::mt19937_64 rng(seed);
  if (isFloat(dtype)) {
    std::uniform_real_distribution<double> dist(-2.0, 2.0);
    for (double &v : t.data)
      v = dist(rng);
  } else if (dtype == DType::I1) {
    for (double &v : t.data)
      v = static_cast<double>(rng() & 1);
  } else {
    std::uniform_int_distribution<int64_t> dist(intLo, std::max(intLo, intHi - 1));
    for (int64_t &v : t.ints)
      v = dist(rng);
  }
  t.roundInPlace();
  return t;
}

Comparison compareTensors(const HostTensor &expected, const HostTensor &actual,
                          Tolerance tol) {
  Comparison c;
  if (expected.shape != actual.shape || expected.dtype != actual.dtype) {
    c.ok = false;
    c.message = absl::StrCat("type mismatch: expected ", expected.typeString(),
                             ", got ", actual.typeString());
    return c;
  }
  double errSq = 0, refSq = 0;
  if (expected.isInteger()) {
    // Exact, element by element.
    for (int64_t i = 0; i < expected.numElements(); ++i) {
      int64_t e = expected.ints[i], a = actual.ints[i];
      if (e == a)
        continue;
      if (c.mismatches == 0) {
        c.firstMismatch = i;
        c.message = absl::StrFormat("element %d: expected %d, got %d", i, e, a);
      }
      ++c.mismatches;
      double err = std::fabs(static_cast<double>(a) - static_cast<double>(e));
      c.maxAbsError = std::max(c.maxAbsError, err);
      errSq += err * err;
    }
    for (int64_t e : expected.ints)
      refSq += static_cast<double>(e) * static_cast<double>(e);
    c.relL2 = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
    c.ok = c.mismatches == 0;
    if (!c.ok)
      c.message = absl::StrCat(c.mismatches, " of ", expected.numElements(),
                               " elements differ (exact); first: ", c.message);
    return c;
  }
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    double e = expected.data[i], a = actual.data[i];
    bool match;
    if (std::isnan(e) || std::isnan(a)) {
      match = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a)) {
      match = e == a;
    } else {
      double err = std::fabs(a - e);
      match = err <= tol.atol + tol.rtol * std::fabs(e);
      c.maxAbsError = std::max(c.maxAbsError, err);
      if (e != 0)
        c.maxRelError = std::max(c.maxRelError, err / std::fabs(e));
      errSq += err * err;
      refSq += e * e;
    }
    if (!match) {
      if (c.mismatches == 0) {
        c.firstMismatch = i;
        c.message = absl::StrFormat("element %d: expected %.9g, got %.9g", i,
                                    e, a);
      }
      ++c.mismatches;
    }
  }
  c.relL2 = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  c.ok = c.mismatches == 0;
  if (!c.ok)
    c.message = absl::StrCat(c.mismatches, " of ", expected.numElements(),
                             " elements differ (rtol ", tol.rtol, ", atol ",
                             tol.atol, "); first: ", c.message);
  return c;
}

//===----------------------------------------------------------------------===//
// Bit patterns
//===----------------------------------------------------------------------===//

namespace {

struct Encoding {
  int expBits, mantBits, bias;
  bool ieeeSpecials; // all-ones exponent means inf/NaN (not for e4m3fn)
};

Encoding encodingOf(DType type) {
  switch (type) {
  case DType::F16:
    return {5, 10, 15, true};
  case DType::BF16:
    return {8, 7, 127, true};
  case DType::F8E4M3FN:
    return {4, 3, 7, false};
  case DType::F8E5M2:
    return {5, 2, 15, true};
  default:
    return {8, 23, 127, true};
  }
}

} // namespace

uint32_t encodeFloat(DType type, double v) {
  if (type == DType::F32) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
  }
  Encoding e = encodingOf(type);
  uint32_t sign = std::signbit(v) ? 1u << (e.expBits + e.mantBits) : 0;
  uint32_t expOnes = (1u << e.expBits) - 1, mantOnes = (1u << e.mantBits) - 1;
  if (std::isnan(v))
    return (expOnes << e.mantBits) | (e.ieeeSpecials ? 1u << (e.mantBits - 1) : mantOnes);
  double a = std::fabs(v);
  if (std::isinf(a)) {
    if (e.ieeeSpecials)
      return sign | (expOnes << e.mantBits);
    a = formatOf(type).maxFinite;
  }
  if (a == 0)
    return sign;
  int exp;
  std::frexp(a, &exp);
  int unbiased = exp - 1;
  if (unbiased >= 1 - e.bias) {
    uint32_t mant = static_cast<uint32_t>(
        std::nearbyint((std::ldexp(a, -unbiased) - 1.0) * (1u << e.mantBits)));
    return sign | (static_cast<uint32_t>(unbiased + e.bias) << e.mantBits) | mant;
  }
  return sign | static_cast<uint32_t>(
                    std::nearbyint(std::ldexp(a, e.bias - 1 + e.mantBits)));
}

double decodeFloat(DType type, uint32_t bits) {
  if (type == DType::F32) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  Encoding e = encodingOf(type);
  uint32_t expOnes = (1u << e.expBits) - 1, mantOnes = (1u << e.mantBits) - 1;
  bool negative = (bits >> (e.expBits + e.mantBits)) & 1;
  uint32_t exp = (bits >> e.mantBits) & expOnes, mant = bits & mantOnes;
  double v;
  if (e.ieeeSpecials && exp == expOnes)
    v = mant ? std::numeric_limits<double>::quiet_NaN()
             : std::numeric_limits<double>::infinity();
  else if (!e.ieeeSpecials && exp == expOnes && mant == mantOnes)
    v = std::numeric_limits<double>::quiet_NaN();
  else if (exp == 0)
    v = std::ldexp(static_cast<double>(mant), 1 - e.bias - e.mantBits);
  else
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -e.mantBits),
                   static_cast<int>(exp) - e.bias);
  return negative ? -v : v;
}

std::string toDeviceBytes(const HostTensor &t) {
  int64_t width = dtypeBytes(t.dtype);
  std::string bytes(static_cast<size_t>(t.numElements() * width), '\0');
  char *out = bytes.data();
  for (int64_t i = 0; i < t.numElements(); ++i, out += width) {
    switch (t.dtype) {
    case DType::I32: {
      int32_t x = static_cast<int32_t>(t.ints[i]);
      std::memcpy(out, &x, 4);
      break;
    }
    case DType::I64: {
      int64_t x = t.ints[i];
      std::memcpy(out, &x, 8);
      break;
    }
    case DType::I1:
      *out = t.data[i] != 0 ? 1 : 0;
      break;
    default: {
      uint32_t x = encodeFloat(t.dtype, t.data[i]);
      std::memcpy(out, &x, width); // little-endian: the low bytes
    }
    }
  }
  return bytes;
}

absl::StatusOr<HostTensor> fromDeviceBytes(DType dtype,
                                           std::vector<int64_t> shape,
                                           absl::string_view bytes) {
  HostTensor t(dtype, std::move(shape));
  int64_t width = dtypeBytes(dtype);
  if (static_cast<int64_t>(bytes.size()) != t.numElements() * width)
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", t.numElements() * width, " bytes for ", t.typeString(),
        ", got ", bytes.size()));
  const char *in = bytes.data();
  for (int64_t i = 0; i < t.numElements(); ++i, in += width) {
    switch (dtype) {
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, in, 4);
      t.ints[i] = x;
      break;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, in, 8);
      t.ints[i] = x;
      break;
    }
    case DType::I1:
      t.data[i] = *in ? 1.0 : 0.0;
      break;
    default: {
      uint32_t x = 0;
      std::memcpy(&x, in, width);
      t.data[i] = decodeFloat(dtype, x);
    }
    }
  }
  return t;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

absl::StatusOr<HostTensor> parseNpy(absl::string_view bytes, DType dtype,
                                    const std::string &name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", why));
  };
  if (bytes.size() < 10 || bytes.substr(0, 6) != absl::string_view("\x93NUMPY", 6))
    return bad("not a .npy file");
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])); };
  uint32_t major = byte(6);
  size_t at = 8;
  uint64_t headerLen = 0;
  if (major == 1) {
    headerLen = byte(8) | (byte(9) << 8);
    at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header");
    headerLen = byte(8) | (byte(9) << 8) | (byte(10) << 16) | (byte(11) << 24);
    at = 12;
  } else {
    return bad(absl::StrCat("unsupported .npy version ", major));
  }
  if (headerLen > (1u << 20) || headerLen > bytes.size() - at)
    return bad("truncated header");
  std::string header(bytes.substr(at, headerLen));
  absl::string_view data = bytes.substr(at + headerLen);

  auto field = [&](const std::string &key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    return colon == std::string::npos ? "" : header.substr(colon + 1);
  };
  std::string descrField = field("descr");
  size_t q1 = descrField.find('\'');
  size_t q2 = q1 == std::string::npos ? q1 : descrField.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos)
    return bad("no dtype in header");
  std::string descr = descrField.substr(q1 + 1, q2 - q1 - 1);
  std::string order = field("fortran_order");
  if (order.find("True") == 0 || order.find(" True") == 0)
    return bad("Fortran-order arrays are not supported");
  std::string shapeField = field("shape");
  size_t p1 = shapeField.find('('), p2 = shapeField.find(')');
  if (p1 == std::string::npos || p2 == std::string::npos || p2 < p1)
    return bad("no shape in header");
  // Each dim a non-negative decimal; their product, and its bytes, checked.
  std::vector<int64_t> shape;
  int64_t n = 1;
  for (absl::string_view item : absl::StrSplit(
           absl::string_view(shapeField).substr(p1 + 1, p2 - p1 - 1), ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty())
      continue;
    int64_t d = 0;
    if (!absl::SimpleAtoi(item, &d) || d < 0)
      return bad(absl::StrCat("bad dimension '", item, "' in the shape"));
    if (shape.size() == 64)
      return bad("more than 64 dimensions");
    shape.push_back(d);
    if (d != 0 && n > (int64_t{1} << 40) / d)
      return bad("more than 2^40 elements");
    n *= d;
  }
  int64_t width = descr == "<f8" || descr == "<i8"   ? 8
                  : descr == "<f4" || descr == "<i4" ? 4
                  : descr == "<f2"                   ? 2
                  : descr == "|b1" || descr == "|u1" ? 1
                                                     : 0;
  if (!width)
    return bad(absl::StrCat("unsupported .npy dtype '", descr,
                            "', expected <f8, <f4, <f2, <i4, <i8 or |b1"));
  if (static_cast<uint64_t>(n) * width > data.size())
    return bad(absl::StrCat("truncated data, expected ", n, " elements of ", descr));

  HostTensor t(dtype, shape);
  const char *raw = data.data();
  auto readAll = [&](auto tag) {
    using T = decltype(tag);
    // Integers stay exact into an integer tensor; floats into a float one
    // (rounded below); across kinds as a cast does.
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, raw + i * sizeof(T), sizeof(T));
      if constexpr (std::is_integral_v<T>)
        t.setInt(i, static_cast<int64_t>(v));
      else
        t.set(i, static_cast<double>(v));
    }
  };
  if (descr == "<f8")
    readAll(double{});
  else if (descr == "<f4")
    readAll(float{});
  else if (descr == "<i4")
    readAll(int32_t{});
  else if (descr == "<i8")
    readAll(int64_t{});
  else if (width == 1)
    readAll(uint8_t{});
  else
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, raw + i * 2, 2);
      t.set(i, decodeFloat(DType::F16, h));
    }
  t.roundInPlace();
  return t;
}

absl::StatusOr<HostTensor> readNpy(const std::string &path, DType dtype) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    return absl::InvalidArgumentError(absl::StrCat(path, ": read error"));
  return parseNpy(bytes, dtype, path);
}

absl::Status writeNpy(const std::string &path, const HostTensor &t) {
  std::string descr;
  switch (t.dtype) {
  case DType::F16:
    descr = "<f2";
    break;
  case DType::I32:
    descr = "<i4";
    break;
  case DType::I64:
    descr = "<i8";
    break;
  case DType::I1:
    descr = "|b1";
    break;
  default:
    descr = "<f4";
  }
  std::string shape = "(";
  for (int64_t d : t.shape)
    absl::StrAppend(&shape, d, ", ");
  if (t.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (t.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = absl::StrCat("{'descr': '", descr,
                                    "', 'fortran_order': False, 'shape': ",
                                    shape, ", }");
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  char lenBytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lenBytes, 2);
  out.write(header.data(), header.size());
  auto writeAll = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> buf(static_cast<size_t>(t.numElements()));
    for (size_t i = 0; i < buf.size(); ++i)
      buf[i] = t.isInteger() ? static_cast<T>(t.ints[i]) : static_cast<T>(t.data[i]);
    out.write(reinterpret_cast<const char *>(buf.data()), buf.size() * sizeof(T));
  };
  switch (t.dtype) {
  case DType::F16: {
    std::vector<uint16_t> buf(t.data.size());
    for (size_t i = 0; i < buf.size(); ++i)
      buf[i] = static_cast<uint16_t>(encodeFloat(DType::F16, t.data[i]));
    out.write(reinterpret_cast<const char *>(buf.data()), buf.size() * 2);
    break;
  }
  case DType::I32:
    writeAll(int32_t{});
    break;
  case DType::I64:
    writeAll(int64_t{});
    break;
  case DType::I1:
    writeAll(uint8_t{});
    break;
  default:
    writeAll(float{});
  }
  if (!out)
    return absl::DataLossError(absl::StrCat("short write to ", path));
  return absl::OkStatus();
}

} // namespace fusec
