//===- CodeGenPass.cpp - --fusec-codegen ------------------------*- C++ -*-===//

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>
#include <cstring>

namespace fusec {
#define GEN_PASS_DEF_CODEGEN
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

class CodeGenPass : public fusec::impl::CodeGenBase<CodeGenPass> {
public:
  using CodeGenBase::CodeGenBase;

  void runOnOperation() override {
    PtxOptions options;
    options.arch = arch;
    const char *env = std::getenv("FUSEC_DISABLE_AGGRESSIVE_PTX");
    options.aggressivePtx =
        aggressivePtx && !(env && *env && std::strcmp(env, "0") != 0);
    if (const char *v = std::getenv("FUSEC_STREAM_LOAD"); v && *v) {
      std::string mode = v;
      if (mode != "plain" && mode != "no_allocate" && mode != "l2_256b" &&
          mode != "evict_first") {
        getOperation().emitError() << "FUSEC_STREAM_LOAD='" << mode
                                   << "' is not plain, no_allocate, l2_256b or evict_first";
        return signalPassFailure();
      }
      options.streamLoad = mode;
    }
    if (const char *v = std::getenv("FUSEC_ROW_CHUNKS"); v && *v) {
      char *end = nullptr;
      long chunks = std::strtol(v, &end, 10);
      if (*end || chunks < 1 || chunks > 16) {
        getOperation().emitError() << "FUSEC_ROW_CHUNKS='" << v
                                   << "' is not a number from 1 to 16";
        return signalPassFailure();
      }
      options.rowChunks = static_cast<int>(chunks);
    }
    if (const char *v = std::getenv("FUSEC_KEEP_LOAD"); v && *v) {
      std::string mode = v;
      if (mode != "plain" && mode != "evict_last" && mode != "nc") {
        getOperation().emitError() << "FUSEC_KEEP_LOAD='" << mode
                                   << "' is not plain, evict_last or nc";
        return signalPassFailure();
      }
      options.keepLoad = mode;
    }
    Builder b(&getContext());
    WalkResult result = getOperation().walk([&](KernelOp kernel) {
      if (kernel->hasAttr("fusec.ptx"))
        return WalkResult::advance();
      auto g = generateKernel(kernel, options);
      if (!g.ok()) {
        if (g.status().code() == absl::StatusCode::kUnimplemented) {
          if (remarks)
            mlir::emitRemark(kernel.getLoc())
                << "no PTX generated: " << std::string(g.status().message());
          return WalkResult::advance();
        }
        kernel.emitError() << "fusec-codegen: " << std::string(g.status().message());
        return WalkResult::interrupt();
      }
      kernel->setAttr("fusec.ptx", b.getStringAttr(g->ptx));
      kernel->setAttr("fusec.entry", b.getStringAttr(g->entry));
      kernel->setAttr("fusec.grid", b.getDenseI64ArrayAttr({g->grid}));
      kernel->setAttr("fusec.block", b.getDenseI64ArrayAttr({g->block}));
      kernel->setAttr("fusec.strategy", b.getStringAttr(g->strategy));
      if (remarks)
        mlir::emitRemark(kernel.getLoc())
            << "generated '" << g->entry << "' for " << arch << ": " << g->strategy
            << ", grid " << g->grid << " x block " << g->block;
      if (!dumpDir.empty()) {
        std::string error;
        auto func = kernel->getParentOfType<func::FuncOp>();
        std::string prefix = func ? func.getSymName().str() + "." : "";
        auto file = openOutputFile(dumpDir + "/" + prefix + g->entry + ".ptx", &error);
        if (!file) {
          kernel.emitError() << "fusec-codegen: " << error;
          return WalkResult::interrupt();
        }
        file->os() << g->ptx;
        file->keep();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
