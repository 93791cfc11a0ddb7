//===- Tile.cpp - Launch and tile parameters from the target ----*- C++ -*-===//

#include "fusec/Passes/Passes.h"
#include "fusec/CodeGen/RowPlan.h"
#include "fusec/Target/Roofline.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace fusec {
#define GEN_PASS_DEF_TILE
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Launch {
  std::string strategy;
  int64_t block = 256, grid = 1, vector = 1, elementsPerThread = 1;
  int64_t rowsPerCta = 0, rowLength = 0, smemBytes = 0, regs = 0;
  int64_t tileM = 0, tileN = 0, tileK = 0, stages = 0;
};

/// Registers a thread needs: the values live at once (boundary inputs, the
/// body's results, reduction accumulators) times the elements each holds,
/// plus a fixed 24 for addressing and loop state.
int64_t estimateRegs(KernelOp kernel, int64_t elementsPerThread) {
  int64_t live = kernel.getInputs().size() + 2;
  kernel.getBody().walk([&](ReduceOp) { live += 1; });
  return 24 + live * elementsPerThread;
}

Launch tileKernel(KernelOp kernel, const Target &t) {
  Launch l;
  int64_t sms = static_cast<int64_t>(t.value("sm_count"));
  int64_t smemPerSm = static_cast<int64_t>(t.value("smem_kib_per_sm") * 1024);
  int64_t registerFile = static_cast<int64_t>(t.value("registers_per_sm"));
  if (registerFile <= 0)
    registerFile = 65536;
  if (smemPerSm <= 0)
    smemPerSm = 228 * 1024;
  // The widest boundary tensor sets the element type of the main stream.
  Type element;
  int64_t biggest = -1;
  for (Value v : llvm::concat<Value>(kernel.getInputs(), kernel.getResults()))
    if (tensorBytes(v.getType()) > biggest) {
      biggest = tensorBytes(v.getType());
      element = getElementTypeOrSelf(v.getType());
    }
  int64_t width = element ? elementBytes(element) : 4;
  l.vector = std::max<int64_t>(1, 16 / width);

  MatmulOp matmul;
  ReduceOp reduce;
  bool movement = false;
  kernel.getBody().walk([&](Operation *op) {
    if (auto m = dyn_cast<MatmulOp>(op))
      matmul = m;
    else if (auto r = dyn_cast<ReduceOp>(op))
      reduce = r;
    else if (isa<TransposeOp, SliceOp, ConcatOp, GatherOp>(op))
      movement = true;
  });

  if (matmul) {
    // Tensor-core tile: 128 x 256 x 64 (bf16/fp16; K 32 for f32), shrunk for
    // small problems; as many pipeline stages as shared memory holds, up to 4.
    auto out = cast<RankedTensorType>(matmul.getType());
    int64_t m = out.getDimSize(out.getRank() - 2), n = out.getDimSize(out.getRank() - 1);
    int64_t in = elementBytes(getElementTypeOrSelf(matmul.getLhs().getType()));
    l.strategy = "matmul";
    l.tileM = m >= 128 ? 128 : 64;
    l.tileN = n >= 256 ? 256 : (n >= 128 ? 128 : 64);
    l.tileK = in >= 4 ? 32 : 64;
    int64_t stageBytes = (l.tileM + l.tileN) * l.tileK * in;
    l.stages = std::clamp<int64_t>((smemPerSm - 8192) / stageBytes, 1, 4);
    l.smemBytes = l.stages * stageBytes;
    l.block = 384; // a producer warpgroup and two consumer warpgroups
    int64_t batch = tensorElements(out) / std::max<int64_t>(1, m * n);
    l.grid = batch * ceilDiv(m, l.tileM) * ceilDiv(n, l.tileN);
    l.regs = 168; // the consumers' accumulators (setmaxnreg), by design
    l.vector = 16 / std::max<int64_t>(1, in);
    return l;
  }

  if (reduce) {
    auto in = cast<RankedTensorType>(reduce.getInput().getType());
    ArrayRef<int64_t> dims = reduce.getDims();
    int64_t rank = in.getRank();
    int64_t rowLength = 1;
    bool inner = true;
    for (int64_t d : dims)
      rowLength *= in.getDimSize(d);
    // Inner if the reduced dims are the trailing ones.
    for (size_t i = 0; i < dims.size(); ++i)
      inner &= llvm::is_contained(dims, rank - 1 - static_cast<int64_t>(i));
    int64_t rows = tensorElements(in) / std::max<int64_t>(1, rowLength);
    l.rowLength = rowLength;
    int64_t reductions = 0;
    kernel.getBody().walk([&](ReduceOp) { ++reductions; });
    // The full-shape boundary tensors (the reduction's domain) set the
    // vector width; what the code generator builds (RowPlan.h for rows).
    int64_t widest = 1;
    std::vector<int64_t> inputBytes;
    for (Value v : kernel.getInputs())
      if (cast<RankedTensorType>(v.getType()).getShape() == in.getShape()) {
        widest = std::max(widest, elementBytes(getElementTypeOrSelf(v.getType())));
        inputBytes.push_back(elementBytes(getElementTypeOrSelf(v.getType())));
      }
    for (Value v : kernel.getResults())
      if (cast<RankedTensorType>(v.getType()).getShape() == in.getShape())
        widest = std::max(widest, elementBytes(getElementTypeOrSelf(v.getType())));
    bool adjacent = true;
    for (int64_t d : dims)
      adjacent &= d >= *std::min_element(dims.begin(), dims.end()) &&
                  d < *std::min_element(dims.begin(), dims.end()) +
                          static_cast<int64_t>(dims.size());
    if (!inner && !adjacent) {
      // Reduced dims apart: a warp per kept position, 8 a CTA, elements
      // found through their coordinates (the code generator's runRows).
      l.strategy = "row_stream";
      l.block = 256;
      l.elementsPerThread = 1;
      l.grid = std::clamp<int64_t>(ceilDiv(rows, 8), 1, 132 * 32);
      l.regs = estimateRegs(kernel, 1);
      return l;
    }
    if (!inner) {
      // Columns: a CTA of 8 warps x 32 column groups of `vector` columns;
      // the warps split the reduced rows and meet in shared memory (f64
      // partials, two parities).
      int64_t innerExtent = 1;
      for (int64_t d = dims.empty() ? rank : *std::max_element(dims.begin(), dims.end()) + 1;
           d < rank; ++d)
        innerExtent *= in.getDimSize(d);
      l.strategy = "column";
      l.block = 256;
      l.vector = 16 / widest;
      if (innerExtent % l.vector != 0)
        l.vector = 1;
      while (l.vector > 1 && 2 * reductions * 256 * l.vector * 8 > 40 * 1024)
        l.vector /= 2;
      l.elementsPerThread = l.vector;
      l.grid = std::max<int64_t>(1, ceilDiv(ceilDiv(rows, l.vector), 32));
      l.smemBytes = 2 * reductions * 256 * l.vector * 8;
      l.regs = estimateRegs(kernel, l.elementsPerThread);
      return l;
    }
    RowPlan plan = planRow(rowLength, rows, widest, inputBytes);
    l.strategy = plan.strategy();
    l.block = plan.block();
    l.rowsPerCta = plan.rowsPerCta();
    l.vector = plan.vector;
    l.elementsPerThread = plan.inRegisters ? plan.chunks * plan.vector : 1;
    l.grid = ceilDiv(rows, std::max<int64_t>(1, l.rowsPerCta));
    // Cross-warp partials of a CTA per row: one f32 per warp slot per
    // reduction, two parities.
    l.smemBytes = plan.inRegisters && plan.threads > 32 ? 2 * reductions * 32 * 4 : 0;
    l.regs = estimateRegs(kernel, l.elementsPerThread);
    (void)registerFile;
    (void)smemPerSm;
    return l;
  }

  // Elementwise, broadcast and movement: 16-byte accesses, a grid-stride
  // loop over at most 32 CTAs per SM.
  l.strategy = movement ? "movement" : "elementwise";
  l.block = 256;
  l.elementsPerThread = l.vector;
  int64_t elements = 1;
  for (Value r : kernel.getResults())
    elements = std::max(elements, tensorElements(r.getType()));
  l.grid = std::clamp<int64_t>(ceilDiv(elements, l.block * l.elementsPerThread), 1, sms * 32);
  l.regs = estimateRegs(kernel, l.elementsPerThread);
  while ((l.regs > 255 || l.regs * l.block > registerFile) && l.elementsPerThread > 1) {
    l.elementsPerThread /= 2;
    l.regs = estimateRegs(kernel, l.elementsPerThread);
  }
  return l;
}

class TilePass : public fusec::impl::TileBase<TilePass> {
public:
  using TileBase::TileBase;

  void runOnOperation() override {
    auto loaded = loadTargetFor(getOperation(), "fusec-tile", target);
    if (!loaded)
      return signalPassFailure();
    Builder b(&getContext());
    getOperation().walk([&](KernelOp kernel) {
      Launch l = tileKernel(kernel, *loaded);
      SmallVector<NamedAttribute> fields = {
          b.getNamedAttr("strategy", b.getStringAttr(l.strategy)),
          b.getNamedAttr("block", b.getI64IntegerAttr(l.block)),
          b.getNamedAttr("grid", b.getI64IntegerAttr(l.grid)),
          b.getNamedAttr("vector", b.getI64IntegerAttr(l.vector)),
          b.getNamedAttr("elements_per_thread", b.getI64IntegerAttr(l.elementsPerThread)),
          b.getNamedAttr("smem_bytes", b.getI64IntegerAttr(l.smemBytes)),
          b.getNamedAttr("regs_estimate", b.getI64IntegerAttr(l.regs)),
      };
      if (l.rowLength) {
        fields.push_back(b.getNamedAttr("row_length", b.getI64IntegerAttr(l.rowLength)));
        fields.push_back(b.getNamedAttr("rows_per_cta", b.getI64IntegerAttr(l.rowsPerCta)));
      }
      if (l.tileM) {
        fields.push_back(b.getNamedAttr(
            "tile", b.getDenseI64ArrayAttr({l.tileM, l.tileN, l.tileK})));
        fields.push_back(b.getNamedAttr("stages", b.getI64IntegerAttr(l.stages)));
      }
      kernel->setAttr("fusec.launch", b.getDictionaryAttr(fields));
    });
  }
};

} // namespace
