//===- Target.cpp - GPU targets as data -------------------------*- C++ -*-===//

#include "fusec/Target/Target.h"

#include "absl/strings/str_cat.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace fusec {

namespace {

struct Builtin {
  const char *name;
  const char *json;
};

const Builtin kBuiltins[] = {
#include "BuiltinTargets.inc"
};

/// Figures every usable target must have (after its base is applied).
const char *const kRequired[] = {"sm_count",     "clock_ghz",
                                 "hbm_tb_per_s", "fp32_tflops",
                                 "tensor_tflops_bf16",
                                 "sfu_ex2_per_clock_per_sm", "launch_us"};

} // namespace

const std::map<std::string, std::string> &Target::knownFigures() {
  static const std::map<std::string, std::string> known = {
      {"sm_count", "streaming multiprocessors"},
      {"clock_ghz", "SM clock under load, GHz"},
      {"hbm_tb_per_s", "device-memory bandwidth, TB/s (bytes read + written)"},
      {"l2_mib", "L2 cache, MiB"},
      {"smem_kib_per_sm", "shared memory per SM, KiB"},
      {"smem_bytes_per_clock_per_sm", "shared-memory bandwidth per SM, bytes per clock"},
      {"registers_per_sm", "32-bit registers per SM"},
      {"tmem_kib_per_sm", "tensor memory per SM, KiB (Blackwell)"},
      {"fp32_tflops", "FP32 FMA-unit rate, TFLOP/s (an FMA is 2 FLOPs)"},
      {"tensor_tflops_fp8", "dense fp8 tensor-core rate, TFLOP/s"},
      {"tensor_tflops_bf16", "dense bf16 tensor-core rate, TFLOP/s"},
      {"tensor_tflops_fp16", "dense fp16 tensor-core rate, TFLOP/s"},
      {"tensor_tflops_tf32", "dense tf32 tensor-core rate, TFLOP/s"},
      {"sfu_ex2_per_clock_per_sm", "SFU ex2 per clock per SM"},
      {"sfu_rsqrt_per_clock_per_sm", "SFU rsqrt per clock per SM"},
      {"launch_us", "cost of one kernel launch in a sequence, microseconds"},
      {"tensor_efficiency", "the fraction of the tensor rate a generated GEMM's mainloop reaches"},
      {"gemm_latency_us",
       "a tensor-core GEMM kernel's pipeline fill and drain beyond its roof, microseconds"},
      {"gemm_latency_swapped_us",
       "the same for the swapped decode tile (fewer than 64 rows), microseconds"},
      {"attention_tensor_efficiency",
       "the fraction of the tensor rate the attention intrinsic's QK and PV GEMMs reach"},
      {"attention_softmax_scores_per_clock_per_sm",
       "the attention intrinsic's softmax rate beside its GEMMs, scores per clock per SM"},
      {"attention_tile_us",
       "the attention intrinsic's cost a wave of tiles beyond their key blocks, microseconds"},
  };
  return known;
}

const std::map<std::string, std::pair<std::string, std::vector<std::string>>> &
Target::knownChoices() {
  static const std::map<std::string, std::pair<std::string, std::vector<std::string>>> known = {
      {"stream_load",
       {"the 16-byte load of tensors read once",
        {"plain", "no_allocate", "l2_256b", "evict_first"}}},
      {"keep_load",
       {"the 16-byte load of tensors re-read by many CTAs", {"plain", "evict_last", "nc"}}},
  };
  return known;
}

std::string Target::choice(absl::string_view key) const {
  auto it = choiceValues.find(std::string(key));
  return it == choiceValues.end() ? "" : it->second.value;
}

std::string Target::choiceSource(absl::string_view key) const {
  auto it = choiceValues.find(std::string(key));
  return it == choiceValues.end() ? "" : it->second.source;
}

std::vector<std::string> Target::builtinNames() {
  std::vector<std::string> names;
  for (const Builtin &b : kBuiltins)
    names.push_back(b.name);
  return names;
}

absl::StatusOr<Target> Target::load(absl::string_view nameOrPath) {
  return loadWithDepth(nameOrPath, 0);
}

absl::StatusOr<Target> Target::parse(absl::string_view json,
                                     absl::string_view origin) {
  return parseWithDepth(json, origin, 0);
}

double Target::value(absl::string_view key) const {
  auto it = figs.find(std::string(key));
  return it == figs.end() ? 0.0 : it->second.value;
}

std::string Target::source(absl::string_view key) const {
  auto it = figs.find(std::string(key));
  return it == figs.end() ? "" : it->second.source;
}

double Target::hbmBytesPerSecond() const { return value("hbm_tb_per_s") * 1e12; }
double Target::fp32FlopsPerSecond() const { return value("fp32_tflops") * 1e12; }

double Target::tensorFlopsPerSecond(DType type) const {
  const char *key = "tensor_tflops_bf16";
  switch (type) {
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    key = "tensor_tflops_fp8";
    break;
  case DType::F16:
    key = "tensor_tflops_fp16";
    break;
  case DType::F32:
    key = "tensor_tflops_tf32";
    break;
  default:
    break;
  }
  double v = value(key);
  return (v > 0 ? v : value("tensor_tflops_bf16")) * 1e12;
}

double Target::sfuOpsPerSecond() const {
  return value("sfu_ex2_per_clock_per_sm") * value("sm_count") *
         value("clock_ghz") * 1e9;
}

double Target::launchSeconds() const { return value("launch_us") * 1e-6; }

double Target::tensorEfficiency() const {
  double e = value("tensor_efficiency");
  return e > 0 && e <= 1 ? e : 1.0;
}

absl::StatusOr<Target> Target::loadWithDepth(absl::string_view nameOrPath,
                                             int depth) {
  for (const Builtin &b : kBuiltins)
    if (nameOrPath == b.name)
      return parseWithDepth(b.json, absl::StrCat("built-in target '", b.name, "'"),
                       depth);
  auto buffer = llvm::MemoryBuffer::getFile(
      llvm::StringRef(nameOrPath.data(), nameOrPath.size()));
  if (!buffer) {
    std::string names;
    for (const Builtin &b : kBuiltins)
      absl::StrAppend(&names, names.empty() ? "" : ", ", b.name);
    return absl::NotFoundError(absl::StrCat(
        "unknown target '", std::string(nameOrPath), "': not a built-in (",
        names, ") and not a readable file (", buffer.getError().message(),
        ")"));
  }
  llvm::StringRef text = (*buffer)->getBuffer();
  return parseWithDepth(absl::string_view(text.data(), text.size()),
                        nameOrPath, depth);
}

absl::StatusOr<Target> Target::parseWithDepth(absl::string_view text,
                                              absl::string_view originView,
                                              int depth) {
  std::string origin(originView);
  auto invalid = [&](const std::string &msg) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", msg));
  };
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse(llvm::StringRef(text.data(), text.size()));
  if (!parsed)
    return invalid(absl::StrCat("not valid JSON: ",
                                llvm::toString(parsed.takeError())));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return invalid("expected a JSON object");

  Target target;
  if (auto base = root->getString("base")) {
    if (depth > 4)
      return invalid("'base' chain too deep");
    auto b = loadWithDepth(base->str(), depth + 1);
    if (!b.ok())
      return invalid(absl::StrCat("base target: ", b.status().message()));
    target = std::move(*b);
  }
  Target result = target;
  if (auto name = root->getString("name"))
    result.targetName = name->str();
  if (auto d = root->getString("description"))
    result.desc = d->str();
  if (auto a = root->getString("arch"))
    result.archName = a->str();
  for (const auto &kv : *root) {
    llvm::StringRef key = kv.first;
    if (key != "name" && key != "description" && key != "arch" &&
        key != "base" && key != "figures" && key != "measured" && key != "codegen")
      return invalid(absl::StrCat("unknown key '", key.str(), "'"));
  }
  const llvm::json::Object *figures = root->getObject("figures");
  if (!figures)
    return invalid("expected an object 'figures'");
  for (const auto &kv : *figures) {
    std::string key = kv.first.str();
    if (!Target::knownFigures().count(key))
      return invalid(absl::StrCat("unknown figure '", key, "'"));
    const llvm::json::Object *fig = kv.second.getAsObject();
    std::optional<double> value = fig ? fig->getNumber("value") : std::nullopt;
    std::optional<llvm::StringRef> source =
        fig ? fig->getString("source") : std::nullopt;
    if (!value || !source)
      return invalid(absl::StrCat("figure '", key,
                                  "' needs a numeric 'value' and a 'source'"));
    if (!(*value > 0))
      return invalid(absl::StrCat("figure '", key, "' is ", *value,
                                  ", expected a positive value"));
    result.figs[key] = Figure{*value, source->str()};
  }
  if (const llvm::json::Object *codegen = root->getObject("codegen")) {
    for (const auto &kv : *codegen) {
      std::string key = kv.first.str();
      auto known = Target::knownChoices().find(key);
      if (known == Target::knownChoices().end())
        return invalid(absl::StrCat("unknown codegen choice '", key, "'"));
      const llvm::json::Object *c = kv.second.getAsObject();
      std::optional<llvm::StringRef> value = c ? c->getString("value") : std::nullopt;
      std::optional<llvm::StringRef> source = c ? c->getString("source") : std::nullopt;
      if (!value || !source)
        return invalid(absl::StrCat("codegen choice '", key,
                                    "' needs a string 'value' and a 'source'"));
      if (!llvm::is_contained(known->second.second, value->str()))
        return invalid(absl::StrCat("codegen choice '", key, "' is '", value->str(),
                                    "', not one of its values"));
      result.choiceValues[key] = Choice{value->str(), source->str()};
    }
  }
  if (result.targetName.empty())
    return invalid("no 'name'");
  for (const char *req : kRequired)
    if (!result.figs.count(req))
      return invalid(absl::StrCat("missing figure '", req, "'"));
  return result;
}

} // namespace fusec
