//===- fusec-run.cpp - Run a fusec graph and check it -----------*- C++ -*-===//
//
// Runs a graph on seeded random inputs (or .npy files): on the GPU through the
// JIT, compared with the reference interpreter, with each kernel timed; or,
// with --reference, on the interpreter alone. With --verify-pipeline it checks
// that a pass pipeline keeps the graph's meaning.
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/CodeGen/Passes.h"
#include "fusec/IR/Fusec.h"
#include "fusec/Import/Onnx.h"
#include "fusec/Interpreter/Interpreter.h"
#include "fusec/Jit.h"
#include "fusec/Passes/Passes.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <filesystem>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("fusec-run options");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<graph.mlir | model.onnx>"),
                                      cl::init("-"), cl::cat(runCategory));
static cl::opt<bool> reference(
    "reference",
    cl::desc("Run on the CPU with the reference interpreter (no GPU needed)"),
    cl::cat(runCategory));
static cl::opt<bool> modelTolerance(
    "model-tolerance",
    cl::desc("--onnx-test: compare with the deep-graph policy (|got - expected| <= "
             "1e-3 * |expected| + 1e-5 * max|expected| of the output) instead of the "
             "node tests' atol 1e-7 (docs/Models.md)"),
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
static cl::opt<double> maxRelL2(
    "max-rel-l2",
    cl::desc("GPU run: an output also matches when its relative L2 error "
             "against the interpreter is at most this (deep bf16 graphs, "
             "where rounding differences of a few ulps propagate, e.g. the "
             "attention intrinsic's bf16 P); 0 (default): element by element "
             "only"),
    cl::init(0.0), cl::cat(runCategory));
static cl::opt<unsigned> trials(
    "trials",
    cl::desc("With --verify-pipeline: how many seeds to try, from --seed on"),
    cl::init(3), cl::cat(runCategory));
static cl::opt<std::string> onnxTest(
    "onnx-test",
    cl::desc("Run an ONNX backend test folder (model.onnx and "
             "test_data_set_*/{input,output}_*.pb): import, the whole "
             "--fusec-pipeline, run (the GPU if present, else the "
             "interpreter; --reference forces it) and compare with the "
             "expected outputs. Exit 0 pass, 1 mismatch, 2 unsupported or "
             "bad input"),
    cl::value_desc("DIR"), cl::cat(runCategory));
static cl::opt<std::string> rooflineTarget(
    "roofline-target",
    cl::desc("GPU run: the roofline target each kernel's predicted time comes "
             "from (a name or a target file; default h200-measured on sm_90, "
             "b200 on sm_100)"),
    cl::cat(runCategory));
static cl::opt<std::string> streamLoad(
    "stream-load",
    cl::desc("GPU run: the load of tensors read once (plain, no_allocate, "
             "l2_256b, evict_first; default: the target's measured choice; "
             "FUSEC_STREAM_LOAD overrides)"),
    cl::cat(runCategory));
static cl::opt<std::string> keepLoad(
    "keep-load",
    cl::desc("GPU run: the load of tensors re-read by many CTAs (plain, "
             "evict_last, nc; default: the target's choice; FUSEC_KEEP_LOAD "
             "overrides)"),
    cl::cat(runCategory));
static cl::opt<std::string> precisionOption(
    "precision",
    cl::desc("Storage precision of the graph's f32 tensors: fp32 (as written), bf16, "
             "fp16 or fp8. fusec-lower-precision lowers what its error bound allows; "
             "the check compares with the f32 reference at the lowered type's "
             "tolerance"),
    cl::init("fp32"), cl::cat(runCategory));
static cl::list<std::string> inputShapeOption(
    "input-shape",
    cl::desc("An .onnx model's input shape, NAME=D0xD1x... (binds its dynamic dims "
             "such as batch and sequence); give once per dynamic input"),
    cl::cat(runCategory));
static cl::opt<std::string> archOption(
    "arch",
    cl::desc("GPU run: the PTX target (sm_80, sm_90a, sm_100a; default: the "
             "GPU present). A Hopper runs sm_80 code: the strategies without "
             "tensor cores (matmul_simt) on the same graph"),
    cl::cat(runCategory));
static cl::opt<std::string> batchFile(
    "batch",
    cl::desc("Run every graph listed in FILE (a line `PATH [SEED]` each; - for "
             "stdin) in this one process, sharing the JIT and the CUDA context, "
             "each between `==> PATH` and `<== PATH exit N` lines (random-graph "
             "campaigns)"),
    cl::value_desc("FILE"), cl::cat(runCategory));
static cl::opt<int64_t> rowChunks(
    "row-chunks",
    cl::desc("GPU run: the 16-byte chunks a thread of a row kernel aims to "
             "hold, 1-16 (default 4; FUSEC_ROW_CHUNKS overrides)"),
    cl::init(0), cl::cat(runCategory));

namespace {

/// The JIT's options from the command line.
fusec::JitOptions jitOptions() {
  fusec::JitOptions options;
  options.function = functionName;
  options.target = archOption;
  options.rooflineTarget = rooflineTarget;
  options.streamLoad = streamLoad;
  options.keepLoad = keepLoad;
  options.rowChunks = rowChunks;
  options.precision = precisionOption;
  return options;
}

/// --input-shape NAME=2x128 ... as a map.
absl::StatusOr<std::map<std::string, std::vector<int64_t>>> inputShapes() {
  return fusec::parseOnnxInputShapes(
      std::vector<std::string>(inputShapeOption.begin(), inputShapeOption.end()));
}

struct Summary {
  double sum = 0, min = 0, max = 0;
  int64_t nans = 0;
};

Summary summarize(const fusec::HostTensor &t) {
  Summary s;
  s.min = INFINITY;
  s.max = -INFINITY;
  for (double v : t.values()) {
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
          c.ok ? (c.message.empty() ? "" : "; " + c.message) : ": " + c.message);
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

/// Device buffers for one Executable: the inputs uploaded, the outputs
/// poisoned (an output the graph fails to write shows up as a mismatch).
struct GpuBuffers {
  std::vector<fusec::rt::DeviceBuffer> in, out;
  std::vector<const fusec::rt::DeviceBuffer *> inPtrs;
  std::vector<fusec::rt::DeviceBuffer *> outPtrs;
};

absl::StatusOr<GpuBuffers> uploadBuffers(const fusec::Executable &exec,
                                         const std::vector<fusec::HostTensor> &inputs) {
  GpuBuffers g;
  for (const fusec::HostTensor &t : inputs) {
    std::string bytes = fusec::toDeviceBytes(t);
    auto b = fusec::rt::DeviceBuffer::allocate(std::max<size_t>(bytes.size(), 1));
    if (!b.ok())
      return b.status();
    if (!bytes.empty())
      if (auto st = b->copyFromHost(bytes.data(), bytes.size()); !st.ok())
        return st;
    g.in.push_back(std::move(*b));
  }
  for (const fusec::TensorSpec &spec : exec.outputs()) {
    auto b = fusec::rt::DeviceBuffer::allocate(std::max<int64_t>(spec.bytes(), 1));
    if (!b.ok())
      return b.status();
    if (auto st = b->fill(0xFF); !st.ok())
      return st;
    g.out.push_back(std::move(*b));
  }
  for (auto &b : g.in)
    g.inPtrs.push_back(&b);
  for (auto &b : g.out)
    g.outPtrs.push_back(&b);
  return g;
}

absl::StatusOr<std::vector<fusec::HostTensor>> downloadOutputs(const fusec::Executable &exec,
                                                               GpuBuffers &g) {
  std::vector<fusec::HostTensor> out;
  for (size_t i = 0; i < g.out.size(); ++i) {
    const fusec::TensorSpec &spec = exec.outputs()[i];
    std::string bytes(spec.bytes(), '\0');
    if (!bytes.empty())
      if (auto st = g.out[i].copyToHost(bytes.data(), bytes.size()); !st.ok())
        return st;
    auto t = fusec::fromDeviceBytes(spec.dtype, spec.shape, bytes);
    if (!t.ok())
      return t.status();
    out.push_back(std::move(*t));
  }
  return out;
}

/// Runs the graph through the JIT on the GPU, compares every output with the
/// interpreter's and times each kernel. Exit 0 on a match, 1 on a mismatch,
/// 2 on an error (no GPU included).
/// Seconds fusec-run spent importing the ONNX model (0 for .mlir input):
/// reported beside the JIT's compile time.
double importSeconds = 0;

int runOnGpu(const std::string &text,
             const std::vector<fusec::HostTensor> &expected,
             const std::vector<fusec::HostTensor> &inputs,
             const std::vector<fusec::Tolerance> &tolerances = {}) {
  if (absl::Status st = fusec::rt::available(); !st.ok())
    return fail(absl::StrCat(st.message(),
                             "; run with --reference for the CPU interpreter"));
  // One Jit for the process: a --batch of graphs shares its context and
  // kernel cache. Never destroyed: its executables' device buffers go with
  // the process, not after the driver's own teardown at exit.
  static auto &jit = *new absl::StatusOr<std::unique_ptr<fusec::Jit>>(
      fusec::Jit::create(jitOptions()));
  if (!jit.ok())
    return fail(std::string(jit.status().message()));
  auto compileStart = std::chrono::steady_clock::now();
  auto exec = (*jit)->compile(text, inputFile);
  if (!exec.ok())
    return fail(std::string(exec.status().message()));
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compileStart).count();
  fusec::rt::KernelCacheStats cacheStats = (*jit)->cacheStats();
  auto stream = fusec::rt::Stream::create();
  if (!stream.ok())
    return fail(std::string(stream.status().message()));

  auto buffers = uploadBuffers(**exec, inputs);
  if (!buffers.ok())
    return fail(std::string(buffers.status().message()));
  auto &inPtrs = buffers->inPtrs;
  auto &outPtrs = buffers->outPtrs;
  if (auto st = (*exec)->run(inPtrs, outPtrs, *stream); !st.ok())
    return fail(std::string(st.message()));
  if (auto st = stream->synchronize(); !st.ok())
    return fail(std::string(st.message()));
  auto outputs = downloadOutputs(**exec, *buffers);
  if (!outputs.ok())
    return fail(std::string(outputs.status().message()));

  bool ok = true;
  std::string report, jsonResults;
  // The inputs the results came from, beside them.
  if (!outputDir.empty())
    for (auto [i, t] : llvm::enumerate(inputs))
      if (auto st = fusec::writeNpy(absl::StrCat(outputDir.getValue(), "/input_", i, ".npy"), t);
          !st.ok())
        return fail(std::string(st.message()));
  for (size_t i = 0; i < outputs->size(); ++i) {
    const fusec::TensorSpec &spec = (*exec)->outputs()[i];
    fusec::HostTensor *actual = &(*outputs)[i];
    if (!outputDir.empty())
      if (auto st = fusec::writeNpy(absl::StrCat(outputDir.getValue(), "/result_", i, ".npy"), *actual);
          !st.ok())
        return fail(std::string(st.message()));
    if (expected.empty()) { // --no-check
      absl::StrAppend(&report, "result #", i, ": ", actual->typeString(),
                      " not checked (--no-check)\n");
      continue;
    }
    // The tolerance of the least precise type the result depends on
    // (fusec::resultTolerance), as --verify-pipeline judges.
    fusec::Tolerance tol = i < tolerances.size() ? tolerances[i] : fusec::toleranceFor(spec.dtype);
    double relL2Budget = maxRelL2;
    if (precisionOption != "fp32" && fusec::isFloat(spec.dtype)) {
      // Lowered storage: the lowered type's tolerance per element, and the
      // pass's error budget (0.05) over the whole output.
      fusec::DType lowered = precisionOption == "fp16" ? fusec::DType::F16
                             : precisionOption == "fp8" ? fusec::DType::F8E4M3FN
                                                        : fusec::DType::BF16;
      fusec::Tolerance low = fusec::toleranceFor(lowered);
      tol.rtol = std::max(tol.rtol, low.rtol);
      tol.atol = std::max(tol.atol, low.atol);
      relL2Budget = std::max<double>(relL2Budget, 0.05);
    }
    fusec::Comparison c = fusec::compareTensors(expected[i], *actual, tol);
    if (!c.ok && c.mismatches > 0 && c.relL2 <= tol.rtol) {
      // Ill-conditioned elements (a layer_norm over values that nearly
      // cancel): the result as a whole is within its type's rounding.
      c.ok = true;
      absl::StrAppend(&report, "result #", i, ": ", c.mismatches,
                      " ill-conditioned element(s) past the elementwise tolerance; "
                      "relative l2 error ", absl::StrFormat("%.3g", c.relL2), " within ",
                      tol.rtol, "\n");
    }
    if (!c.ok && relL2Budget > 0 && c.relL2 <= relL2Budget) {
      c.ok = true;
      c.message.clear();
      absl::StrAppend(&report, "result #", i, ": element-wise tolerance exceeded, "
                      "within a relative l2 error of ", relL2Budget, "\n");
    }
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
  // End to end: Executable::run back to back on the same buffers (replayed
  // as a CUDA graph), timed with events around each batch of runs; the
  // median batch over five.
  std::vector<double> perRun;
  for (int batch = 0; batch < 5; ++batch) {
    auto start = fusec::rt::Event::create(), stop = fusec::rt::Event::create();
    if (!start.ok() || !stop.ok())
      return fail("cannot create CUDA events");
    if (auto st = start->record(*stream); !st.ok())
      return fail(std::string(st.message()));
    unsigned n = std::max(1u, runs.getValue());
    for (unsigned r = 0; r < n; ++r)
      if (auto st = (*exec)->run(inPtrs, outPtrs, *stream); !st.ok())
        return fail(std::string(st.message()));
    if (auto st = stop->record(*stream); !st.ok())
      return fail(std::string(st.message()));
    if (auto st = stop->synchronize(); !st.ok())
      return fail(std::string(st.message()));
    auto ms = fusec::rt::Event::elapsedMs(*start, *stop);
    if (!ms.ok())
      return fail(std::string(ms.status().message()));
    perRun.push_back(*ms / n);
  }
  std::sort(perRun.begin(), perRun.end());
  double endToEndMs = perRun[perRun.size() / 2];

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
                 << ", \"runs\": " << runs.getValue()
                 << ", \"import_s\": " << jsonNumber(importSeconds)
                 << ", \"compile_s\": " << jsonNumber(compileSeconds)
                 << ", \"cache_disk_hits\": " << cacheStats.diskHits
                 << ", \"cache_compiles\": " << cacheStats.compiles
                 << ", \"end_to_end_ms\": " << jsonNumber(endToEndMs)
                 << ", \"graph_launches\": " << (*exec)->graphLaunches()
                 << ", \"graph_replay_error\": \"" << (*exec)->graphReplayError() << "\""
                 << ", \"ok\": "
                 << (ok ? "true" : "false") << ", \"results\": [" << jsonResults
                 << "], \"kernels\": [" << jsonKernels << "]}\n";
  } else {
    llvm::outs() << "device: " << (info.ok() ? info->name : "?") << " ("
                 << (*exec)->target() << ")\n"
                 << report << "kernel median over " << runs.getValue()
                 << " runs after " << warmup.getValue() << " warm-up:\n"
                 << table
                 << absl::StrFormat("end to end: %.4f ms per run (%d kernels, %s); "
                                    "compile %.2f s\n",
                                    endToEndMs, static_cast<int>(kernels.size()),
                                    (*exec)->graphLaunches() ? "CUDA graph replay"
                                                             : "kernel by kernel",
                                    compileSeconds)
                 << (ok ? "PASS" : "FAIL") << "\n";
  }
  return ok ? 0 : 1;
}

/// The tolerance for an ONNX output: the backend tests' (rtol 1e-3, atol
/// 1e-7), widened to fusec's own for 16-bit floats (whose rounding step is
/// about 1e-3).
fusec::Tolerance onnxToleranceFor(fusec::DType d) {
  fusec::Tolerance t = fusec::onnxTolerance();
  if (d == fusec::DType::F16 || d == fusec::DType::BF16) {
    fusec::Tolerance own = fusec::toleranceFor(d);
    t.rtol = std::max(t.rtol, own.rtol);
    t.atol = std::max(t.atol, own.atol);
  }
  return t;
}

struct PreparedOnnx {
  fusec::OnnxImport imported;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  int kernels = 0;
};

/// Imports DIR/model.onnx (with `known` inputs bound and the inputs'
/// `shapes`, which bind dynamic dims) and runs the whole pipeline. Exit code on failure (2: unsupported or bad input).
absl::StatusOr<PreparedOnnx>
prepareOnnx(MLIRContext &context, const std::string &dir,
            const std::map<std::string, fusec::HostTensor> &known,
            const std::map<std::string, std::vector<int64_t>> &shapes) {
  fusec::OnnxImportOptions options;
  options.knownInputs = known;
  options.inputShapes = shapes;
  auto imported = fusec::importOnnxFile(dir + "/model.onnx", options);
  if (!imported.ok())
    return imported.status();
  PreparedOnnx p;
  p.imported = std::move(*imported);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(p.imported.mlir, dir + "/model.onnx"), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);
  p.module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!p.module || failed(verify(*p.module)))
    return absl::InternalError("the imported graph does not verify: " + diagnostics);
  PassManager pm(&context);
  fusec::FusecPipelineOptions pipeline;
  pipeline.precision = precisionOption;
  fusec::buildFusecPipeline(pm, pipeline);
  if (failed(pm.run(*p.module)))
    return absl::InternalError("--fusec-pipeline failed: " + diagnostics);
  auto func = fusec::findFunction(*p.module, "main");
  if (!func.ok())
    return func.status();
  p.func = *func;
  for (Operation &op : p.func.getBody().front())
    if (!isa<func::ReturnOp, fusec::ConstantOp, fusec::ReshapeOp>(op))
      ++p.kernels;
  return p;
}

int runOnnxTest(MLIRContext &context) {
  namespace fs = std::filesystem;
  std::string dir = onnxTest;
  auto report = [&](const absl::Status &st) {
    bool unsupported = st.code() == absl::StatusCode::kUnimplemented;
    llvm::errs() << "fusec-run: " << (unsupported ? "unsupported: " : "error: ")
                 << std::string(st.message()) << "\n";
    return 2;
  };
  std::vector<std::string> sets;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path().string());
  std::sort(sets.begin(), sets.end());
  if (ec)
    return fail(absl::StrCat(dir, ": ", ec.message()));
  if (sets.empty())
    return fail(absl::StrCat(dir, ": no test_data_set_* folder"));

  auto signature = fusec::onnxSignature(dir + "/model.onnx");
  if (!signature.ok())
    return report(signature.status());
  std::vector<std::string> names;
  for (const fusec::OnnxValueInfo &in : signature->inputs)
    names.push_back(in.name);
  const std::vector<std::string> *inputNames = &names;
  // Each data set's inputs give the shapes the graph is imported for (which
  // binds dynamic dims such as batch and sequence); a data set whose shapes
  // differ from the previous one's is imported and compiled again. Inputs
  // that must be known at import (a Reshape's shape given as a graph input)
  // are bound from each data set: integer inputs become constants.
  bool bind = false;
  std::string bindWhy; // the first import's refusal, naming the inputs it needs
  absl::StatusOr<PreparedOnnx> prepared = absl::UnknownError("not prepared");
  std::map<std::string, std::vector<int64_t>> preparedShapes;

  bool gpu = !reference && fusec::rt::available().ok();
  bool ok = true;
  int kernels = 0;
  for (const std::string &set : sets) {
    std::vector<fusec::HostTensor> all;
    for (int i = 0;; ++i) {
      std::string path = absl::StrCat(set, "/input_", i, ".pb");
      if (!fs::exists(path))
        break;
      auto t = fusec::readOnnxTensorFile(path);
      if (!t.ok()) {
        // Not a tensor (a sequence or an optional): the import says why
        // the model is not supported, which is the better message.
        auto p = prepareOnnx(context, dir, {}, {});
        return report(p.ok() ? t.status() : p.status());
      }
      size_t k = all.size();
      all.push_back(k < signature->inputs.size()
                        ? fusec::onnxTensorAs(*t, signature->inputs[k].elemType)
                        : std::move(t->value));
    }
    // Dynamic dims are bound from the data; a static input's data must
    // have its declared shape.
    std::map<std::string, std::vector<int64_t>> shapes;
    for (size_t i = 0; i < signature->inputs.size() && i < all.size(); ++i) {
      const fusec::OnnxValueInfo &in = signature->inputs[i];
      if (in.dynamic())
        shapes[in.name] = all[i].shape;
      else if (in.dims != all[i].shape)
        return report(absl::UnimplementedError(absl::StrCat(
            set, ": the data of input '", in.name, "' is ", all[i].typeString(),
            ", the model declares [", absl::StrJoin(in.dims, ", "), "]")));
    }
    if (set == sets.front()) {
      prepared = prepareOnnx(context, dir, {}, shapes);
      bind = !prepared.ok() && prepared.status().code() == absl::StatusCode::kUnimplemented &&
             absl::StrContains(prepared.status().message(), "must be known at import");
      if (bind)
        bindWhy = std::string(prepared.status().message());
      preparedShapes = shapes;
    }
    if (bind) {
      // Integer inputs (shapes, axes), and the float ones the import named
      // (Resize's scales and roi); an import that names another (its
      // refusals come one at a time) is tried again with it bound too.
      for (size_t attempt = 0; attempt <= inputNames->size(); ++attempt) {
        std::map<std::string, fusec::HostTensor> known;
        for (size_t i = 0; i < inputNames->size() && i < all.size(); ++i)
          if (all[i].dtype == fusec::DType::I64 || all[i].dtype == fusec::DType::I32 ||
              absl::StrContains(bindWhy,
                                absl::StrCat("('", (*inputNames)[i], "') must be known")))
            known[(*inputNames)[i]] = all[i];
        prepared = prepareOnnx(context, dir, known, shapes);
        if (prepared.ok() || prepared.status().code() != absl::StatusCode::kUnimplemented ||
            !absl::StrContains(prepared.status().message(), "must be known at import") ||
            absl::StrContains(bindWhy, prepared.status().message()))
          break;
        absl::StrAppend(&bindWhy, "\n", prepared.status().message());
      }
    } else if (shapes != preparedShapes) {
      prepared = prepareOnnx(context, dir, {}, shapes);
      preparedShapes = shapes;
    }
    if (!prepared.ok())
      return report(prepared.status());
    PreparedOnnx &p = *prepared;
    kernels = p.kernels;
    std::vector<fusec::HostTensor> inputs;
    for (size_t i = 0; i < p.imported.graphInputs.size(); ++i) {
      if (std::count(p.imported.boundInputs.begin(), p.imported.boundInputs.end(),
                     p.imported.graphInputs[i]))
        continue;
      if (i >= all.size())
        return fail(absl::StrCat(set, ": no input_", i, ".pb"));
      inputs.push_back(all[i]);
    }
    std::vector<fusec::HostTensor> expected;
    for (size_t i = 0; i < p.imported.outputs.size(); ++i) {
      auto t = fusec::readOnnxTensorFile(absl::StrCat(set, "/output_", i, ".pb"));
      if (!t.ok())
        return report(t.status());
      expected.push_back(i < signature->outputs.size()
                             ? fusec::onnxTensorAs(*t, signature->outputs[i].elemType)
                             : std::move(t->value));
    }
    for (auto [i, t] : llvm::enumerate(inputs)) {
      auto info = fusec::tensorTypeInfo(p.func.getArgumentTypes()[i]);
      if (!info.ok() || info->first != t.dtype || info->second != t.shape)
        return fail(absl::StrCat(set, ": input ", i, " holds ", t.typeString(),
                                 ", the model expects another type"));
    }
    std::vector<fusec::HostTensor> actual;
    if (gpu) {
      fusec::JitOptions options = jitOptions();
      options.function.clear();
      auto jit = fusec::Jit::create(options);
      if (!jit.ok())
        return fail(std::string(jit.status().message()));
      std::string text;
      llvm::raw_string_ostream os(text);
      p.module->print(os);
      auto exec = (*jit)->compile(text, dir + "/model.onnx");
      if (!exec.ok()) {
        bool unsupported = exec.status().code() == absl::StatusCode::kUnimplemented;
        llvm::errs() << "fusec-run: " << (unsupported ? "unsupported on the GPU: " : "error: ")
                     << std::string(exec.status().message()) << "\n";
        return 2;
      }
      auto stream = fusec::rt::Stream::create();
      if (!stream.ok())
        return fail(std::string(stream.status().message()));
      auto buffers = uploadBuffers(**exec, inputs);
      if (!buffers.ok())
        return fail(std::string(buffers.status().message()));
      if (auto st = (*exec)->run(buffers->inPtrs, buffers->outPtrs, *stream); !st.ok())
        return fail(std::string(st.message()), 1);
      if (auto st = stream->synchronize(); !st.ok())
        return fail(std::string(st.message()), 1);
      auto outputs = downloadOutputs(**exec, *buffers);
      if (!outputs.ok())
        return fail(std::string(outputs.status().message()));
      actual = std::move(*outputs);
    } else {
      auto results = fusec::interpret(p.func, inputs);
      if (!results.ok())
        return fail(std::string(results.status().message()), 1);
      actual = std::move(*results);
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      if (actual[i].shape != expected[i].shape || actual[i].dtype != expected[i].dtype) {
        llvm::outs() << set << ": output " << i << " is " << actual[i].typeString()
                     << ", expected " << expected[i].typeString() << "\n";
        ok = false;
        continue;
      }
      fusec::Tolerance tol = onnxToleranceFor(expected[i].dtype);
      if (modelTolerance) {
        // A deep graph's rounding errors add up over its depth; an element
        // near zero is compared at the scale of the whole output.
        double scale = 0;
        for (double v : expected[i].values())
          if (std::isfinite(v))
            scale = std::max(scale, std::abs(v));
        tol.atol = std::max(tol.atol, 1e-5 * scale);
      }
      fusec::Comparison c = fusec::compareTensors(expected[i], actual[i], tol);
      if (!c.ok && precisionOption != "fp32" && c.relL2 <= 0.05) {
        // Lowered storage (--precision): within the pass's error budget.
        c.ok = true;
        c.message.clear();
      }
      if (!c.ok)
        llvm::outs() << set << ": output " << i << " MISMATCH: " << c.message << "\n";
      ok &= c.ok;
    }
  }
  llvm::outs() << (ok ? "PASS" : "FAIL") << ": " << dir << " (" << sets.size()
               << " data set(s), " << kernels << " kernel(s), "
               << (gpu ? "GPU" : "reference interpreter") << ")\n";
  return ok ? 0 : 1;
}

/// Runs the graph named by the positional argument (an .mlir graph or an
/// .onnx model) with --seed: on the GPU against the interpreter, on the
/// interpreter alone (--reference), or through --verify-pipeline. Exit 0, 1
/// (mismatch) or 2.
int runGraph(MLIRContext &context) {
  if (inputFile.empty())
    return fail("no input file (an .mlir graph or an .onnx model)");

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file;
  if (llvm::StringRef(inputFile).ends_with(".onnx")) {
    auto shapes = inputShapes();
    if (!shapes.ok())
      return fail(std::string(shapes.status().message()));
    fusec::OnnxImportOptions importOptions;
    importOptions.inputShapes = *shapes;
    auto importStart = std::chrono::steady_clock::now();
    auto imported = fusec::importOnnxFile(inputFile, importOptions);
    if (!imported.ok())
      return fail(std::string(imported.status().message()));
    importSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - importStart).count();
    file = llvm::MemoryBuffer::getMemBufferCopy(imported->mlir, inputFile);
  } else {
    file = openInputFile(inputFile, &errorMessage);
  }
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
    std::vector<fusec::Tolerance> tolerances;
    for (unsigned i = 0; i < results->size(); ++i)
      tolerances.push_back(fusec::resultTolerance(*func, i));
    return runOnGpu(std::string(text), *results, inputs, tolerances);
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
      absl::StrAppend(&values, j ? ", " : "", jsonNumber(t.get(j)));
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

/// --batch=FILE: each line `PATH [SEED]` run as `fusec-run PATH --seed=SEED`
/// would run it (the other options as given), in this one process: one
/// MLIRContext, one Jit and one CUDA context for all, where a process per
/// graph pays for each again. Each graph's output stands between
/// `==> PATH` and `<== PATH exit N` on stdout (stderr is flushed before the
/// closing line, so a caller that merges the two streams can split them).
/// A crash ends the batch inside a graph's markers: the caller runs the
/// rest again. Exit 0 when every graph passed, else the largest exit code.
int runBatch(MLIRContext &context) {
  auto list = llvm::MemoryBuffer::getFileOrSTDIN(batchFile);
  if (!list)
    return fail(absl::StrCat("--batch=", batchFile.getValue(), ": ",
                             list.getError().message()));
  uint64_t defaultSeed = seed;
  int worst = 0;
  llvm::SmallVector<llvm::StringRef> lines;
  (*list)->getBuffer().split(lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line.empty() || line.starts_with("#"))
      continue;
    auto [path, rest] = line.split(' ');
    uint64_t graphSeed = defaultSeed;
    if (!rest.trim().empty() && rest.trim().getAsInteger(10, graphSeed))
      return fail(absl::StrCat("--batch=", batchFile.getValue(), ": '", line.str(),
                               "' is not `PATH [SEED]`"));
    inputFile.setValue(path.str());
    seed.setValue(graphSeed);
    llvm::outs() << "==> " << path << "\n";
    llvm::outs().flush();
    int rc = runGraph(context);
    llvm::errs().flush();
    llvm::outs() << "<== " << path << " exit " << rc << "\n";
    llvm::outs().flush();
    worst = std::max(worst, rc);
  }
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  fusec::registerFusecPasses();
  fusec::registerFusecCodeGenPasses();
  fusec::registerFusecPipeline();
  registerCanonicalizerPass();
  registerCSEPass();
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "fusec-run: run a fusec graph and compare it with the reference "
      "interpreter\n");
  if (!streamLoad.empty() && !fusec::parseStreamLoad(streamLoad))
    return fail("--stream-load=" + streamLoad + ": expected plain, no_allocate, l2_256b or evict_first");
  if (!keepLoad.empty() && !fusec::parseKeepLoad(keepLoad))
    return fail("--keep-load=" + keepLoad + ": expected plain, evict_last or nc");
  if (rowChunks != 0 && (rowChunks < 1 || rowChunks > 16))
    return fail(absl::StrCat("--row-chunks=", static_cast<int64_t>(rowChunks), ": expected 1 to 16"));
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

  if (!onnxTest.empty())
    return runOnnxTest(context);
  if (!batchFile.empty())
    return runBatch(context);
  return runGraph(context);
}
