//===- JitThreadsTest.cpp - The JIT's concurrency under TSan ----*- C++ -*-===//
//
// Built twice: into fusec-jit-tests, and into fusec-jit-tsan-tests, where the
// JIT and the runtime are compiled with ThreadSanitizer (the compiler's
// passes and Debian's LLVM are not: their locks are pthread's, which TSan
// intercepts). ctest runs the second with halt_on_error, so a data race in
// Jit::compile, its executable map, the kernel cache or the parallel cubin
// compiles fails the entry.
//
// Without a GPU a compile runs the whole pipeline, code generation and the
// PTX -> cubin link, and stops at the first device allocation
// (kUnavailable): the concurrency of everything but the launch is checked on
// any machine (CI). Runs from several threads need a GPU and are not here.
//
//===----------------------------------------------------------------------===//

#include "fusec/Jit.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace fusec;

namespace {

JitOptions threadOptions(const std::string &name) {
  JitOptions o;
  o.target = "sm_90a";
  o.cache.directory = ::testing::TempDir() + "/fusec-jit-threads-" + name + "-" +
                      std::to_string(getpid());
  std::string cmd = "rm -rf '" + o.cache.directory + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return o;
}

/// Graph `k`: kernels whose shape (and so whose PTX) differs by k; every
/// third one a row reduction, so that two strategies compile side by side.
std::string graph(int k) {
  std::string n = std::to_string(1000 + k);
  if (k % 3 == 2) {
    std::string t = "tensor<" + std::to_string(4 + k) + "x" + n + "xf32>";
    return "func.func @g(%a: " + t + ") -> " + t + " {\n"
           "  %0 = fusec.softmax %a dim 1 : " + t + "\n"
           "  return %0 : " + t + "\n}\n";
  }
  std::string t = "tensor<" + n + "xf32>";
  return "func.func @g(%a: " + t + ", %b: " + t + ") -> " + t + " {\n"
         "  %0 = fusec.exp %a : " + t + "\n"
         "  %1 = fusec.add %0, %b : " + t + "\n"
         "  return %1 : " + t + "\n}\n";
}

/// What a compile may end in here: an Executable (GPU), or, without one,
/// kUnavailable after the cubin. Anything else is a failure. Sets `skip`
/// when nvJitLink is missing.
void expectCompiled(const absl::StatusOr<std::shared_ptr<Executable>> &r,
                    std::atomic<bool> &skip) {
  if (r.ok() || r.status().code() == absl::StatusCode::kUnavailable)
    return;
  if (r.status().message().find("nvJitLink not found") != std::string::npos) {
    skip = true;
    return;
  }
  ADD_FAILURE() << r.status();
}

constexpr int kThreads = 8;

/// The kernels graphs 0..kThreads compile to, counted by one Jit compiling
/// them in turn (a softmax may be more than one kernel).
int64_t serialCompiles(std::atomic<bool> &skip) {
  auto jit = Jit::create(threadOptions("serial"));
  EXPECT_TRUE(jit.ok());
  for (int k = 0; k <= kThreads; ++k)
    expectCompiled((*jit)->compile(graph(k)), skip);
  return (*jit)->cacheStats().compiles;
}

} // namespace

// One Jit, many threads: each compiles a graph of its own and one that all
// share, each twice. Every distinct kernel is compiled once; a second Jit on
// the same cache directory finds each on disk.
TEST(JitThreads, OneJitManyThreadsCompileEachKernelOnce) {
  std::atomic<bool> skip{false};
  int64_t expected = serialCompiles(skip);
  if (skip)
    GTEST_SKIP() << "nvJitLink not found";
  ASSERT_GT(expected, kThreads);
  JitOptions options = threadOptions("one");
  auto jit = Jit::create(options);
  ASSERT_TRUE(jit.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2; ++round) {
        expectCompiled((*jit)->compile(graph(t), "own.mlir"), skip);
        expectCompiled((*jit)->compile(graph(kThreads), "shared.mlir"), skip);
        (void)(*jit)->cacheStats(); // read while others compile
      }
    });
  for (auto &t : threads)
    t.join();
  if (skip)
    GTEST_SKIP() << "nvJitLink not found";
  EXPECT_EQ((*jit)->cacheStats().compiles, expected);

  auto again = Jit::create(options);
  ASSERT_TRUE(again.ok());
  for (int k = 0; k <= kThreads; ++k)
    expectCompiled((*again)->compile(graph(k)), skip);
  EXPECT_EQ((*again)->cacheStats().diskHits, expected);
  EXPECT_EQ((*again)->cacheStats().compiles, 0);
}

// A Jit per thread (each its own MLIRContext and kernel cache) over one
// cache directory: code generation's per-thread target machines, the
// process-wide code-generation options and the cache's files are shared.
// Each kernel is compiled at most once per Jit, and every one lands on disk.
TEST(JitThreads, ManyJitsOnOneCacheDirectory) {
  std::atomic<bool> skip{false};
  int64_t expected = serialCompiles(skip);
  if (skip)
    GTEST_SKIP() << "nvJitLink not found";
  JitOptions options = threadOptions("many");
  std::atomic<int64_t> compiles{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto jit = Jit::create(options);
      ASSERT_TRUE(jit.ok());
      expectCompiled((*jit)->compile(graph(t)), skip);
      expectCompiled((*jit)->compile(graph(kThreads)), skip);
      compiles += (*jit)->cacheStats().compiles;
    });
  for (auto &t : threads)
    t.join();
  if (skip)
    GTEST_SKIP() << "nvJitLink not found";
  // Each thread's own kernels once; the shared graph's by every Jit that
  // missed them on disk, at least once and at most once a Jit.
  EXPECT_GE(compiles.load(), expected);
  EXPECT_LE(compiles.load(), expected * kThreads);

  auto last = Jit::create(options);
  ASSERT_TRUE(last.ok());
  for (int k = 0; k <= kThreads; ++k)
    expectCompiled((*last)->compile(graph(k)), skip);
  EXPECT_EQ((*last)->cacheStats().diskHits, expected);
  EXPECT_EQ((*last)->cacheStats().compiles, 0);
}

/// Runs one Executable of `text` (a [1024, 256] x [256, 256] bf16 matmul
/// whose result a second kernel sums by rows, or `f32` for the same on
/// f32 operands: no tensor maps) from kThreads threads, each on a stream of
/// its own with buffers of its own, 40 times; returns how many of the 5
/// checks a thread makes found another thread's numbers.
int runFromManyThreads(bool tma, bool replay) {
  constexpr int64_t m = 1024, k = 256, n = 256;
  JitOptions options = threadOptions(std::string("runs") + (tma ? "-tma" : "-simt") +
                                     (replay ? "-replay" : ""));
  options.graphReplay = replay;
  auto jit = Jit::create(options);
  EXPECT_TRUE(jit.ok());
  std::string t = tma ? "bf16" : "f32";
  auto exec = (*jit)->compile(
      "func.func @g(%a: tensor<1024x256x" + t + ">, %w: tensor<256x256x" + t +
      ">) -> tensor<1024xf32> {\n"
      "  %m = fusec.matmul %a, %w : (tensor<1024x256x" + t + ">, tensor<256x256x" + t +
      ">) -> tensor<1024x256xf32>\n"
      "  %s = fusec.reduce sum %m dims [1] : tensor<1024x256xf32> -> tensor<1024xf32>\n"
      "  return %s : tensor<1024xf32>\n}\n");
  EXPECT_TRUE(exec.ok()) << exec.status();
  if (!exec.ok())
    return -1;
  EXPECT_GE((*exec)->kernels().size(), 2u); // an intermediate between kernels
  int bytes = tma ? 2 : 4;
  // Integers in [-3, 3] (exact in bf16: the f32 pattern's upper half);
  // every product and sum is exact in f32.
  auto store = [&](std::vector<uint8_t> &v, int64_t i, int x) {
    float f = static_cast<float>(x);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (tma) {
      uint16_t h = static_cast<uint16_t>(bits >> 16);
      std::memcpy(&v[i * 2], &h, 2);
    } else {
      std::memcpy(&v[i * 4], &bits, 4);
    }
  };
  auto value = [](int64_t i, int64_t j, int t) {
    return static_cast<int>((i * 7 + j * 3 + t * 5) % 7) - 3;
  };
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<uint8_t> a(m * k * bytes), w(k * n * bytes);
      std::vector<float> expected(m, 0), got(m);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j)
          store(a, i * k + j, value(i, j, t));
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j)
          store(w, i * n + j, value(j, i, t + 1));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t x = 0; x < k; ++x)
            expected[i] += static_cast<float>(value(i, x, t) * value(j, x, t + 1));
      auto stream = rt::Stream::create();
      auto da = rt::DeviceBuffer::allocate(m * k * bytes);
      auto dw = rt::DeviceBuffer::allocate(k * n * bytes);
      auto out = rt::DeviceBuffer::allocate(m * 4);
      ASSERT_TRUE(stream.ok() && da.ok() && dw.ok() && out.ok());
      ASSERT_TRUE(da->copyFromHost(a.data(), m * k * bytes).ok());
      ASSERT_TRUE(dw->copyFromHost(w.data(), k * n * bytes).ok());
      for (int r = 0; r < 40; ++r) {
        absl::Status st = (*exec)->run({&*da, &*dw}, {&*out}, *stream);
        ASSERT_TRUE(st.ok()) << "thread " << t << " run " << r << ": " << st;
        if (r % 8 == 7) {
          st = stream->synchronize();
          ASSERT_TRUE(st.ok()) << "thread " << t << " run " << r << ": " << st;
          st = out->copyToHost(got.data(), m * 4);
          ASSERT_TRUE(st.ok()) << "thread " << t << " run " << r << ": " << st;
          if (got != expected) {
            ++wrong;
            int64_t i = 0;
            while (got[i] == expected[i])
              ++i;
            ADD_FAILURE() << "thread " << t << " run " << r << ": row " << i << " is " << got[i]
                          << ", expected " << expected[i];
          }
        }
      }
      // Every run done before this thread's buffers and stream go.
      ASSERT_TRUE(stream->synchronize().ok());
    });
  for (auto &th : threads)
    th.join();
  return wrong.load();
}

// One Executable run from many threads, each on a stream of its own with
// buffers of its own: the runs share the Executable's intermediates (the
// matmul's result), so each must wait for the one before on the device, not
// only take the host's lock. Needs a GPU.
TEST(JitThreads, RunsFromManyThreadsOnTheirOwnStreams) {
  if (absl::Status st = rt::available(); !st.ok())
    GTEST_SKIP() << "no GPU here: " << st.message();
  EXPECT_EQ(runFromManyThreads(/*tma=*/false, /*replay=*/true), 0);
}
TEST(JitThreads, RunsFromManyThreadsWithoutGraphReplay) {
  if (absl::Status st = rt::available(); !st.ok())
    GTEST_SKIP() << "no GPU here: " << st.message();
  EXPECT_EQ(runFromManyThreads(/*tma=*/true, /*replay=*/false), 0);
}
TEST(JitThreads, RunsFromManyThreadsTensorCoreMatmul) {
  if (absl::Status st = rt::available(); !st.ok())
    GTEST_SKIP() << "no GPU here: " << st.message();
  EXPECT_EQ(runFromManyThreads(/*tma=*/true, /*replay=*/true), 0);
}

// One thread, one stream, three buffer sets in turn, each run twice so that
// it is captured and then replayed: the graphs' tensor-map tables must not
// take each other's descriptors. Needs a GPU.
TEST(JitThreads, ReplaysAlternateBufferSetsOfATensorCoreMatmul) {
  if (absl::Status st = rt::available(); !st.ok())
    GTEST_SKIP() << "no GPU here: " << st.message();
  auto jit = Jit::create(threadOptions("alternate"));
  ASSERT_TRUE(jit.ok());
  auto exec = (*jit)->compile(R"mlir(
    func.func @g(%a: tensor<256x128xbf16>, %w: tensor<128x128xbf16>) -> tensor<256xf32> {
      %m = fusec.matmul %a, %w : (tensor<256x128xbf16>, tensor<128x128xbf16>) -> tensor<256x128xf32>
      %s = fusec.reduce sum %m dims [1] : tensor<256x128xf32> -> tensor<256xf32>
      return %s : tensor<256xf32>
    })mlir");
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  constexpr int64_t m = 256, k = 128, n = 128;
  struct Set {
    rt::DeviceBuffer a, w, out;
    std::vector<float> expected;
  };
  std::vector<Set> sets;
  for (int t = 0; t < 3; ++t) {
    std::vector<uint16_t> a(m * k), w(k * n);
    std::vector<float> expected(m, 0);
    auto bf16 = [](int v) {
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return static_cast<uint16_t>(bits >> 16);
    };
    for (int64_t i = 0; i < m * k; ++i)
      a[i] = bf16(static_cast<int>((i * 5 + t) % 7) - 3);
    for (int64_t i = 0; i < k * n; ++i)
      w[i] = bf16(static_cast<int>((i * 3 + 2 * t) % 5) - 2);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t x = 0; x < k; ++x)
        for (int64_t j = 0; j < n; ++j)
          expected[i] += static_cast<float>((static_cast<int>(((i * k + x) * 5 + t) % 7) - 3) *
                                            (static_cast<int>(((x * n + j) * 3 + 2 * t) % 5) - 2));
    auto da = rt::DeviceBuffer::allocate(m * k * 2), dw = rt::DeviceBuffer::allocate(k * n * 2),
         out = rt::DeviceBuffer::allocate(m * 4);
    ASSERT_TRUE(da.ok() && dw.ok() && out.ok());
    ASSERT_TRUE(da->copyFromHost(a.data(), m * k * 2).ok());
    ASSERT_TRUE(dw->copyFromHost(w.data(), k * n * 2).ok());
    sets.push_back({std::move(*da), std::move(*dw), std::move(*out), std::move(expected)});
  }
  std::vector<float> got(m);
  for (int round = 0; round < 12; ++round) {
    Set &s = sets[round % 3];
    for (int twice = 0; twice < 2; ++twice)
      ASSERT_TRUE((*exec)->run({&s.a, &s.w}, {&s.out}, *stream).ok());
    ASSERT_TRUE(stream->synchronize().ok());
    ASSERT_TRUE(s.out.copyToHost(got.data(), m * 4).ok());
    EXPECT_EQ(got, s.expected) << "round " << round << ", buffer set " << round % 3;
  }
  EXPECT_GT((*exec)->graphLaunches(), 0);
}
