//===- Cost.h - The roofline cost of an op ----------------------*- C++ -*-===//
//
// A plain value type, free of MLIR, so that the runtime, the report and the
// tests can share it.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_IR_COST_H
#define FUSEC_IR_COST_H

#include <cstdint>

namespace fusec {

/// The work an op or kernel does: FLOPs, device-memory bytes and
/// transcendental (SFU) operations.
struct OpCost {
  int64_t flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  int64_t sfuOps = 0;

  /// Saturating: the figures of a valid graph may pass int64; they stop at
  /// INT64_MAX rather than wrap.
  static int64_t saturatingAdd(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
  }
  int64_t bytes() const { return saturatingAdd(bytesRead, bytesWritten); }
  /// Arithmetic intensity in FLOP/byte; 0 for an op that moves no bytes.
  double intensity() const {
    return bytes() == 0 ? 0.0 : static_cast<double>(flops) / bytes();
  }
  OpCost &operator+=(const OpCost &o) {
    flops = saturatingAdd(flops, o.flops);
    bytesRead = saturatingAdd(bytesRead, o.bytesRead);
    bytesWritten = saturatingAdd(bytesWritten, o.bytesWritten);
    sfuOps = saturatingAdd(sfuOps, o.sfuOps);
    return *this;
  }
  bool operator==(const OpCost &o) const {
    return flops == o.flops && bytesRead == o.bytesRead &&
           bytesWritten == o.bytesWritten && sfuOps == o.sfuOps;
  }
};

} // namespace fusec

#endif // FUSEC_IR_COST_H
