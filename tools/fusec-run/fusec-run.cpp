//===- fusec-run.cpp - Run a fusec graph and check it -----------*- C++ -*-===//
//
// Runs a graph on seeded random inputs (or .npy files) with the reference
// interpreter, prints or writes its outputs, and with --verify-pipeline checks
// that a pass pipeline keeps the graph's meaning. GPU execution arrives with
// the runtime; until then --reference is required.
//
//===----------------------------------------------------------------------===//

#include "fusec/IR/Fusec.h"
#include "fusec/Interpreter/Interpreter.h"
#include "fusec/Passes/Passes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("fusec-run options");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<graph.mlir>"),
                                      cl::init("-"), cl::cat(runCategory));
static cl::opt<bool> reference(
    "reference",
    cl::desc("Run on the CPU with the reference interpreter (no GPU needed)"),
    cl::cat(runCategory));
static cl::opt<std::string> functionName(
    "function", cl::desc("Function to run (default: the only public one)"),
    cl::cat(runCategory));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of the random inputs (default 0)"),
                              cl::init(0), cl::cat(runCategory));
static cl::list<std::string> inputNpy(
    "input",
    cl::desc("Read argument #i from this .npy file; give once per argument, "
             "in order (default: seeded random inputs)"),
    cl::cat(runCategory));
static cl::opt<std::string> outputDir(
    "output-dir",
    cl::desc("Write each result as DIR/result_<i>.npy (and the inputs used as "
             "DIR/input_<i>.npy)"),
    cl::cat(runCategory));
static cl::opt<bool> json("json", cl::desc("Print the summary as JSON"),
                          cl::cat(runCategory));
static cl::opt<unsigned> printValues(
    "print-values", cl::desc("Print the first N values of each result"),
    cl::init(4), cl::cat(runCategory));
static cl::opt<std::string> verifyPipeline(
    "verify-pipeline",
    cl::desc("Check that this pass pipeline keeps the graph's meaning: run "
             "the graph before and after it on the same random inputs and "
             "compare within the tolerance of each result's type; exit 1 on "
             "a mismatch"),
    cl::cat(runCategory));
static cl::opt<unsigned> trials(
    "trials",
    cl::desc("With --verify-pipeline: how many seeds to try, from --seed on"),
    cl::init(3), cl::cat(runCategory));

namespace {

struct Summary {
  double sum = 0, min = 0, max = 0;
  int64_t nans = 0;
};

Summary summarize(const fusec::HostTensor &t) {
  Summary s;
  s.min = INFINITY;
  s.max = -INFINITY;
  for (double v : t.data) {
    if (std::isnan(v)) {
      ++s.nans;
      continue;
    }
    s.sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  return s;
}

std::string jsonNumber(double v) {
  if (std::isnan(v) || std::isinf(v))
    return "null";
  return absl::StrFormat("%.9g", v);
}

int fail(const std::string &msg, int code = 2) {
  llvm::errs() << "fusec-run: error: " << msg << "\n";
  return code;
}

int runVerifyPipeline(ModuleOp module) {
  bool ok = true;
  std::string jsonOut = "{\"pipeline\": \"" + verifyPipeline + "\", \"trials\": [";
  for (unsigned t = 0; t < trials; ++t) {
    auto result = fusec::checkPipelinePreservesSemantics(
        module, verifyPipeline, functionName, seed + t);
    if (!result.ok())
      return fail(std::string(result.status().message()));
    for (auto [i, c] : llvm::enumerate(*result)) {
      ok &= c.ok;
      if (json) {
        absl::StrAppend(&jsonOut, (t || i) ? ", " : "", "{\"seed\": ", seed + t,
                        ", \"result\": ", i, ", \"ok\": ", c.ok ? "true" : "false",
                        ", \"max_abs_error\": ", jsonNumber(c.maxAbsError),
                        ", \"rel_l2\": ", jsonNumber(c.relL2), "}");
        continue;
      }
      llvm::outs() << llvm::formatv(
          "seed {0} result #{1}: {2} (max abs error {3:e}, rel l2 {4:e}){5}\n",
          seed + t, i, c.ok ? "match" : "MISMATCH", c.maxAbsError, c.relL2,
          c.ok ? "" : ": " + c.message);
    }
  }
  if (json)
    llvm::outs() << jsonOut << "], \"ok\": " << (ok ? "true" : "false") << "}\n";
  else
    llvm::outs() << (ok ? "PASS" : "FAIL") << ": " << verifyPipeline
                 << (ok ? " keeps the graph's meaning\n"
                        : " changes the graph's results\n");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  fusec::registerFusecPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "fusec-run: run a fusec graph and compare it with the reference "
      "interpreter\n");

  DialectRegistry registry;
  registry.insert<fusec::FusecDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string errorMessage;
  auto file = openInputFile(inputFile, &errorMessage);
  if (!file)
    return fail(errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 2;
  if (failed(verify(*module)))
    return 2;

  if (!verifyPipeline.empty())
    return runVerifyPipeline(*module);

  if (!reference)
    return fail("GPU execution needs the fusec runtime, which this build does "
                "not have yet; run with --reference to use the CPU reference "
                "interpreter");

  auto func = fusec::findFunction(*module, functionName);
  if (!func.ok())
    return fail(std::string(func.status().message()));

  std::vector<fusec::HostTensor> inputs;
  if (!inputNpy.empty()) {
    if (inputNpy.size() != func->getNumArguments())
      return fail(absl::StrCat("@", func->getSymName().str(), " takes ",
                               func->getNumArguments(), " arguments, but ",
                               inputNpy.size(), " --input files were given"));
    for (auto [i, path] : llvm::enumerate(inputNpy)) {
      auto info = fusec::tensorTypeInfo(func->getArgumentTypes()[i]);
      if (!info.ok())
        return fail(absl::StrCat("argument #", i, ": ", info.status().message()));
      auto t = fusec::readNpy(path, info->first);
      if (!t.ok())
        return fail(std::string(t.status().message()));
      if (t->shape != info->second)
        return fail(absl::StrCat(path, " holds ", t->typeString(),
                                 ", argument #", i, " expects ",
                                 fusec::HostTensor(info->first, info->second)
                                     .typeString()));
      inputs.push_back(std::move(*t));
    }
  } else {
    auto random = fusec::randomInputs(*func, seed);
    if (!random.ok())
      return fail(std::string(random.status().message()));
    inputs = std::move(*random);
  }

  auto results = fusec::interpret(*func, inputs);
  if (!results.ok())
    return fail(std::string(results.status().message()), 1);

  if (!outputDir.empty()) {
    for (auto [i, t] : llvm::enumerate(inputs))
      if (auto st = fusec::writeNpy(absl::StrCat(outputDir.getValue(), "/input_", i, ".npy"), t);
          !st.ok())
        return fail(std::string(st.message()));
    for (auto [i, t] : llvm::enumerate(*results))
      if (auto st = fusec::writeNpy(absl::StrCat(outputDir.getValue(), "/result_", i, ".npy"), t);
          !st.ok())
        return fail(std::string(st.message()));
  }

  std::string out;
  if (json)
    absl::StrAppend(&out, "{\"function\": \"", func->getSymName().str(),
                    "\", \"mode\": \"reference\", \"seed\": ", seed.getValue(),
                    ", \"results\": [");
  for (auto [i, t] : llvm::enumerate(*results)) {
    Summary s = summarize(t);
    std::string values;
    for (int64_t j = 0; j < std::min<int64_t>(printValues, t.numElements()); ++j)
      absl::StrAppend(&values, j ? ", " : "", jsonNumber(t.data[j]));
    if (json) {
      absl::StrAppend(&out, i ? ", " : "", "{\"index\": ", i, ", \"type\": \"",
                      t.typeString(), "\", \"sum\": ", jsonNumber(s.sum),
                      ", \"min\": ", jsonNumber(s.min), ", \"max\": ",
                      jsonNumber(s.max), ", \"nans\": ", s.nans,
                      ", \"first\": [", values, "]}");
    } else {
      absl::StrAppend(&out, "result #", i, ": ", t.typeString(),
                      absl::StrFormat(" sum=%.9g min=%.9g max=%.9g nans=%d",
                                      s.sum, s.min, s.max, s.nans),
                      " first=[", values, "]\n");
    }
  }
  if (json)
    absl::StrAppend(&out, "]}\n");
  llvm::outs() << out;
  return 0;
}
