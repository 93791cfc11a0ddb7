//===- HostTensor.h - Tensors on the host, storage rounding -----*- C++ -*-===//
//
// LLVM-free: the element types fusec stores, their rounding as NVIDIA
// hardware performs it, host tensors held in f64, seeded random data,
// comparison tolerances and `.npy` files. Shared by the interpreter, the tools
// and (later) the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_SUPPORT_HOSTTENSOR_H
#define FUSEC_SUPPORT_HOSTTENSOR_H

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fusec {

/// The element types a fusec tensor can be stored in.
enum class DType { F32, F16, BF16, F8E4M3FN, F8E5M2, I32, I64, I1 };

/// The MLIR spelling: "f32", "bf16", "f8E4M3FN", "i1", ...
const char *dtypeName(DType type);
std::optional<DType> parseDType(absl::string_view name);
/// Bytes per element in device memory (i1 takes a byte).
int64_t dtypeBytes(DType type);
bool isFloat(DType type);

/// Rounds `value` to the nearest value representable in `type`, as the GPU's
/// conversion instructions do:
/// - f32, f16, bf16: round to nearest, ties to even, gradual underflow,
///   overflow to infinity (cvt.rn.{f32,f16,bf16}).
/// - f8E4M3FN, f8E5M2: round to nearest even, then saturate to the largest
///   finite value, infinities included; NaN stays NaN (cvt.rn.satfinite).
/// - i32, i64: truncate toward zero and wrap modulo 2^bits; NaN gives 0.
/// - i1: 1 for any non-zero value, else 0.
double roundTo(DType type, double value);

/// A float-to-integer conversion as cvt.rzi.sat: truncate, then clamp to the
/// type's range; NaN gives 0.
double saturateToInt(DType type, double value);

/// Relative and absolute tolerance for comparing results stored in `type`
/// against a higher-precision reference: |a - b| <= atol + rtol * |b|.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
Tolerance toleranceFor(DType type);

/// Whether `type` is an integer type held exactly (i32, i64; not i1).
bool isInteger(DType type);
/// Wraps `value` to `type`'s width (two's complement), exactly.
int64_t wrapInt(DType type, int64_t value);

/// A tensor on the host. Float and i1 elements are held in f64 (`data`) and
/// always lie on the grid of `dtype` (constructors and `roundInPlace` keep
/// them there); integer elements are held exactly in `ints` (`data` is then
/// empty): no integer passes through a double.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> data;
  std::vector<int64_t> ints;

  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape);
  /// A tensor holding `values` (one per element, converted as `set` does).
  static HostTensor fromValues(DType dtype, std::vector<int64_t> shape,
                               const std::vector<double> &values);
  bool isInteger() const { return fusec::isInteger(dtype); }
  int64_t numElements() const {
    return static_cast<int64_t>(isInteger() ? ints.size() : data.size());
  }
  /// Element `i` as a double (an integer past 2^53 rounds).
  double get(int64_t i) const {
    return isInteger() ? static_cast<double>(ints[i]) : data[i];
  }
  /// Element `i` as an integer: exact for integer types, truncated (and
  /// saturated) for floats.
  int64_t getInt(int64_t i) const;
  /// Stores `v` (a float for float types; an integer type converts as
  /// a float-to-int cast, saturating).
  void set(int64_t i, double v);
  void setInt(int64_t i, int64_t v) {
    if (isInteger())
      ints[i] = wrapInt(dtype, v);
    else
      data[i] = static_cast<double>(v);
  }
  /// Copies element `j` of `src` (of the same dtype) to element `i`.
  void copyElement(int64_t i, const HostTensor &src, int64_t j) {
    if (isInteger())
      ints[i] = src.ints[j];
    else
      data[i] = src.data[j];
  }
  /// A tensor of `dtype` and `shape` with the same storage (a reshape).
  HostTensor reshaped(std::vector<int64_t> newShape) const {
    HostTensor t = *this;
    t.shape = std::move(newShape);
    return t;
  }
  /// Every element as a double (see `get`).
  std::vector<double> values() const;
  /// Rounds every element to `dtype`.
  void roundInPlace();
  /// "tensor<4x8xf32>"
  std::string typeString() const;
};

/// Number of elements of `shape` (1 for a scalar; 0 if a dim is 0, however
/// large the others); INT64_MAX where the product overflows.
int64_t elementCount(const std::vector<int64_t> &shape);

/// Seeded random data: floats uniform in [-2, 2), integers uniform in
/// [lo, hi) (default [-8, 8)), i1 fair coin flips. The same seed always gives
/// the same tensor.
HostTensor randomTensor(DType dtype, std::vector<int64_t> shape, uint64_t seed,
                        int64_t intLo = -8, int64_t intHi = 8);

/// The outcome of comparing a result with its reference.
struct Comparison {
  bool ok = true;
  int64_t mismatches = 0;
  int64_t firstMismatch = -1;
  double maxAbsError = 0;
  double maxRelError = 0;
  /// ‖actual − expected‖₂ / ‖expected‖₂.
  double relL2 = 0;
  std::string message;
};
/// Compares element by element within `tol`. NaN matches only NaN; shapes and
/// element types must agree.
Comparison compareTensors(const HostTensor &expected, const HostTensor &actual,
                          Tolerance tol);

/// The tensor's elements in device layout: little-endian, row-major, each
/// element in its storage format (bf16, f16, fp8 bit patterns; i1 as a byte).
std::string toDeviceBytes(const HostTensor &tensor);
/// The inverse of toDeviceBytes; an error if `bytes` has the wrong size.
absl::StatusOr<HostTensor> fromDeviceBytes(DType dtype,
                                           std::vector<int64_t> shape,
                                           absl::string_view bytes);
/// Encodes a value already on `type`'s grid as its bit pattern (low bits of
/// the result), and decodes it back. Floats only.
uint32_t encodeFloat(DType type, double value);
double decodeFloat(DType type, uint32_t bits);

/// Reads a NumPy `.npy` file (f64, f32, f16, i32, i64, bool; C order) and
/// rounds its values to `dtype`.
absl::StatusOr<HostTensor> readNpy(const std::string &path, DType dtype);
/// The same from the file's bytes; errors name `name`. Any bytes give a
/// tensor or an error (checked dims: at most 64, 2^40 elements, no negative
/// dim; the data's size).
absl::StatusOr<HostTensor> parseNpy(absl::string_view bytes, DType dtype,
                                    const std::string &name = "<npy>");
/// Writes `tensor` as `.npy`: f32 for f32/bf16/fp8 (exact), f16, i32, i64 or
/// bool for the others.
absl::Status writeNpy(const std::string &path, const HostTensor &tensor);

} // namespace fusec

#endif // FUSEC_SUPPORT_HOSTTENSOR_H
