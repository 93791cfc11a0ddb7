//===- jit_bench.cpp - JIT latency: compile, cache hits, launches -*- C++ -*-===//
//
// Google Benchmark, run on the GPU machine (bench/run-gpu.sh). Measures:
// - cold compile-and-load of a small kernel (empty disk cache: parse, PTX ->
//   cubin with nvJitLink, module load);
// - an in-memory hit (Jit::compile of a graph compiled before);
// - a disk hit (a fresh Jit whose disk cache holds the kernel);
// - launch overhead: Executable::run of a one-kernel graph against a raw
//   cuLaunchKernel of the same kernel.
//
//===----------------------------------------------------------------------===//

#include "fusec/Jit.h"

#include <benchmark/benchmark.h>
#include <cuda.h>

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <unistd.h>

namespace {

/// A small f32 add over 4096 elements; parameters (a, b, c).
const std::string kVaddPtx =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc)\n{\n"
    "  .reg .pred %p;\n  .reg .b32 %r<5>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [pa];\n  ld.param.u64 %rd2, [pb];\n  ld.param.u64 %rd3, [pc];\n"
    "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r2, %r2, %r3, %r4;\n  setp.ge.u32 %p, %r2, 4096;\n  @%p bra DONE;\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n"
    "  cvta.to.global.u64 %rd3, %rd3;\n  mul.wide.u32 %rd4, %r2, 4;\n"
    "  add.s64 %rd5, %rd1, %rd4;\n  add.s64 %rd6, %rd2, %rd4;\n  add.s64 %rd7, %rd3, %rd4;\n"
    "  ld.global.f32 %f1, [%rd5];\n  ld.global.f32 %f2, [%rd6];\n  add.f32 %f3, %f1, %f2;\n"
    "  st.global.f32 [%rd7], %f3;\nDONE:\n  ret;\n}\n";

/// A one-kernel graph running kVaddPtx. `salt` makes the text, the PTX and
/// so both cache keys unique.
std::string graph(const std::string &salt) {
  std::string ptx = kVaddPtx + "// " + salt + "\n";
  std::string escaped;
  for (char c : ptx)
    escaped += c == '\n' ? std::string("\\n") : std::string(1, c);
  return "// " + salt + "\n" +
         "func.func @vadd(%a: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<4096xf32> {\n"
         "  %c = fusec.kernel \"vadd\" (%a, %b) {fusec.ptx = \"" + escaped +
         "\", fusec.grid = array<i64: 16>, fusec.block = array<i64: 256>} : "
         "(tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32> {\n"
         "  ^bb0(%x: tensor<4096xf32>, %y: tensor<4096xf32>):\n"
         "    %s = fusec.add %x, %y : tensor<4096xf32>\n"
         "    fusec.yield %s : tensor<4096xf32>\n  }\n"
         "  return %c : tensor<4096xf32>\n}\n";
}

std::string benchDir(const std::string &name) {
  const char *base = std::getenv("FUSEC_BENCH_DIR");
  std::string dir = std::string(base ? base : "/tmp") + "/fusec-bench-" + name +
                    "-" + std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "'";
  if (std::system(cmd.c_str()) != 0)
    std::abort();
  return dir;
}

fusec::JitOptions options(const std::string &dir) {
  fusec::JitOptions o;
  o.cache.directory = dir;
  return o;
}

bool haveGpu(benchmark::State &state) {
  if (absl::Status st = fusec::rt::available(); !st.ok()) {
    state.SkipWithError(std::string(st.message()).c_str());
    return false;
  }
  return true;
}

void BM_ColdCompileAndLoad(benchmark::State &state) {
  if (!haveGpu(state))
    return;
  std::string dir = benchDir("cold");
  int64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::string text = graph("cold" + std::to_string(n++));
    auto jit = fusec::Jit::create(options(dir));
    state.ResumeTiming();
    auto exec = (*jit)->compile(text);
    if (!exec.ok()) {
      state.SkipWithError(exec.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(exec);
    state.PauseTiming();
    if ((*jit)->cacheStats().compiles != 1)
      state.SkipWithError("expected a compile");
    jit->reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_ColdCompileAndLoad)->Unit(benchmark::kMillisecond)->Iterations(20);

void BM_MemoryHit(benchmark::State &state) {
  if (!haveGpu(state))
    return;
  auto jit = fusec::Jit::create(options(benchDir("memory")));
  std::string text = graph("memory");
  if (!(*jit)->compile(text).ok()) {
    state.SkipWithError("compile failed");
    return;
  }
  for (auto _ : state) {
    auto exec = (*jit)->compile(text);
    benchmark::DoNotOptimize(exec);
  }
  state.counters["executable_hits"] = static_cast<double>((*jit)->executableHits());
}
BENCHMARK(BM_MemoryHit)->Unit(benchmark::kMicrosecond);

void BM_DiskHit(benchmark::State &state) {
  if (!haveGpu(state))
    return;
  std::string dir = benchDir("disk");
  std::string text = graph("disk");
  {
    auto warm = fusec::Jit::create(options(dir));
    if (!(*warm)->compile(text).ok()) {
      state.SkipWithError("compile failed");
      return;
    }
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto jit = fusec::Jit::create(options(dir));
    state.ResumeTiming();
    auto exec = (*jit)->compile(text);
    benchmark::DoNotOptimize(exec);
    state.PauseTiming();
    if ((*jit)->cacheStats().diskHits != 1 || (*jit)->cacheStats().compiles != 0)
      state.SkipWithError("expected a disk hit");
    exec = absl::UnknownError("released");
    jit->reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_DiskHit)->Unit(benchmark::kMillisecond)->Iterations(50);

/// Launch overhead: the host time of `kBatch` launches of the vadd kernel
/// (the stream is synchronized outside the timed region, so the GPU's queue
/// never fills and blocks a launch); the per-launch counter divides by kBatch.
constexpr int kBatch = 100;

struct LaunchFixture {
  std::unique_ptr<fusec::Jit> jit;
  std::shared_ptr<fusec::Executable> exec;
  std::vector<fusec::rt::DeviceBuffer> bufs;
  std::optional<fusec::rt::Stream> stream;
  bool init(benchmark::State &state) {
    if (!haveGpu(state))
      return false;
    auto j = fusec::Jit::create(options(benchDir("launch")));
    jit = std::move(*j);
    auto e = jit->compile(graph("launch"));
    if (!e.ok()) {
      state.SkipWithError(e.status().ToString().c_str());
      return false;
    }
    exec = *e;
    for (int i = 0; i < 3; ++i)
      bufs.push_back(std::move(*fusec::rt::DeviceBuffer::allocate(4096 * 4)));
    stream.emplace(std::move(*fusec::rt::Stream::create()));
    return true;
  }
};

void BM_LaunchFusecRun(benchmark::State &state) {
  LaunchFixture f;
  if (!f.init(state))
    return;
  std::vector<const fusec::rt::DeviceBuffer *> in = {&f.bufs[0], &f.bufs[1]};
  std::vector<fusec::rt::DeviceBuffer *> out = {&f.bufs[2]};
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i)
      if (!f.exec->run(in, out, *f.stream).ok())
        state.SkipWithError("run failed");
    state.PauseTiming();
    (void)f.stream->synchronize();
    state.ResumeTiming();
  }
  state.counters["us_per_launch"] = benchmark::Counter(
      static_cast<double>(kBatch) * state.iterations() * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LaunchFusecRun)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LaunchRawCuLaunchKernel(benchmark::State &state) {
  LaunchFixture f;
  if (!f.init(state))
    return;
  // The same kernel, called through the driver directly.
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto launch = reinterpret_cast<decltype(&cuLaunchKernel)>(
      lib ? dlsym(lib, "cuLaunchKernel") : nullptr);
  if (!launch) {
    state.SkipWithError("cuLaunchKernel not found");
    return;
  }
  auto module = fusec::rt::Module::loadPtx(kVaddPtx);
  if (!module.ok()) {
    state.SkipWithError(module.status().ToString().c_str());
    return;
  }
  auto kernel = module->kernel("vadd");
  CUfunction fn = static_cast<CUfunction>(kernel->handle());
  uint64_t pa = f.bufs[0].devicePtr(), pb = f.bufs[1].devicePtr(),
           pc = f.bufs[2].devicePtr();
  void *args[] = {&pa, &pb, &pc};
  CUstream stream = static_cast<CUstream>(f.stream->handle());
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i)
      if (launch(fn, 16, 1, 1, 256, 1, 1, 0, stream, args, nullptr) != CUDA_SUCCESS)
        state.SkipWithError("cuLaunchKernel failed");
    state.PauseTiming();
    (void)f.stream->synchronize();
    state.ResumeTiming();
  }
  state.counters["us_per_launch"] = benchmark::Counter(
      static_cast<double>(kBatch) * state.iterations() * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LaunchRawCuLaunchKernel)->Unit(benchmark::kMicrosecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
