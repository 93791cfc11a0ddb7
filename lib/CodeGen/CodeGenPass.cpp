//===- CodeGenPass.cpp - --fusec-codegen ------------------------*- C++ -*-===//
//
// Resolves the options (pass options, then the tools' environment overrides,
// then the target's measured choices), makes sure every kernel carries a
// launch plan, and generates each kernel: PTX attached to it, or its
// LLVM/NVVM module appended to the input with emit=llvm. The kernels'
// PTX is generated in parallel on the context's threads (one per core
// unless the context's multithreading is off: --mlir-disable-threading).
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/CodeGen/LaunchPlan.h"
#include "fusec/CodeGen/Passes.h"
#include "fusec/IR/Fusec.h"
#include "fusec/Target/Target.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Threading.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

namespace fusec {
#define GEN_PASS_DEF_CODEGEN
#include "fusec/CodeGen/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

void fusec::registerCodeGenDialects(DialectRegistry &registry) {
  registry.insert<LLVM::LLVMDialect, NVVM::NVVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

namespace {

class CodeGenPass : public fusec::impl::CodeGenBase<CodeGenPass> {
public:
  using CodeGenBase::CodeGenBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registerCodeGenDialects(registry);
  }

  /// The options in force: pass options, the tools' environment overrides
  /// over them, and the target's choices where neither says.
  FailureOr<PtxOptions> resolve() {
    PtxOptions o;
    o.arch = arch;
    o.target = !target.empty() ? target.getValue()
               : arch == "sm_100a" ? std::string("b200")
                                   : std::string("h200");
    auto t = Target::load(o.target);
    if (!t.ok()) {
      getOperation().emitError() << "fusec-codegen: " << std::string(t.status().message());
      return failure();
    }
    const CodeGenOverrides &env = codeGenOverrides();
    o.aggressivePtx = aggressivePtx && !env.disableAggressivePtx;
    o.pdl = pdl && !env.disablePdl && arch != "sm_80";
    std::string stream = !streamLoad.empty() ? streamLoad.getValue() : t->choice("stream_load");
    std::string keep = !keepLoad.empty() ? keepLoad.getValue() : t->choice("keep_load");
    auto s = parseStreamLoad(stream.empty() ? "plain" : stream);
    auto k = parseKeepLoad(keep.empty() ? "plain" : keep);
    if (!s) {
      getOperation().emitError() << "fusec-codegen: stream-load='" << stream
                                 << "' is not plain, no_allocate, l2_256b or evict_first";
      return failure();
    }
    if (!k) {
      getOperation().emitError() << "fusec-codegen: keep-load='" << keep
                                 << "' is not plain, evict_last or nc";
      return failure();
    }
    o.streamLoad = env.streamLoad.value_or(*s);
    o.keepLoad = env.keepLoad.value_or(*k);
    o.rowChunks = env.rowChunks.value_or(rowChunks);
    if (o.rowChunks < 1 || o.rowChunks > 16) {
      getOperation().emitError() << "fusec-codegen: row-chunks=" << o.rowChunks
                                 << " is not in [1, 16]";
      return failure();
    }
    if (emit != "ptx" && emit != "llvm") {
      getOperation().emitError() << "fusec-codegen: emit='" << emit << "' is not ptx or llvm";
      return failure();
    }
    return o;
  }

  void runOnOperation() override {
    auto resolved = resolve();
    if (failed(resolved))
      return signalPassFailure();
    const PtxOptions &options = *resolved;
    auto loaded = Target::load(options.target);
    Builder b(&getContext());
    SmallVector<KernelOp> kernels;
    getOperation().walk([&](KernelOp kernel) {
      if (!kernel->hasAttr("fusec.ptx"))
        kernels.push_back(kernel);
    });
    // Programmatic dependent launch: the operands no kernel writes (the
    // function's arguments and constants, through reshapes), which a
    // kernel may read before the previous kernel has finished. Recorded on
    // the kernel before its structural key, so that kernels alike but for
    // where their operands come from are generated apart.
    for (KernelOp kernel : kernels) {
      SmallVector<int64_t> inputs;
      for (auto [i, v] : llvm::enumerate(kernel->getOperands())) {
        Value root = v;
        while (auto r = root.getDefiningOp<ReshapeOp>())
          root = r.getOperand();
        auto arg = dyn_cast<BlockArgument>(root);
        if ((arg && isa<func::FuncOp>(arg.getOwner()->getParentOp())) ||
            root.getDefiningOp<ConstantOp>())
          inputs.push_back(static_cast<int64_t>(i));
      }
      if (options.pdl && !inputs.empty())
        kernel->setAttr("fusec.pdl_inputs", b.getDenseI64ArrayAttr(inputs));
      else
        kernel->removeAttr("fusec.pdl_inputs");
    }
    // Kernels that differ only in their name (a model's repeated layers)
    // are generated once: the others take the first one's PTX and entry,
    // so the kernel cache also compiles that PTX once.
    auto structuralKey = [&](KernelOp kernel) {
      std::optional<StringRef> name = kernel.getName();
      std::string saved = name ? name->str() : "";
      if (name)
        kernel.setName(StringRef("k"));
      std::string text;
      llvm::raw_string_ostream os(text);
      kernel->print(os, OpPrintingFlags().useLocalScope());
      if (name)
        kernel.setName(StringRef(saved));
      return text;
    };
    static const char *const kGeneratedAttrs[] = {
        "fusec.ptx",     "fusec.entry",   "fusec.grid",          "fusec.block",
        "fusec.strategy", "fusec.shared", "fusec.tensor_maps",   "fusec.scratch",
        "fusec.zero_init", "fusec.pdl"};
    // 1. Serially: each kernel's plan, and which kernels are generated
    //    (the first of each structure; the rest follow it).
    struct Job {
      KernelOp kernel;
      std::string key;
      absl::StatusOr<GeneratedKernel> result = absl::UnknownError("not generated");
    };
    std::vector<Job> jobs;
    llvm::StringMap<size_t> jobOf;
    llvm::DenseMap<Operation *, Strategy> replannedFrom;
    SmallVector<std::pair<KernelOp, size_t>> order; // (kernel, its job)
    for (KernelOp kernel : kernels) {
      std::string key = emit == "llvm" ? std::string() : structuralKey(kernel);
      if (!key.empty()) {
        auto it = jobOf.find(key);
        if (it != jobOf.end()) {
          order.push_back({kernel, it->second});
          continue;
        }
      }
      // The plan: fusec-tile's, or made now by the same function.
      if (!kernel->hasAttr("fusec.launch")) {
        PlanOptions plan;
        plan.rowChunks = options.rowChunks;
        plan.arch = options.arch;
        kernel->setAttr("fusec.launch", planLaunch(kernel, *loaded, plan));
      }
      auto launch = kernel->getAttrOfType<LaunchAttr>("fusec.launch");
      if (!strategyRunsOn(launch.getStrategy(), options.arch)) {
        // A plan made for another architecture's matrix units: plan again
        // for this one.
        PlanOptions plan;
        plan.rowChunks = options.rowChunks;
        plan.arch = options.arch;
        LaunchAttr replanned = planLaunch(kernel, *loaded, plan);
        // With emit=ptx the remark waits for the kernel's turn in step 3.
        replannedFrom[kernel] = launch.getStrategy();
        if (remarks && emit == "llvm")
          emitReplanned(kernel, options.arch, launch.getStrategy(), replanned.getStrategy());
        kernel->setAttr("fusec.launch", replanned);
        launch = replanned;
      }
      // A grid no launch takes (tensors of 2^40 elements and more): the
      // error now, before any code is generated for it (a fuzzed grouped
      // convolution's 156 kernels took 8 s, 37 s under the sanitizers, to
      // fail only when the module verified).
      if (int64_t grid = launch.getGrid(); grid < 1 || grid > (int64_t(1) << 31) - 1) {
        kernel.emitError() << "fusec-codegen: the kernel's grid of " << grid
                           << " CTAs is not in [1, 2^31 - 1], what a launch takes (its "
                              "tensors are too large to run)";
        return signalPassFailure();
      }
      if (emit == "llvm") {
        auto module = buildKernelModule(kernel, options);
        if (!module.ok()) {
          if (failed(report(kernel, module.status())))
            return signalPassFailure();
          continue;
        }
        auto func = kernel->getParentOfType<func::FuncOp>();
        std::string name = (func ? func.getSymName().str() + "." : std::string()) +
                           (kernel.getName() ? kernel.getName()->str() : "fusec_kernel");
        (**module)->setAttr("fusec.source", b.getStringAttr(name));
        getOperation().getBody()->push_back(module->release());
        continue;
      }
      if (!key.empty())
        jobOf[key] = jobs.size();
      order.push_back({kernel, jobs.size()});
      jobs.push_back(Job{kernel, std::move(key)});
    }
    if (jobs.empty())
      return;

    // 2. In parallel (the context's threads): each generated kernel's
    //    module, LLVM's O3 and the NVPTX backend. A job touches only its
    //    own kernel (a wgmma kernel records its tensor maps on it) and its
    //    own LLVM context; the target machines are per thread.
    mlir::parallelForEach(&getContext(), jobs,
                          [&](Job &job) { job.result = generateKernel(job.kernel, options); });

    // 3. Serially, in the kernels' order: the results attached, the
    //    followers take their first's, remarks and dumps.
    for (auto [kernel, index] : order) {
      Job &job = jobs[index];
      if (kernel != job.kernel) {
        if (!job.result.ok()) {
          if (failed(report(kernel, job.result.status())))
            return signalPassFailure();
          continue;
        }
        for (const char *attr : kGeneratedAttrs)
          if (Attribute a = job.kernel->getAttr(attr))
            kernel->setAttr(attr, a);
        if (remarks)
          emitRemark(kernel.getLoc())
              << "same as '" << job.kernel->getAttrOfType<StringAttr>("fusec.entry").getValue()
              << "': its PTX reused";
        continue;
      }
      if (!job.result.ok()) {
        if (failed(report(kernel, job.result.status())))
          return signalPassFailure();
        continue;
      }
      const GeneratedKernel &g = *job.result;
      auto launch = kernel->getAttrOfType<LaunchAttr>("fusec.launch");
      if (auto it = replannedFrom.find(kernel); remarks && it != replannedFrom.end())
        emitReplanned(kernel, options.arch, it->second, launch.getStrategy());
      kernel->setAttr("fusec.ptx", b.getStringAttr(g.ptx));
      kernel->setAttr("fusec.entry", b.getStringAttr(g.entry));
      kernel->setAttr("fusec.grid", b.getDenseI64ArrayAttr({launch.getGrid()}));
      kernel->setAttr("fusec.block", b.getDenseI64ArrayAttr({launch.getBlock()}));
      kernel->setAttr("fusec.strategy", StrategyAttr::get(&getContext(), launch.getStrategy()));
      if (launch.getStrategy() == Strategy::matmul_wgmma ||
          launch.getStrategy() == Strategy::matmul_tcgen05)
        kernel->setAttr("fusec.shared", b.getI64IntegerAttr(launch.getSmem()));
      if (remarks)
        emitRemark(kernel.getLoc())
            << "generated '" << g.entry << "' for " << arch << ": "
            << stringifyStrategy(launch.getStrategy()) << ", grid " << launch.getGrid()
            << " x block " << launch.getBlock();
      if (!dumpDir.empty()) {
        std::string error;
        auto func = kernel->getParentOfType<func::FuncOp>();
        std::string prefix = func ? func.getSymName().str() + "." : "";
        if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir)) {
          kernel.emitError() << "fusec-codegen: cannot create " << dumpDir.getValue() << ": "
                             << ec.message();
          return signalPassFailure();
        }
        auto file = openOutputFile(dumpDir + "/" + prefix + g.entry + ".ptx", &error);
        if (!file) {
          kernel.emitError() << "fusec-codegen: " << error;
          return signalPassFailure();
        }
        file->os() << g.ptx;
        file->keep();
      }
    }
  }

  void emitReplanned(KernelOp kernel, StringRef forArch, Strategy from, Strategy to) {
    emitRemark(kernel.getLoc()) << "re-planned for " << forArch << ": " << stringifyStrategy(from)
                                << " runs on another architecture; " << stringifyStrategy(to)
                                << " instead";
  }

  /// A kernel fusec does not generate yet is a remark; anything else an error.
  LogicalResult report(KernelOp kernel, const absl::Status &status) {
    if (status.code() == absl::StatusCode::kUnimplemented) {
      if (remarks)
        emitRemark(kernel.getLoc()) << "no PTX generated: " << std::string(status.message());
      return success();
    }
    kernel.emitError() << "fusec-codegen: " << std::string(status.message());
    return failure();
  }
};

} // namespace
