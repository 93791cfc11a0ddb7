//===- KernelCache.h - In-memory and on-disk cache of kernels ---*- C++ -*-===//
//
// Caches compiled kernel binaries under a key (a hash of the IR text, the
// target, the options and the compiler version).
//
// - In memory: thread-safe; when many threads ask for one key at once, exactly
//   one compile runs and the others wait for its result. Capped in bytes,
//   least recently used first out.
// - On disk: one file per key in the cache directory (FUSEC_CACHE_DIR, else
//   ~/.cache/fusec). Written to a temporary file and renamed into place, so a
//   reader sees a whole entry or none; each entry carries its key, size and
//   SHA-256, so a truncated or corrupted entry is detected, recompiled and
//   replaced. Capped in bytes, least recently used (by modification time,
//   refreshed on every hit) first out. Processes that write the same entry at
//   once each end up with a correct result and the file with a whole one.
//
// LLVM-free.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_KERNELCACHE_H
#define FUSEC_RUNTIME_KERNELCACHE_H

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace fusec::rt {

/// The compiler version baked into every key: a new release never reads an
/// older release's entries.
extern const char *const kCompilerVersion;

struct KernelCacheOptions {
  /// Empty: $FUSEC_CACHE_DIR, else $HOME/.cache/fusec.
  std::string directory;
  bool useDisk = true;
  int64_t maxDiskBytes = int64_t(1) << 30;
  int64_t maxMemoryBytes = int64_t(256) << 20;
};

struct KernelCacheStats {
  int64_t memoryHits = 0;
  int64_t diskHits = 0;
  int64_t compiles = 0;
  int64_t waits = 0;          ///< callers that waited for another's compile
  int64_t corruptEntries = 0; ///< disk entries found damaged and replaced
  int64_t diskEvictions = 0;
  int64_t memoryEvictions = 0;
  int64_t diskWriteErrors = 0; ///< entries that could not be written (still served)
};

class KernelCache {
public:
  using Blob = std::shared_ptr<const std::string>;
  using CompileFn = std::function<absl::StatusOr<std::string>()>;

  explicit KernelCache(KernelCacheOptions options = {});

  /// A key for `fields` (IR text, target, options, ...) and kCompilerVersion:
  /// 64 hex digits of SHA-256.
  static std::string makeKey(absl::Span<const absl::string_view> fields);

  /// Returns the entry for `key`: from memory, else from disk, else from
  /// `compile` (run once however many threads ask). A failed compile is
  /// returned to every waiter and not cached.
  absl::StatusOr<Blob> getOrCompile(absl::string_view key,
                                    const CompileFn &compile);

  KernelCacheStats stats() const;
  const std::string &directory() const { return dir; }
  /// Where `key`'s entry lives on disk.
  std::string entryPath(absl::string_view key) const;
  /// Drops the in-memory entries (the disk stays).
  void clearMemory();

private:
  struct Entry {
    bool ready = false;
    absl::StatusOr<Blob> result = absl::UnknownError("pending");
    std::list<std::string>::iterator lru;
  };

  absl::StatusOr<Blob> readDisk(const std::string &key);
  void writeDisk(const std::string &key, const std::string &payload);
  void evictDisk(const std::string &keep);
  void evictMemoryLocked();

  KernelCacheOptions options;
  std::string dir;
  mutable std::mutex mu;
  std::condition_variable done;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries;
  std::list<std::string> lru; // most recent first; ready entries only
  int64_t memoryBytes = 0;
  KernelCacheStats counters;
};

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_KERNELCACHE_H
