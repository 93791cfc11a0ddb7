//===- Faults.h - Fault injection for the runtime's failure paths -*- C++ -*-===//
//
// Tests make the runtime's external dependencies fail on purpose, to check
// that each failure gives a clean error, no wrong result, and a process and
// kernel cache that stay usable. Each site is one point where the outside
// world can fail:
//
//   driver      loading libcuda.so.1 (as if no driver were installed)
//   nvjitlink   compiling PTX with nvJitLink (as if it rejected the PTX)
//   alloc       cuMemAlloc (as if the device were out of memory)
//   module      cuModuleLoadData (as if the driver could not load a cubin)
//   cache-write writing a kernel-cache entry (as if the disk were full)
//   cache-kill  writing a kernel-cache entry: the process is killed (SIGKILL)
//               half-way through the temporary file
//
// A fault fails the N-th event at its site counted from when it is set
// (site@N), or every event (site alone). Faults come from injectFault() or,
// once at the first event of any site, from the FUSEC_INJECT_FAULTS
// environment variable: a comma-separated list such as "alloc@3,nvjitlink".
// Every injected failure says "(injected fault)" in its message.
//
// LLVM-free, thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_FAULTS_H
#define FUSEC_RUNTIME_FAULTS_H

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include <cstdint>

namespace fusec::rt {

enum class FaultSite { Driver, JitLink, Alloc, Module, CacheWrite, CacheKill };
constexpr int kFaultSites = 6;

/// The site's name as FUSEC_INJECT_FAULTS spells it.
const char *faultSiteName(FaultSite site);

/// Fails the `nth` event at `site` from now (1 = the next), or every one
/// when `nth` is 0. Replaces what was set for that site.
void injectFault(FaultSite site, int64_t nth = 1);
/// Removes every fault (those of FUSEC_INJECT_FAULTS too).
void clearFaults();
/// Parses a FUSEC_INJECT_FAULTS list and sets its faults.
absl::Status injectFaults(absl::string_view spec);
/// Clears every fault and sets those of $FUSEC_INJECT_FAULTS now (the first
/// event at any site does this once by itself).
absl::Status loadFaultsFromEnvironment();

/// Counts an event at `site`: true if it must fail.
bool faultFires(FaultSite site);

/// Live bytes of device memory allocated through DeviceBuffer: a failed setup
/// must give all of its allocations back.
int64_t liveDeviceBytes();

namespace detail {
void addLiveDeviceBytes(int64_t delta);
} // namespace detail

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_FAULTS_H
