//===- MatmulSimt.cpp - matmul_simt: a thread per output element -*- C++ -*-===//
//
// The correctness fallback for matmuls the tensor-core strategies do not
// take (f32 operands, tiny or odd shapes, architectures without one): the
// elementwise grid-stride loop with vector 1, where each output element runs
// an f32 fma loop over K and then its epilogue. Batch dims broadcast
// (aligned from the right, a dim of 1 repeats); transposed operands read
// through their index. No tensor cores, no reuse through shared memory: it
// runs 100x or more under the roofline. lit: test/lit/CodeGen/matmul-simt.mlir.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

using namespace mlir;

namespace fusec::codegen {

namespace {

class MatmulSimtEmitter : public ElementwiseEmitter {
public:
  using ElementwiseEmitter::ElementwiseEmitter;

protected:
  absl::StatusOr<Value> matmul(MatmulOp mm, Value index, int lane) override {
    auto shape = cast<RankedTensorType>(mm.getType()).getShape();
    auto lhs = cast<RankedTensorType>(mm.getLhs().getType()).getShape();
    auto rhs = cast<RankedTensorType>(mm.getRhs().getType()).getShape();
    auto c = coordinates(index, shape);
    size_t r = shape.size();
    int64_t kExtent = mm.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
    // Batch coordinates align from the right; a batch dim of 1 broadcasts.
    auto operandIndex = [&](ArrayRef<int64_t> s, Value row, Value col, bool transposed) {
      SmallVector<Value> oc;
      for (size_t i = 0; i + 2 < s.size(); ++i)
        oc.push_back(s[i] == 1 ? e.i64c(0) : c[i + r - s.size()]);
      oc.push_back(transposed ? col : row);
      oc.push_back(transposed ? row : col);
      return linearize(oc, s);
    };
    absl::Status status = absl::OkStatus();
    // Values computed in the loop body stay in its scope.
    SmallVector<Value> acc = e.loop(
        e.i64c(0), e.i64c(kExtent), e.i64c(1), {e.f32c(0)},
        [&](Value k, ValueRange carried) -> SmallVector<Value> {
          openScope();
          auto a = eval(mm.getLhs(), operandIndex(lhs, c[r - 2], k, mm.getTransposeLhs()), lane);
          auto b = a.ok() ? eval(mm.getRhs(), operandIndex(rhs, k, c[r - 1], mm.getTransposeRhs()), lane)
                          : a;
          closeScope();
          if (!b.ok()) {
            status = b.status();
            return {carried[0]};
          }
          return {e.fma(*a, *b, carried[0])};
        });
    if (!status.ok())
      return status;
    return acc[0];
  }
};

} // namespace

absl::Status emitMatmulSimt(const StrategyInput &in) { return MatmulSimtEmitter(in).build(); }

} // namespace fusec::codegen
