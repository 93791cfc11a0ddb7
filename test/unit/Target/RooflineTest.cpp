//===- RooflineTest.cpp - Targets and the roofline model --------*- C++ -*-===//

#include "fusec/IR/Fusec.h"
#include "fusec/Target/Roofline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir;
using namespace fusec;

namespace {

TEST(Target, BuiltinsLoadAndEveryFigureNamesItsSource) {
  for (const std::string &name : {"b200", "h200", "h100"}) {
    auto t = Target::load(name);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->name(), name);
    EXPECT_FALSE(t->figures().empty());
    for (const auto &[key, fig] : t->figures()) {
      EXPECT_GT(fig.value, 0) << name << " " << key;
      EXPECT_FALSE(fig.source.empty()) << name << " " << key;
      EXPECT_TRUE(Target::knownFigures().count(key)) << key;
    }
  }
  EXPECT_GT(Target::load("b200")->value("tmem_kib_per_sm"), 0);
  EXPECT_EQ(Target::load("h200")->value("tmem_kib_per_sm"), 0);
}

TEST(Target, SeedsRidgeOnB200) {
  auto b200 = Target::load("b200");
  ASSERT_TRUE(b200.ok());
  // 80 TFLOPS over 8 TB/s.
  EXPECT_DOUBLE_EQ(b200->fp32FlopsPerSecond() / b200->hbmBytesPerSecond(), 10.0);
  EXPECT_NE(b200->source("fp32_tflops").find("seeds"), std::string::npos);
  // tf32 for f32 operands, fp8 for both fp8 types.
  EXPECT_DOUBLE_EQ(b200->tensorFlopsPerSecond(DType::F32), 1100e12);
  EXPECT_DOUBLE_EQ(b200->tensorFlopsPerSecond(DType::F8E5M2), 4500e12);
  EXPECT_DOUBLE_EQ(b200->sfuOpsPerSecond(), 16.0 * 148 * 1.965e9);
}

TEST(Target, OverridesKeepTheBase) {
  auto t = Target::parse(R"({"base": "h100", "name": "mine",
                             "figures": {"hbm_tb_per_s": {"value": 3.0, "source": "measured"}}})",
                         "mine.json");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->value("hbm_tb_per_s"), 3.0);
  EXPECT_EQ(t->source("hbm_tb_per_s"), "measured");
  EXPECT_EQ(t->value("fp32_tflops"), 67);
  EXPECT_EQ(t->source("fp32_tflops"), "datasheet (SXM5)");
  auto cycle = Target::parse(R"({"base": "nowhere", "name": "x", "figures": {}})", "x");
  EXPECT_FALSE(cycle.ok());
}

TEST(Target, CodegenChoicesComeFromTheTargetAndItsBase) {
  // The H200's loads were measured plain; the B200 file keeps the aggressive
  // default and says it is unmeasured.
  EXPECT_EQ(Target::load("h200")->choice("stream_load"), "plain");
  EXPECT_EQ(Target::load("h200")->choice("keep_load"), "plain");
  EXPECT_EQ(Target::load("b200")->choice("stream_load"), "l2_256b");
  EXPECT_NE(Target::load("b200")->choiceSource("stream_load").find("unmeasured"),
            std::string::npos);
  // A measured file overrides one choice and keeps its base's others.
  auto t = Target::parse(R"({"base": "b200", "name": "mine", "figures": {},
                             "codegen": {"stream_load": {"value": "evict_first", "source": "measured"}}})",
                         "mine.json");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->choice("stream_load"), "evict_first");
  EXPECT_EQ(t->choice("keep_load"), "evict_last");
  auto bad = Target::parse(R"({"base": "h200", "name": "x", "figures": {},
                               "codegen": {"stream_load": {"value": "fast", "source": "?"}}})",
                           "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not one of its values"), std::string::npos);
  auto unknown = Target::parse(R"({"base": "h200", "name": "x", "figures": {},
                                   "codegen": {"tile": {"value": "big", "source": "?"}}})",
                               "x.json");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown codegen choice 'tile'"), std::string::npos);
}

class RooflineTest : public ::testing::Test {
protected:
  RooflineTest() {
    registry.insert<FusecDialect, func::FuncDialect>();
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }
  GraphAnalysis analyze(const char *text, const char *target) {
    module = parseSourceString<ModuleOp>(text, context.get());
    EXPECT_TRUE(module);
    auto t = Target::load(target);
    EXPECT_TRUE(t.ok());
    return analyzeFunction(*module->getOps<func::FuncOp>().begin(), *t);
  }
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(RooflineTest, VectorAddSitsUnderTheRidge) {
  GraphAnalysis g = analyze(R"mlir(
    func.func @f(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
      %0 = fusec.add %a, %b : tensor<1048576xf32>
      return %0 : tensor<1048576xf32>
    })mlir",
                            "b200");
  ASSERT_EQ(g.kernels.size(), 1u);
  const KernelAnalysis &k = g.kernels[0];
  EXPECT_NEAR(k.cost.intensity(), 0.083, 0.001);
  EXPECT_EQ(k.bound, Roof::Hbm);
  EXPECT_NEAR(k.headroom(Roof::Fp32), 120.0, 1e-9);
  EXPECT_DOUBLE_EQ(k.hbmSeconds, 12582912 / 8e12);
  EXPECT_DOUBLE_EQ(k.predictedSeconds, 12582912 / 8e12 + 2e-6);
}

TEST_F(RooflineTest, TensorCoreKernelsPayForEfficiencyAndTheLastWave) {
  // 8192^3 bf16 on 132 SMs in 128 x 256 tiles: 64 x 32 = 2048 tiles, 15.5
  // waves rounded up to 16; the mainloop reaches tensor_efficiency of the
  // rate. A kernel without a launch plan keeps the bare rate.
  const char *text = R"mlir(
    func.func @f(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
      %r = fusec.kernel "k0_matmul" (%a, %b) %LAUNCH : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
      ^bb0(%x: tensor<8192x8192xbf16>, %y: tensor<8192x8192xbf16>):
        %0 = fusec.matmul %x, %y : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
        fusec.yield %0 : tensor<8192x8192xbf16>
      }
      return %r : tensor<8192x8192xbf16>
    })mlir";
  auto with = [&](const std::string &launch) {
    std::string s = text;
    s.replace(s.find("%LAUNCH"), 7, launch);
    return s;
  };
  auto target = Target::load("h200");
  ASSERT_TRUE(target.ok());
  double bare = 2.0 * 8192 * 8192 * 8192 / target->tensorFlopsPerSecond(DType::BF16);
  GraphAnalysis plain = analyze(with("").c_str(), "h200");
  ASSERT_EQ(plain.kernels.size(), 1u);
  EXPECT_NEAR(plain.kernels[0].tensorSeconds, bare, bare * 1e-9);
  GraphAnalysis planned = analyze(
      with("{fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, "
           "tile = [128, 256, 64], stages = 4, smem = 197712, regs = 232>}")
               .c_str(),
      "h200");
  ASSERT_EQ(planned.kernels.size(), 1u);
  double waves = 16.0 / (2048.0 / 132.0);
  // The epilogue stores each element (2 instructions, at the consumers'
  // issue rate) after the mainloop.
  double store = 8192.0 * 8192 * 2 /
                 (target->value("sm_count") * 128 * target->value("clock_ghz") * 1e9 * 0.5);
  EXPECT_NEAR(planned.kernels[0].tensorSeconds,
              bare * waves / target->tensorEfficiency() + store, bare * 1e-9);
  EXPECT_LT(target->tensorEfficiency(), 1.0);
  // The planned GEMM pays its pipeline's fill and drain on top of the roof
  // and the launch; the unplanned op does not.
  double latency = target->value("gemm_latency_us") * 1e-6;
  EXPECT_GT(latency, 0.0);
  EXPECT_NEAR(planned.kernels[0].predictedSeconds,
              planned.kernels[0].tensorSeconds + target->launchSeconds() + latency, 1e-12);
  EXPECT_NEAR(plain.kernels[0].predictedSeconds,
              plain.kernels[0].tensorSeconds + target->launchSeconds(), 1e-12);
}

TEST_F(RooflineTest, AGridSmallerThanTheChipLeavesTensorCoresIdle) {
  // ResNet-50's last 3x3 convolution as its GEMM, [1568, 4608] x [4608,
  // 512] in 128 x 64 tiles: 13 x 8 = 104 units on a grid of 104 CTAs,
  // one an SM, so 28 of the H200's 132 SMs have no work: 132 / 104 of the
  // whole chip's time (the waves were counted over the grid, 1.0).
  const char *text = R"mlir(
    func.func @f(%a: tensor<1568x4608xbf16>, %b: tensor<4608x512xbf16>) -> tensor<1568x512xbf16> {
      %r = fusec.kernel "k0_matmul" (%a, %b) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = %GRID, block = 384, tile = [128, %N, 64], stages = 8, smem = 230544, regs = 232>} : (tensor<1568x4608xbf16>, tensor<4608x512xbf16>) -> tensor<1568x512xbf16> {
      ^bb0(%x: tensor<1568x4608xbf16>, %y: tensor<4608x512xbf16>):
        %0 = fusec.matmul %x, %y : (tensor<1568x4608xbf16>, tensor<4608x512xbf16>) -> tensor<1568x512xbf16>
        fusec.yield %0 : tensor<1568x512xbf16>
      }
      return %r : tensor<1568x512xbf16>
    })mlir";
  auto with = [&](const std::string &grid, const std::string &n) {
    std::string s = text;
    s.replace(s.find("%GRID"), 5, grid);
    s.replace(s.find("%N"), 2, n);
    return s;
  };
  auto target = Target::load("h200");
  ASSERT_TRUE(target.ok());
  ASSERT_EQ(target->value("sm_count"), 132.0);
  double epilogue = 1568.0 * 512 * 2 /
                    (target->value("sm_count") * 128 * target->value("clock_ghz") * 1e9 * 0.5);
  double bare = 2.0 * 1568 * 4608 * 512 / target->tensorFlopsPerSecond(DType::BF16) /
                target->tensorEfficiency();
  GraphAnalysis small = analyze(with("104", "64").c_str(), "h200");
  ASSERT_EQ(small.kernels.size(), 1u);
  EXPECT_NEAR(small.kernels[0].tensorSeconds, bare * 132.0 / 104.0 + epilogue, bare * 1e-9);
  // 128 x 256 tiles: 26 units, a fifth of the chip.
  GraphAnalysis wide = analyze(with("26", "256").c_str(), "h200");
  ASSERT_EQ(wide.kernels.size(), 1u);
  EXPECT_NEAR(wide.kernels[0].tensorSeconds, bare * 132.0 / 26.0 + epilogue, bare * 1e-9);
}

TEST_F(RooflineTest, SwappedDecodeTilesHaveTheirOwnFillAndDrain) {
  // 16 tokens by 4096 x 4096 weights in the swapped tile (16 rows): its
  // fill and drain is gemm_latency_swapped_us, not the 64-row tile's.
  const char *text = R"mlir(
    func.func @f(%a: tensor<16x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<16x4096xbf16> {
      %r = fusec.kernel "k0_matmul" (%a, %b) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 128, block = %BLOCK, tile = [%ROWS, 64, 64], stages = 8, split = 2, smem = 165136, regs = 232>} : (tensor<16x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<16x4096xbf16> {
      ^bb0(%x: tensor<16x4096xbf16>, %y: tensor<4096x4096xbf16>):
        %0 = fusec.matmul %x, %y {transpose_rhs} : (tensor<16x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<16x4096xbf16>
        fusec.yield %0 : tensor<16x4096xbf16>
      }
      return %r : tensor<16x4096xbf16>
    })mlir";
  auto with = [&](const std::string &rows, const std::string &block) {
    std::string s = text;
    s.replace(s.find("%BLOCK"), 6, block);
    s.replace(s.find("%ROWS"), 5, rows);
    return s;
  };
  for (const char *name : {"h200", "h200-measured"}) {
    auto target = Target::load(name);
    if (!target.ok())
      continue; // h200-measured exists once fusec-calibrate has run
    double swapped = target->value("gemm_latency_swapped_us") * 1e-6;
    double tile64 = target->value("gemm_latency_us") * 1e-6;
    ASSERT_GT(swapped, 0.0) << name;
    EXPECT_LT(swapped, tile64) << name;
    GraphAnalysis s = analyze(with("16", "256").c_str(), name);
    GraphAnalysis r = analyze(with("64", "256").c_str(), name);
    ASSERT_EQ(s.kernels.size(), 1u);
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_NEAR(s.kernels[0].launchSeconds - target->launchSeconds(), swapped, 1e-12) << name;
    EXPECT_NEAR(r.kernels[0].launchSeconds - target->launchSeconds(), tile64, 1e-12) << name;
  }
}

TEST_F(RooflineTest, GemmEpilogueArithmeticIsSerialWithTheMainloop) {
  // gelu(x W + b): the epilogue's fp32 and SFU work runs between mainloops
  // on the same warpgroups, so it adds to the tensor time.
  const char *text = R"mlir(
    func.func @f(%a: tensor<4096x768xbf16>, %b: tensor<768x3072xbf16>, %c: tensor<4096x3072xbf16>) -> tensor<4096x3072xbf16> {
      %r = fusec.kernel "k0_matmul_gelu" (%a, %b, %c) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 256, 64], stages = 4, smem = 230480, regs = 232>} : (tensor<4096x768xbf16>, tensor<768x3072xbf16>, tensor<4096x3072xbf16>) -> tensor<4096x3072xbf16> {
      ^bb0(%x: tensor<4096x768xbf16>, %y: tensor<768x3072xbf16>, %z: tensor<4096x3072xbf16>):
        %0 = fusec.matmul %x, %y : (tensor<4096x768xbf16>, tensor<768x3072xbf16>) -> tensor<4096x3072xbf16>
        %1 = fusec.add %0, %z : tensor<4096x3072xbf16>
        %2 = fusec.gelu %1 : tensor<4096x3072xbf16>
        fusec.yield %2 : tensor<4096x3072xbf16>
      }
      return %r : tensor<4096x3072xbf16>
    })mlir";
  auto target = Target::load("h200");
  ASSERT_TRUE(target.ok());
  GraphAnalysis g = analyze(text, "h200");
  ASSERT_EQ(g.kernels.size(), 1u);
  const KernelAnalysis &k = g.kernels[0];
  ASSERT_GT(k.fp32Seconds + k.sfuSeconds, 0.0);
  double mainloop = 2.0 * 4096 * 768 * 3072 / target->tensorFlopsPerSecond(DType::BF16);
  double units = 32.0 * 12.0, waves = std::ceil(units / 132.0) / (units / 132.0);
  // The epilogue at the consumers' issue rate (half of 128 lanes a clock
  // on each SM): the add, the GELU's primitives and the residual's load,
  // each bf16 op rounding, the store.
  KernelOp kernel;
  module->walk([&](KernelOp op) { kernel = op; });
  ASSERT_TRUE(kernel);
  double perElement = matmulEpilogueInstructions(kernel.getBody().front());
  EXPECT_DOUBLE_EQ(perElement, (1 + 1) + (24 + 1) + 8 + 2);
  double issue = 4096.0 * 3072 * perElement /
                 (target->value("sm_count") * 128 * target->value("clock_ghz") * 1e9 * 0.5);
  double epilogue = std::max(k.fp32Seconds + k.sfuSeconds, issue);
  EXPECT_GT(issue, k.fp32Seconds + k.sfuSeconds);
  EXPECT_NEAR(k.tensorSeconds, mainloop * waves / target->tensorEfficiency() + epilogue,
              mainloop * 1e-9);

  // Ping-pong (two consumers of 64-row tiles, 384 threads): one
  // warpgroup's epilogue runs beside the other's mainloop (1.14x slower
  // than the cooperative one), a 64-row tile's epilogue as long as the
  // cooperative 128-row one's: max(mainloop, mainloop / 2 + epilogue).
  std::string pp = text;
  pp.replace(pp.find("tile = [128, 256, 64]"), 21, "tile = [64, 256, 64]");
  GraphAnalysis p = analyze(pp.c_str(), "h200");
  ASSERT_EQ(p.kernels.size(), 1u);
  double ppUnits = 64.0 * 12.0, ppWaves = std::ceil(ppUnits / 132.0) / (ppUnits / 132.0);
  double ppMain = 1.14 * mainloop * ppWaves / target->tensorEfficiency();
  EXPECT_NEAR(p.kernels[0].tensorSeconds, std::max(ppMain, ppMain / 2 + epilogue),
              mainloop * 1e-9);
  EXPECT_LT(p.kernels[0].predictedSeconds, k.predictedSeconds);
}

TEST_F(RooflineTest, FusionCutsBytesAndPeakMemory) {
  // Fused, the kernel boundary moves a, b and the result (12 bytes an
  // element); unfused, every op's operands and result move.
  GraphAnalysis g = analyze(R"mlir(
    func.func @f(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
      %r = fusec.kernel "chain" (%a, %b) : (tensor<1048576xf32>, tensor<1048576xf32>) -> tensor<1048576xf32> {
      ^bb0(%x: tensor<1048576xf32>, %y: tensor<1048576xf32>):
        %0 = fusec.add %x, %y : tensor<1048576xf32>
        %1 = fusec.neg %0 : tensor<1048576xf32>
        %2 = fusec.exp %1 : tensor<1048576xf32>
        %3 = fusec.mul %2, %x : tensor<1048576xf32>
        fusec.yield %3 : tensor<1048576xf32>
      }
      return %r : tensor<1048576xf32>
    })mlir",
                            "h200");
  const int64_t mib4 = 4 << 20;
  EXPECT_EQ(g.totals.kernels, 1);
  EXPECT_EQ(g.unfusedTotals.kernels, 4);
  EXPECT_EQ(g.totals.bytes, 3 * mib4);
  EXPECT_EQ(g.unfusedTotals.bytes, (3 + 2 + 2 + 3) * mib4);
  EXPECT_EQ(g.totals.flops, g.unfusedTotals.flops);
  EXPECT_EQ(g.totals.peakBytes, 3 * mib4); // a, b and the result
  // Unfused, the arguments are held for the whole call (the caller owns
  // them) and each op holds its operand and result: x, y, %0 and %1 at the
  // neg (and the same two values at each later step).
  EXPECT_EQ(g.unfusedTotals.peakBytes, 4 * mib4);
  EXPECT_LT(g.totals.predictedSeconds, g.unfusedTotals.predictedSeconds / 3);
  EXPECT_EQ(g.kernels[0].ops, 4);
  EXPECT_EQ(g.kernels[0].cost.sfuOps, 1048576);
}

TEST_F(RooflineTest, AttentionIsSfuLimitedOnB200AndTensorBoundOnH200) {
  const char *text = R"mlir(
    func.func @f(%q: tensor<4x32x4096x128xbf16>) -> tensor<4x32x4096x128xbf16> {
      %0 = fusec.attention %q, %q, %q {scale = 0.088 : f64} : (tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>) -> tensor<4x32x4096x128xbf16>
      return %0 : tensor<4x32x4096x128xbf16>
    })mlir";
  KernelAnalysis b = analyze(text, "b200").kernels[0];
  EXPECT_TRUE(b.bound == Roof::Sfu ||
              (b.bound == Roof::Tensor && b.sfuSeconds >= 0.9 * b.tensorSeconds))
      << roofName(b.bound) << " sfu " << b.sfuSeconds << " tensor " << b.tensorSeconds;
  KernelAnalysis h = analyze(text, "h200").kernels[0];
  EXPECT_EQ(h.bound, Roof::Tensor);
  EXPECT_LT(h.sfuSeconds, 0.6 * h.tensorSeconds);
}

TEST_F(RooflineTest, AttentionIntrinsicFollowsItsTiledKernelsGrid) {
  // GPT-2's attention (4 x 12 heads, 1024 tokens, head dim 64): measured
  // on the H200 at 42.5 us (31.4 causal) in
  // bench/results/2026-12-04-h200-attention-persistent; the tensor roof
  // alone said 13 us (6.5).
  auto text = [](const char *shape, bool causal) {
    std::string s = R"mlir(
    func.func @f(%q: tensor<SHAPE>) -> tensor<SHAPE> {
      %0 = fusec.attention %q, %q, %q {scale = 0.125 : f64 CAUSAL} : (tensor<SHAPE>, tensor<SHAPE>, tensor<SHAPE>) -> tensor<SHAPE>
      return %0 : tensor<SHAPE>
    })mlir";
    for (size_t at; (at = s.find("SHAPE")) != std::string::npos;)
      s.replace(at, 5, shape);
    s.replace(s.find(" CAUSAL"), 7, causal ? ", causal" : "");
    return s;
  };
  for (const char *name : {"h200", "h200-measured"}) {
    auto target = Target::load(name);
    if (!target.ok())
      continue;
    ASSERT_GT(target->value("attention_tile_us"), 0.0) << name;
    KernelAnalysis full = analyze(text("4x12x1024x64xbf16", false).c_str(), name).kernels[0];
    KernelAnalysis causal = analyze(text("4x12x1024x64xbf16", true).c_str(), name).kernels[0];
    EXPECT_EQ(full.bound, Roof::Tensor) << name;
    // Within the fit's band of the measured times (0.85-1.11 of them).
    EXPECT_GT(full.tensorSeconds, 0.85 * 42.5e-6) << name;
    EXPECT_LT(full.tensorSeconds, 1.11 * 42.5e-6) << name;
    EXPECT_GT(causal.tensorSeconds, 0.85 * 31.4e-6) << name;
    EXPECT_LT(causal.tensorSeconds, 1.11 * 31.4e-6) << name;
    // Causal tiles visit their key blocks up to the diagonal: 36 of 64 a
    // head, plus the same waves of tiles.
    EXPECT_LT(causal.tensorSeconds, full.tensorSeconds);
    EXPECT_GT(causal.tensorSeconds, 36.0 / 64 * full.tensorSeconds);
    // Decode (at most 16 query rows) runs the split-KV kernel, which the
    // model leaves to the roofline: memory-bound.
    KernelAnalysis decode = analyze(R"mlir(
    func.func @f(%q: tensor<8x32x1x128xbf16>, %k: tensor<8x32x4096x128xbf16>) -> tensor<8x32x1x128xbf16> {
      %0 = fusec.attention %q, %k, %k {scale = 0.088 : f64} : (tensor<8x32x1x128xbf16>, tensor<8x32x4096x128xbf16>, tensor<8x32x4096x128xbf16>) -> tensor<8x32x1x128xbf16>
      return %0 : tensor<8x32x1x128xbf16>
    })mlir", name).kernels[0];
    EXPECT_EQ(decode.bound, Roof::Hbm) << name;
  }
  // A target without the figures keeps the tensor roof alone.
  KernelAnalysis b = analyze(text("4x12x1024x64xbf16", false).c_str(), "b200").kernels[0];
  EXPECT_DOUBLE_EQ(b.tensorSeconds,
                   4.0 * 4 * 12 * 1024 * 1024 * 64 /
                       Target::load("b200")->tensorFlopsPerSecond(DType::BF16));
}

TEST_F(RooflineTest, MatmulTensorBoundLayerNormHbmBound) {
  GraphAnalysis g = analyze(R"mlir(
    func.func @f(%a: tensor<8192x8192xbf16>, %x: tensor<16384x8192xbf16>, %g: tensor<8192xbf16>) -> (tensor<8192x8192xbf16>, tensor<16384x8192xbf16>) {
      %0 = fusec.matmul %a, %a : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
      %1 = fusec.layer_norm %x, %g, %g : (tensor<16384x8192xbf16>, tensor<8192xbf16>, tensor<8192xbf16>) -> tensor<16384x8192xbf16>
      return %0, %1 : tensor<8192x8192xbf16>, tensor<16384x8192xbf16>
    })mlir",
                            "h200");
  ASSERT_EQ(g.kernels.size(), 2u);
  EXPECT_EQ(g.kernels[0].bound, Roof::Tensor);
  EXPECT_DOUBLE_EQ(g.kernels[0].tensorSeconds, 2.0 * 8192 * 8192 * 8192 / 989e12);
  EXPECT_EQ(g.kernels[1].bound, Roof::Hbm);
}

} // namespace
