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
