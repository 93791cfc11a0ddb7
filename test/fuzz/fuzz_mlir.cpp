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
#include <string>

namespace {
fusec::fuzz::Stats stats{"fuzz_mlir", "parsed and verified",
                         "through the pipeline and code generation"};
} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  return fusec::fuzz::mutateHalf(data, size, maxSize, seed, fusec::fuzz::mutateMlirText);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fusec::fuzz::Stage stage;
  fusec::fuzz::compile(std::string(reinterpret_cast<const char *>(data), size), /*ptx=*/true,
                       &stage);
  ++stats.runs;
  stats.reachedFirst += stage != fusec::fuzz::Stage::rejected;
  stats.reachedSecond += stage == fusec::fuzz::Stage::compiled;
  return 0;
}
