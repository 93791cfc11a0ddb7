//===- RowPlan.h - How a row reduction is laid out ---------------*- C++ -*-===//
//
// The one place that decides how a kernel reducing over trailing dims runs:
// `fusec-tile` records it in fusec.launch and the code generator builds it.
// Header-only and LLVM-free.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_CODEGEN_ROWPLAN_H
#define FUSEC_CODEGEN_ROWPLAN_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fusec {

struct RowPlan {
  /// Elements a thread loads at once: 16 bytes of the widest full-shape
  /// boundary type, or 1 when the row length is not a multiple of that.
  int64_t vector = 1;
  /// Threads per row: a warp, or a CTA of up to 1024 threads.
  int64_t threads = 32;
  /// Chunks of `vector` elements a thread holds per operand.
  int64_t chunks = 1;
  /// 32-bit registers a thread holds for the row (every full-shape input).
  int64_t words = 0;
  /// The row fits in registers (row_warp / row_cta); else it is streamed
  /// (row_stream: a warp per row, a pass per reduction pair).
  bool inRegisters = false;
  /// CTA size and rows per CTA of the kernel.
  int64_t block() const { return inRegisters && threads > 32 ? threads : 256; }
  int64_t rowsPerCta() const { return inRegisters ? block() / threads : block() / 32; }
  const char *strategy() const {
    return !inRegisters ? "row_stream" : threads > 32 ? "row_cta" : "row_warp";
  }
};

/// `rowLength` elements per row, `rows` rows; `widestBytes` the widest
/// full-shape boundary element; `inputBytes` the element size of each
/// full-shape input; `targetChunks` the chunks a thread aims to hold
/// (FUSEC_ROW_CHUNKS, default 4). A thread of a 1024-thread CTA has 64
/// registers: the row may take 32 of them; otherwise 64.
inline RowPlan planRow(int64_t rowLength, int64_t rows, int64_t widestBytes,
                       const std::vector<int64_t> &inputBytes, int64_t targetChunks = 4) {
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  RowPlan p;
  p.vector = 16 / std::max<int64_t>(1, widestBytes);
  if (p.vector < 1 || rowLength % p.vector != 0)
    p.vector = 1;
  while (p.threads < 1024 && p.threads * p.vector * targetChunks < rowLength)
    p.threads *= 2;
  p.chunks = ceilDiv(std::max<int64_t>(rowLength, 1), p.threads * p.vector);
  for (int64_t b : inputBytes)
    p.words += ceilDiv(p.chunks * p.vector * b, 4);
  int64_t budget = p.threads >= 1024 ? 32 : 64;
  p.inRegisters = rowLength > 0 && rows > 0 && p.words <= budget;
  return p;
}

} // namespace fusec

#endif // FUSEC_CODEGEN_ROWPLAN_H
