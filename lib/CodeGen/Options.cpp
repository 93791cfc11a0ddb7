//===- Options.cpp - Code-generation settings and their overrides -*- C++ -*-===//
//
// The load variants by name, and the environment overrides the tools read
// once at start-up (passes never read the environment).
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/CodeGen.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include <cstdlib>

namespace fusec {

std::optional<StreamLoad> parseStreamLoad(absl::string_view name) {
  if (name == "plain")
    return StreamLoad::Plain;
  if (name == "no_allocate")
    return StreamLoad::NoAllocate;
  if (name == "l2_256b")
    return StreamLoad::L2_256B;
  if (name == "evict_first")
    return StreamLoad::EvictFirst;
  return std::nullopt;
}

std::optional<KeepLoad> parseKeepLoad(absl::string_view name) {
  if (name == "plain")
    return KeepLoad::Plain;
  if (name == "evict_last")
    return KeepLoad::EvictLast;
  if (name == "nc")
    return KeepLoad::NC;
  return std::nullopt;
}

const char *streamLoadName(StreamLoad load) {
  switch (load) {
  case StreamLoad::Plain:
    return "plain";
  case StreamLoad::NoAllocate:
    return "no_allocate";
  case StreamLoad::L2_256B:
    return "l2_256b";
  case StreamLoad::EvictFirst:
    return "evict_first";
  }
  return "plain";
}

const char *keepLoadName(KeepLoad load) {
  switch (load) {
  case KeepLoad::Plain:
    return "plain";
  case KeepLoad::EvictLast:
    return "evict_last";
  case KeepLoad::NC:
    return "nc";
  }
  return "plain";
}

absl::StatusOr<CodeGenOverrides> codeGenOverridesFromEnvironment() {
  CodeGenOverrides o;
  if (const char *v = std::getenv("FUSEC_DISABLE_AGGRESSIVE_PTX"); v && *v)
    o.disableAggressivePtx = std::string(v) != "0";
  if (const char *v = std::getenv("FUSEC_PDL"); v && *v) {
    if (std::string(v) != "0" && std::string(v) != "1")
      return absl::InvalidArgumentError(absl::StrCat("FUSEC_PDL='", v, "' is not 0 or 1"));
    o.disablePdl = std::string(v) == "0";
  }
  if (const char *v = std::getenv("FUSEC_STREAM_LOAD"); v && *v) {
    o.streamLoad = parseStreamLoad(v);
    if (!o.streamLoad)
      return absl::InvalidArgumentError(absl::StrCat(
          "FUSEC_STREAM_LOAD='", v, "' is not plain, no_allocate, l2_256b or evict_first"));
  }
  if (const char *v = std::getenv("FUSEC_KEEP_LOAD"); v && *v) {
    o.keepLoad = parseKeepLoad(v);
    if (!o.keepLoad)
      return absl::InvalidArgumentError(
          absl::StrCat("FUSEC_KEEP_LOAD='", v, "' is not plain, evict_last or nc"));
  }
  if (const char *v = std::getenv("FUSEC_ROW_CHUNKS"); v && *v) {
    int64_t chunks = 0;
    if (!absl::SimpleAtoi(v, &chunks) || chunks < 1 || chunks > 16)
      return absl::InvalidArgumentError(
          absl::StrCat("FUSEC_ROW_CHUNKS='", v, "' is not a number from 1 to 16"));
    o.rowChunks = chunks;
  }
  return o;
}

namespace {
CodeGenOverrides &overrides() {
  static CodeGenOverrides o;
  return o;
}
} // namespace

const CodeGenOverrides &codeGenOverrides() { return overrides(); }
void setCodeGenOverrides(const CodeGenOverrides &o) { overrides() = o; }

} // namespace fusec
