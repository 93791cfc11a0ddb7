//===- fuzz_mlir.cpp - MLIR text through the pipeline to PTX ----*- C++ -*-===//
//
// libFuzzer: any bytes as fusec dialect text -> parse -> verify ->
// --fusec-pipeline -> code generation for sm_90a. Seeds: corpus/mlir.
//
// Half of the mutations are structure-aware (MlirMutator.h: a dimension,
// an element type or a rank changed consistently, an op swapped for one of
// its arity, a splat's value), the other half libFuzzer's own on bytes.
// FUSEC_FUZZ_MUTATOR=bytes keeps libFuzzer's alone (to compare).
// FUSEC_FUZZ_STATS=1 prints, at exit, how many inputs parsed and verified
// and how many got through the pipeline.
//
//===----------------------------------------------------------------------===//

#include "FuzzPipeline.h"
#include "MlirMutator.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace {

struct Stats {
  size_t runs = 0, verified = 0, compiled = 0;
  bool enabled = std::getenv("FUSEC_FUZZ_STATS") != nullptr;
  ~Stats() {
    if (enabled && runs)
      std::fprintf(stderr, "fuzz_mlir: %zu inputs, %zu parsed and verified (%.1f%%), %zu through "
                           "the pipeline and code generation (%.1f%%)\n",
                   runs, verified, 100.0 * verified / runs, compiled, 100.0 * compiled / runs);
  }
};
Stats stats;

bool structureAware() {
  static const bool on = [] {
    const char *m = std::getenv("FUSEC_FUZZ_MUTATOR");
    return !(m && std::strcmp(m, "bytes") == 0);
  }();
  return on;
}

} // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (structureAware() && rng() % 2 == 0) {
    std::string text(reinterpret_cast<const char *>(data), size);
    if (fusec::fuzz::mutateMlirText(text, rng) && text.size() <= maxSize) {
      std::memcpy(data, text.data(), text.size());
      return text.size();
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fusec::fuzz::Stage stage;
  fusec::fuzz::compile(std::string(reinterpret_cast<const char *>(data), size), /*ptx=*/true,
                       &stage);
  ++stats.runs;
  stats.verified += stage != fusec::fuzz::Stage::rejected;
  stats.compiled += stage == fusec::fuzz::Stage::compiled;
  return 0;
}
