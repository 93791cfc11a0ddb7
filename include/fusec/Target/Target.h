//===- Target.h - GPU targets as data ---------------------------*- C++ -*-===//
//
// A target is a JSON file of figures, each with the source it came from
// (datasheet, the seeds' B200 table, a measurement). The built-in targets are
// lib/Target/targets/*.json, compiled in; any other path is read at run time.
// A file may name a `base` target and give only some figures: a file measured
// on a device (fusec-calibrate) overrides the figures it measured.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TARGET_TARGET_H
#define FUSEC_TARGET_TARGET_H

#include "fusec/Support/HostTensor.h"

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <map>
#include <string>
#include <vector>

namespace fusec {

struct Figure {
  double value = 0;
  std::string source;
};

/// A code-generation choice a target makes (its "codegen" section), such as
/// which 16-byte load streams best, with where it came from.
struct Choice {
  std::string value;
  std::string source;
};

class Target {
public:
  /// A built-in name (b200, h200, h100, h200-measured) or a path to a file.
  static absl::StatusOr<Target> load(absl::string_view nameOrPath);
  /// Parses a target file's text; `origin` names it in errors.
  static absl::StatusOr<Target> parse(absl::string_view json,
                                      absl::string_view origin);
  static std::vector<std::string> builtinNames();
  /// Every figure a target file may give, with what it means.
  static const std::map<std::string, std::string> &knownFigures();
  /// Every codegen choice a target file may make: what it means and the
  /// values it may take.
  static const std::map<std::string, std::pair<std::string, std::vector<std::string>>> &
  knownChoices();

  const std::string &name() const { return targetName; }
  const std::string &description() const { return desc; }
  const std::string &arch() const { return archName; }
  const std::map<std::string, Figure> &figures() const { return figs; }
  /// The figure's value, or 0 if the target does not give it.
  double value(absl::string_view key) const;
  std::string source(absl::string_view key) const;
  /// The codegen choice's value, or "" if the target makes none.
  std::string choice(absl::string_view key) const;
  std::string choiceSource(absl::string_view key) const;

  // The roofs, in base units.
  double hbmBytesPerSecond() const;
  double fp32FlopsPerSecond() const;
  /// Dense tensor-core rate for operands of `type`: fp8 types use the fp8
  /// rate, bf16 and f16 theirs, f32 the tf32 rate.
  double tensorFlopsPerSecond(DType type) const;
  /// Transcendental (SFU) operations per second: the ex2 rate per clock per
  /// SM times SMs times clock. fusec costs every SFU op (ex2, lg2, rsqrt, rcp,
  /// tanh) at this rate.
  double sfuOpsPerSecond() const;
  double launchSeconds() const;
  /// The fraction of the tensor rate a generated GEMM's mainloop reaches
  /// ("tensor_efficiency"; 1 when the target does not say).
  double tensorEfficiency() const;

private:
  static absl::StatusOr<Target> loadWithDepth(absl::string_view nameOrPath,
                                              int depth);
  static absl::StatusOr<Target> parseWithDepth(absl::string_view json,
                                               absl::string_view origin,
                                               int depth);
  std::string targetName, desc, archName;
  std::map<std::string, Figure> figs;
  std::map<std::string, Choice> choiceValues;
};

} // namespace fusec

#endif // FUSEC_TARGET_TARGET_H
