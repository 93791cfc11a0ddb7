//===- Tile.cpp - The launch plan of every kernel ---------------*- C++ -*-===//
//
// fusec-tile writes #fusec.launch on every fusec.kernel: the strategy and
// launch shape planLaunch (include/fusec/CodeGen/LaunchPlan.h) chooses on the
// target. It is the only place a strategy is chosen; code generation builds
// what the plan says.
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/CodeGen/LaunchPlan.h"
#include "fusec/Passes/Passes.h"
#include "fusec/Target/Roofline.h"

#include "mlir/IR/BuiltinOps.h"

namespace fusec {
#define GEN_PASS_DEF_TILE
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

class TilePass : public fusec::impl::TileBase<TilePass> {
public:
  using TileBase::TileBase;

  void runOnOperation() override {
    auto loaded = loadTargetFor(getOperation(), "fusec-tile", target);
    if (!loaded)
      return signalPassFailure();
    PlanOptions plan;
    plan.rowChunks = codeGenOverrides().rowChunks.value_or(rowChunks);
    if (plan.rowChunks < 1 || plan.rowChunks > 16) {
      getOperation().emitError() << "fusec-tile: row-chunks=" << plan.rowChunks
                                 << " is not in [1, 16]";
      return signalPassFailure();
    }
    getOperation().walk([&](KernelOp kernel) {
      kernel->setAttr("fusec.launch", planLaunch(kernel, *loaded, plan));
    });
  }
};

} // namespace
