//===- Sha256Test.cpp - SHA-256 against FIPS 180-4 vectors ------*- C++ -*-===//

#include "fusec/Support/Sha256.h"

#include "gtest/gtest.h"

#include <string>

using fusec::Sha256;

namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256::hexOf(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::hexOf("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hexOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256::hexOf(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i)
    data += static_cast<char>(i * 7);
  for (size_t chunk : {1, 3, 63, 64, 65, 500}) {
    Sha256 h;
    for (size_t i = 0; i < data.size(); i += chunk)
      h.update(absl::string_view(data).substr(i, chunk));
    EXPECT_EQ(h.hexDigest(), Sha256::hexOf(data)) << chunk;
  }
}

TEST(Sha256, FieldsAreUnambiguous) {
  EXPECT_NE(Sha256().field("ab").field("c").hexDigest(),
            Sha256().field("a").field("bc").hexDigest());
}

} // namespace
