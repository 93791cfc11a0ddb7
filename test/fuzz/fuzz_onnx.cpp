//===- fuzz_onnx.cpp - ONNX bytes through the importer and pipeline -*- C++ -*-===//
//
// libFuzzer: any bytes as a serialized ModelProto -> importOnnx (its
// import-time folding included) -> the imported text through the pipeline.
// An import that succeeds must give text that parses and verifies: the
// importer's output is never a parse error. Seeds: corpus/onnx (models of
// the ONNX backend tests and the real-model suite's kind).
//
// Half of the mutations are structure-aware (OnnxMutator.h: the model
// decoded along onnx.proto, a dimension, attribute, op type, input, node or
// initializer changed, and encoded again), the other half libFuzzer's own
// on bytes. FUSEC_FUZZ_MUTATOR=bytes keeps libFuzzer's alone (to compare).
// FUSEC_FUZZ_STATS=1 prints, at exit, how many inputs imported and how many
// got through the pipeline.
//
//===----------------------------------------------------------------------===//

#include "FuzzPipeline.h"
#include "OnnxMutator.h"
#include "fusec/Import/Onnx.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {
fusec::fuzz::Stats stats{"fuzz_onnx", "imported", "through the pipeline"};
} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  return fusec::fuzz::mutateHalf(data, size, maxSize, seed, fusec::fuzz::onnx::mutateModel);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ++stats.runs;
  auto imported = fusec::importOnnx(
      absl::string_view(reinterpret_cast<const char *>(data), size), /*baseDir=*/"");
  if (!imported.ok())
    return 0;
  ++stats.reachedFirst;
  bool compiled = fusec::fuzz::compile(imported->mlir, /*ptx=*/false);
  stats.reachedSecond += compiled;
  if (!compiled) {
    // Import succeeded: its text must at least parse and verify.
    mlir::DialectRegistry registry;
    registry.insert<fusec::FusecDialect, mlir::func::FuncDialect>();
    mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
    mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
      return mlir::success();
    });
    auto module = mlir::parseSourceString<mlir::ModuleOp>(imported->mlir,
                                                          mlir::ParserConfig(&context));
    if (!module || mlir::failed(mlir::verify(*module))) {
      std::fprintf(stderr, "fuzz_onnx: the importer's output does not verify:\n%s\n",
                   imported->mlir.c_str());
      std::abort();
    }
  }
  return 0;
}
