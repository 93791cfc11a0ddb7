//===- KernelCacheTest.cpp - Cache semantics, no GPU needed -----*- C++ -*-===//
//
// Real files, real threads, real processes and a counting compile callback.
//
//===----------------------------------------------------------------------===//

#include "fusec/Runtime/KernelCache.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace fusec::rt;

namespace {

/// A fresh, empty cache directory per test.
std::string freshDir(const std::string &name) {
  std::string dir = ::testing::TempDir() + "/fusec-cache-" + name + "-" +
                    std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void writeAll(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (struct dirent *e = readdir(d))
      if (e->d_name[0] != '.' || std::string(e->d_name).rfind(".tmp", 0) == 0)
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
          names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

/// A compile callback that counts its calls and returns `payload`.
struct Counting {
  std::atomic<int> calls{0};
  std::string payload;
  int sleepMs = 0;
  KernelCache::CompileFn fn() {
    return [this]() -> absl::StatusOr<std::string> {
      ++calls;
      if (sleepMs)
        std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
      return payload;
    };
  }
};

TEST(KernelCache, OneCompilePerKeyUnderContention) {
  KernelCacheOptions opts;
  opts.directory = freshDir("contention");
  KernelCache cache(opts);
  Counting compile;
  compile.payload = std::string(10000, 'x');
  compile.sleepMs = 100;
  const int kThreads = 16;
  std::atomic<int> arrived{0};
  std::vector<std::thread> threads;
  std::vector<std::string> results(kThreads);
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      ++arrived;
      while (arrived < kThreads) // start together
        std::this_thread::yield();
      auto r = cache.getOrCompile("k1", compile.fn());
      ASSERT_TRUE(r.ok()) << r.status();
      results[i] = **r;
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(compile.calls, 1);
  for (const std::string &r : results)
    EXPECT_EQ(r, compile.payload);
  KernelCacheStats s = cache.stats();
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.waits + s.memoryHits, kThreads - 1);
  EXPECT_GT(s.waits, 0); // the 100 ms compile made some threads wait
}

TEST(KernelCache, DistinctKeysCompileSeparatelyInParallel) {
  KernelCacheOptions opts;
  opts.directory = freshDir("distinct");
  KernelCache cache(opts);
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 3; ++rep) {
        auto r = cache.getOrCompile("key" + std::to_string(i), [&, i] {
          ++calls;
          return absl::StatusOr<std::string>("payload" + std::to_string(i));
        });
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(**r, "payload" + std::to_string(i));
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(calls, 8);
  EXPECT_EQ(cache.stats().memoryHits, 16);
}

TEST(KernelCache, DiskHitInANewInstance) {
  KernelCacheOptions opts;
  opts.directory = freshDir("disk");
  Counting compile;
  compile.payload = "cubin bytes \x01\x02\x03";
  {
    KernelCache a(opts);
    ASSERT_TRUE(a.getOrCompile("k", compile.fn()).ok());
  }
  KernelCache b(opts);
  auto r = b.getOrCompile("k", compile.fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(**r, compile.payload);
  EXPECT_EQ(compile.calls, 1);
  EXPECT_EQ(b.stats().diskHits, 1);
  EXPECT_EQ(b.stats().compiles, 0);
}

/// Damages the entry of `key` with `damage`, then checks that a new cache
/// recompiles it, counts it as corrupt and leaves a whole entry behind.
void expectRecovery(const std::string &name,
                    const std::function<void(std::string &)> &damage) {
  KernelCacheOptions opts;
  opts.directory = freshDir(name);
  Counting compile;
  compile.payload = std::string(4096, 'p') + "end";
  KernelCache a(opts);
  ASSERT_TRUE(a.getOrCompile("k", compile.fn()).ok());
  std::string path = a.entryPath("k");
  std::string file = readAll(path);
  damage(file);
  writeAll(path, file);

  KernelCache b(opts);
  auto r = b.getOrCompile("k", compile.fn());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(**r, compile.payload);
  EXPECT_EQ(compile.calls, 2) << name;
  EXPECT_EQ(b.stats().corruptEntries, 1) << name;

  KernelCache c(opts);
  ASSERT_TRUE(c.getOrCompile("k", compile.fn()).ok());
  EXPECT_EQ(c.stats().diskHits, 1) << name << ": the entry was not replaced";
  EXPECT_EQ(compile.calls, 2);
}

TEST(KernelCache, TruncatedEntryIsRecompiled) {
  expectRecovery("truncated", [](std::string &f) { f.resize(f.size() / 2); });
}

TEST(KernelCache, TruncatedHeaderIsRecompiled) {
  expectRecovery("header", [](std::string &f) { f.resize(5); });
}

TEST(KernelCache, BitFlipIsRecompiled) {
  expectRecovery("bitflip", [](std::string &f) { f[f.size() - 100] ^= 0x10; });
}

TEST(KernelCache, EmptyAndForeignFilesAreRecompiled) {
  expectRecovery("empty", [](std::string &f) { f.clear(); });
  expectRecovery("foreign", [](std::string &f) { f = "#!/bin/sh\necho hi\n"; });
}

TEST(KernelCache, FailedCompileIsNotCached) {
  KernelCacheOptions opts;
  opts.directory = freshDir("fail");
  KernelCache cache(opts);
  int calls = 0;
  auto failing = [&]() -> absl::StatusOr<std::string> {
    ++calls;
    return absl::InvalidArgumentError("ptxas: bad PTX");
  };
  auto r = cache.getOrCompile("k", failing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "ptxas: bad PTX");
  EXPECT_FALSE(cache.getOrCompile("k", failing).ok());
  EXPECT_EQ(calls, 2);
  struct stat st;
  EXPECT_NE(stat(cache.entryPath("k").c_str(), &st), 0);
}

TEST(KernelCache, DiskEvictionIsLeastRecentlyUsed) {
  KernelCacheOptions opts;
  opts.directory = freshDir("evict");
  opts.maxDiskBytes = 3 * 1200; // three 1000-byte payloads with headers
  const int kEntries = 5;
  {
    KernelCache cache(opts);
    for (int i = 0; i < kEntries; ++i) {
      std::string key = "k" + std::to_string(i);
      ASSERT_TRUE(cache.getOrCompile(key, [&] {
        return absl::StatusOr<std::string>(std::string(1000, 'a' + i));
      }).ok());
      // Distinct modification times, oldest first: k0 .. k4.
      struct timespec times[2] = {{1000 + i, 0}, {1000 + i, 0}};
      utimensat(AT_FDCWD, cache.entryPath(key).c_str(), times, 0);
      if (i == 2) {
        // Use k0 again (a disk hit in a fresh instance refreshes it).
        KernelCache other(opts);
        ASSERT_TRUE(other.getOrCompile("k0", [] {
          return absl::StatusOr<std::string>("never");
        }).ok());
        EXPECT_EQ(other.stats().diskHits, 1);
      }
    }
    EXPECT_GT(cache.stats().diskEvictions, 0);
  }
  KernelCache probe(opts);
  auto present = [&](const std::string &key) {
    struct stat st;
    return stat(probe.entryPath(key).c_str(), &st) == 0;
  };
  EXPECT_TRUE(present("k4"));  // just written
  EXPECT_TRUE(present("k0"));  // recently used
  EXPECT_FALSE(present("k1")); // least recently used
  int64_t total = 0;
  for (int i = 0; i < kEntries; ++i) {
    struct stat st;
    if (stat(probe.entryPath("k" + std::to_string(i)).c_str(), &st) == 0)
      total += st.st_size;
  }
  EXPECT_LE(total, opts.maxDiskBytes);
}

TEST(KernelCache, MemoryIsCapped) {
  KernelCacheOptions opts;
  opts.useDisk = false;
  opts.maxMemoryBytes = 2500;
  KernelCache cache(opts);
  Counting compile;
  compile.payload = std::string(1000, 'm');
  for (const char *k : {"a", "b", "c", "a"})
    ASSERT_TRUE(cache.getOrCompile(k, compile.fn()).ok());
  // a and b fit, c evicts a (least recently used), so a compiles again.
  EXPECT_EQ(compile.calls, 4);
  EXPECT_GT(cache.stats().memoryEvictions, 0);
  EXPECT_FALSE(std::ifstream(cache.entryPath("a")).good()); // no disk use
}

TEST(KernelCache, TwoProcessesWriteTheSameEntry) {
  KernelCacheOptions opts;
  opts.directory = freshDir("procs");
  for (int round = 0; round < 5; ++round) {
    std::string key = "shared" + std::to_string(round);
    std::string payload = std::string(100000, 'q') + std::to_string(round);
    pid_t children[2];
    for (pid_t &child : children) {
      child = fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        // Each process compiles (slowly, so that the writes overlap) and
        // writes the same entry.
        KernelCache cache(opts);
        auto r = cache.getOrCompile(key, [&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
          return absl::StatusOr<std::string>(payload);
        });
        _exit(r.ok() && **r == payload ? 0 : 1);
      }
    }
    for (pid_t child : children) {
      int status = 0;
      ASSERT_EQ(waitpid(child, &status, 0), child);
      ASSERT_TRUE(WIFEXITED(status));
      EXPECT_EQ(WEXITSTATUS(status), 0) << "a writer got a wrong result";
    }
    KernelCache reader(opts);
    int calls = 0;
    auto r = reader.getOrCompile(key, [&] {
      ++calls;
      return absl::StatusOr<std::string>("recompiled");
    });
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(**r, payload);
    EXPECT_EQ(calls, 0) << "the entry left on disk is not whole";
  }
  for (const std::string &name : listDir(opts.directory))
    EXPECT_EQ(name.rfind(".tmp", 0), std::string::npos) << "left behind: " << name;
}

TEST(KernelCache, DirectoryComesFromTheEnvironment) {
  std::string dir = freshDir("env");
  setenv("FUSEC_CACHE_DIR", dir.c_str(), 1);
  KernelCache cache;
  unsetenv("FUSEC_CACHE_DIR");
  EXPECT_EQ(cache.directory(), dir);
  ASSERT_TRUE(cache.getOrCompile("k", [] {
    return absl::StatusOr<std::string>("x");
  }).ok());
  EXPECT_TRUE(std::ifstream(dir + "/k.fkc").good());

  std::string home = freshDir("home");
  const char *oldHome = std::getenv("HOME");
  std::string saved = oldHome ? oldHome : "";
  setenv("HOME", home.c_str(), 1);
  KernelCache byHome;
  setenv("HOME", saved.c_str(), 1);
  EXPECT_EQ(byHome.directory(), home + "/.cache/fusec");
}

TEST(KernelCache, KeysCoverEveryFieldAndTheVersion) {
  std::string k = KernelCache::makeKey({"ir", "sm_90a", "opts"});
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, KernelCache::makeKey({"ir", "sm_90a", "opts"}));
  EXPECT_NE(k, KernelCache::makeKey({"ir2", "sm_90a", "opts"}));
  EXPECT_NE(k, KernelCache::makeKey({"ir", "sm_100a", "opts"}));
  EXPECT_NE(k, KernelCache::makeKey({"ir", "sm_90a", "opts2"}));
  EXPECT_NE(k, KernelCache::makeKey({"irsm_90a", "", "opts"}));
}

} // namespace
