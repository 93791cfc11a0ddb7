//===- CostTest.cpp - The cost interface ------------------------*- C++ -*-===//

#include "fusec/IR/Fusec.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"
#include <string>
#include <limits>
#include <algorithm>

using namespace mlir;
using namespace fusec;

namespace {

class CostTest : public ::testing::Test {
protected:
  CostTest() {
    registry.insert<FusecDialect, func::FuncDialect>();
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(const char *text) {
    auto module = parseSourceString<ModuleOp>(text, context.get());
    EXPECT_TRUE(module) << "failed to parse:\n" << text;
    return module;
  }

  /// The cost of the first op of type OpTy in the module.
  template <typename OpTy> OpCost costOf(ModuleOp module) {
    OpCost cost;
    bool found = false;
    module.walk([&](OpTy op) {
      if (!found)
        cost = cast<CostOpInterface>(op.getOperation()).getCost();
      found = true;
    });
    EXPECT_TRUE(found);
    return cost;
  }

  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
};

TEST_F(CostTest, VectorAddIsTheSeedsFigure) {
  auto module = parse(R"mlir(
    func.func @f(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
      %0 = fusec.add %a, %b : tensor<1048576xf32>
      return %0 : tensor<1048576xf32>
    })mlir");
  OpCost c = costOf<AddOp>(*module);
  EXPECT_EQ(c.flops, 1048576);
  EXPECT_EQ(c.bytes(), 12582912);
  EXPECT_EQ(c.bytesRead, 8388608);
  EXPECT_EQ(c.bytesWritten, 4194304);
  EXPECT_EQ(c.sfuOps, 0);
  EXPECT_NEAR(c.intensity(), 1.0 / 12.0, 1e-12);
  EXPECT_NEAR(c.intensity(), 0.083, 0.001);
}

TEST_F(CostTest, BuiltOpsHaveCostsToo) {
  OpBuilder b(context.get());
  auto loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module.getBody());
  auto type = RankedTensorType::get({1024}, b.getBF16Type());
  auto func = func::FuncOp::create(b, loc, "f", b.getFunctionType({type}, {}));
  b.setInsertionPointToStart(func.addEntryBlock());
  Value x = func.getArgument(0);
  auto exp = ExpOp::create(b, loc, type, x);
  auto sig = SigmoidOp::create(b, loc, type, exp);
  func::ReturnOp::create(b, loc);
  ASSERT_TRUE(succeeded(verify(module)));
  OpCost e = cast<CostOpInterface>(exp.getOperation()).getCost();
  EXPECT_EQ(e.flops, 1024);
  EXPECT_EQ(e.sfuOps, 1024);
  EXPECT_EQ(e.bytesRead, 2048);
  EXPECT_EQ(e.bytesWritten, 2048);
  OpCost s = cast<CostOpInterface>(sig.getOperation()).getCost();
  EXPECT_EQ(s.flops, 3 * 1024);
  EXPECT_EQ(s.sfuOps, 2 * 1024);
  module->erase();
}

TEST_F(CostTest, CausalAttentionCountsVisiblePairsInClosedForm) {
  // The pairs of a causal attention (bottom-right aligned) against a count
  // of each query's visible keys, for queries fewer, as many as and more
  // than the keys; SFU ops count the pairs.
  for (auto [sq, skv] : {std::pair<int64_t, int64_t>{1, 1}, {1, 7}, {7, 1}, {5, 5}, {3, 17},
                         {17, 3}, {32, 48}, {48, 32}, {1, 4096}}) {
    int64_t want = 0;
    for (int64_t i = 0; i < sq; ++i)
      want += std::clamp<int64_t>(i + skv - sq + 1, 0, skv);
    std::string q = "tensor<1x2x" + std::to_string(sq) + "x8xbf16>";
    std::string kv = "tensor<1x2x" + std::to_string(skv) + "x8xbf16>";
    std::string text = "func.func @f(%q: " + q + ", %k: " + kv + ") -> " + q + " {\n" +
                       "  %0 = fusec.attention %q, %k, %k {scale = 0.125 : f64, causal} : (" +
                       q + ", " + kv + ", " + kv + ") -> " + q + "\n  return %0 : " + q + "\n}\n";
    auto module = parse(text.c_str());
    ASSERT_TRUE(module);
    OpCost c = costOf<AttentionOp>(*module);
    EXPECT_EQ(c.sfuOps, 2 * want) << sq << " x " << skv;
    EXPECT_EQ(c.flops, 2 * 2 * want * 16) << sq << " x " << skv;
  }
}

TEST_F(CostTest, HugeValidTensorsSaturateInsteadOfWrapping) {
  // Each tensor's bytes fit in int64 (2^62 and 2^61), but the operands' sum
  // (2^63) and the FLOPs (2^92) do not: both stop at INT64_MAX.
  auto module = parse(R"mlir(
    func.func @f(%a: tensor<1073741824x2147483648xbf16>, %b: tensor<2147483648x1073741824xbf16>) -> tensor<1073741824x1073741824xbf16> {
      %0 = fusec.matmul %a, %b : (tensor<1073741824x2147483648xbf16>, tensor<2147483648x1073741824xbf16>) -> tensor<1073741824x1073741824xbf16>
      return %0 : tensor<1073741824x1073741824xbf16>
    })mlir");
  ASSERT_TRUE(module);
  OpCost c = costOf<MatmulOp>(*module);
  EXPECT_EQ(c.flops, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c.bytesRead, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c.bytesWritten, int64_t(1) << 61);
  EXPECT_EQ(c.bytes(), std::numeric_limits<int64_t>::max());
  EXPECT_GT(c.intensity(), 0.0);
  OpCost sum = c;
  sum += c;
  EXPECT_EQ(sum.flops, std::numeric_limits<int64_t>::max());
}

TEST_F(CostTest, KernelCountsOnlyBoundaryBytes) {
  auto module = parse(R"mlir(
    func.func @f(%a: tensor<256xf32>, %b: tensor<256xf32>) -> tensor<256xf16> {
      %r = fusec.kernel "k" (%a, %b) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf16> {
      ^bb0(%x: tensor<256xf32>, %y: tensor<256xf32>):
        %0 = fusec.add %x, %y : tensor<256xf32>
        %1 = fusec.exp %0 : tensor<256xf32>
        %2 = fusec.mul %1, %x : tensor<256xf32>
        %3 = fusec.cast %2 : tensor<256xf32> to tensor<256xf16>
        fusec.yield %3 : tensor<256xf16>
      }
      return %r : tensor<256xf16>
    })mlir");
  OpCost k = costOf<KernelOp>(*module);
  EXPECT_EQ(k.bytesRead, 2 * 256 * 4);
  EXPECT_EQ(k.bytesWritten, 256 * 2);
  EXPECT_EQ(k.flops, 3 * 256); // add, exp's prescale, mul
  EXPECT_EQ(k.sfuOps, 256);

  // The same ops unfused move every intermediate through memory.
  OpCost body;
  module->walk([&](Operation *op) {
    if (op->getParentOfType<KernelOp>())
      if (auto c = dyn_cast<CostOpInterface>(op))
        body += c.getCost();
  });
  EXPECT_EQ(body.flops, k.flops);
  EXPECT_GT(body.bytes(), 3 * k.bytes());
}

TEST_F(CostTest, ReductionsAndMovement) {
  auto module = parse(R"mlir(
    func.func @f(%x: tensor<64x128xbf16>, %t: tensor<1000x64xf32>, %i: tensor<8xi32>) {
      %0 = fusec.reduce mean %x dims [1] : tensor<64x128xbf16> -> tensor<64xbf16>
      %1 = fusec.gather %t[%i] axis 0 : (tensor<1000x64xf32>, tensor<8xi32>) -> tensor<8x64xf32>
      %2 = fusec.transpose %x perm [1, 0] : tensor<64x128xbf16> -> tensor<128x64xbf16>
      %3 = fusec.slice %x offsets [0, 0] strides [2, 2] : tensor<64x128xbf16> -> tensor<32x64xbf16>
      return
    })mlir");
  OpCost r = costOf<ReduceOp>(*module);
  EXPECT_EQ(r.flops, 64 * 128 + 64);
  EXPECT_EQ(r.bytesRead, 64 * 128 * 2);
  EXPECT_EQ(r.bytesWritten, 64 * 2);
  OpCost g = costOf<GatherOp>(*module);
  EXPECT_EQ(g.bytesRead, 8 * 4 + 8 * 64 * 4); // indices + the rows gathered
  EXPECT_EQ(g.bytesWritten, 8 * 64 * 4);
  OpCost t = costOf<TransposeOp>(*module);
  EXPECT_EQ(t.flops, 0);
  EXPECT_EQ(t.bytes(), 2 * 64 * 128 * 2);
  OpCost s = costOf<SliceOp>(*module);
  EXPECT_EQ(s.bytesRead, 32 * 64 * 2);
}

TEST_F(CostTest, GroupedQueryAttention) {
  auto module = parse(R"mlir(
    func.func @f(%q: tensor<2x8x100x64xbf16>, %kv: tensor<2x2x100x64xbf16>) -> tensor<2x8x100x64xbf16> {
      %0 = fusec.attention %q, %kv, %kv {scale = 0.125 : f64} : (tensor<2x8x100x64xbf16>, tensor<2x2x100x64xbf16>, tensor<2x2x100x64xbf16>) -> tensor<2x8x100x64xbf16>
      return %0 : tensor<2x8x100x64xbf16>
    })mlir");
  OpCost a = costOf<AttentionOp>(*module);
  EXPECT_EQ(a.flops, 4LL * 2 * 8 * 100 * 100 * 64);
  EXPECT_EQ(a.sfuOps, 2LL * 8 * 100 * 100);
  EXPECT_EQ(a.bytesRead, (2 * 8 + 2 * 2 * 2) * 100 * 64 * 2);
}

TEST_F(CostTest, AttentionLayoutsReadThroughTheirPermutations) {
  // Q and O as [B, S, H, D], K as [S, B, H, D], V contiguous: the same
  // problem (and cost) as all four contiguous; the strides the intrinsic
  // is given are each operand's, in [B, H, S, D] order.
  auto module = parse(R"mlir(
    func.func @f(%q: tensor<2x100x8x64xbf16>, %k: tensor<100x2x2x64xbf16>, %v: tensor<2x2x100x64xbf16>) -> tensor<2x100x8x64xbf16> {
      %0 = fusec.attention %q, %k, %v {scale = 0.125 : f64, query_perm = array<i64: 0, 2, 1, 3>, key_perm = array<i64: 1, 2, 0, 3>, result_perm = array<i64: 0, 2, 1, 3>} : (tensor<2x100x8x64xbf16>, tensor<100x2x2x64xbf16>, tensor<2x2x100x64xbf16>) -> tensor<2x100x8x64xbf16>
      return %0 : tensor<2x100x8x64xbf16>
    })mlir");
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(verify(*module)));
  AttentionOp op;
  module->walk([&](AttentionOp a) { op = a; });
  OpCost a = costOf<AttentionOp>(*module);
  EXPECT_EQ(a.flops, 4LL * 2 * 8 * 100 * 100 * 64);
  EXPECT_EQ(a.bytesRead, (2 * 8 + 2 * 2 * 2) * 100 * 64 * 2);
  using V = llvm::SmallVector<int64_t, 4>;
  EXPECT_EQ(op.logicalShape(0), (V{2, 8, 100, 64}));
  EXPECT_EQ(op.logicalShape(1), (V{2, 2, 100, 64}));
  EXPECT_EQ(op.logicalShape(3), (V{2, 8, 100, 64}));
  // Q [B, S, H, D]: batch S·H·D, head D, seq H·D.
  EXPECT_EQ(op.logicalStrides(0), (V{100 * 8 * 64, 64, 8 * 64, 1}));
  // K [S, B, H, D]: batch H·D, head D, seq B·H·D.
  EXPECT_EQ(op.logicalStrides(1), (V{2 * 64, 64, 2 * 2 * 64, 1}));
  EXPECT_EQ(op.logicalStrides(2), (V{2 * 100 * 64, 100 * 64, 64, 1}));
  EXPECT_EQ(op.logicalStrides(3), (V{100 * 8 * 64, 64, 8 * 64, 1}));
}

} // namespace
