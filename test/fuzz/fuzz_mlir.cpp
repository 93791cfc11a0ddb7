//===- fuzz_mlir.cpp - MLIR text through the pipeline to PTX ----*- C++ -*-===//
//
// libFuzzer: any bytes as fusec dialect text -> parse -> verify ->
// --fusec-pipeline -> code generation for sm_90a. Seeds: corpus/mlir.
//
//===----------------------------------------------------------------------===//

#include "FuzzPipeline.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fusec::fuzz::compile(std::string(reinterpret_cast<const char *>(data), size), /*ptx=*/true);
  return 0;
}
