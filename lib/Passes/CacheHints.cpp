//===- CacheHints.cpp - Cache policy for each kernel operand ----*- C++ -*-===//

#include "fusec/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdlib>
#include <cstring>

namespace fusec {
#define GEN_PASS_DEF_ASSIGNCACHEHINTS
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

/// The environment's escape switch for every aggressive PTX feature.
bool aggressiveDisabledByEnvironment() {
  const char *v = std::getenv("FUSEC_DISABLE_AGGRESSIVE_PTX");
  return v && *v && std::strcmp(v, "0") != 0;
}

/// Is the kernel's block argument read more than once per element (through a
/// broadcast, which many threads read)?
bool rereadInside(BlockArgument arg) {
  for (Operation *user : arg.getUsers())
    if (isa<BroadcastOp, GatherOp>(user))
      return true;
  return false;
}

class AssignCacheHintsPass
    : public fusec::impl::AssignCacheHintsBase<AssignCacheHintsPass> {
public:
  using AssignCacheHintsBase::AssignCacheHintsBase;

  void runOnOperation() override {
    bool on = aggressive && !aggressiveDisabledByEnvironment();
    Builder b(&getContext());
    getOperation().walk([&](KernelOp kernel) {
      SmallVector<Attribute> hints;
      Block &body = kernel.getBody().front();
      for (auto [i, input] : llvm::enumerate(kernel.getInputs())) {
        StringRef hint = "default";
        if (on) {
          // Read once by the whole graph: this kernel is its only reader
          // and reads each element once.
          int readers = 0;
          for (Operation *user : input.getUsers())
            readers += user != kernel.getOperation() ? 1 : 0;
          bool once = readers == 0 && llvm::count(kernel.getInputs(), input) == 1 &&
                      !rereadInside(body.getArgument(i));
          hint = once ? "stream" : "keep";
        }
        hints.push_back(b.getStringAttr(hint));
      }
      kernel->setAttr("fusec.cache_hints", b.getArrayAttr(hints));
    });
  }
};

} // namespace
