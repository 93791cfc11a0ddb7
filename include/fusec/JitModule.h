//===- JitModule.h - Compile an MLIR module with fusec::Jit -----*- C++ -*-===//
//
// For programs that build graphs with MLIR's C++ API. Kept apart from Jit.h,
// whose types are abseil's only.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_JITMODULE_H
#define FUSEC_JITMODULE_H

#include "fusec/Jit.h"

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace fusec {

/// Compiles `module` as Jit::compile compiles text (the module is printed
/// with its locations, so errors still point into the original source).
absl::StatusOr<std::shared_ptr<Executable>> compileModule(Jit &jit,
                                                          mlir::ModuleOp module);

} // namespace fusec

#endif // FUSEC_JITMODULE_H
