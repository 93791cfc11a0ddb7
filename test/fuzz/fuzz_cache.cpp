//===- fuzz_cache.cpp - The kernel cache's disk entries ---------*- C++ -*-===//
//
// libFuzzer: any bytes as the on-disk entry of a key. The cache must serve
// a blob (the entry's, if it is a whole entry of this key, else a fresh
// compile), and leave on disk an entry a second cache reads back as the
// same blob without compiling. Seeds: corpus/cache.
//
//===----------------------------------------------------------------------===//

#include "fusec/Runtime/KernelCache.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fusec-fuzz-cache-XXXXXX";
    const char *d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  fusec::rt::KernelCacheOptions options;
  options.directory = dir;
  const std::string key = fusec::rt::KernelCache::makeKey({"fuzz", "entry"});
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    fusec::rt::KernelCache probe(options);
    std::ofstream out(probe.entryPath(key), std::ios::binary);
    out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
  }
  const std::string compiled = "a freshly compiled cubin";
  fusec::rt::KernelCache cache(options);
  auto blob = cache.getOrCompile(key, [&]() -> absl::StatusOr<std::string> { return compiled; });
  if (!blob.ok()) {
    std::fprintf(stderr, "fuzz_cache: no blob: %s\n", std::string(blob.status().message()).c_str());
    std::abort();
  }
  // What is on disk now reads back as the same blob, with no compile.
  fusec::rt::KernelCache again(options);
  bool compiledAgain = false;
  auto back = again.getOrCompile(key, [&]() -> absl::StatusOr<std::string> {
    compiledAgain = true;
    return compiled;
  });
  if (!back.ok() || **back != **blob || compiledAgain) {
    std::fprintf(stderr, "fuzz_cache: the entry left on disk did not read back\n");
    std::abort();
  }
  return 0;
}
