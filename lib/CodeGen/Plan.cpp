//===- Plan.cpp - The launch plan: one place chooses the strategy -*- C++ -*-===//
//
// analyzeKernel finds what a kernel iterates over; planLaunch turns that into
// a #fusec.launch on a target. fusec-tile writes the plan on every kernel,
// and the code generator builds exactly what it says (it plans a kernel that
// carries none with this same function).
//
// The rules (measured on the H200, bench/results/2026-11-30-h200-rows-tuned):
// - elementwise and movement kernels: 256 threads, 16-byte chunks of the
//   widest boundary type, a grid-stride loop over at most 32 CTAs per SM;
// - reductions over trailing dims: the row in registers by a warp or a CTA
//   (RowPlan.h), else streamed by a warp (online softmax, Welford);
// - reductions over leading or middle dims: 8 warps x 32 column groups per
//   CTA, f64 partials in shared memory;
// - matmuls: tensor cores where the architecture has a strategy for them,
//   else the SIMT fallback.
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/LaunchPlan.h"
#include "fusec/CodeGen/RowPlan.h"
#include "fusec/Target/Target.h"

#include "mlir/IR/Builders.h"

#include <algorithm>

using namespace mlir;

namespace fusec {

namespace {
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

KernelShape analyzeKernel(KernelOp kernel) {
  KernelShape s;
  Block &body = kernel.getBody().front();
  body.walk([&](Operation *op) {
    if (auto r = dyn_cast<ReduceOp>(op))
      s.reductions.push_back(r);
    else if (auto m = dyn_cast<MatmulOp>(op))
      s.matmul = m;
    else if (isa<TransposeOp, SliceOp, ConcatOp, GatherOp>(op))
      s.movement = true;
  });
  if (!s.reductions.empty()) {
    // Fusion groups reductions of one signature: the first one's input is
    // the domain, its dims the reduced ones.
    auto in = cast<RankedTensorType>(s.reductions[0].getInput().getType());
    s.domain.assign(in.getShape().begin(), in.getShape().end());
    SmallVector<int64_t> dims(s.reductions[0].getDims());
    llvm::sort(dims);
    int64_t rank = in.getRank();
    s.rowLength = 1;
    bool trailing = true, contiguous = true;
    for (auto [i, d] : llvm::enumerate(dims)) {
      trailing &= d == rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(i);
      contiguous &= d == dims[0] + static_cast<int64_t>(i);
      s.rowLength *= in.getDimSize(d);
    }
    s.rows = s.rowLength ? in.getNumElements() / s.rowLength : 0;
    if (!trailing && !contiguous) {
      s.kind = KernelShape::Kind::RowsApart;
      for (int64_t d = 0; d < rank; ++d)
        (llvm::is_contained(dims, d) ? s.reducedDims : s.keptDims).push_back(d);
    } else if (!trailing) {
      s.kind = KernelShape::Kind::Columns;
      for (int64_t d = dims.back() + 1; d < rank; ++d)
        s.columnInner *= in.getDimSize(d);
    } else {
      s.kind = KernelShape::Kind::Rows;
    }
    return s;
  }
  if (body.getTerminator()->getNumOperands())
    s.domain.assign(
        cast<RankedTensorType>(body.getTerminator()->getOperand(0).getType()).getShape().begin(),
        cast<RankedTensorType>(body.getTerminator()->getOperand(0).getType()).getShape().end());
  if (s.matmul)
    s.kind = KernelShape::Kind::Matmul;
  return s;
}

LaunchAttr planLaunch(KernelOp kernel, const Target &target, const PlanOptions &options) {
  MLIRContext *ctx = kernel.getContext();
  KernelShape s = analyzeKernel(kernel);
  Block &body = kernel.getBody().front();
  int64_t sms = std::max<int64_t>(1, static_cast<int64_t>(target.value("sm_count")));
  auto isFull = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape() == ArrayRef<int64_t>(s.domain);
  };
  // The widest element of the boundary (of the full-shape boundary, for
  // reductions) sets the 16-byte vector.
  auto widest = [&](bool fullOnly) {
    int64_t w = 1;
    for (Value v : llvm::concat<Value>(body.getArguments(), body.getTerminator()->getOperands()))
      if (!fullOnly || isFull(v))
        w = std::max(w, elementBytes(getElementTypeOrSelf(v.getType())));
    return w;
  };
  // Registers a thread needs: the boundary inputs, the body's results and
  // the reductions' accumulators, each times the elements a thread holds,
  // plus 24 for addressing and loop state (an estimate, capped at 255).
  auto regs = [&](int64_t elementsPerThread) {
    int64_t live = kernel.getInputs().size() + 2 + s.reductions.size();
    return std::min<int64_t>(255, 24 + live * elementsPerThread);
  };
  int64_t reductions = static_cast<int64_t>(s.reductions.size());

  switch (s.kind) {
  case KernelShape::Kind::Rows: {
    std::vector<int64_t> inputBytes;
    for (BlockArgument a : body.getArguments())
      if (isFull(a))
        inputBytes.push_back(elementBytes(getElementTypeOrSelf(a.getType())));
    RowPlan p = planRow(s.rowLength, s.rows, widest(true), inputBytes, options.rowChunks);
    if (p.inRegisters) {
      bool cta = p.threads > 32;
      int64_t block = p.block(), perCta = p.rowsPerCta();
      // Cross-warp partials of a CTA per row: one f32 per warp slot per
      // reduction, two parities.
      return LaunchAttr::get(
          ctx, cta ? Strategy::row_cta : Strategy::row_warp,
          std::clamp<int64_t>(ceilDiv(s.rows, perCta), 1, sms * (2048 / block) * 4), block,
          p.vector, p.chunks, perCta, {}, 0, 1, cta ? 2 * reductions * 32 * 4 : 0,
          regs(p.chunks * p.vector));
    }
    [[fallthrough]];
  }
  case KernelShape::Kind::RowsApart:
    // A warp per row, 8 rows a CTA; a pass over the row per reduction pair.
    return LaunchAttr::get(ctx, Strategy::row_stream,
                           std::clamp<int64_t>(ceilDiv(s.rows, 8), 1, sms * 32), 256, 1, 1, 8,
                           {}, 0, 1, 0, regs(1));
  case KernelShape::Kind::Columns: {
    int64_t vector = 16 / widest(true);
    if (s.columnInner % vector != 0)
      vector = 1;
    // f64 partials of 8 slices x 32 column groups, two parities, under 40 KiB.
    while (vector > 1 && 2 * reductions * 256 * vector * 8 > 40 * 1024)
      vector /= 2;
    int64_t tiles = ceilDiv(ceilDiv(s.rows, vector), 32);
    return LaunchAttr::get(ctx, Strategy::column, std::clamp<int64_t>(tiles, 1, sms * 8), 256,
                           vector, 1, 0, {}, 0, 1, 2 * reductions * 256 * vector * 8,
                           regs(vector));
  }
  case KernelShape::Kind::Matmul:
  case KernelShape::Kind::Elementwise: {
    int64_t elements = 1;
    for (int64_t d : s.domain)
      elements *= d;
    // A thread per output element of a matmul: its K loop is the work, so
    // vector lanes would only multiply the code.
    bool matmul = s.kind == KernelShape::Kind::Matmul;
    int64_t vector = matmul ? 1 : std::max<int64_t>(1, 16 / widest(false));
    int64_t chunks = ceilDiv(elements, vector);
    Strategy strategy = matmul       ? Strategy::matmul_simt
                        : s.movement ? Strategy::movement
                                     : Strategy::elementwise;
    return LaunchAttr::get(ctx, strategy, std::clamp<int64_t>(ceilDiv(chunks, 256), 1, sms * 32),
                           256, vector, 1, 0, {}, 0, 1, 0, regs(vector));
  }
  }
  llvm_unreachable("unknown kernel kind");
}

} // namespace fusec
