//===- FaultTest.cpp - Injected and real faults in the runtime --*- C++ -*-===//
//
// Issue #19, fault injection: the driver missing, nvJitLink failing, device
// allocations failing, and a kernel cache whose directory cannot be written,
// whose disk is full (a real RLIMIT_FSIZE, and injected), or whose writer is
// killed mid-write. Each must give a clean error or a served result, never a
// wrong one, and leave the process and the cache usable. The GPU cases skip
// with the reason where there is no GPU.
//
//===----------------------------------------------------------------------===//

#include "VectorAddPtx.h"
#include "fusec/Runtime/Faults.h"
#include "fusec/Runtime/KernelCache.h"
#include "fusec/Runtime/Runtime.h"

#include "gtest/gtest.h"

#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace fusec::rt;

namespace {

std::string freshDir(const std::string &name) {
  std::string dir = ::testing::TempDir() + "/fusec-fault-" + name + "-" +
                    std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

/// Every name in `dir` but "." and "..".
std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (struct dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..")
        names.push_back(n);
    }
    closedir(d);
  }
  return names;
}

int countWithPrefix(const std::vector<std::string> &names, const std::string &prefix) {
  int n = 0;
  for (const std::string &name : names)
    n += name.rfind(prefix, 0) == 0;
  return n;
}

/// Runs `body` in a child process; returns its wait status.
template <typename Fn> int inChild(Fn body) {
  fflush(nullptr);
  pid_t child = fork();
  if (child == 0)
    _exit(body());
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

struct ClearFaults {
  ~ClearFaults() { clearFaults(); }
};

TEST(Faults, SpecsParseAndCountEvents) {
  ClearFaults guard;
  ASSERT_TRUE(injectFaults("alloc@3, nvjitlink").ok());
  EXPECT_FALSE(faultFires(FaultSite::Alloc));
  EXPECT_FALSE(faultFires(FaultSite::Alloc));
  EXPECT_TRUE(faultFires(FaultSite::Alloc)) << "the third event fails";
  EXPECT_FALSE(faultFires(FaultSite::Alloc)) << "and only that one";
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(faultFires(FaultSite::JitLink)) << "no @N: every event fails";
  EXPECT_FALSE(faultFires(FaultSite::Module));
  clearFaults();
  EXPECT_FALSE(faultFires(FaultSite::JitLink));
  for (const char *bad : {"allocs", "alloc@0", "alloc@x", "alloc@-2"}) {
    absl::Status st = injectFaults(bad);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("FUSEC_INJECT_FAULTS"), std::string::npos) << st;
  }
  EXPECT_STREQ(faultSiteName(FaultSite::CacheKill), "cache-kill");
}

TEST(Faults, TheEnvironmentSetsFaults) {
  int status = inChild([] {
    setenv("FUSEC_INJECT_FAULTS", "module@2", 1);
    if (!loadFaultsFromEnvironment().ok())
      return 2;
    bool first = faultFires(FaultSite::Module), second = faultFires(FaultSite::Module);
    return !first && second ? 0 : 1;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The driver is loaded once per process, and an earlier test may have
// loaded it: this test runs the next one in a fresh process of this binary,
// with the fault in its environment.
TEST(Faults, MissingDriverIsAnErrorOnEveryCall) {
  int status = inChild([] {
    setenv("FUSEC_INJECT_FAULTS", "driver", 1);
    setenv("FUSEC_FAULT_CHILD", "1", 1);
    execl("/proc/self/exe", "fusec-runtime-tests",
          "--gtest_filter=FaultsInAFreshProcess.MissingDriver", nullptr);
    return 100; // exec failed
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the fresh process's test failed (exit "
                                    << WEXITSTATUS(status) << ")";
}

TEST(FaultsInAFreshProcess, MissingDriver) {
  if (!std::getenv("FUSEC_FAULT_CHILD"))
    GTEST_SKIP() << "run by Faults.MissingDriverIsAnErrorOnEveryCall in a fresh process";
  absl::Status st = available();
  ASSERT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_NE(st.message().find("no CUDA driver"), std::string::npos) << st;
  EXPECT_NE(st.message().find("(injected fault)"), std::string::npos) << st;
  auto buf = DeviceBuffer::allocate(1 << 20);
  ASSERT_FALSE(buf.ok());
  EXPECT_EQ(buf.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(Stream::create().ok());
  EXPECT_FALSE(deviceInfo().ok());
  EXPECT_FALSE(Module::loadPtx(kVectorAddPtx).ok());
  // nvJitLink needs no driver: PTX still compiles (where it is installed).
  auto cubin = compilePtx(kVectorAddPtx, "sm_90a");
  EXPECT_TRUE(cubin.ok() || cubin.status().code() == absl::StatusCode::kUnavailable)
      << cubin.status();
  EXPECT_EQ(liveDeviceBytes(), 0);
}

TEST(Faults, NvJitLinkFailureIsAnErrorAndTheNextCompileWorks) {
  ClearFaults guard;
  if (auto probe = compilePtx(kVectorAddPtx, "sm_90a");
      !probe.ok() && probe.status().code() == absl::StatusCode::kUnavailable)
    GTEST_SKIP() << probe.status().message();
  injectFault(FaultSite::JitLink, 1);
  auto failed = compilePtx(kVectorAddPtx, "sm_90a");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("(injected fault)"), std::string::npos)
      << failed.status();
  auto cubin = compilePtx(kVectorAddPtx, "sm_90a");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_EQ(cubin->compare(0, 4, "\x7f" "ELF"), 0);
}

TEST(Faults, FailedCompilesAreNotCached) {
  ClearFaults guard;
  KernelCacheOptions opts;
  opts.directory = freshDir("compile");
  KernelCache cache(opts);
  int calls = 0;
  auto compile = [&]() -> absl::StatusOr<std::string> {
    ++calls;
    if (faultFires(FaultSite::JitLink))
      return absl::InvalidArgumentError("nvJitLink: (injected fault)");
    return std::string("cubin");
  };
  injectFault(FaultSite::JitLink, 1);
  EXPECT_FALSE(cache.getOrCompile("k", compile).ok());
  EXPECT_TRUE(listDir(opts.directory).empty()) << "a failure reached the disk";
  auto r = cache.getOrCompile("k", compile);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(**r, "cubin");
  EXPECT_EQ(calls, 2);
}

TEST(Faults, CacheDirectoryThatCannotBeCreated) {
  // A regular file where a parent directory should be: mkdir fails with
  // ENOTDIR even for root (a read-only mode would not stop root).
  std::string base = freshDir("nodir");
  ASSERT_EQ(mkdir(base.c_str(), 0755), 0);
  std::ofstream(base + "/file") << "x";
  KernelCacheOptions opts;
  opts.directory = base + "/file/cache";
  for (int round = 0; round < 2; ++round) {
    KernelCache cache(opts);
    auto r = cache.getOrCompile("k", [] { return absl::StatusOr<std::string>("payload"); });
    ASSERT_TRUE(r.ok()) << "an unwritable cache must still serve the compile";
    EXPECT_EQ(**r, "payload");
    EXPECT_EQ(cache.stats().compiles, 1);
    EXPECT_EQ(cache.stats().diskWriteErrors, 1);
    // Served from memory afterwards.
    ASSERT_TRUE(cache.getOrCompile("k", [] { return absl::StatusOr<std::string>("other"); }).ok());
    EXPECT_EQ(cache.stats().memoryHits, 1);
  }
}

/// A cache on a "full" disk: entries are not written, compiles are served,
/// nothing half-written stays behind, and a later process with room writes
/// whole entries.
void expectFullDiskIsHarmless(const std::string &dir, bool realLimit) {
  KernelCacheOptions opts;
  opts.directory = dir;
  std::string payload(200000, 'p');
  int status = inChild([&] {
    if (realLimit) {
      // Files may not grow past 4 KiB: write() fails with EFBIG (SIGXFSZ
      // ignored), as on a disk that fills up.
      signal(SIGXFSZ, SIG_IGN);
      struct rlimit lim = {4096, 4096};
      if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 10;
    } else {
      injectFault(FaultSite::CacheWrite, 0);
    }
    KernelCache cache(opts);
    for (const char *key : {"a", "b"}) {
      auto r = cache.getOrCompile(key, [&] { return absl::StatusOr<std::string>(payload); });
      if (!r.ok() || **r != payload)
        return 1;
    }
    return cache.stats().diskWriteErrors == 2 ? 0 : 2;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::vector<std::string> left = listDir(dir);
  EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left[0]);
  KernelCache later(opts);
  int calls = 0;
  auto r = later.getOrCompile("a", [&] {
    ++calls;
    return absl::StatusOr<std::string>(payload);
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(later.stats().corruptEntries, 0);
  EXPECT_EQ(later.stats().diskWriteErrors, 0);
  KernelCache reader(opts);
  ASSERT_TRUE(reader.getOrCompile("a", [] { return absl::StatusOr<std::string>("x"); }).ok());
  EXPECT_EQ(reader.stats().diskHits, 1);
}

TEST(Faults, FullDiskRealFileSizeLimit) { expectFullDiskIsHarmless(freshDir("fsize"), true); }

TEST(Faults, FullDiskInjected) { expectFullDiskIsHarmless(freshDir("full"), false); }

TEST(Faults, WriterKilledMidWrite) {
  KernelCacheOptions opts;
  opts.directory = freshDir("kill");
  std::string payload(300000, 'k');
  int status = inChild([&] {
    injectFault(FaultSite::CacheKill, 1);
    KernelCache cache(opts);
    (void)cache.getOrCompile("key", [&] { return absl::StatusOr<std::string>(payload); });
    return 0; // not reached
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer was not killed";
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  std::vector<std::string> left = listDir(opts.directory);
  ASSERT_EQ(countWithPrefix(left, ".tmp."), 1) << "no half-written temporary file";
  EXPECT_EQ(left.size(), 1u) << "a half-written entry became visible";

  // The next process misses, compiles once, writes a whole entry.
  KernelCache next(opts);
  int calls = 0;
  auto r = next.getOrCompile("key", [&] {
    ++calls;
    return absl::StatusOr<std::string>(payload);
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(**r, payload);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(next.stats().corruptEntries, 0);
  KernelCache reader(opts);
  ASSERT_TRUE(reader.getOrCompile("key", [] { return absl::StatusOr<std::string>("x"); }).ok());
  EXPECT_EQ(reader.stats().diskHits, 1);

  // The dead writer's temporary file goes once it is an hour old.
  for (const std::string &name : listDir(opts.directory))
    if (name.rfind(".tmp.", 0) == 0) {
      std::string path = opts.directory + "/" + name;
      struct timeval old[2] = {{time(nullptr) - 7200, 0}, {time(nullptr) - 7200, 0}};
      ASSERT_EQ(utimes(path.c_str(), old), 0);
    }
  KernelCache cleaner(opts);
  ASSERT_TRUE(cleaner.getOrCompile("other", [] { return absl::StatusOr<std::string>("y"); }).ok());
  EXPECT_EQ(countWithPrefix(listDir(opts.directory), ".tmp."), 0);
}

#define REQUIRE_GPU()                                                          \
  if (absl::Status st = available(); !st.ok())                                 \
  GTEST_SKIP() << "no GPU here: " << st.message()

TEST(Faults, AllocationAndModuleFailuresOnTheGpu) {
  REQUIRE_GPU();
  ClearFaults guard;
  int64_t before = liveDeviceBytes();
  {
    auto a = DeviceBuffer::allocate(1 << 20);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(liveDeviceBytes(), before + (1 << 20));
    injectFault(FaultSite::Alloc, 1);
    auto b = DeviceBuffer::allocate(1 << 20);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(b.status().message().find("cuMemAlloc"), std::string::npos) << b.status();
    EXPECT_EQ(liveDeviceBytes(), before + (1 << 20));
  }
  EXPECT_EQ(liveDeviceBytes(), before) << "a buffer was not given back";
  // A real failure too: more memory than the device has.
  auto huge = DeviceBuffer::allocate(int64_t(1) << 50);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("cuMemAlloc"), std::string::npos) << huge.status();
  EXPECT_EQ(liveDeviceBytes(), before);

  injectFault(FaultSite::Module, 1);
  auto m = Module::loadPtx(kVectorAddPtx);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("(injected fault)"), std::string::npos) << m.status();
  auto again = Module::loadPtx(kVectorAddPtx);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->kernel("vadd").ok());
}

} // namespace
