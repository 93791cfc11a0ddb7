//===- Ptx.cpp - Inline PTX, and the NVPTX backend ---------------*- C++ -*-===//
//
// The one place that writes PTX text: instructions NVVM has no op for.
// - SFU math: ex2.approx.ftz, lg2.approx.ftz, rsqrt.approx.ftz (NVVM's
//   intrinsics for these would let LLVM pick other forms);
// - 16-byte loads with a cache policy (ld.global.nc.L1::no_allocate,
//   .L2::256B, createpolicy evict_first, L1::evict_last): NVVM has no typed
//   op for the qualifiers, and LLVM would split a vector load whose lanes
//   are used one by one;
// - a register move with side effects that keeps LLVM from reusing an
//   earlier pass's values (rows held in registers);
// - ptxAsm, for the few instructions of the matmul strategies without an op.
//
// Then the backend: the module is verified, translated to LLVM IR, optimized
// at O3 and printed as PTX by a target machine cached per thread and arch.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "absl/strings/str_cat.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <map>
#include <memory>
#include <mutex>
#include <thread>

using namespace mlir;

namespace fusec::codegen {

namespace {

Value inlineAsm(Emitter &e, Type result, StringRef text, StringRef constraints,
                ValueRange args, bool sideEffects) {
  auto op = LLVM::InlineAsmOp::create(e.b, result, args, text, constraints, sideEffects,
                                      /*is_align_stack=*/false, LLVM::TailCallKind::None,
                                      LLVM::AsmDialectAttr(), ArrayAttr());
  return op.getNumResults() ? op.getResult(0) : Value();
}

const char *load16(CacheHint hint, const PtxOptions &o) {
  const char *plain = "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];";
  if (!o.aggressivePtx || hint == CacheHint::Default)
    return plain;
  if (hint == CacheHint::Keep) {
    switch (o.keepLoad) {
    case KeepLoad::EvictLast:
      return "ld.global.nc.L1::evict_last.v4.u32 {$0, $1, $2, $3}, [$4];";
    case KeepLoad::NC:
      return "ld.global.nc.v4.u32 {$0, $1, $2, $3}, [$4];";
    case KeepLoad::Plain:
      return plain;
    }
  }
  switch (o.streamLoad) {
  case StreamLoad::Plain:
    return plain;
  case StreamLoad::L2_256B:
    return "ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {$0, $1, $2, $3}, [$4];";
  case StreamLoad::EvictFirst:
    return "{ .reg .b64 pol; createpolicy.fractional.L2::evict_first.b64 pol, 1.0; "
           "ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {$0, $1, $2, $3}, [$4], pol; }";
  case StreamLoad::NoAllocate:
    return "ld.global.nc.L1::no_allocate.v4.u32 {$0, $1, $2, $3}, [$4];";
  }
  return plain;
}

} // namespace

Value ptxUnaryF32(Emitter &e, StringRef instr, Value x) {
  return inlineAsm(e, e.f32, (instr + " $0, $1;").str(), "=f,f", x, false);
}

SmallVector<Value, 4> ptxLoad16(Emitter &e, CacheHint hint, const PtxOptions &options,
                                Value addr) {
  auto type = LLVM::LLVMStructType::getLiteral(e.ctx, {e.i32, e.i32, e.i32, e.i32});
  Value s = inlineAsm(e, type, load16(hint, options), "=r,=r,=r,=r,l", addr, false);
  SmallVector<Value, 4> words;
  for (int i = 0; i < 4; ++i)
    words.push_back(e.extractValue(s, i));
  return words;
}

Value ptxLaunder(Emitter &e, Value word) {
  return inlineAsm(e, e.i32, "mov.b32 $0, $1;", "=r,r", word, true);
}

Value ptxAsm(Emitter &e, Type result, StringRef text, StringRef constraints, ValueRange args,
             bool sideEffects) {
  return inlineAsm(e, result, text, constraints, args, sideEffects);
}

absl::StatusOr<std::string> translateToPtx(ModuleOp module, const std::string &arch) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string diagnostics;
  // Kernels are translated in parallel in one MLIR context, whose handlers
  // every thread sees: each call takes only its own thread's diagnostics.
  std::thread::id owner = std::this_thread::get_id();
  auto capture = [&](Diagnostic &d) -> LogicalResult {
    if (std::this_thread::get_id() != owner)
      return failure();
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
    return success();
  };
  {
    ScopedDiagnosticHandler handler(module.getContext(), capture);
    if (failed(verify(module)))
      return absl::InternalError("fusec codegen built invalid LLVM-dialect IR: " + diagnostics);
  }
  // NVVM ops without an LLVM intrinsic (wgmma.mma_async, mbarrier waits,
  // TMA with options) become the inline PTX MLIR writes for them.
  {
    ScopedDiagnosticHandler handler(module.getContext(), capture);
    PassManager pm(module.getContext());
    pm.addPass(createConvertNVVMToLLVMPass());
    if (failed(pm.run(module)))
      return absl::InternalError("NVVM to LLVM conversion failed: " + diagnostics);
  }
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    ScopedDiagnosticHandler handler(module.getContext(), capture);
    llvmModule = translateModuleToLLVMIR(module, llvmContext, "fusec");
  }
  if (!llvmModule)
    return absl::InternalError("translation to LLVM IR failed: " + diagnostics);

  // One target machine per thread and arch: creating one costs more than a
  // small kernel's whole code generation.
  thread_local std::map<std::string, std::unique_ptr<llvm::TargetMachine>> machines;
  llvm::Triple triple("nvptx64-nvidia-cuda");
  // A kernel's parameters take at most 4352 bytes below PTX ISA 8.1 (544
  // pointers: a concat of 1000 inputs was refused by ptxas); 8.1 allows
  // 32764. Only such kernels get the newer ISA, so no other kernel's PTX
  // (nor its cache key) changes.
  uint64_t paramBytes = 0;
  for (llvm::Function &f : *llvmModule) {
    uint64_t bytes = 0;
    for (llvm::Argument &a : f.args())
      bytes += a.getType()->isPointerTy() ? 8 : (a.getType()->getPrimitiveSizeInBits() + 7) / 8;
    if (!f.isDeclaration())
      paramBytes = std::max(paramBytes, bytes);
  }
  bool wideParams = paramBytes > 4352 && arch != "sm_100a";
  auto &tm = machines[wideParams ? arch + "+ptx81" : arch];
  if (!tm) {
    std::string error;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target)
      return absl::InternalError("NVPTX target: " + error);
    const char *ptxFeature = arch == "sm_100a" ? "+ptx86"
                             : wideParams      ? "+ptx81"
                             : arch == "sm_90a" ? "+ptx80"
                                                : "+ptx70";
    tm.reset(target->createTargetMachine(triple, arch, ptxFeature, llvm::TargetOptions(),
                                         std::nullopt, std::nullopt,
                                         llvm::CodeGenOptLevel::Aggressive));
    if (!tm)
      return absl::InvalidArgumentError("no NVPTX target machine for " + arch);
  }
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(tm->createDataLayout());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(*llvmModule, mam);

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return absl::InternalError("the NVPTX backend cannot emit assembly");
  pm.run(*llvmModule);
  return std::string(ptx.str());
}

} // namespace fusec::codegen
