//===- Sha256.h - SHA-256 for cache keys and checksums ----------*- C++ -*-===//
//
// LLVM-free. Stable across processes and machines, unlike absl::Hash, so that
// on-disk cache keys and entry checksums mean the same thing everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_SUPPORT_SHA256_H
#define FUSEC_SUPPORT_SHA256_H

#include "absl/strings/string_view.h"

#include <array>
#include <cstdint>
#include <string>

namespace fusec {

/// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
public:
  Sha256();
  Sha256 &update(absl::string_view data);
  /// Adds `data` prefixed by its length, so that a sequence of fields hashes
  /// unambiguously ("ab","c" differs from "a","bc").
  Sha256 &field(absl::string_view data);
  std::array<uint8_t, 32> digest();
  /// The digest as 64 lowercase hex digits.
  std::string hexDigest();

  static std::array<uint8_t, 32> of(absl::string_view data) {
    return Sha256().update(data).digest();
  }
  static std::string hexOf(absl::string_view data) {
    return Sha256().update(data).hexDigest();
  }

private:
  void block(const uint8_t *p);
  uint32_t h[8];
  uint8_t buffer[64];
  uint64_t length = 0;
  size_t buffered = 0;
};

} // namespace fusec

#endif // FUSEC_SUPPORT_SHA256_H
