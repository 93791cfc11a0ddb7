//===- InterpreterTest.cpp - Reference interpreter numerics -----*- C++ -*-===//
//
// Values computed by hand, storage rounding, and differential tests of the
// passes on random inputs.
//
//===----------------------------------------------------------------------===//

#include "fusec/Interpreter/Interpreter.h"
#include "fusec/IR/Fusec.h"
#include "fusec/Passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "gtest/gtest.h"

#include <limits>

#include <cmath>

using namespace mlir;
using namespace fusec;

namespace {

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    registry.insert<FusecDialect, func::FuncDialect>();
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
    registerFusecPasses();
    registerCanonicalizerPass();
  }

  /// Parses `text` and runs its only function on `inputs`.
  std::vector<HostTensor> run(const std::string &text,
                              std::vector<HostTensor> inputs) {
    module = parseSourceString<ModuleOp>(text, context.get());
    EXPECT_TRUE(module) << text;
    if (!module)
      return {};
    auto func = findFunction(*module, "");
    EXPECT_TRUE(func.ok()) << func.status();
    auto results = interpret(*func, inputs);
    EXPECT_TRUE(results.ok()) << results.status();
    return results.ok() ? *results : std::vector<HostTensor>{};
  }

  static HostTensor tensor(DType t, std::vector<int64_t> shape,
                           std::vector<double> values) {
    return HostTensor::fromValues(t, std::move(shape), values);
  }

  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(InterpreterTest, MatmulByHand) {
  auto r = run(R"mlir(
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<3x3xf32>) {
      %0 = fusec.matmul %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
      %1 = fusec.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<3x3xf32>
      return %0, %1 : tensor<2x2xf32>, tensor<3x3xf32>
    })mlir",
               {tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                tensor(DType::F32, {3, 2}, {7, 8, 9, 10, 11, 12})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].data, (std::vector<double>{58, 64, 139, 154}));
  // Aᵀ (3x2) · Bᵀ (2x3): row i of Aᵀ is column i of A.
  EXPECT_EQ(r[1].data, (std::vector<double>{39, 49, 59, 54, 68, 82, 69, 87, 105}));
}

TEST_F(InterpreterTest, StorageIsRoundedPerOp) {
  // 1 + 2^-9 is not a bf16: each op's result is rounded, so the sum of three
  // such terms in bf16 differs from the f32 one.
  auto r = run(R"mlir(
    func.func @f(%a: tensor<1xbf16>, %b: tensor<1xf32>) -> (tensor<1xbf16>, tensor<1xf32>) {
      %c = fusec.constant dense<0.001953125> : tensor<1xf32>
      %bc = fusec.add %b, %c : tensor<1xf32>
      %h = fusec.cast %bc : tensor<1xf32> to tensor<1xbf16>
      %s = fusec.add %a, %h : tensor<1xbf16>
      return %s, %bc : tensor<1xbf16>, tensor<1xf32>
    })mlir",
               {tensor(DType::BF16, {1}, {1.0}), tensor(DType::F32, {1}, {1.0})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].data[0], 1.001953125);
  EXPECT_EQ(r[0].data[0], 2.0); // 1 + bf16(1.001953125) = 1 + 1 = 2
}

TEST_F(InterpreterTest, SoftmaxAndNormsByHand) {
  auto r = run(R"mlir(
    func.func @f(%x: tensor<1x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
      %0 = fusec.softmax %x dim 1 : tensor<1x4xf32>
      %1 = fusec.layer_norm %x, %g, %b {epsilon = 0.0 : f64} : (tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
      %2 = fusec.rms_norm %x, %g {epsilon = 0.0 : f64} : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
      return %0, %1, %2 : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>
    })mlir",
               {tensor(DType::F32, {1, 4}, {1, 2, 3, 4}),
                tensor(DType::F32, {4}, {1, 1, 2, 2}),
                tensor(DType::F32, {4}, {0, 0, 0, 1})});
  ASSERT_EQ(r.size(), 3u);
  double z = std::exp(1) + std::exp(2) + std::exp(3) + std::exp(4);
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(r[0].data[i], std::exp(i + 1) / z);
  // mean 2.5, variance 1.25
  double s = 1 / std::sqrt(1.25);
  EXPECT_FLOAT_EQ(r[1].data[0], -1.5 * s);
  EXPECT_FLOAT_EQ(r[1].data[1], -0.5 * s);
  EXPECT_FLOAT_EQ(r[1].data[2], 2 * 0.5 * s);
  EXPECT_FLOAT_EQ(r[1].data[3], 2 * 1.5 * s + 1);
  // mean of squares 7.5
  double q = 1 / std::sqrt(7.5);
  EXPECT_FLOAT_EQ(r[2].data[0], 1 * q);
  EXPECT_FLOAT_EQ(r[2].data[3], 4 * q * 2);
}

TEST_F(InterpreterTest, AttentionByHand) {
  // Two keys; the query scores them 0 and ln 3 (scale 1): weights 1/4, 3/4.
  auto r = run(R"mlir(
    func.func @f(%q: tensor<1x1x2x1xf32>, %k: tensor<1x1x2x1xf32>, %v: tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
      %0 = fusec.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x1x2x1xf32>, tensor<1x1x2x1xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
      %1 = fusec.attention %q, %k, %v {scale = 1.0 : f64, causal} : (tensor<1x1x2x1xf32>, tensor<1x1x2x1xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
      return %0, %1 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
    })mlir",
               {tensor(DType::F32, {1, 1, 2, 1}, {1, 1}),
                tensor(DType::F32, {1, 1, 2, 1}, {0, std::log(3.0)}),
                tensor(DType::F32, {1, 1, 2, 2}, {4, 8, 0, 4})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FLOAT_EQ(r[0].data[0], 1.0);  // 4/4 + 0
  EXPECT_FLOAT_EQ(r[0].data[1], 5.0);  // 8/4 + 4*3/4
  // Causal: the first query sees only the first key.
  EXPECT_FLOAT_EQ(r[1].data[0], 4.0);
  EXPECT_FLOAT_EQ(r[1].data[1], 8.0);
  EXPECT_FLOAT_EQ(r[1].data[2], 1.0);
  EXPECT_FLOAT_EQ(r[1].data[3], 5.0);
}

TEST_F(InterpreterTest, DataMovementByHand) {
  auto r = run(R"mlir(
    func.func @f(%x: tensor<2x3xf32>, %ids: tensor<2xi64>) -> (tensor<2x2x3xf32>, tensor<2x2xf32>, tensor<2x6xf32>, tensor<2x2x3xf32>, tensor<2xf32>) {
      %0 = fusec.broadcast %x dims [1, 2] : tensor<2x3xf32> -> tensor<2x2x3xf32>
      %1 = fusec.slice %x offsets [0, 0] strides [1, 2] : tensor<2x3xf32> -> tensor<2x2xf32>
      %2 = fusec.concat %x, %x dim 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
      %3 = fusec.gather %x[%ids] axis 0 : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
      %4 = fusec.reshape %3 : tensor<2x3xf32> -> tensor<1x2x3xf32>
      %5 = fusec.concat %4, %4 dim 0 : (tensor<1x2x3xf32>, tensor<1x2x3xf32>) -> tensor<2x2x3xf32>
      %6 = fusec.reduce max %x dims [1] : tensor<2x3xf32> -> tensor<2xf32>
      return %0, %1, %2, %5, %6 : tensor<2x2x3xf32>, tensor<2x2xf32>, tensor<2x6xf32>, tensor<2x2x3xf32>, tensor<2xf32>
    })mlir",
               {tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                tensor(DType::I64, {2}, {-1, 0})});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].data, (std::vector<double>{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r[1].data, (std::vector<double>{1, 3, 4, 6}));
  EXPECT_EQ(r[2].data, (std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  // Index -1 is the last row.
  EXPECT_EQ(r[3].data, (std::vector<double>{4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(r[4].data, (std::vector<double>{3, 6}));
}

TEST_F(InterpreterTest, IntegersAreExactAndWrap) {
  // Past 2^53 a double cannot hold every i64: these sums and products would
  // round if integers went through doubles.
  const int64_t big = (int64_t{1} << 62) + 1;
  HostTensor a(DType::I64, {4}), b(DType::I64, {4});
  a.ints = {big, -7, 7, 3};
  b.ints = {2, 2, -2, 5};
  auto r = run(R"mlir(
    func.func @f(%a: tensor<4xi64>, %b: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
      %0 = fusec.add %a, %b : tensor<4xi64>
      %1 = fusec.mul %a, %b : tensor<4xi64>
      %2 = fusec.div %a, %b : tensor<4xi64>
      %3 = fusec.pow %a, %b : tensor<4xi64>
      return %0, %1, %2, %3 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
    })mlir",
               {a, b});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].ints[0], big + 2);
  // (2^62 + 1) * 2 wraps to -2^63 + 2.
  EXPECT_EQ(r[1].ints[0], std::numeric_limits<int64_t>::min() + 2);
  // Division truncates toward zero.
  EXPECT_EQ(r[2].ints[1], -3);
  EXPECT_EQ(r[2].ints[2], -3);
  EXPECT_EQ(r[3].ints[1], 49);
  EXPECT_EQ(r[3].ints[2], 0); // 7^-2 truncates to 0
  EXPECT_EQ(r[3].ints[3], 243);
}

TEST_F(InterpreterTest, ErrorsNameTheOpAndLocation) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
      %0 = fusec.div %a, %b : tensor<2xi32>
      return %0 : tensor<2xi32>
    })mlir",
                                       context.get(), "div.mlir");
  ASSERT_TRUE(module);
  auto func = findFunction(*module, "f");
  ASSERT_TRUE(func.ok());
  auto r = interpret(*func, {tensor(DType::I32, {2}, {1, 2}),
                             tensor(DType::I32, {2}, {1, 0})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message()),
            "div.mlir:3:12: 'fusec.div': integer division by zero");
  // Wrong input types are reported, not interpreted.
  auto bad = interpret(*func, {tensor(DType::F32, {2}, {1, 2}),
                               tensor(DType::I32, {2}, {1, 1})});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("argument #0 expects tensor<2xi32>"),
            std::string::npos);
}

/// Decomposition keeps each composite's meaning on random inputs, for every
/// float storage type and for shapes that are odd, tiny and long.
TEST_F(InterpreterTest, DecomposeMatchesCompositesOnRandomInputs) {
  const char *dtypes[] = {"f32", "bf16", "f16"};
  const char *shapes[][2] = {{"1x1", "1"}, {"3x7", "7"}, {"2x5x33", "33"},
                             {"4x1024", "1024"}};
  int checked = 0;
  for (const char *dt : dtypes)
    for (auto &shape : shapes) {
      std::string t = std::string("tensor<") + shape[0] + "x" + dt + ">";
      std::string v = std::string("tensor<") + shape[1] + "x" + dt + ">";
      std::string text =
          "func.func @f(%x: " + t + ", %g: " + v + ", %b: " + v + ") -> (" +
          t + ", " + t + ", " + t + ", " + t + ", " + t + ", " + t + ") {\n" +
          "  %0 = fusec.layer_norm %x, %g, %b : (" + t + ", " + v + ", " + v +
          ") -> " + t + "\n" + "  %1 = fusec.rms_norm %x, %g : (" + t + ", " +
          v + ") -> " + t + "\n" + "  %2 = fusec.softmax %x dim 0 : " + t +
          "\n" + "  %3 = fusec.gelu %x : " + t + "\n" +
          "  %4 = fusec.gelu %x {tanh} : " + t + "\n" +
          "  %5 = fusec.silu %x : " + t + "\n" + "  return %0, %1, %2, %3, %4, %5 : " +
          t + ", " + t + ", " + t + ", " + t + ", " + t + ", " + t + "\n}\n";
      auto mod = parseSourceString<ModuleOp>(text, context.get());
      ASSERT_TRUE(mod) << text;
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        auto cmp = checkPipelinePreservesSemantics(*mod, "fusec-decompose", "",
                                                   seed);
        ASSERT_TRUE(cmp.ok()) << cmp.status();
        ASSERT_EQ(cmp->size(), 6u);
        for (auto [i, c] : llvm::enumerate(*cmp))
          EXPECT_TRUE(c.ok) << t << " result #" << i << " seed " << seed
                            << ": " << c.message;
        ++checked;
      }
    }
  EXPECT_EQ(checked, 36);
}

/// The differential check itself must catch a pass that changes results.
TEST_F(InterpreterTest, DifferentialCheckCatchesAWrongRewrite) {
  auto mod = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%x: tensor<64xf32>) -> tensor<64xf32> {
      %0 = fusec.exp %x : tensor<64xf32>
      return %0 : tensor<64xf32>
    })mlir",
                                         context.get());
  ASSERT_TRUE(mod);
  // Canonicalization keeps exp; it must compare equal.
  auto same = checkPipelinePreservesSemantics(*mod, "canonicalize", "", 1);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE((*same)[0].ok);
  // A "pass" that changes the graph: replace exp by exp2 by hand, compare
  // the two modules through the same machinery.
  auto wrong = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%x: tensor<64xf32>) -> tensor<64xf32> {
      %0 = fusec.exp2 %x : tensor<64xf32>
      return %0 : tensor<64xf32>
    })mlir",
                                           context.get());
  auto fa = findFunction(*mod, ""), fb = findFunction(*wrong, "");
  auto inputs = randomInputs(*fa, 1);
  auto ra = interpret(*fa, *inputs), rb = interpret(*fb, *inputs);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_FALSE(compareTensors((*ra)[0], (*rb)[0], toleranceFor(DType::F32)).ok);
}

} // namespace

namespace {

TEST_F(InterpreterTest, ResultToleranceFollowsWhatHeldTheValue) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%x: tensor<8xf32>, %h: tensor<8xbf16>, %q: tensor<1x1x4x64xf16>)
        -> (tensor<8xf32>, tensor<8xf32>, tensor<1x1x4x64xf32>, tensor<8xf16>) {
      %a = fusec.exp %x : tensor<8xf32>
      %b = fusec.cast %h : tensor<8xbf16> to tensor<8xf32>
      %c = fusec.add %a, %b : tensor<8xf32>
      %o = fusec.attention %q, %q, %q {scale = 0.125 : f64}
             : (tensor<1x1x4x64xf16>, tensor<1x1x4x64xf16>, tensor<1x1x4x64xf16>) -> tensor<1x1x4x64xf16>
      %p = fusec.cast %o : tensor<1x1x4x64xf16> to tensor<1x1x4x64xf32>
      %d = fusec.cast %a : tensor<8xf32> to tensor<8xf16>
      return %a, %c, %p, %d : tensor<8xf32>, tensor<8xf32>, tensor<1x1x4x64xf32>, tensor<8xf16>
    })mlir", context.get());
  ASSERT_TRUE(module);
  auto func = findFunction(*module, "");
  ASSERT_TRUE(func.ok());
  // f32 all the way: f32's tolerance.
  EXPECT_EQ(resultTolerance(*func, 0).rtol, toleranceFor(DType::F32).rtol);
  // Through bf16, then f32: bf16's.
  EXPECT_EQ(resultTolerance(*func, 1).rtol, toleranceFor(DType::BF16).rtol);
  // f16 attention, cast to f32: the intrinsic's own bound.
  EXPECT_EQ(resultTolerance(*func, 2).rtol, 4e-3);
  EXPECT_EQ(resultTolerance(*func, 2).atol, 4e-3);
  // Stored as f16: f16's.
  EXPECT_EQ(resultTolerance(*func, 3).rtol, toleranceFor(DType::F16).rtol);
}

// Monte Carlo arithmetic: each computed float value moves by at most the
// perturbation (relative), differently per seed; integers and arguments
// stay; the same seed gives the same values.
TEST_F(InterpreterTest, PerturbationMovesComputedFloatsWithinItsSize) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%x: tensor<64xf32>, %i: tensor<64xi32>) -> (tensor<64xf32>, tensor<64xi32>) {
      %y = fusec.mul %x, %x : tensor<64xf32>
      %j = fusec.add %i, %i : tensor<64xi32>
      return %y, %j : tensor<64xf32>, tensor<64xi32>
    })mlir", context.get());
  ASSERT_TRUE(module);
  auto func = findFunction(*module, "");
  ASSERT_TRUE(func.ok());
  auto inputs = randomInputs(*func, 3);
  ASSERT_TRUE(inputs.ok());
  auto exact = interpret(*func, *inputs);
  auto a = interpret(*func, *inputs, InterpretOptions{1e-3, 1});
  auto b = interpret(*func, *inputs, InterpretOptions{1e-3, 1});
  auto c = interpret(*func, *inputs, InterpretOptions{1e-3, 2});
  ASSERT_TRUE(exact.ok() && a.ok() && b.ok() && c.ok());
  int moved = 0, differ = 0;
  for (int e = 0; e < 64; ++e) {
    double x = (*exact)[0].data[e], y = (*a)[0].data[e];
    EXPECT_LE(std::fabs(y - x), 1.0001e-3 * std::fabs(x)) << e;
    moved += y != x;
    differ += (*c)[0].data[e] != y;
    EXPECT_EQ((*a)[0].data[e], (*b)[0].data[e]);
    EXPECT_EQ((*a)[1].ints[e], (*exact)[1].ints[e]);
  }
  EXPECT_GT(moved, 48);
  EXPECT_GT(differ, 48);
}

// The judgement of a transformed function: a rewrite that is exact in real
// arithmetic passes where the original graph cancels (its elements move as
// far under roundings of its type); a wrong rewrite fails, both where the
// graph is well conditioned and where it cancels (by more than the
// cancellation explains).
TEST_F(InterpreterTest, JudgementWidensByConditioningButCatchesWrongRewrites) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @cancel(%x: tensor<256xbf16>) -> tensor<256xbf16> {
      %a = fusec.constant dense<1000.0> : tensor<256xbf16>
      %b = fusec.constant dense<999.0> : tensor<256xbf16>
      %p = fusec.mul %x, %a : tensor<256xbf16>
      %q = fusec.mul %x, %b : tensor<256xbf16>
      %r = fusec.sub %p, %q : tensor<256xbf16>
      return %r : tensor<256xbf16>
    }
    func.func @cancel_exact(%x: tensor<256xbf16>) -> tensor<256xbf16> {
      return %x : tensor<256xbf16>
    }
    func.func @cancel_wrong(%x: tensor<256xbf16>) -> tensor<256xbf16> {
      %c = fusec.constant dense<1024.0> : tensor<256xbf16>
      %r = fusec.add %x, %c : tensor<256xbf16>
      return %r : tensor<256xbf16>
    }
    func.func @plain(%x: tensor<256xf32>, %y: tensor<256xf32>) -> tensor<256xf32> {
      %c = fusec.constant dense<2.0> : tensor<256xf32>
      %p = fusec.mul %x, %c : tensor<256xf32>
      %r = fusec.add %p, %y : tensor<256xf32>
      return %r : tensor<256xf32>
    }
    func.func @plain_wrong(%x: tensor<256xf32>, %y: tensor<256xf32>) -> tensor<256xf32> {
      %c = fusec.constant dense<2.001> : tensor<256xf32>
      %p = fusec.mul %x, %c : tensor<256xf32>
      %r = fusec.add %p, %y : tensor<256xf32>
      return %r : tensor<256xf32>
    })mlir", context.get());
  ASSERT_TRUE(module);
  auto fn = [&](const char *name) { return *findFunction(*module, name); };
  for (uint64_t seed = 0; seed < 3; ++seed) {
    auto exact = compareFunctions(fn("cancel"), fn("cancel_exact"), seed);
    ASSERT_TRUE(exact.ok()) << exact.status();
    EXPECT_TRUE((*exact)[0].ok) << (*exact)[0].message;
    // bf16's tolerance alone does not cover the cancellation: the spread does.
    EXPECT_NE((*exact)[0].message.find("perturbed runs"), std::string::npos)
        << (*exact)[0].message;
    auto wrong = compareFunctions(fn("cancel"), fn("cancel_wrong"), seed);
    ASSERT_TRUE(wrong.ok()) << wrong.status();
    EXPECT_FALSE((*wrong)[0].ok) << (*wrong)[0].message;
    auto plain = compareFunctions(fn("plain"), fn("plain_wrong"), seed);
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_FALSE((*plain)[0].ok) << (*plain)[0].message;
  }
}

// Issue #19: the relative bound precision lowering records is first order
// and assumes no sum cancels; the absolute bound it records beside it holds
// whatever the data, for arguments within its input magnitude, and the
// judgement enforces it both ways.
TEST_F(InterpreterTest, AbsoluteErrorBoundHoldsUnderCancellation) {
  // x (w - w2) by two K = 8 matmuls whose products nearly cancel: storing
  // the products in bf16 is an error of their size, not the difference's.
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%x: tensor<64x8xf32>, %w: tensor<8x16xf32>) -> tensor<64x16xf32> {
      %d = fusec.constant dense<0.01> : tensor<8x16xf32>
      %w2 = fusec.add %w, %d : tensor<8x16xf32>
      %y = fusec.matmul %x, %w : (tensor<64x8xf32>, tensor<8x16xf32>) -> tensor<64x16xf32>
      %y2 = fusec.matmul %x, %w2 : (tensor<64x8xf32>, tensor<8x16xf32>) -> tensor<64x16xf32>
      %r = fusec.sub %y, %y2 : tensor<64x16xf32>
      return %r : tensor<64x16xf32>
    })mlir", context.get());
  ASSERT_TRUE(module);
  int pastEstimate = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    auto cmp = checkPipelinePreservesSemantics(*module, "fusec-lower-precision", "", seed);
    ASSERT_TRUE(cmp.ok()) << cmp.status();
    EXPECT_TRUE((*cmp)[0].ok) << (*cmp)[0].message;
    EXPECT_NE((*cmp)[0].message.find("within the absolute bound"), std::string::npos)
        << (*cmp)[0].message;
    pastEstimate += (*cmp)[0].message.find("past the estimated bound") != std::string::npos;
  }
  // The cancellation defeats the first-order relative estimate...
  EXPECT_EQ(pastEstimate, 4);
  // ...while the absolute bound is finite and not vacuous: u(bf16) times
  // each product's magnitude (8 terms of |x|, |w| <= 8), twice.
  OwningOpRef<ModuleOp> lowered(cast<ModuleOp>((*module)->clone()));
  PassManager pm(context.get());
  ASSERT_TRUE(succeeded(parsePassPipeline("fusec-lower-precision", pm)));
  ASSERT_TRUE(succeeded(pm.run(*lowered)));
  auto func = findFunction(*lowered, "f");
  ASSERT_TRUE(func.ok());
  auto abs = (*func)->getAttrOfType<DictionaryAttr>("fusec.abs_error_bound");
  ASSERT_TRUE(abs);
  double bound = cast<FloatAttr>(abs.getAs<ArrayAttr>("bounds")[0]).getValueAsDouble();
  EXPECT_GT(bound, 2 * 0x1p-8 * 8 * 8 * 8);
  EXPECT_LT(bound, 8.0);
  EXPECT_EQ(abs.getAs<FloatAttr>("input_magnitude").getValueAsDouble(), 8.0);

  // A result off by more than its absolute bound fails, even within its
  // relative estimate; one off by NaN too.
  // @g of `before` against @g of `after`, on seed 1.
  auto compareTexts = [&](const std::string &before, const std::string &after) {
    auto b = parseSourceString<ModuleOp>(before, context.get());
    auto a = parseSourceString<ModuleOp>(after, context.get());
    EXPECT_TRUE(b && a);
    if (!b || !a)
      return Comparison{};
    auto cmp = compareFunctions(*findFunction(*b, "g"), *findFunction(*a, "g"), 1);
    EXPECT_TRUE(cmp.ok()) << cmp.status();
    return cmp.ok() ? (*cmp)[0] : Comparison{};
  };
  auto judged = [&](const char *after) {
    return compareTexts(R"mlir(
      func.func @g(%x: tensor<256xf32>) -> tensor<256xf32> {
        %c = fusec.constant dense<100.0> : tensor<256xf32>
        %r = fusec.add %x, %c : tensor<256xf32>
        return %r : tensor<256xf32>
      })mlir", after);
  };
  // x + 100.5 against x + 100: off by 0.5 everywhere, within the relative
  // estimate of 0.05.
  auto offByHalf = [&](const char *bound, const char *magnitude) {
    std::string text = std::string(R"mlir(
      func.func @g(%x: tensor<256xf32>) -> tensor<256xf32>
          attributes {fusec.error_bound = [0.05],
                      fusec.abs_error_bound = {bounds = [)mlir") +
                       bound + "], input_magnitude = " + magnitude + R"mlir(}} {
        %c = fusec.constant dense<100.5> : tensor<256xf32>
        %r = fusec.add %x, %c : tensor<256xf32>
        return %r : tensor<256xf32>
      })mlir";
    return judged(text.c_str());
  };
  Comparison off = offByHalf("0.01", "8.0");
  EXPECT_FALSE(off.ok) << off.message;
  EXPECT_NE(off.message.find("past the absolute bound"), std::string::npos) << off.message;
  Comparison within = offByHalf("1.0", "8.0");
  EXPECT_TRUE(within.ok) << within.message;
  // Arguments past the recorded magnitude: the absolute bound does not
  // apply, the relative estimate judges.
  Comparison outside = offByHalf("0.01", "1.0");
  EXPECT_TRUE(outside.ok) << outside.message;
  EXPECT_EQ(outside.message.find("absolute bound"), std::string::npos) << outside.message;
  Comparison nan = judged(R"mlir(
      func.func @g(%x: tensor<256xf32>) -> tensor<256xf32>
          attributes {fusec.error_bound = [0.05]} {
        %c = fusec.constant dense<100.0> : tensor<256xf32>
        %z = fusec.constant dense<0.0> : tensor<256xf32>
        %r = fusec.add %x, %c : tensor<256xf32>
        %q = fusec.div %z, %z : tensor<256xf32>
        %one = fusec.slice %q offsets [0] strides [1] : tensor<256xf32> -> tensor<1xf32>
        %rest = fusec.slice %r offsets [1] strides [1] : tensor<256xf32> -> tensor<255xf32>
        %s = fusec.concat %one, %rest dim 0 : (tensor<1xf32>, tensor<255xf32>) -> tensor<256xf32>
        return %s : tensor<256xf32>
      })mlir");
  EXPECT_FALSE(nan.ok) << nan.message;

  // With no finite absolute bound, a result near 0 (GELU far in its tail)
  // has no relative one either: the held type's absolute tolerance per
  // element adds to the estimate (f32's 1e-5), and no more.
  auto nearZero = [&](const char *offset) {
    std::string text = std::string(R"mlir(
      func.func @g(%x: tensor<256xf32>) -> tensor<256xf32>
          attributes {fusec.error_bound = [0.05]} {
        %s = fusec.constant dense<1.0e-10> : tensor<256xf32>
        %c = fusec.constant dense<)mlir") +
                       offset + R"mlir(> : tensor<256xf32>
        %p = fusec.mul %x, %s : tensor<256xf32>
        %r = fusec.add %p, %c : tensor<256xf32>
        return %r : tensor<256xf32>
      })mlir";
    return compareTexts(R"mlir(
      func.func @g(%x: tensor<256xf32>) -> tensor<256xf32> {
        %s = fusec.constant dense<1.0e-10> : tensor<256xf32>
        %p = fusec.mul %x, %s : tensor<256xf32>
        return %p : tensor<256xf32>
      })mlir", text);
  };
  Comparison tiny = nearZero("1.0e-7");
  EXPECT_TRUE(tiny.ok) << tiny.message;
  EXPECT_NE(tiny.message.find("of a result near 0"), std::string::npos) << tiny.message;
  Comparison large = nearZero("1.0e-3");
  EXPECT_FALSE(large.ok) << large.message;

  // With no finite absolute bound, a lowered result past its first-order
  // estimate where the original cancels passes within the estimate widened
  // by the data's conditioning at the lowered type, and a wrong one fails.
  auto storedNarrow = [&](const char *factor) {
    std::string text = std::string(R"mlir(
      func.func @g(%x: tensor<256xf32>) -> tensor<256xf32>
          attributes {fusec.error_bound = [0.01]} {
        %a = fusec.constant dense<1000.0> : tensor<256xf32>
        %b = fusec.constant dense<)mlir") +
                       factor + R"mlir(> : tensor<256xf32>
        %p = fusec.mul %x, %a : tensor<256xf32>
        %q = fusec.mul %x, %b : tensor<256xf32>
        %pl = fusec.cast %p : tensor<256xf32> to tensor<256xbf16>
        %ql = fusec.cast %q : tensor<256xf32> to tensor<256xbf16>
        %pw = fusec.cast %pl : tensor<256xbf16> to tensor<256xf32>
        %qw = fusec.cast %ql : tensor<256xbf16> to tensor<256xf32>
        %r = fusec.sub %pw, %qw : tensor<256xf32>
        return %r : tensor<256xf32>
      })mlir";
    return compareTexts(R"mlir(
      func.func @g(%x: tensor<256xf32>) -> tensor<256xf32> {
        %a = fusec.constant dense<1000.0> : tensor<256xf32>
        %b = fusec.constant dense<999.0> : tensor<256xf32>
        %p = fusec.mul %x, %a : tensor<256xf32>
        %q = fusec.mul %x, %b : tensor<256xf32>
        %r = fusec.sub %p, %q : tensor<256xf32>
        return %r : tensor<256xf32>
      })mlir", text);
  };
  Comparison rounded = storedNarrow("999.0");
  EXPECT_TRUE(rounded.ok) << rounded.message;
  EXPECT_NE(rounded.message.find("widened by the data's conditioning"), std::string::npos)
      << rounded.message;
  Comparison wrongFactor = storedNarrow("500.0");
  EXPECT_FALSE(wrongFactor.ok) << wrongFactor.message;
}

// A normalization divides by the row's own spread, whose rsqrt has no slope
// bound near 0, and its absolute bound was infinite. Two rules make it
// finite and tight: a normalized value is at most sqrt(n) whatever the
// data (its magnitude was |x - mean| / sqrt(eps), 16 x 316 here), and the
// relative error of the squares' mean survives the rsqrt (eps's range is
// its value: the add was taken for one of any sign). The bound must hold on
// rows that cancel (near-constant, all zero, one spike).
TEST_F(InterpreterTest, NormalizationsHaveAFiniteAbsoluteBound) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @ln(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
      %0 = fusec.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
      return %0 : tensor<8x64xf32>
    }
    func.func @rms(%x: tensor<8x64xf32>, %g: tensor<64xf32>) -> tensor<8x64xf32> {
      %0 = fusec.rms_norm %x, %g {epsilon = 1.0e-5 : f64} : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
      return %0 : tensor<8x64xf32>
    }
    func.func @rmsdiv(%x: tensor<8x64xf32>, %g: tensor<64xf32>) -> tensor<8x64xf32> {
      %sq = fusec.mul %x, %x : tensor<8x64xf32>
      %m = fusec.reduce mean %sq dims [1] : tensor<8x64xf32> -> tensor<8xf32>
      %e = fusec.constant dense<1.0e-5> : tensor<8xf32>
      %a = fusec.add %m, %e : tensor<8xf32>
      %s = fusec.sqrt %a : tensor<8xf32>
      %k = fusec.reshape %s : tensor<8xf32> -> tensor<8x1xf32>
      %b = fusec.broadcast %k dims [0, 1] : tensor<8x1xf32> -> tensor<8x64xf32>
      %n = fusec.div %x, %b : tensor<8x64xf32>
      %gb = fusec.broadcast %g dims [1] : tensor<64xf32> -> tensor<8x64xf32>
      %y = fusec.mul %n, %gb : tensor<8x64xf32>
      return %y : tensor<8x64xf32>
    })mlir", context.get());
  ASSERT_TRUE(module);
  PassManager decompose(context.get());
  ASSERT_TRUE(succeeded(parsePassPipeline("fusec-decompose", decompose)));
  ASSERT_TRUE(succeeded(decompose.run(*module)));
  // Rows as the data may hold them: near-constant (the mean cancels), all
  // zero (only eps is left), one spike, slowly varying; scale and bias at
  // the input magnitude, 8.
  HostTensor x(DType::F32, {8, 64});
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 64; ++c) {
      double v = r == 0   ? 5 + 1e-3 * ((c * 7) % 5)
                 : r == 1 ? 0
                 : r == 2 ? (c == 3 ? 8 : 0)
                 : r == 3 ? -7.9 + 1e-4 * (c % 3)
                 : r == 4 ? 1e-3 * (c % 2)
                          : std::sin(0.37 * c * r) * (r - 4);
      x.set(r * 64 + c, v);
    }
  HostTensor g(DType::F32, {64}), b(DType::F32, {64});
  for (int64_t c = 0; c < 64; ++c) {
    g.set(c, c % 2 ? 8 : -8);
    b.set(c, 8 - 0.25 * c);
  }
  for (const char *policy : {"bf16", "fp16"}) {
    OwningOpRef<ModuleOp> lowered(cast<ModuleOp>((*module)->clone()));
    PassManager pm(context.get());
    ASSERT_TRUE(succeeded(parsePassPipeline(
        std::string("fusec-lower-precision{policy=") + policy + "}", pm)));
    ASSERT_TRUE(succeeded(pm.run(*lowered)));
    // rmsdiv: an exporter's x / sqrt(mean(x^2) + eps), keep-dims reshape.
    for (const char *name : {"ln", "rms", "rmsdiv"}) {
      auto after = *findFunction(*lowered, name);
      auto abs = after->getAttrOfType<DictionaryAttr>("fusec.abs_error_bound");
      ASSERT_TRUE(abs);
      double bound = cast<FloatAttr>(abs.getAs<ArrayAttr>("bounds")[0]).getValueAsDouble();
      // Finite and not vacuous: a few percent of what |result| can be,
      // sqrt(64) |g| + |b| = 72 (the rule alone would give twice that; the
      // division's form needs the sqrt's range, at least sqrt(eps)).
      EXPECT_LT(bound, 8) << policy << " @" << name;
      std::vector<HostTensor> in{x, g};
      if (std::string(name) == "ln")
        in.push_back(b);
      auto want = interpret(*findFunction(*module, name), in);
      auto got = interpret(after, in);
      ASSERT_TRUE(want.ok() && got.ok());
      double worst = 0;
      for (int64_t i = 0; i < (*want)[0].numElements(); ++i) {
        double d = std::fabs((*got)[0].get(i) - (*want)[0].get(i));
        ASSERT_FALSE(std::isnan(d)) << policy << " @" << name << " element " << i;
        worst = std::max(worst, d);
      }
      EXPECT_LE(worst, bound) << policy << " @" << name;
    }
  }
}

// A mean pool over a window with no tap inside the input (counted without
// the padding; dilation leaves such windows) is 0, as the decomposed kernels compute it; it was 0 / 0 = NaN, and the
// judgement's relative L2 error, which leaves NaN out, hid the difference.
TEST_F(InterpreterTest, AnEmptyMeanPoolWindowIsZero) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @p(%x: tensor<1x1x1xf32>) -> tensor<1x1x4xf32> {
      %r = fusec.pool mean %x {kernel = array<i64: 3>, dilations = array<i64: 2>,
                               pad_low = array<i64: 4>, pad_high = array<i64: 3>}
             : tensor<1x1x1xf32> -> tensor<1x1x4xf32>
      return %r : tensor<1x1x4xf32>
    })mlir", context.get());
  ASSERT_TRUE(module);
  auto out = interpret(*findFunction(*module, "p"),
                       {tensor(DType::F32, {1, 1, 1}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Taps at -4, -2, 0; -3, -1, 1; -2, 0, 2; -1, 1, 3: the second and the
  // last window hold no element of the input.
  EXPECT_EQ((*out)[0].data, (std::vector<double>{3, 0, 3, 0}));
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    auto cmp = checkPipelinePreservesSemantics(*module, "fusec-decompose", "", seed);
    ASSERT_TRUE(cmp.ok()) << cmp.status();
    EXPECT_TRUE((*cmp)[0].ok) << (*cmp)[0].message;
  }
}

} // namespace

// An argument built by hand whose storage does not hold its shape (or holds
// it in the other vector) is an error naming it, not reads past the vector
// (issue #19's audit of the interpreter's index arithmetic).
TEST_F(InterpreterTest, ArgumentsWhoseStorageMissesTheirShapeAreRefused) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%a: tensor<4xf32>, %i: tensor<2xi32>) -> tensor<4xf32> {
      %0 = fusec.add %a, %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    })mlir",
                                       context.get());
  ASSERT_TRUE(module);
  auto func = findFunction(*module, "");
  ASSERT_TRUE(func.ok());
  HostTensor ints(DType::I32, {2});
  HostTensor shortFloat(DType::F32, {4});
  shortFloat.data.resize(2);
  auto r = interpret(*func, {shortFloat, ints});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("argument #0 (tensor<4xf32>) holds 2 float and 0 integer "
                                      "elements, expected 4 float ones"),
            std::string::npos)
      << r.status();
  HostTensor wrongVector(DType::I32, {2});
  wrongVector.data.assign(2, 1.0);
  r = interpret(*func, {HostTensor(DType::F32, {4}), wrongVector});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("argument #1"), std::string::npos) << r.status();
  // Well-formed arguments still run.
  r = interpret(*func, {HostTensor(DType::F32, {4}), ints});
  EXPECT_TRUE(r.ok()) << r.status();
}
