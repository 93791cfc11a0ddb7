//===- fusec-compile.cpp - The end-to-end fusec driver ----------*- C++ -*-===//
//
// IN.mlir -> the fusec pipeline for a target -> OUT (MLIR, kernels or PTX),
// with the roofline report and plot on request. What does not exist yet
// (code generation for reductions, matmuls and data movement; ONNX import)
// is refused with a message that says so, never skipped silently.
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/CodeGen/Passes.h"
#include "fusec/IR/Fusec.h"
#include "fusec/Import/Onnx.h"
#include "fusec/Passes/Passes.h"
#include "fusec/Target/Roofline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("fusec-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<IN.mlir | IN.onnx>"),
                                      cl::init("-"), cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("OUT"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<std::string> target(
    "target",
    cl::desc("b200, h200, h100, h200-measured, or a target file (default h200)"),
    cl::init("h200"), cl::cat(category));
static cl::opt<std::string> emit(
    "emit",
    cl::desc("What to write: kernels (default: the graph after the whole "
             "pipeline, in fusec.kernel regions), mlir (after decomposition, "
             "before fusion), ptx"),
    cl::init("kernels"), cl::cat(category));
static cl::opt<double> maxRelError(
    "max-rel-error", cl::desc("Error budget of --precision (default 0.05)"),
    cl::init(0.05), cl::cat(category));
static cl::opt<bool> remarks("remarks",
                             cl::desc("Print each fusion and recomputation decision"),
                             cl::cat(category));
static cl::opt<std::string> precision(
    "precision", cl::desc("Storage precision policy: fp32 (default), bf16, fp16, fp8"),
    cl::init("fp32"), cl::cat(category));
static cl::opt<bool> noAggressivePtx(
    "no-aggressive-ptx",
    cl::desc("Turn off aggressive PTX (cache-hinted loads) in code generation"),
    cl::cat(category));
static cl::list<std::string> inputShape(
    "input-shape",
    cl::desc("An .onnx input's shape, NAME=D0xD1x... (binds its dynamic dims); once per "
             "dynamic input"),
    cl::cat(category));
static cl::opt<std::string> streamLoad(
    "stream-load",
    cl::desc("The load of tensors read once: plain, no_allocate, l2_256b or "
             "evict_first (default: the target's measured choice; "
             "FUSEC_STREAM_LOAD overrides)"),
    cl::init(""), cl::cat(category));
static cl::opt<std::string> keepLoad(
    "keep-load",
    cl::desc("The load of tensors re-read by many CTAs: plain, evict_last or nc "
             "(default: the target's choice; FUSEC_KEEP_LOAD overrides)"),
    cl::init(""), cl::cat(category));
static cl::opt<int64_t> rowChunks(
    "row-chunks",
    cl::desc("Rows held in registers: the 16-byte chunks a thread aims to hold, "
             "1-16 (default 4; FUSEC_ROW_CHUNKS overrides)"),
    cl::init(4), cl::cat(category));
static cl::opt<std::string> report("report",
                                   cl::desc("Write the roofline report as JSON"),
                                   cl::value_desc("R.json"), cl::cat(category));
static cl::opt<std::string> svg("roofline-svg",
                                cl::desc("Write the roofline plot as SVG"),
                                cl::value_desc("R.svg"), cl::cat(category));

static int fail(const llvm::Twine &msg) {
  llvm::errs() << "fusec-compile: error: " << msg << "\n";
  return 2;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "fusec-compile: the end-to-end fusec driver\n");

  if (emit != "mlir" && emit != "kernels" && emit != "ptx")
    return fail("--emit=" + emit + ": expected mlir, kernels or ptx");
  if (precision != "fp32" && precision != "bf16" && precision != "fp16" &&
      precision != "fp8")
    return fail("--precision=" + precision + ": expected fp32, bf16, fp16 or fp8");

  auto loaded = fusec::Target::load(target);
  if (!loaded.ok())
    return fail(std::string(loaded.status().message()));
  if (!streamLoad.empty() && !fusec::parseStreamLoad(streamLoad))
    return fail("--stream-load=" + streamLoad + ": expected plain, no_allocate, l2_256b or evict_first");
  if (!keepLoad.empty() && !fusec::parseKeepLoad(keepLoad))
    return fail("--keep-load=" + keepLoad + ": expected plain, evict_last or nc");
  if (rowChunks < 1 || rowChunks > 16)
    return fail("--row-chunks=" + llvm::Twine(rowChunks) + ": expected 1 to 16");
  // The environment's overrides of code generation, read once here.
  auto overrides = fusec::codeGenOverridesFromEnvironment();
  if (!overrides.ok())
    return fail(std::string(overrides.status().message()));
  fusec::setCodeGenOverrides(*overrides);

  DialectRegistry registry;
  registry.insert<fusec::FusecDialect, func::FuncDialect>();
  fusec::registerCodeGenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file;
  if (llvm::StringRef(inputFile).ends_with(".onnx")) {
    // An ONNX model: imported first (fusec-translate --import-onnx).
    auto shapes = fusec::parseOnnxInputShapes(
        std::vector<std::string>(inputShape.begin(), inputShape.end()));
    if (!shapes.ok())
      return fail(std::string(shapes.status().message()));
    fusec::OnnxImportOptions options;
    options.inputShapes = *shapes;
    auto imported = fusec::importOnnxFile(inputFile, options);
    if (!imported.ok())
      return fail(std::string(imported.status().message()));
    file = llvm::MemoryBuffer::getMemBufferCopy(imported->mlir, inputFile);
  } else {
    file = openInputFile(inputFile, &error);
  }
  if (!file)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(verify(*module)))
    return 1;

  PassManager pm(&context);
  if (emit == "mlir") {
    pm.addPass(fusec::createDecompose());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  } else {
    fusec::FusecPipelineOptions options;
    options.target = target;
    options.precision = precision;
    options.maxRelError = maxRelError;
    options.aggressivePtx = !noAggressivePtx;
    options.remarks = remarks;
    fusec::buildFusecPipeline(pm, options);
    if (emit == "ptx") {
      fusec::CodeGenOptions codegen;
      codegen.arch = loaded->arch().empty() ? "sm_90a" : loaded->arch();
      codegen.aggressivePtx = !noAggressivePtx;
      pm.addPass(fusec::createCodeGen(codegen));
    }
  }
  if (failed(pm.run(*module)))
    return 1;

  if (!report.empty() || !svg.empty()) {
    std::vector<fusec::GraphAnalysis> graphs;
    for (auto func : module->getOps<func::FuncOp>())
      if (!func.isExternal())
        graphs.push_back(fusec::analyzeFunction(func, *loaded));
    auto write = [&](const std::string &path, const std::string &text) {
      auto out = openOutputFile(path, &error);
      if (!out)
        return false;
      out->os() << text;
      out->keep();
      return true;
    };
    if (!report.empty() && !write(report, fusec::formatReportJson(graphs, *loaded)))
      return fail(error);
    if (!svg.empty() && !write(svg, fusec::formatRooflineSvg(graphs, *loaded)))
      return fail(error);
  }

  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  if (emit == "ptx") {
    // Every kernel's PTX, one after the other; all must have been generated.
    std::string missing;
    module->walk([&](fusec::KernelOp k) {
      auto ptx = k->getAttrOfType<StringAttr>("fusec.ptx");
      if (!ptx) {
        missing += (missing.empty() ? "" : ", ") +
                   (k.getName() ? k.getName()->str() : std::string("kernel"));
        return;
      }
      output->os() << "// fusec kernel " << (k.getName() ? k.getName()->str() : "")
                   << "\n" << ptx.getValue() << "\n";
    });
    // fusec.attention runs as the runtime's intrinsic; any other op the
    // pipeline left outside a kernel has no code.
    module->walk([&](func::FuncOp f) {
      for (Operation &op : f.getBody().front()) {
        if (isa<fusec::AttentionOp>(op))
          output->os() << "// fusec.attention in @" << f.getName()
                       << ": the runtime's attention intrinsic (libfusec_attention.so, "
                          "runtime_kernels/attention_sm90.cu)\n";
        else if (!isa<fusec::KernelOp, fusec::ConstantOp, fusec::ReshapeOp, func::ReturnOp>(op))
          missing += (missing.empty() ? "" : ", ") + op.getName().getStringRef().str();
      }
    });
    if (!missing.empty())
      return fail("--emit=ptx: no code generation yet for kernel(s) " + missing +
                  " (fusec generates elementwise, movement, reduction and matmul "
                  "kernels, and calls the attention intrinsic; fp8 matmuls are not "
                  "generated yet; --emit=kernels shows the kernels and fusec-opt "
                  "--fusec-codegen=\"remarks=true\" says why)");
    output->keep();
    return 0;
  }
  module->print(output->os());
  output->keep();
  return 0;
}
