//===- CacheHints.cpp - Cache policy for each kernel operand ----*- C++ -*-===//

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace fusec {
#define GEN_PASS_DEF_ASSIGNCACHEHINTS
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

/// Is the kernel's block argument read more than once per element? It is
/// when it is smaller than the kernel's iteration space (a per-feature
/// vector, a bias: broadcast to many threads) or a gather's table.
bool rereadInside(BlockArgument arg, KernelOp kernel) {
  int64_t largest = 0;
  kernel.getBody().walk([&](Operation *op) {
    for (Value r : op->getResults())
      largest = std::max(largest, tensorElements(r.getType()));
  });
  for (Operation *user : arg.getUsers())
    if (auto g = dyn_cast<GatherOp>(user); g && g.getTable() == arg)
      return true;
  return tensorElements(arg.getType()) < largest;
}

class AssignCacheHintsPass
    : public fusec::impl::AssignCacheHintsBase<AssignCacheHintsPass> {
public:
  using AssignCacheHintsBase::AssignCacheHintsBase;

  void runOnOperation() override {
    // FUSEC_DISABLE_AGGRESSIVE_PTX, read once by the tool, is the escape
    // switch for every aggressive PTX feature.
    bool on = aggressive && !codeGenOverrides().disableAggressivePtx;
    Builder b(&getContext());
    getOperation().walk([&](KernelOp kernel) {
      SmallVector<Attribute> hints;
      Block &body = kernel.getBody().front();
      for (auto [i, input] : llvm::enumerate(kernel.getInputs())) {
        CacheHint hint = CacheHint::Default;
        if (on) {
          // Read once by the whole graph: this kernel is its only reader
          // and reads each element once.
          int readers = 0;
          for (Operation *user : input.getUsers())
            readers += user != kernel.getOperation() ? 1 : 0;
          bool once = readers == 0 && llvm::count(kernel.getInputs(), input) == 1 &&
                      !rereadInside(body.getArgument(i), kernel);
          hint = once ? CacheHint::Stream : CacheHint::Keep;
        }
        hints.push_back(CacheHintAttr::get(&getContext(), hint));
      }
      kernel->setAttr("fusec.cache_hints", b.getArrayAttr(hints));
    });
  }
};

} // namespace
