//===- Pipeline.cpp - The fusec pass pipeline -------------------*- C++ -*-===//

#include "fusec/Passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace fusec {

void buildFusecPipeline(OpPassManager &pm, const FusecPipelineOptions &o) {
  // Only what the attention intrinsic runs: anything else stays written out
  // for the generated kernels.
  pm.addPass(createRecognizeAttention(RecognizeAttentionOptions{/*intrinsicOnly=*/true}));
  pm.addPass(createDecompose());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCostAnnotate(CostAnnotateOptions{/*totalsOnly=*/true}));
  if (o.precision != "fp32" && o.precision != "none") {
    LowerPrecisionOptions lp;
    lp.policy = o.precision == "fp8" ? "fp8e4m3" : o.precision.getValue();
    lp.maxRelError = o.maxRelError;
    pm.addPass(createLowerPrecision(lp));
  }
  FuseOptions fuse;
  fuse.target = o.target;
  fuse.remarks = o.remarks;
  pm.addPass(createFuse(fuse));
  RecomputeOptions recompute;
  recompute.target = o.target;
  recompute.remarks = o.remarks;
  pm.addPass(createRecompute(recompute));
  TileOptions tile;
  tile.target = o.target;
  tile.rowChunks = o.rowChunks;
  pm.addPass(createTile(tile));
  AssignCacheHintsOptions hints;
  hints.aggressive = o.aggressivePtx;
  pm.addPass(createAssignCacheHints(hints));
}

void registerFusecPipeline() {
  PassPipelineRegistration<FusecPipelineOptions>(
      "fusec-pipeline",
      "The fusec pipeline up to code generation: decompose, cost, precision "
      "(opt-in), fuse, recompute, tile, cache hints",
      buildFusecPipeline);
}

} // namespace fusec
