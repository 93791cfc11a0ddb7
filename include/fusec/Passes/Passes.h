//===- Passes.h - fusec passes ----------------------------------*- C++ -*-===//
//
// Declarations and registration of every fusec pass.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_PASSES_PASSES_H
#define FUSEC_PASSES_PASSES_H

#include "fusec/IR/Fusec.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace fusec {

#define GEN_PASS_DECL
#include "fusec/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fusec/Passes/Passes.h.inc"

/// Options of --fusec-pipeline.
struct FusecPipelineOptions
    : public mlir::PassPipelineOptions<FusecPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("b200, h200, h100, h200-measured or a target file"),
                             llvm::cl::init("h200")};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("Storage precision: fp32 (no lowering), bf16, fp16, fp8"),
      llvm::cl::init("fp32")};
  Option<double> maxRelError{*this, "max-rel-error",
                             llvm::cl::desc("Error budget of precision lowering"),
                             llvm::cl::init(0.05)};
  Option<bool> aggressivePtx{*this, "aggressive-ptx",
                             llvm::cl::desc("Cache-hinted loads (false: plain loads)"),
                             llvm::cl::init(true)};
  Option<bool> remarks{*this, "remarks",
                       llvm::cl::desc("Print each fusion and recomputation decision"),
                       llvm::cl::init(false)};
  Option<int64_t> rowChunks{*this, "row-chunks",
                            llvm::cl::desc("fusec-tile: the 16-byte chunks a thread of a "
                                           "row kernel aims to hold (1-16)"),
                            llvm::cl::init(4)};
};

/// decompose -> canonicalize, cse -> cost totals -> precision (opt-in) ->
/// fuse -> recompute -> tile -> cache hints.
void buildFusecPipeline(mlir::OpPassManager &pm, const FusecPipelineOptions &options);
/// Registers --fusec-pipeline.
void registerFusecPipeline();

} // namespace fusec

#endif // FUSEC_PASSES_PASSES_H
