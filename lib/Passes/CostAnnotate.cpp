//===- CostAnnotate.cpp - Attach each op's roofline cost --------*- C++ -*-===//
//
// Makes the cost interface visible in the IR: `fusec.cost` on each costed op,
// `fusec.total_cost` on each function.
//
//===----------------------------------------------------------------------===//

#include "fusec/Passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace fusec {
#define GEN_PASS_DEF_COSTANNOTATE
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

DictionaryAttr costAttr(Builder &b, const OpCost &cost) {
  NamedAttribute fields[] = {
      b.getNamedAttr("flops", b.getI64IntegerAttr(cost.flops)),
      b.getNamedAttr("bytes_read", b.getI64IntegerAttr(cost.bytesRead)),
      b.getNamedAttr("bytes_written", b.getI64IntegerAttr(cost.bytesWritten)),
      b.getNamedAttr("sfu_ops", b.getI64IntegerAttr(cost.sfuOps)),
      b.getNamedAttr("intensity", b.getF64FloatAttr(cost.intensity())),
  };
  return b.getDictionaryAttr(fields);
}

class CostAnnotatePass : public fusec::impl::CostAnnotateBase<CostAnnotatePass> {
public:
  using CostAnnotateBase::CostAnnotateBase;

  void runOnOperation() override {
    Builder b(&getContext());
    getOperation()->walk([&](func::FuncOp func) {
      OpCost total;
      // Top-level ops only: a kernel's cost already covers its body.
      for (Operation &op : func.getBody().getOps())
        if (auto costed = dyn_cast<CostOpInterface>(op))
          total += costed.getCost();
      func->setAttr("fusec.total_cost", costAttr(b, total));
      if (totalsOnly)
        return;
      func.walk([&](CostOpInterface costed) {
        costed->setAttr("fusec.cost", costAttr(b, costed.getCost()));
      });
    });
  }
};

} // namespace
