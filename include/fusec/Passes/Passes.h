//===- Passes.h - fusec passes ----------------------------------*- C++ -*-===//
//
// Declarations and registration of every fusec pass.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_PASSES_PASSES_H
#define FUSEC_PASSES_PASSES_H

#include "fusec/IR/Fusec.h"
#include "mlir/Pass/Pass.h"

namespace fusec {

#define GEN_PASS_DECL
#include "fusec/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fusec/Passes/Passes.h.inc"

} // namespace fusec

#endif // FUSEC_PASSES_PASSES_H
