//===- Passes.h - The code-generation pass ----------------------*- C++ -*-===//

#ifndef FUSEC_CODEGEN_PASSES_H
#define FUSEC_CODEGEN_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace fusec {

#define GEN_PASS_DECL
#include "fusec/CodeGen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fusec/CodeGen/Passes.h.inc"

/// The dialects and translations code generation builds and translates
/// (LLVM, NVVM and their LLVM IR translations); a context that runs
/// --fusec-codegen needs them registered before it loads any.
void registerCodeGenDialects(mlir::DialectRegistry &registry);

} // namespace fusec

#endif // FUSEC_CODEGEN_PASSES_H
