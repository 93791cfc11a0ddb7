//===- Faults.cpp - Fault injection for the runtime's failure paths -------===//

#include "fusec/Runtime/Faults.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace fusec::rt {

namespace {

constexpr const char *kNames[kFaultSites] = {"driver", "nvjitlink", "alloc",
                                             "module", "cache-write", "cache-kill"};

struct Fault {
  bool armed = false;
  int64_t remaining = 0; // events until the one that fails; 0: every event
};

struct Faults {
  std::mutex mu;
  Fault sites[kFaultSites];
  bool fromEnvironment = false;
};

Faults &faults() {
  static Faults *f = new Faults();
  return *f;
}

void setLocked(Faults &f, FaultSite site, int64_t nth) {
  f.sites[static_cast<int>(site)] = Fault{true, nth};
}

absl::Status parseLocked(Faults &f, absl::string_view spec) {
  for (absl::string_view item : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    absl::string_view name = item;
    int64_t nth = 0;
    if (size_t at = item.find('@'); at != absl::string_view::npos) {
      name = item.substr(0, at);
      if (!absl::SimpleAtoi(item.substr(at + 1), &nth) || nth < 1)
        return absl::InvalidArgumentError(absl::StrCat(
            "FUSEC_INJECT_FAULTS: '", item, "': the event number after '@' must be >= 1"));
    }
    int site = -1;
    for (int i = 0; i < kFaultSites; ++i)
      if (name == kNames[i])
        site = i;
    if (site < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "FUSEC_INJECT_FAULTS: unknown site '", name,
          "' (driver, nvjitlink, alloc, module, cache-write, cache-kill)"));
    setLocked(f, static_cast<FaultSite>(site), nth);
  }
  return absl::OkStatus();
}

std::atomic<int64_t> liveBytes{0};

} // namespace

const char *faultSiteName(FaultSite site) { return kNames[static_cast<int>(site)]; }

void injectFault(FaultSite site, int64_t nth) {
  Faults &f = faults();
  std::lock_guard<std::mutex> lock(f.mu);
  f.fromEnvironment = true; // an explicit fault wins over the environment
  setLocked(f, site, nth < 0 ? 0 : nth);
}

void clearFaults() {
  Faults &f = faults();
  std::lock_guard<std::mutex> lock(f.mu);
  f.fromEnvironment = true;
  for (Fault &s : f.sites)
    s = Fault{};
}

absl::Status injectFaults(absl::string_view spec) {
  Faults &f = faults();
  std::lock_guard<std::mutex> lock(f.mu);
  f.fromEnvironment = true;
  return parseLocked(f, spec);
}

absl::Status loadFaultsFromEnvironment() {
  Faults &f = faults();
  std::lock_guard<std::mutex> lock(f.mu);
  f.fromEnvironment = true;
  for (Fault &s : f.sites)
    s = Fault{};
  const char *env = std::getenv("FUSEC_INJECT_FAULTS");
  return env ? parseLocked(f, env) : absl::OkStatus();
}

bool faultFires(FaultSite site) {
  Faults &f = faults();
  std::lock_guard<std::mutex> lock(f.mu);
  if (!f.fromEnvironment) {
    f.fromEnvironment = true;
    if (const char *env = std::getenv("FUSEC_INJECT_FAULTS"); env && *env) {
      // A malformed list is a mistake in a testing switch: say so and stop
      // rather than run without the faults that were asked for.
      if (absl::Status st = parseLocked(f, env); !st.ok()) {
        fprintf(stderr, "fusec: %s\n", std::string(st.message()).c_str());
        std::exit(2);
      }
    }
  }
  Fault &s = f.sites[static_cast<int>(site)];
  if (!s.armed)
    return false;
  if (s.remaining == 0)
    return true; // every event
  if (--s.remaining > 0)
    return false;
  s.armed = false; // the N-th event: fails once
  return true;
}

int64_t liveDeviceBytes() { return liveBytes.load(); }

namespace detail {
void addLiveDeviceBytes(int64_t delta) { liveBytes.fetch_add(delta); }
} // namespace detail

} // namespace fusec::rt
