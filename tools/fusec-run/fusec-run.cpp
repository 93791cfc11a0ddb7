//===- fusec-run.cpp - Run a fusec graph and check it -----------*- C++ -*-===//
//
// Runs a graph on seeded random inputs (or .npy files): on the GPU through the
// JIT, compared with the reference interpreter, with each kernel timed; or,
// with --reference, on the interpreter alone. With --verify-pipeline it checks
// that a pass pipeline keeps the graph's meaning.
//
//===----------------------------------------------------------------------===//

#include "fusec/IR/Fusec.h"
#include "fusec/Interpreter/Interpreter.h"
#include "fusec/Jit.h"
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
static cl::opt<unsigned> warmup("warmup",
                                cl::desc("GPU runs before timing (default 3)"),
                                cl::init(3), cl::cat(runCategory));
static cl::opt<unsigned> runs(
    "runs", cl::desc("Timed GPU runs; each kernel's median is reported "
                     "(default 20)"),
    cl::init(20), cl::cat(runCategory));
static cl::opt<bool> noCheck(
    "no-check",
    cl::desc("GPU run without the reference comparison (for benchmark-sized "
             "graphs whose correctness is checked at smaller sizes)"),
    cl::cat(runCategory));
static cl::opt<unsigned> trials(
    "trials",
    cl::desc("With --verify-pipeline: how many seeds to try, from --seed on"),
    cl::init(3), cl::cat(runCategory));
static cl::opt<std::string> rooflineTarget(
    "roofline-target",
    cl::desc("GPU run: the roofline target each kernel's predicted time comes "
             "from (a name or a target file; default h200-measured on sm_90, "
             "b200 on sm_100)"),
    cl::cat(runCategory));

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

/// Runs the graph through the JIT on the GPU, compares every output with the
/// interpreter's and times each kernel. Exit 0 on a match, 1 on a mismatch,
/// 2 on an error (no GPU included).
int runOnGpu(const std::string &text,
             const std::vector<fusec::HostTensor> &expected,
             const std::vector<fusec::HostTensor> &inputs) {
  if (absl::Status st = fusec::rt::available(); !st.ok())
    return fail(absl::StrCat(st.message(),
                             "; run with --reference for the CPU interpreter"));
  fusec::JitOptions options;
  options.function = functionName;
  options.rooflineTarget = rooflineTarget;
  auto jit = fusec::Jit::create(options);
  if (!jit.ok())
    return fail(std::string(jit.status().message()));
  auto exec = (*jit)->compile(text, inputFile);
  if (!exec.ok())
    return fail(std::string(exec.status().message()));
  auto stream = fusec::rt::Stream::create();
  if (!stream.ok())
    return fail(std::string(stream.status().message()));

  std::vector<fusec::rt::DeviceBuffer> in, out;
  std::vector<const fusec::rt::DeviceBuffer *> inPtrs;
  std::vector<fusec::rt::DeviceBuffer *> outPtrs;
  for (const fusec::HostTensor &t : inputs) {
    std::string bytes = fusec::toDeviceBytes(t);
    auto b = fusec::rt::DeviceBuffer::allocate(bytes.size());
    if (!b.ok())
      return fail(std::string(b.status().message()));
    if (auto st = b->copyFromHost(bytes.data(), bytes.size()); !st.ok())
      return fail(std::string(st.message()));
    in.push_back(std::move(*b));
  }
  for (const fusec::TensorSpec &spec : (*exec)->outputs()) {
    auto b = fusec::rt::DeviceBuffer::allocate(spec.bytes());
    if (!b.ok())
      return fail(std::string(b.status().message()));
    // Poison: an output the graph fails to write shows up as a mismatch.
    if (auto st = b->fill(0xFF); !st.ok())
      return fail(std::string(st.message()));
    out.push_back(std::move(*b));
  }
  for (auto &b : in)
    inPtrs.push_back(&b);
  for (auto &b : out)
    outPtrs.push_back(&b);

  if (auto st = (*exec)->run(inPtrs, outPtrs, *stream); !st.ok())
    return fail(std::string(st.message()));
  if (auto st = stream->synchronize(); !st.ok())
    return fail(std::string(st.message()));

  bool ok = true;
  std::string report, jsonResults;
  for (size_t i = 0; i < out.size(); ++i) {
    const fusec::TensorSpec &spec = (*exec)->outputs()[i];
    std::string bytes(spec.bytes(), '\0');
    if (auto st = out[i].copyToHost(bytes.data(), bytes.size()); !st.ok())
      return fail(std::string(st.message()));
    auto actual = fusec::fromDeviceBytes(spec.dtype, spec.shape, bytes);
    if (!actual.ok())
      return fail(std::string(actual.status().message()));
    if (!outputDir.empty())
      if (auto st = fusec::writeNpy(absl::StrCat(outputDir.getValue(), "/result_", i, ".npy"), *actual);
          !st.ok())
        return fail(std::string(st.message()));
    if (expected.empty()) { // --no-check
      absl::StrAppend(&report, "result #", i, ": ", actual->typeString(),
                      " not checked (--no-check)\n");
      continue;
    }
    fusec::Comparison c = fusec::compareTensors(
        expected[i], *actual, fusec::toleranceFor(spec.dtype));
    ok &= c.ok;
    absl::StrAppend(&report, "result #", i, ": ", actual->typeString(), " ",
                    c.ok ? "matches the reference" : "MISMATCH",
                    absl::StrFormat(" (max abs error %.3g, rel l2 %.3g)",
                                    c.maxAbsError, c.relL2),
                    c.ok ? "" : ": " + c.message, "\n");
    absl::StrAppend(&jsonResults, i ? ", " : "", "{\"index\": ", i,
                    ", \"type\": \"", actual->typeString(), "\", \"ok\": ",
                    c.ok ? "true" : "false", ", \"max_abs_error\": ",
                    jsonNumber(c.maxAbsError), ", \"rel_l2\": ",
                    jsonNumber(c.relL2), "}");
  }

  // Timing: warm up, then the median of each kernel over the timed runs.
  const auto &kernels = (*exec)->kernels();
  std::vector<std::vector<float>> samples(kernels.size());
  std::vector<float> ms;
  for (unsigned r = 0; r < warmup + runs; ++r) {
    if (auto st = (*exec)->runTimed(inPtrs, outPtrs, *stream, &ms); !st.ok())
      return fail(std::string(st.message()));
    if (r >= warmup)
      for (size_t k = 0; k < ms.size(); ++k)
        samples[k].push_back(ms[k]);
  }
  std::string table, jsonKernels;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::vector<float> &v = samples[k];
    std::sort(v.begin(), v.end());
    double median = v.empty() ? 0 : v[v.size() / 2];
    double seconds = median * 1e-3;
    double gbps = seconds > 0 ? kernels[k].cost.bytes() / seconds / 1e9 : 0;
    double gflops = seconds > 0 ? kernels[k].cost.flops / seconds / 1e9 : 0;
    double predictedMs = kernels[k].predictedSeconds * 1e3;
    absl::StrAppend(&table, absl::StrFormat("%-24s %10.4f ms %10.1f GB/s %10.1f GFLOP/s",
                                            kernels[k].name, median, gbps, gflops));
    if (predictedMs > 0)
      absl::StrAppend(&table, absl::StrFormat("  predicted %.4f ms (%s-bound, "
                                              "measured/predicted %.2f)",
                                              predictedMs, kernels[k].bound,
                                              median / predictedMs));
    absl::StrAppend(&table, "\n");
    absl::StrAppend(&jsonKernels, k ? ", " : "", "{\"name\": \"", kernels[k].name,
                    "\", \"median_ms\": ", jsonNumber(median),
                    ", \"bytes\": ", kernels[k].cost.bytes(), ", \"flops\": ",
                    kernels[k].cost.flops, ", \"gb_per_s\": ", jsonNumber(gbps),
                    ", \"gflop_per_s\": ", jsonNumber(gflops),
                    ", \"strategy\": \"", kernels[k].strategy,
                    "\", \"predicted_ms\": ", jsonNumber(predictedMs),
                    ", \"bound\": \"", kernels[k].bound, "\"}");
  }
  auto info = fusec::rt::deviceInfo();
  if (json) {
    llvm::outs() << "{\"mode\": \"gpu\", \"function\": \"" << (*exec)->function()
                 << "\", \"device\": \""
                 << (info.ok() ? info->name : "?") << "\", \"target\": \""
                 << (*exec)->target() << "\", \"seed\": " << seed.getValue()
                 << ", \"warmup\": " << warmup.getValue()
                 << ", \"runs\": " << runs.getValue() << ", \"ok\": "
                 << (ok ? "true" : "false") << ", \"results\": [" << jsonResults
                 << "], \"kernels\": [" << jsonKernels << "]}\n";
  } else {
    llvm::outs() << "device: " << (info.ok() ? info->name : "?") << " ("
                 << (*exec)->target() << ")\n"
                 << report << "kernel median over " << runs.getValue()
                 << " runs after " << warmup.getValue() << " warm-up:\n"
                 << table << (ok ? "PASS" : "FAIL") << "\n";
  }
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  fusec::registerFusecPasses();
  fusec::registerFusecPipeline();
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

  if (!reference && noCheck) {
    llvm::StringRef text = sourceMgr.getMemoryBuffer(1)->getBuffer();
    return runOnGpu(std::string(text), {}, inputs);
  }
  auto results = fusec::interpret(*func, inputs);
  if (!results.ok())
    return fail(std::string(results.status().message()), 1);

  if (!reference) {
    llvm::StringRef text = sourceMgr.getMemoryBuffer(1)->getBuffer();
    return runOnGpu(std::string(text), *results, inputs);
  }

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
