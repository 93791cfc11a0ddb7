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

#include <string>

namespace fusec::fuzz {

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
