//===- Jit.cpp - Compile a fusec graph into an Executable -------*- C++ -*-===//
//
// Parses and verifies the graph, plans its buffers (inputs, outputs,
// intermediates, uploaded constants), gets each kernel's cubin from the
// kernel cache (compiling its PTX with nvJitLink on a miss) and loads it.
//
//===----------------------------------------------------------------------===//

#include "fusec/Jit.h"
#include "fusec/Import/Onnx.h"
#include "fusec/JitModule.h"
#include "fusec/IR/Fusec.h"
#include "fusec/Interpreter/Interpreter.h"
#include "fusec/CodeGen/CodeGen.h"
#include "fusec/CodeGen/Passes.h"
#include "fusec/Passes/Passes.h"
#include "fusec/Target/Roofline.h"

#include "absl/strings/match.h"
#include "mlir/Pass/PassManager.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Threading.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <future>
#include <map>
#include <mutex>
#include <optional>

using namespace mlir;

namespace fusec {

namespace {

/// One kernel launch: its entry, launch shape and argument slots; or a call
/// of the attention intrinsic (slots q, k, v, o).
struct Step {
  rt::Kernel kernel;
  rt::Dim3 grid, block;
  unsigned sharedBytes = 0;
  std::vector<int> slots; // operands, then results (then the tensor-map table)
  std::optional<rt::AttentionArgs> attention;
  /// Generated with programmatic dependent launch (fusec.pdl): launched
  /// with the overlap allowed where launchAll says it may be.
  bool pdl = false;
  /// TMA kernels: a descriptor per entry of fusec.tensor_maps over the
  /// address of its slot, encoded into `host` and copied to the table (the
  /// kernel's last parameter) whenever those addresses change.
  struct Map {
    int slot;
    rt::TensorMapSpec spec;
  };
  std::vector<Map> maps;
  int tableSlot = -1;
  std::vector<uint64_t> encodedFor;
  std::shared_ptr<std::vector<uint8_t>> host;
};


/// A device-to-device copy into an output (a returned input or constant, or
/// a value returned twice).
struct Copy {
  int output;
  int fromSlot;
  int64_t bytes;
};

std::string where(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto fl = op->getLoc()->findInstanceOf<FileLineColLoc>())
    os << fl.getFilename().getValue() << ":" << fl.getLine() << ":" << fl.getColumn();
  else
    op->getLoc().print(os);
  return absl::StrCat(s, ": '", op->getName().getStringRef().str(), "'");
}

/// The intrinsic's problem for a fusec.attention (pointers left 0), or why
/// the intrinsic cannot run it.
absl::StatusOr<rt::AttentionArgs> attentionArgs(AttentionOp op) {
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  auto o = cast<RankedTensorType>(op.getType());
  Type e = q.getElementType();
  if (!e.isBF16() && !e.isF16())
    return absl::UnimplementedError(absl::StrCat(
        where(op), ": the attention intrinsic takes bf16 or f16 (lower the "
                   "graph's precision, --fusec-lower-precision=policy=bf16)"));
  if (k.getElementType() != e || v.getElementType() != e || o.getElementType() != e)
    return absl::UnimplementedError(absl::StrCat(
        where(op), ": the attention intrinsic needs one element type for Q, K, V and O"));
  SmallVector<int64_t, 4> qs = op.logicalShape(0), ks = op.logicalShape(1),
                          vs = op.logicalShape(2);
  if (q.getRank() != 4 || vs[3] != qs[3])
    return absl::UnimplementedError(absl::StrCat(
        where(op), ": the attention intrinsic needs V's head dim equal to Q's"));
  rt::AttentionArgs a;
  a.batch = static_cast<int>(qs[0]);
  a.heads = static_cast<int>(qs[1]);
  a.sq = static_cast<int>(qs[2]);
  a.headDim = static_cast<int>(qs[3]);
  a.kvHeads = static_cast<int>(ks[1]);
  a.skv = static_cast<int>(ks[2]);
  // Operands in another layout (query_perm, ...): their strides, in place.
  for (unsigned i = 0; i < 4; ++i)
    if (op.layoutPerm(i) != SmallVector<int64_t, 4>{0, 1, 2, 3}) {
      SmallVector<int64_t, 4> st = op.logicalStrides(i);
      std::copy(st.begin(), st.begin() + 3, a.strides + 3 * i);
    }
  a.scale = static_cast<float>(op.getScale().convertToDouble());
  a.causal = op.getCausal();
  a.dtype = e.isF16() ? rt::AttentionArgs::kF16 : rt::AttentionArgs::kBf16;
  if (auto st = rt::validateAttention(a); !st.ok())
    return absl::UnimplementedError(absl::StrCat(where(op), ": ", st.message()));
  return a;
}

/// The tensor maps a kernel asks for (fusec.tensor_maps).
std::vector<Step::Map> tensorMaps(KernelOp op) {
  std::vector<Step::Map> maps;
  if (auto attr = op->getAttrOfType<ArrayAttr>("fusec.tensor_maps"))
    for (Attribute a : attr) {
      auto m = cast<TensorMapAttr>(a);
      Step::Map map;
      map.slot = static_cast<int>(m.getSlot());
      map.spec.elementBytes = static_cast<int>(m.getElementBytes());
      map.spec.dims.assign(m.getDims().begin(), m.getDims().end());
      map.spec.strides.assign(m.getStrides().begin(), m.getStrides().end());
      map.spec.box.assign(m.getBox().begin(), m.getBox().end());
      map.spec.swizzleBytes = static_cast<int>(m.getSwizzle());
      map.spec.lower.assign(m.getLower().begin(), m.getLower().end());
      map.spec.upper.assign(m.getUpper().begin(), m.getUpper().end());
      map.spec.elementStrides.assign(m.getElementStrides().begin(),
                                     m.getElementStrides().end());
      maps.push_back(std::move(map));
    }
  return maps;
}

absl::StatusOr<rt::Dim3> dim3Attr(KernelOp op, StringRef name) {
  auto attr = op->getAttrOfType<DenseI64ArrayAttr>(name);
  if (!attr || attr.empty() || attr.size() > 3)
    return absl::InvalidArgumentError(absl::StrCat(
        where(op), " needs '", name.str(),
        "' = array<i64: x[, y[, z]]> (the launch shape of its PTX)"));
  rt::Dim3 d;
  unsigned *dims[] = {&d.x, &d.y, &d.z};
  for (auto [i, v] : llvm::enumerate(attr.asArrayRef())) {
    if (v < 1 || v > (int64_t(1) << 31) - 1)
      return absl::InvalidArgumentError(absl::StrCat(
          where(op), " '", name.str(), "' has size ", v, " in dimension ", i));
    *dims[i] = static_cast<unsigned>(v);
  }
  return d;
}

} // namespace

//===----------------------------------------------------------------------===//
// Executable
//===----------------------------------------------------------------------===//

struct Executable::Impl {
  std::string target;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<KernelStats> kernels;
  std::string function;
  std::vector<rt::Module> modules;
  std::vector<Step> steps;
  std::vector<Copy> copies;
  /// Buffers the executable owns, by slot (inputs and outputs are the
  /// caller's: their slots hold no buffer).
  std::vector<rt::DeviceBuffer> owned;
  int numSlots = 0;

  std::mutex runMutex;
  /// Runs share `owned` (the intermediates) and the tensor-map tables, so
  /// runs on two streams must not overlap on the device: the host's lock
  /// only orders their enqueues. `lastRun` is recorded at the end of each
  /// run on its stream, and a run on another stream waits for it first
  /// (one on the same stream is in order already). A run inside the
  /// caller's own stream capture neither waits nor records (a capturing
  /// stream may not wait for work outside it): the caller's graph orders
  /// its runs.
  std::optional<rt::Event> lastRun;
  void *lastStream = nullptr;
  absl::Status afterLastRun(const rt::Stream &stream) {
    if (!lastRun || stream.handle() == lastStream)
      return absl::OkStatus();
    auto capturing = stream.capturing();
    if (!capturing.ok())
      return capturing.status();
    return *capturing ? absl::OkStatus() : lastRun->orderBefore(stream);
  }
  absl::Status recordRun(const rt::Stream &stream) {
    auto capturing = stream.capturing();
    if (!capturing.ok())
      return capturing.status();
    if (*capturing)
      return absl::OkStatus();
    if (!lastRun) {
      auto e = rt::Event::create();
      if (!e.ok())
        return e.status();
      lastRun = std::move(*e);
    }
    lastStream = stream.handle();
    return lastRun->record(stream);
  }
  /// Graph replay (JitOptions::graphReplay): the launches of a run whose
  /// buffers are those of the run before are captured as a CUDA graph, and
  /// later runs with those buffers replay it (one launch). `bound` is the
  /// caller's buffer addresses, inputs then outputs.
  bool replay = true;
  /// Programmatic dependent launch for the intrinsic's launches
  /// (JitOptions::pdl, not turned off by FUSEC_PDL=0); generated kernels
  /// carry their own (fusec.pdl).
  bool pdl = false;
  std::string replayError;
  std::vector<uint64_t> lastBound;
  /// A captured graph's TMA kernels read tensor-map tables of its own,
  /// encoded once for its buffers and never rewritten: replays of graphs
  /// that shared one table, re-encoded before each replay, read other
  /// graphs' descriptors when runs alternated between buffer sets on
  /// several streams (wrong results, illegal addresses; the tables'
  /// rewrites were ordered, so the likely cause is the TMA unit's
  /// descriptor cache, keyed by address, across graph launches: not
  /// proven).
  struct Captured {
    std::vector<uint64_t> bound;
    rt::Graph graph;
    std::vector<rt::DeviceBuffer> tables;
  };
  std::vector<Captured> graphs; ///< most recently used first, at most 4
  int64_t graphLaunches = 0;
  int64_t programmaticLaunches = 0;
  /// Device pointers by slot, and the launch argument arrays pointing into
  /// it, built once.
  std::vector<uint64_t> pointers;
  std::vector<std::vector<void *>> args;

  void prepareArgs() {
    pointers.assign(numSlots, 0);
    for (int s = 0; s < numSlots; ++s)
      if (s < static_cast<int>(owned.size()))
        pointers[s] = owned[s].devicePtr();
    args.clear();
    for (const Step &step : steps) {
      std::vector<void *> a;
      for (int s : step.slots)
        a.push_back(&pointers[s]);
      args.push_back(std::move(a));
    }
  }

  absl::Status bind(absl::Span<const rt::DeviceBuffer *const> in,
                    absl::Span<rt::DeviceBuffer *const> out) {
    if (in.size() != inputs.size() || out.size() != outputs.size())
      return absl::InvalidArgumentError(absl::StrCat(
          "the executable takes ", inputs.size(), " inputs and ",
          outputs.size(), " outputs, got ", in.size(), " and ", out.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i] || in[i]->size() < inputs[i].bytes())
        return absl::InvalidArgumentError(absl::StrCat(
            "input #", i, " needs ", inputs[i].bytes(), " bytes, got ",
            in[i] ? in[i]->size() : 0));
      pointers[i] = in[i]->devicePtr();
    }
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i] || out[i]->size() < outputs[i].bytes())
        return absl::InvalidArgumentError(absl::StrCat(
            "output #", i, " needs ", outputs[i].bytes(), " bytes, got ",
            out[i] ? out[i]->size() : 0));
      pointers[inputs.size() + i] = out[i]->devicePtr();
    }
    // A kernel may read inputs before the kernel ahead of it is done
    // (programmatic dependent launch): not where an output shares their
    // memory.
    aliased = false;
    for (size_t i = 0; i < in.size(); ++i)
      for (size_t o = 0; o < out.size(); ++o)
        aliased |= in[i]->devicePtr() < out[o]->devicePtr() + outputs[o].bytes() &&
                   out[o]->devicePtr() < in[i]->devicePtr() + inputs[i].bytes();
    return absl::OkStatus();
  }
  bool aliased = false;

  /// Binds the buffers and enqueues every kernel, then the output copies;
  /// with `events` (one more than kernels), records one before the first
  /// kernel and one after each.
  absl::Status launchAll(absl::Span<const rt::DeviceBuffer *const> in,
                         absl::Span<rt::DeviceBuffer *const> out,
                         const rt::Stream &stream,
                         std::vector<rt::Event> *events) {
    if (auto st = bind(in, out); !st.ok())
      return st;
    if (events)
      if (auto st = (*events)[0].record(stream); !st.ok())
        return st;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step &s = steps[i];
      if (s.attention) {
        rt::AttentionArgs a = *s.attention;
        a.q = pointers[s.slots[0]];
        a.k = pointers[s.slots[1]];
        a.v = pointers[s.slots[2]];
        // Operands (q, k, v, and the key mask if there is one), then O.
        a.keyMask = s.slots.size() == 5 ? pointers[s.slots[3]] : 0;
        a.o = pointers[s.slots.back()];
        // The intrinsic's kernels wait at their start for the kernel before
        // them (runtime_kernels/attention_common.cuh) and read nothing
        // before: it may overlap whatever precedes it in the run.
        a.programmatic = pdl && i > 0 && !events && !aliased;
        programmaticLaunches += a.programmatic;
        if (auto st = rt::attentionForward(a, stream); !st.ok())
          return st;
      } else {
        bool copied = false;
        if (!s.maps.empty())
          if (auto st = encodeMaps(const_cast<Step &>(s), stream, &copied); !st.ok())
            return st;
        // Overlapped with the kernel before it (programmatic dependent
        // launch): never the first (it may read inputs early, written by
        // whatever ran before the run), nor after an event or a table copy,
        // nor where inputs and outputs alias.
        bool programmatic = s.pdl && i > 0 && !events && !copied && !aliased;
        if (auto st = s.kernel.launch(s.grid, s.block, s.sharedBytes, stream, args[i].data(),
                                      programmatic);
            !st.ok())
          return st;
        programmaticLaunches += programmatic;
      }
      if (events)
        if (auto st = (*events)[i + 1].record(stream); !st.ok())
          return st;
    }
    return copyOutputs(in, out, stream);
  }

  /// Encodes a TMA kernel's descriptors for the buffers bound now and copies
  /// them to its table, unless they are the ones encoded last time.
  absl::Status encodeMaps(Step &s, const rt::Stream &stream, bool *copied = nullptr) {
    std::vector<uint64_t> addresses;
    for (const Step::Map &m : s.maps)
      addresses.push_back(pointers[s.slots[m.slot]]);
    if (addresses == s.encodedFor)
      return absl::OkStatus();
    if (copied)
      *copied = true;
    // CUtensorMap is 64-byte aligned: the host copy starts at an aligned
    // offset of its vector.
    if (!s.host)
      s.host = std::make_shared<std::vector<uint8_t>>(128 * s.maps.size() + 64);
    uint8_t *base = s.host->data();
    base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
    for (size_t i = 0; i < s.maps.size(); ++i)
      if (auto st = rt::encodeTensorMap(s.maps[i].spec, addresses[i], base + 128 * i); !st.ok())
        return st;
    // From pageable memory the copy is staged before it returns, so the
    // host bytes may change afterwards.
    if (auto st = owned[s.tableSlot].copyFromHost(base, 128 * s.maps.size(),
                                                   const_cast<rt::Stream *>(&stream));
        !st.ok())
      return st;
    s.encodedFor = std::move(addresses);
    return absl::OkStatus();
  }

  absl::Status copyOutputs(absl::Span<const rt::DeviceBuffer *const> in,
                           absl::Span<rt::DeviceBuffer *const> out,
                           const rt::Stream &stream) {
    for (const Copy &c : copies) {
      const rt::DeviceBuffer *src =
          c.fromSlot < static_cast<int>(inputs.size())
              ? in[c.fromSlot]
              : c.fromSlot < static_cast<int>(inputs.size() + outputs.size())
                    ? out[c.fromSlot - inputs.size()]
                    : &owned[c.fromSlot];
      if (auto st = out[c.output]->copyFrom(*src, c.bytes,
                                            const_cast<rt::Stream *>(&stream));
          !st.ok())
        return st;
    }
    return absl::OkStatus();
  }
};

Executable::Executable(std::unique_ptr<Impl> i) : impl(std::move(i)) {}
Executable::~Executable() = default;
const std::vector<TensorSpec> &Executable::inputs() const { return impl->inputs; }
const std::vector<TensorSpec> &Executable::outputs() const { return impl->outputs; }
const std::vector<KernelStats> &Executable::kernels() const { return impl->kernels; }
const std::string &Executable::function() const { return impl->function; }
const std::string &Executable::target() const { return impl->target; }

absl::Status Executable::run(absl::Span<const rt::DeviceBuffer *const> in,
                             absl::Span<rt::DeviceBuffer *const> out,
                             const rt::Stream &stream) {
  std::lock_guard<std::mutex> lock(impl->runMutex);
  if (auto st = impl->afterLastRun(stream); !st.ok())
    return st;
  absl::Status st = runLocked(in, out, stream);
  return st.ok() ? impl->recordRun(stream) : st;
}

absl::Status Executable::runLocked(absl::Span<const rt::DeviceBuffer *const> in,
                                   absl::Span<rt::DeviceBuffer *const> out,
                                   const rt::Stream &stream) {
  Impl &x = *impl;
  if (!x.replay)
    return x.launchAll(in, out, stream, nullptr);
  if (auto st = x.bind(in, out); !st.ok())
    return st;
  std::vector<uint64_t> bound(x.pointers.begin(),
                              x.pointers.begin() + x.inputs.size() + x.outputs.size());
  // TMA descriptors live in device tables written from the host: bring the
  // shared ones up to date for these buffers before a capture, whose own
  // tables copy them (a copy from pageable memory cannot be captured).
  auto encodeAll = [&]() -> absl::Status {
    for (Step &s : x.steps)
      if (!s.maps.empty())
        if (auto st = x.encodeMaps(s, stream); !st.ok())
          return st;
    return absl::OkStatus();
  };
  for (size_t i = 0; i < x.graphs.size(); ++i) {
    if (x.graphs[i].bound != bound)
      continue;
    std::rotate(x.graphs.begin(), x.graphs.begin() + i, x.graphs.begin() + i + 1);
    ++x.graphLaunches;
    return x.graphs.front().graph.launch(stream); // its own tables
  }
  if (bound != x.lastBound) {
    // New buffers: launch directly; capture if they come again.
    x.lastBound = std::move(bound);
    return x.launchAll(in, out, stream, nullptr);
  }
  if (auto st = encodeAll(); !st.ok())
    return st;
  // The graph's own tables: copies of the shared ones, just encoded for
  // these buffers; its launches take their addresses.
  std::vector<rt::DeviceBuffer> tables;
  std::vector<std::pair<int, uint64_t>> shared;
  for (Step &s : x.steps) {
    if (s.maps.empty())
      continue;
    int64_t bytes = 128 * static_cast<int64_t>(s.maps.size());
    auto table = rt::DeviceBuffer::allocate(bytes);
    if (!table.ok())
      return table.status();
    if (auto st = table->copyFrom(x.owned[s.tableSlot], bytes, const_cast<rt::Stream *>(&stream));
        !st.ok())
      return st;
    shared.push_back({s.tableSlot, x.pointers[s.tableSlot]});
    x.pointers[s.tableSlot] = table->devicePtr();
    tables.push_back(std::move(*table));
  }
  auto graph = rt::Graph::capture(stream, [&] { return x.launchAll(in, out, stream, nullptr); });
  for (auto [slot, pointer] : shared)
    x.pointers[slot] = pointer;
  if (!graph.ok()) {
    // Not capturable here (e.g. the legacy default stream): launch directly
    // from now on (once the copies into the tables, freed here, are done).
    if (auto st = const_cast<rt::Stream &>(stream).synchronize(); !st.ok())
      return st;
    x.replay = false;
    x.replayError = std::string(graph.status().message());
    return x.launchAll(in, out, stream, nullptr);
  }
  if (x.graphs.size() == 4) {
    // The evicted graph's tables go with it: its last replay must be done.
    if (x.lastRun)
      if (auto st = x.lastRun->synchronize(); !st.ok())
        return st;
    x.graphs.pop_back();
  }
  x.graphs.insert(x.graphs.begin(),
                  Impl::Captured{std::move(bound), std::move(*graph), std::move(tables)});
  ++x.graphLaunches;
  return x.graphs.front().graph.launch(stream);
}

int Executable::outputCopies() const { return static_cast<int>(impl->copies.size()); }

int64_t Executable::programmaticLaunches() const {
  std::lock_guard<std::mutex> lock(impl->runMutex);
  return impl->programmaticLaunches;
}

int64_t Executable::graphLaunches() const {
  std::lock_guard<std::mutex> lock(impl->runMutex);
  return impl->graphLaunches;
}

std::string Executable::graphReplayError() const {
  std::lock_guard<std::mutex> lock(impl->runMutex);
  return impl->replayError;
}

absl::Status Executable::runTimed(absl::Span<const rt::DeviceBuffer *const> in,
                                  absl::Span<rt::DeviceBuffer *const> out,
                                  const rt::Stream &stream,
                                  std::vector<float> *kernelMs) {
  std::lock_guard<std::mutex> lock(impl->runMutex);
  if (auto st = impl->afterLastRun(stream); !st.ok())
    return st;
  std::vector<rt::Event> events;
  for (size_t i = 0; i <= impl->steps.size(); ++i) {
    auto e = rt::Event::create();
    if (!e.ok())
      return e.status();
    events.push_back(std::move(*e));
  }
  if (auto st = impl->launchAll(in, out, stream, &events); !st.ok())
    return st;
  if (auto st = events.back().synchronize(); !st.ok())
    return st;
  kernelMs->clear();
  for (size_t i = 0; i < impl->steps.size(); ++i) {
    auto ms = rt::Event::elapsedMs(events[i], events[i + 1]);
    if (!ms.ok())
      return ms.status();
    kernelMs->push_back(*ms);
  }
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Jit
//===----------------------------------------------------------------------===//

struct Jit::Impl {
  JitOptions options;
  std::string target;
  rt::KernelCache cache;
  MLIRContext context;
  std::mutex buildMutex; // one build at a time in the shared MLIRContext

  using Result = absl::StatusOr<std::shared_ptr<Executable>>;
  std::mutex mapMutex;
  std::map<std::string, std::shared_future<Result>> executables;
  int64_t hits = 0;

  explicit Impl(JitOptions opts)
      : options(std::move(opts)), cache(options.cache) {
    DialectRegistry registry;
    registry.insert<FusecDialect, func::FuncDialect>();
    registerCodeGenDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  Result build(absl::string_view text, absl::string_view sourceName);

  /// The target whose figures and measured load choices code generation
  /// uses: the roofline target's (a calibrated file when there is one).
  std::string codegenTarget() const {
    if (!options.rooflineTarget.empty())
      return options.rooflineTarget;
    return absl::StartsWith(target, "sm_90")    ? "h200-measured"
           : absl::StartsWith(target, "sm_100") ? "b200"
                                                : "h200";
  }
};

absl::StatusOr<std::unique_ptr<Jit>> Jit::create(JitOptions options) {
  const std::string &p = options.precision;
  if (!p.empty() && p != "fp32" && p != "bf16" && p != "fp16" && p != "fp8")
    return absl::InvalidArgumentError(absl::StrCat(
        "JitOptions::precision is '", p, "'; expected fp32, bf16, fp16 or fp8"));
  if (!(options.maxRelError > 0))
    return absl::InvalidArgumentError("JitOptions::maxRelError must be positive");
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->target = impl->options.target;
  if (impl->target.empty()) {
    auto info = rt::deviceInfo();
    impl->target = info.ok() ? info->arch() : "sm_90a";
  }
  return std::unique_ptr<Jit>(new Jit(std::move(impl)));
}

Jit::Jit(std::unique_ptr<Impl> i) : impl(std::move(i)) {}
Jit::~Jit() = default;
rt::KernelCacheStats Jit::cacheStats() const { return impl->cache.stats(); }
const JitOptions &Jit::options() const { return impl->options; }

int64_t Jit::executableHits() const {
  std::lock_guard<std::mutex> lock(impl->mapMutex);
  return impl->hits;
}

absl::StatusOr<std::shared_ptr<Executable>>
Jit::compile(absl::string_view text, absl::string_view sourceName) {
  // In memory the key is the exact text and options: no hashing beyond the
  // map's own, so a hit costs a lookup.
  std::string key =
      absl::StrCat(impl->target, "\n", impl->options.function, "\n",
                   impl->options.aggressivePtx ? "1" : "0", "\n",
                   impl->options.pdl ? "1" : "0", "\n",
                   impl->options.streamLoad, "\n", impl->options.keepLoad, "\n",
                   impl->options.rowChunks, "\n",
                   impl->options.rooflineTarget, "\n", impl->options.precision, "\n",
                   impl->options.maxRelError, "\n", text);
  std::promise<Impl::Result> promise;
  std::shared_future<Impl::Result> future;
  {
    std::lock_guard<std::mutex> lock(impl->mapMutex);
    auto it = impl->executables.find(key);
    if (it != impl->executables.end()) {
      ++impl->hits;
      future = it->second;
    } else {
      impl->executables.emplace(key, promise.get_future().share());
    }
  }
  if (future.valid())
    return future.get(); // built, or being built by another thread

  Impl::Result result = [&] {
    std::lock_guard<std::mutex> lock(impl->buildMutex);
    return impl->build(text, sourceName);
  }();
  if (!result.ok()) {
    std::lock_guard<std::mutex> lock(impl->mapMutex);
    impl->executables.erase(key); // not cached: the next call retries
  }
  promise.set_value(result);
  return result;
}

absl::StatusOr<std::shared_ptr<Executable>>
Jit::compileOnnx(absl::string_view modelBytes, const InputShapes &shapes,
                 const std::string &baseDir) {
  OnnxImportOptions options;
  options.inputShapes = shapes;
  options.functionName = impl->options.function.empty() ? "main" : impl->options.function;
  auto imported = importOnnx(modelBytes, baseDir, options, "<onnx>");
  if (!imported.ok())
    return imported.status();
  // The imported text is the key: the same model and shapes hit.
  return compile(imported->mlir, "<onnx>");
}

absl::StatusOr<std::shared_ptr<Executable>>
Jit::compileOnnxFile(const std::string &path, const InputShapes &shapes) {
  OnnxImportOptions options;
  options.inputShapes = shapes;
  options.functionName = impl->options.function.empty() ? "main" : impl->options.function;
  auto imported = importOnnxFile(path, options);
  if (!imported.ok())
    return imported.status();
  return compile(imported->mlir, path);
}

Jit::Impl::Result Jit::Impl::build(absl::string_view text,
                                   absl::string_view sourceName) {
  // Parse and verify, collecting diagnostics with their source locations.
  std::string diagnostics;
  llvm::raw_string_ostream diagStream(diagnostics);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          StringRef(text.data(), text.size()),
          StringRef(sourceName.data(), sourceName.size())),
      llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagStream);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module || failed(verify(*module)))
    return absl::InvalidArgumentError(diagnostics.empty() ? "invalid graph"
                                                          : diagnostics);
  auto func = findFunction(*module, options.function);
  if (!func.ok())
    return func.status();

  // Compile what is not compiled yet: the fusec pipeline if any op sits
  // outside a kernel, then code generation for kernels without PTX.
  bool needsPipeline = false, needsCodegen = false;
  for (Operation &op : func->getBody().front()) {
    if (isa<func::ReturnOp, ConstantOp, ReshapeOp>(op))
      continue;
    if (auto k = dyn_cast<KernelOp>(op))
      needsCodegen |= !k->hasAttr("fusec.ptx");
    else
      needsPipeline = true;
  }
  if (needsPipeline || needsCodegen) {
    PassManager pm(&context);
    if (needsPipeline) {
      FusecPipelineOptions pipeline;
      pipeline.target = absl::StartsWith(target, "sm_100") ? "b200" : "h200";
      pipeline.aggressivePtx = options.aggressivePtx;
      if (options.rowChunks > 0)
        pipeline.rowChunks = options.rowChunks;
      if (!options.precision.empty())
        pipeline.precision = options.precision;
      pipeline.maxRelError = options.maxRelError;
      buildFusecPipeline(pm, pipeline);
    }
    CodeGenOptions codegen;
    codegen.arch = target;
    codegen.target = codegenTarget();
    codegen.aggressivePtx = options.aggressivePtx;
    codegen.pdl = options.pdl;
    codegen.streamLoad = options.streamLoad;
    codegen.keepLoad = options.keepLoad;
    if (options.rowChunks > 0)
      codegen.rowChunks = options.rowChunks;
    pm.addPass(createCodeGen(codegen));
    if (failed(pm.run(*module)))
      return absl::InvalidArgumentError(diagnostics.empty() ? "compilation failed"
                                                            : diagnostics);
    func = findFunction(*module, options.function);
    if (!func.ok())
      return func.status();
  }

  auto exec = std::make_unique<Executable::Impl>();
  exec->replay = options.graphReplay;
  exec->pdl = options.pdl && !codeGenOverrides().disablePdl;
  exec->target = target;
  exec->function = func->getSymName().str();
  for (Type t : func->getArgumentTypes()) {
    auto info = tensorTypeInfo(t);
    if (!info.ok())
      return info.status();
    exec->inputs.push_back({info->first, info->second});
  }
  for (Type t : func->getResultTypes()) {
    auto info = tensorTypeInfo(t);
    if (!info.ok())
      return info.status();
    exec->outputs.push_back({info->first, info->second});
  }
  int numIn = static_cast<int>(exec->inputs.size());
  int numOut = static_cast<int>(exec->outputs.size());

  // Pass 1: check every op and compile every kernel's PTX (no GPU needed).
  Operation *terminator = func->getBody().front().getTerminator();
  std::vector<std::shared_ptr<const std::string>> cubins;
  std::vector<std::pair<Operation *, StringRef>> compiles; // (kernel, its PTX)
  for (Operation &op : func->getBody().front()) {
    if (&op == terminator)
      continue;
    if (isa<ConstantOp, ReshapeOp>(op))
      continue;
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      // The intrinsic: its shape rules now, and its library.
      if (auto a = attentionArgs(attention); !a.ok())
        return a.status();
      if (auto st = rt::attentionAvailable(); !st.ok())
        return absl::UnimplementedError(absl::StrCat(where(&op), ": ", st.message()));
      continue;
    }
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      return absl::UnimplementedError(absl::StrCat(
          where(&op),
          " is not inside a fusec.kernel that carries its PTX (fusec.ptx); "
          "fusec does not generate code for it yet"));
    auto ptx = kernel->getAttrOfType<StringAttr>("fusec.ptx");
    if (!ptx)
      return absl::UnimplementedError(absl::StrCat(
          where(&op), " has no 'fusec.ptx': fusec generates code for "
                      "elementwise, movement, reduction and (SIMT) matmul "
                      "kernels, not yet for attention or fp8 matmuls; "
                      "--fusec-codegen=\"remarks=true\" says why"));
    for (StringRef name : {"fusec.grid", "fusec.block"})
      if (auto d = dim3Attr(kernel, name); !d.ok())
        return d.status();
    compiles.push_back({&op, ptx.getValue()});
  }
  // Each kernel's cubin, compiled in parallel on the context's threads (the
  // cache compiles a PTX text once: repeated layers wait for the first).
  std::vector<absl::StatusOr<std::shared_ptr<const std::string>>> compiled(
      compiles.size(), absl::UnknownError("not compiled"));
  mlir::parallelFor(&context, 0, compiles.size(), [&](size_t i) {
    StringRef ptxText = compiles[i].second;
    compiled[i] = cache.getOrCompile(
        rt::KernelCache::makeKey(
            {absl::string_view(ptxText.data(), ptxText.size()), target, "ptx->cubin"}),
        // Plain sm_XY code (no arch-specific features) is compiled for the
        // GPU present, which runs it (sm_80 code on a Hopper).
        [&] {
          return rt::compilePtx(absl::string_view(ptxText.data(), ptxText.size()),
                                absl::EndsWith(target, "a") ? target : "");
        });
  });
  for (size_t i = 0; i < compiles.size(); ++i) {
    if (!compiled[i].ok())
      return absl::Status(compiled[i].status().code(),
                          absl::StrCat(where(compiles[i].first), ": ",
                                       compiled[i].status().message()));
    cubins.push_back(*compiled[i]);
  }

  // Which kernel results are returned: those write straight into the
  // caller's output buffer (the first time each is returned), also when the
  // function returns a reshape of them (a view of the same bytes: a head
  // merge's [B, S, H, D] written as [B, S, H*D] was copied after its kernel).
  auto viewRoot = [](Value v) {
    while (auto r = v.getDefiningOp<ReshapeOp>())
      v = r.getInput();
    return v;
  };
  // A result the kernel writes only part of (fusec.zero_init: the rest is
  // zero padding) lives in a buffer of its own, zeroed once; it is copied
  // out like any other.
  auto zeroInit = [](Value r) {
    auto k = r.getDefiningOp<KernelOp>();
    auto indices = k ? k->getAttrOfType<DenseI64ArrayAttr>("fusec.zero_init") : nullptr;
    return indices &&
           llvm::is_contained(indices.asArrayRef(),
                              static_cast<int64_t>(cast<OpResult>(r).getResultNumber()));
  };
  llvm::DenseMap<Value, int> directOutput;
  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    Value root = viewRoot(v);
    if (isa_and_nonnull<KernelOp, AttentionOp>(root.getDefiningOp()) && !zeroInit(root) &&
        !directOutput.count(root))
      directOutput[root] = numIn + static_cast<int>(i);
  }

  // Pass 2: buffers, modules, launch steps.
  llvm::DenseMap<Value, int> slotOf;
  for (auto [i, arg] : llvm::enumerate(func->getArguments()))
    slotOf[arg] = static_cast<int>(i);
  exec->owned.resize(numIn + numOut);
  auto newOwnedSlot = [&](Type type) -> absl::StatusOr<int> {
    auto buffer = rt::DeviceBuffer::allocate(tensorBytes(type));
    if (!buffer.ok())
      return buffer.status();
    exec->owned.push_back(std::move(*buffer));
    return static_cast<int>(exec->owned.size() - 1);
  };
  std::optional<Target> roofline;
  std::string rooflineName = options.rooflineTarget;
  if (rooflineName.empty())
    rooflineName = absl::StartsWith(target, "sm_90")    ? "h200-measured"
                   : absl::StartsWith(target, "sm_100") ? "b200"
                                                        : "";
  if (!rooflineName.empty()) {
    auto t = Target::load(rooflineName);
    if (!t.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("roofline target: ", t.status().message()));
    roofline = std::move(*t);
  }
  size_t kernelIndex = 0;
  for (Operation &op : func->getBody().front()) {
    if (&op == terminator)
      continue;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto host = elementsToHostTensor(c.getValue());
      if (!host.ok())
        return absl::InvalidArgumentError(
            absl::StrCat(where(&op), ": ", host.status().message()));
      auto slot = newOwnedSlot(c.getType());
      if (!slot.ok())
        return slot.status();
      std::string bytes = toDeviceBytes(*host);
      if (auto st = exec->owned[*slot].copyFromHost(bytes.data(), bytes.size());
          !st.ok())
        return st;
      slotOf[c.getResult()] = *slot;
      continue;
    }
    if (auto r = dyn_cast<ReshapeOp>(op)) {
      // Row-major: a reshape is a view of the same bytes.
      slotOf[r.getResult()] = slotOf.lookup(r.getInput());
      continue;
    }
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      Step step;
      step.attention = *attentionArgs(attention);
      for (Value v : attention->getOperands())
        step.slots.push_back(slotOf.lookup(v));
      Value r = attention.getResult();
      int slot;
      if (auto it = directOutput.find(r); it != directOutput.end()) {
        slot = it->second;
      } else {
        auto owned = newOwnedSlot(r.getType());
        if (!owned.ok())
          return owned.status();
        slot = *owned;
      }
      slotOf[r] = slot;
      step.slots.push_back(slot);
      exec->steps.push_back(std::move(step));
      KernelStats stats;
      stats.name = "attention";
      stats.strategy = "intrinsic";
      stats.cost = attention.getCost();
      if (roofline) {
        KernelAnalysis a = analyzeOp(attention, *roofline);
        stats.predictedSeconds = a.predictedSeconds;
        stats.bound = roofName(a.bound);
      }
      exec->kernels.push_back(std::move(stats));
      continue;
    }
    auto kernel = cast<KernelOp>(op);
    auto module = rt::Module::loadCubin(*cubins[kernelIndex++]);
    if (!module.ok())
      return absl::Status(module.status().code(),
                          absl::StrCat(where(&op), ": ", module.status().message()));
    std::string entry;
    if (auto e = kernel->getAttrOfType<StringAttr>("fusec.entry"))
      entry = e.getValue().str();
    else if (kernel.getName())
      entry = kernel.getName()->str();
    else
      return absl::InvalidArgumentError(absl::StrCat(
          where(&op), " needs 'fusec.entry' (or a name) for its PTX entry"));
    auto k = module->kernel(entry);
    if (!k.ok())
      return absl::Status(k.status().code(),
                          absl::StrCat(where(&op), ": ", k.status().message()));
    Step step;
    step.kernel = *k;
    step.pdl = kernel->hasAttr("fusec.pdl");
    step.grid = *dim3Attr(kernel, "fusec.grid");
    step.block = *dim3Attr(kernel, "fusec.block");
    if (auto shared = kernel->getAttrOfType<IntegerAttr>("fusec.shared"))
      step.sharedBytes = static_cast<unsigned>(shared.getInt());
    for (Value v : kernel.getInputs())
      step.slots.push_back(slotOf.lookup(v));
    for (Value r : kernel.getResults()) {
      int slot;
      if (auto it = directOutput.find(r); it != directOutput.end()) {
        slot = it->second;
      } else {
        auto owned = newOwnedSlot(r.getType());
        if (!owned.ok())
          return owned.status();
        slot = *owned;
        if (zeroInit(r))
          if (auto st = exec->owned[slot].fill(0); !st.ok())
            return st;
      }
      slotOf[r] = slot;
      step.slots.push_back(slot);
    }
    step.maps = tensorMaps(kernel);
    if (!step.maps.empty()) {
      auto table = rt::DeviceBuffer::allocate(128 * static_cast<int64_t>(step.maps.size()));
      if (!table.ok())
        return table.status();
      exec->owned.push_back(std::move(*table));
      step.tableSlot = static_cast<int>(exec->owned.size() - 1);
      step.slots.push_back(step.tableSlot);
    }
    // Scratch buffers (split-K's workspace and tile counters), zeroed once:
    // a kernel leaves its counters at zero again.
    if (auto scratch = kernel->getAttrOfType<DenseI64ArrayAttr>("fusec.scratch"))
      for (int64_t bytes : scratch.asArrayRef()) {
        auto buffer = rt::DeviceBuffer::allocate(bytes);
        if (!buffer.ok())
          return buffer.status();
        if (auto st = buffer->fill(0); !st.ok())
          return st;
        exec->owned.push_back(std::move(*buffer));
        step.slots.push_back(static_cast<int>(exec->owned.size() - 1));
      }
    exec->modules.push_back(std::move(*module));
    exec->steps.push_back(std::move(step));
    KernelStats stats;
    stats.name = kernel.getName() ? kernel.getName()->str() : entry;
    stats.cost = kernel.getCost();
    if (auto s = kernel->getAttrOfType<StrategyAttr>("fusec.strategy"))
      stats.strategy = stringifyStrategy(s.getValue()).str();
    if (roofline) {
      KernelAnalysis a = analyzeOp(kernel, *roofline);
      stats.predictedSeconds = a.predictedSeconds;
      stats.bound = roofName(a.bound);
    }
    exec->kernels.push_back(std::move(stats));
  }
  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    int out = numIn + static_cast<int>(i);
    auto it = directOutput.find(viewRoot(v));
    if (it != directOutput.end() && it->second == out)
      continue;
    exec->copies.push_back({static_cast<int>(i), slotOf.lookup(v),
                            exec->outputs[i].bytes()});
  }
  exec->numSlots = static_cast<int>(exec->owned.size());
  exec->prepareArgs();
  return std::make_shared<Executable>(std::move(exec));
}

absl::StatusOr<std::shared_ptr<Executable>> compileModule(Jit &jit,
                                                          ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo(/*enable=*/true,
                                                      /*prettyForm=*/false));
  return jit.compile(text, "<module>");
}

} // namespace fusec
