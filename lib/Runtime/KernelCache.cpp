//===- KernelCache.cpp - In-memory and on-disk cache of kernels -*- C++ -*-===//

#include "fusec/Runtime/KernelCache.h"
#include "fusec/Runtime/Faults.h"
#include "fusec/Support/Sha256.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fusec::rt {

const char *const kCompilerVersion = "fusec-0.1.0";

namespace {

constexpr char kMagic[8] = {'F', 'U', 'S', 'E', 'C', 'K', 'C', '1'};
constexpr const char *kSuffix = ".fkc";

std::string defaultDirectory() {
  if (const char *env = std::getenv("FUSEC_CACHE_DIR"); env && *env)
    return env;
  if (const char *home = std::getenv("HOME"); home && *home)
    return absl::StrCat(home, "/.cache/fusec");
  return "/tmp/fusec-cache";
}

/// mkdir -p
bool makeDirectories(const std::string &path) {
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      partial = path.substr(0, i);
      if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
        return false;
    }
  }
  return true;
}

bool readFile(const std::string &path, std::string *out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return false;
  }
  out->resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = read(fd, out->data() + got, out->size() - got);
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out->resize(got);
  return true;
}

void putU64(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s += static_cast<char>(v >> (8 * i));
}

uint64_t getU64(const char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

/// header: magic, key size, key, payload size, SHA-256 of the payload.
std::string encodeEntry(const std::string &key, const std::string &payload) {
  std::string s(kMagic, 8);
  putU64(s, key.size());
  s += key;
  putU64(s, payload.size());
  auto sum = Sha256::of(payload);
  s.append(reinterpret_cast<const char *>(sum.data()), sum.size());
  s += payload;
  return s;
}

/// The payload of a whole, uncorrupted entry for `key`, or why not.
absl::StatusOr<std::string> decodeEntry(const std::string &key,
                                        const std::string &file) {
  size_t header = 8 + 8 + key.size() + 8 + 32;
  if (file.size() < header || std::memcmp(file.data(), kMagic, 8) != 0)
    return absl::DataLossError("bad header");
  if (getU64(file.data() + 8) != key.size() ||
      file.compare(16, key.size(), key) != 0)
    return absl::DataLossError("key mismatch");
  uint64_t size = getU64(file.data() + 16 + key.size());
  if (file.size() != header + size)
    return absl::DataLossError("truncated or oversized");
  std::string payload = file.substr(header);
  auto sum = Sha256::of(payload);
  if (std::memcmp(sum.data(), file.data() + 24 + key.size(), 32) != 0)
    return absl::DataLossError("checksum mismatch");
  return payload;
}

} // namespace

KernelCache::KernelCache(KernelCacheOptions opts)
    : options(std::move(opts)),
      dir(options.directory.empty() ? defaultDirectory() : options.directory) {}

std::string KernelCache::makeKey(absl::Span<const absl::string_view> fields) {
  Sha256 h;
  h.field(kCompilerVersion);
  for (absl::string_view f : fields)
    h.field(f);
  return h.hexDigest();
}

std::string KernelCache::entryPath(absl::string_view key) const {
  return absl::StrCat(dir, "/", key, kSuffix);
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mu);
  return counters;
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->second->ready)
      it = entries.erase(it);
    else
      ++it;
  }
  lru.clear();
  memoryBytes = 0;
}

absl::StatusOr<KernelCache::Blob>
KernelCache::getOrCompile(absl::string_view keyView, const CompileFn &compile) {
  std::string key(keyView);
  std::shared_ptr<Entry> entry;
  {
    std::unique_lock<std::mutex> lock(mu);
    auto it = entries.find(key);
    if (it != entries.end()) {
      entry = it->second;
      if (entry->ready) {
        ++counters.memoryHits;
        lru.splice(lru.begin(), lru, entry->lru);
        return entry->result;
      }
      ++counters.waits;
      done.wait(lock, [&] { return entry->ready; });
      return entry->result;
    }
    entry = std::make_shared<Entry>();
    entries.emplace(key, entry);
  }

  // This thread owns the key: disk, then compile.
  absl::StatusOr<Blob> result = absl::UnknownError("unset");
  bool fromDisk = false;
  if (options.useDisk) {
    auto blob = readDisk(key);
    if (blob.ok()) {
      result = std::move(blob);
      fromDisk = true;
    }
  }
  if (!fromDisk) {
    absl::StatusOr<std::string> compiled = compile();
    if (compiled.ok()) {
      auto blob = std::make_shared<const std::string>(std::move(*compiled));
      if (options.useDisk)
        writeDisk(key, *blob);
      result = Blob(blob);
    } else {
      result = compiled.status();
    }
  }

  std::lock_guard<std::mutex> lock(mu);
  if (fromDisk)
    ++counters.diskHits;
  else
    ++counters.compiles;
  entry->result = result;
  entry->ready = true;
  if (result.ok()) {
    lru.push_front(key);
    entry->lru = lru.begin();
    memoryBytes += static_cast<int64_t>((*result)->size());
    evictMemoryLocked();
  } else {
    entries.erase(key); // failures are not cached: the next call retries
  }
  done.notify_all();
  return result;
}

void KernelCache::evictMemoryLocked() {
  while (memoryBytes > options.maxMemoryBytes && lru.size() > 1) {
    const std::string &victim = lru.back();
    auto it = entries.find(victim);
    if (it != entries.end()) {
      memoryBytes -= static_cast<int64_t>((*it->second->result)->size());
      entries.erase(it);
    }
    lru.pop_back();
    ++counters.memoryEvictions;
  }
}

absl::StatusOr<KernelCache::Blob> KernelCache::readDisk(const std::string &key) {
  std::string path = entryPath(key);
  std::string file;
  if (!readFile(path, &file))
    return absl::NotFoundError(path);
  auto payload = decodeEntry(key, file);
  if (!payload.ok()) {
    // Damaged: remove it; the caller recompiles and writes a whole one.
    unlink(path.c_str());
    std::lock_guard<std::mutex> lock(mu);
    ++counters.corruptEntries;
    return payload.status();
  }
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0); // most recently used
  return Blob(std::make_shared<const std::string>(std::move(*payload)));
}

void KernelCache::writeDisk(const std::string &key, const std::string &payload) {
  auto fail = [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++counters.diskWriteErrors;
  };
  if (!makeDirectories(dir))
    return fail();
  static std::atomic<uint64_t> counter{0};
  std::string tmp = absl::StrCat(dir, "/.tmp.", key.substr(0, 16), ".", getpid(),
                                 ".", counter.fetch_add(1));
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail();
  std::string data = encodeEntry(key, payload);
  // Injected faults: a disk that fills up half-way (write() fails with
  // ENOSPC), or a process killed half-way through the temporary file.
  size_t limit = data.size();
  bool full = faultFires(FaultSite::CacheWrite);
  bool kill = faultFires(FaultSite::CacheKill);
  if (full || kill)
    limit = data.size() / 2;
  size_t written = 0;
  while (written < limit) {
    ssize_t n = write(fd, data.data() + written, limit - written);
    if (n <= 0)
      break;
    written += static_cast<size_t>(n);
  }
  if (kill) {
    fsync(fd);
    raise(SIGKILL);
  }
  bool ok = written == data.size();
  ok &= close(fd) == 0;
  // rename() is atomic: readers see the old entry, or none, or this one.
  if (!ok || rename(tmp.c_str(), entryPath(key).c_str()) != 0) {
    unlink(tmp.c_str());
    return fail();
  }
  evictDisk(key);
}

void KernelCache::evictDisk(const std::string &keep) {
  DIR *d = opendir(dir.c_str());
  if (!d)
    return;
  struct File {
    std::string path;
    int64_t size;
    struct timespec mtime;
  };
  std::vector<File> files;
  int64_t total = 0;
  std::string keepName = absl::StrCat(keep, kSuffix);
  time_t now = time(nullptr);
  while (struct dirent *e = readdir(d)) {
    std::string name = e->d_name;
    std::string path = absl::StrCat(dir, "/", name);
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (name.rfind(".tmp.", 0) == 0) {
      // A writer that died mid-write leaves its temporary file behind.
      if (now - st.st_mtime > 3600)
        unlink(path.c_str());
      continue;
    }
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, kSuffix) != 0)
      continue;
    total += st.st_size;
    if (name != keepName)
      files.push_back({path, st.st_size, st.st_mtim});
  }
  closedir(d);
  if (total <= options.maxDiskBytes)
    return;
  std::sort(files.begin(), files.end(), [](const File &a, const File &b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  int64_t evicted = 0;
  for (const File &f : files) {
    if (total <= options.maxDiskBytes)
      break;
    if (unlink(f.path.c_str()) == 0) {
      total -= f.size;
      ++evicted;
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  counters.diskEvictions += evicted;
}

} // namespace fusec::rt
