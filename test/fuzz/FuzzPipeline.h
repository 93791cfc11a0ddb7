//===- FuzzPipeline.h - What the fuzz harnesses share -----------*- C++ -*-===//
//
// A graph's text through what `fusec-compile --emit=ptx` does: parse, verify,
// the whole --fusec-pipeline, code generation to PTX. Errors are expected
// (they are diagnostics, swallowed here); a crash, a sanitizer report, a
// hang or an out-of-memory is the bug the harness is there to find.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TEST_FUZZ_FUZZPIPELINE_H
#define FUSEC_TEST_FUZZ_FUZZPIPELINE_H

#include "fusec/CodeGen/Passes.h"
#include "fusec/IR/Fusec.h"
#include "fusec/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace fusec::fuzz {

/// Whether a harness's structure-aware mutator is on: FUSEC_FUZZ_MUTATOR=bytes
/// keeps libFuzzer's byte mutations alone (to compare).
inline bool structureAware() {
  static const bool on = [] {
    const char *m = std::getenv("FUSEC_FUZZ_MUTATOR");
    return !(m && std::strcmp(m, "bytes") == 0);
  }();
  return on;
}

/// A harness's LLVMFuzzerCustomMutator: half of the mutations by `mutate`
/// (which changes the input's bytes in a std::string and says whether it
/// did), the other half libFuzzer's own.
template <typename Mutate>
size_t mutateHalf(uint8_t *data, size_t size, size_t maxSize, unsigned int seed, Mutate mutate) {
  std::mt19937_64 rng(seed);
  if (structureAware() && rng() % 2 == 0) {
    std::string bytes(reinterpret_cast<const char *>(data), size);
    if (mutate(bytes, rng) && bytes.size() <= maxSize) {
      std::memcpy(data, bytes.data(), bytes.size());
      return bytes.size();
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

/// Counts of how far a harness's inputs got, printed at exit under
/// FUSEC_FUZZ_STATS=1: `first` and `second` are the two stages' names.
struct Stats {
  const char *harness, *first, *second;
  size_t runs = 0, reachedFirst = 0, reachedSecond = 0;
  bool enabled = std::getenv("FUSEC_FUZZ_STATS") != nullptr;
  ~Stats() {
    if (enabled && runs)
      std::fprintf(stderr, "%s: %zu inputs, %zu %s (%.1f%%), %zu %s (%.1f%%)\n", harness, runs,
                   reachedFirst, first, 100.0 * reachedFirst / runs, reachedSecond, second,
                   100.0 * reachedSecond / runs);
  }
};

/// How far an input got: not parsed or not verified, verified, or through
/// the pipeline (and code generation).
enum class Stage { rejected, verified, compiled };

/// Parses `text`, and if it verifies, runs the pipeline and (when `ptx`)
/// code generation on it. Returns whether it got through; `stage`, when
/// given, says how far.
inline bool compile(const std::string &text, bool ptx, Stage *stage = nullptr) {
  if (stage)
    *stage = Stage::rejected;
  mlir::DialectRegistry registry;
  registry.insert<fusec::FusecDialect, mlir::func::FuncDialect>();
  fusec::registerCodeGenDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, mlir::ParserConfig(&context));
  if (!module || mlir::failed(mlir::verify(*module)))
    return false;
  if (stage)
    *stage = Stage::verified;
  mlir::PassManager pm(&context);
  fusec::FusecPipelineOptions options;
  // A quarter of the inputs each go through precision lowering to bf16,
  // fp16 and fp8 (its range and error analyses), chosen by a hash of the
  // text so an input always takes the same path.
  uint32_t hash = 2166136261u;
  for (unsigned char c : text)
    hash = (hash ^ c) * 16777619u;
  static const char *const kPrecisions[] = {"fp32", "bf16", "fp16", "fp8"};
  options.precision = kPrecisions[hash % 4];
  fusec::buildFusecPipeline(pm, options);
  if (ptx) {
    fusec::CodeGenOptions codegen;
    codegen.arch = "sm_90a";
    pm.addPass(fusec::createCodeGen(codegen));
  }
  if (mlir::failed(pm.run(*module)))
    return false;
  if (stage)
    *stage = Stage::compiled;
  return true;
}

} // namespace fusec::fuzz

#endif // FUSEC_TEST_FUZZ_FUZZPIPELINE_H
