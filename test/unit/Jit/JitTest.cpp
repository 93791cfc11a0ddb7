//===- JitTest.cpp - The embedding API --------------------------*- C++ -*-===//
//
// Graph checking and PTX compilation run anywhere; running needs a GPU and is
// skipped, with the reason, without one.
//
//===----------------------------------------------------------------------===//

#include "fusec/Jit.h"
#include "fusec/JitModule.h"
#include "fusec/IR/Fusec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

using namespace fusec;

namespace {

/// The source tree: $FUSEC_SOURCE_DIR (set where the binary runs elsewhere,
/// as on the GPU machine), else where it was built from.
std::string sourceDir() {
  const char *env = std::getenv("FUSEC_SOURCE_DIR");
  return env && *env ? env : FUSEC_SOURCE_DIR;
}

std::string readExample(const std::string &name) {
  std::ifstream in(sourceDir() + "/examples/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

JitOptions freshOptions(const std::string &name) {
  JitOptions o;
  o.cache.directory = ::testing::TempDir() + "/fusec-jit-" + name + "-" +
                      std::to_string(getpid());
  std::string cmd = "rm -rf '" + o.cache.directory + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return o;
}

TEST(Jit, KernelsWithoutCodeGenerationAreReportedWithTheirLocation) {
  auto jit = Jit::create(freshOptions("outside"));
  ASSERT_TRUE(jit.ok());
  // f32 attention: the intrinsic takes bf16 or f16, so the graph is refused
  // where the op is (GPU or not).
  auto r = (*jit)->compile(R"mlir(
    func.func @f(%q: tensor<1x2x8x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32> {
      %0 = fusec.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32>
      return %0 : tensor<1x2x8x64xf32>
    })mlir",
                           "g.mlir");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find(
                "g.mlir:3:12: 'fusec.attention': the attention intrinsic takes bf16 "
                "or f16"),
            std::string::npos)
      << r.status();
}

TEST(Jit, GeneratesCodeForElementwiseGraphs) {
  JitOptions options = freshOptions("generate");
  options.target = "sm_90a";
  auto jit = Jit::create(options);
  ASSERT_TRUE(jit.ok());
  auto r = (*jit)->compile(R"mlir(
    func.func @f(%a: tensor<1000xf32>, %b: tensor<1000xf32>) -> tensor<1000xf32> {
      %0 = fusec.exp %a : tensor<1000xf32>
      %1 = fusec.add %0, %b : tensor<1000xf32>
      return %1 : tensor<1000xf32>
    })mlir");
  if (rt::available().ok()) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->kernels().size(), 1u);
  } else {
    // Pipeline, code generation and PTX -> cubin all ran; only the load
    // needs the GPU.
    ASSERT_FALSE(r.ok());
    if (r.status().message().find("nvJitLink not found") != std::string::npos)
      GTEST_SKIP() << r.status().message();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  }
  EXPECT_EQ((*jit)->cacheStats().compiles, 1);
}

TEST(Jit, ParseErrorsCarryLocations) {
  auto jit = Jit::create(freshOptions("parse"));
  ASSERT_TRUE(jit.ok());
  auto r = (*jit)->compile("func.func @f(%a: tensor<4xf32>) {\n  %0 = fusec.nope %a\n}",
                           "bad.mlir");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad.mlir:2:8: error: custom op 'fusec.nope' is unknown"),
            std::string::npos)
      << r.status();
  // A failure is not cached: the same text fails again the same way.
  EXPECT_FALSE((*jit)->compile("func.func @f(%a: tensor<4xf32>) {\n  %0 = fusec.nope %a\n}",
                               "bad.mlir").ok());
  EXPECT_EQ((*jit)->executableHits(), 0);
}

TEST(Jit, KernelsNeedLaunchShapes) {
  auto jit = Jit::create(freshOptions("shape"));
  ASSERT_TRUE(jit.ok());
  auto r = (*jit)->compile(R"mlir(
    func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = fusec.kernel "k" (%a) {fusec.ptx = ".version 8.0\n.target sm_80\n"} : (tensor<4xf32>) -> tensor<4xf32> {
      ^bb0(%x: tensor<4xf32>):
        fusec.yield %x : tensor<4xf32>
      }
      return %0 : tensor<4xf32>
    })mlir");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("needs 'fusec.grid'"), std::string::npos)
      << r.status();
}

TEST(Jit, CompilesPtxIntoTheDiskCacheEvenWithoutAGpu) {
  JitOptions options = freshOptions("cubin");
  options.target = "sm_90a";
  options.function = "vadd";
  auto jit = Jit::create(options);
  ASSERT_TRUE(jit.ok());
  std::string text = readExample("ptx/vector_add.mlir");
  ASSERT_FALSE(text.empty());
  auto r = (*jit)->compile(text);
  if (rt::available().ok()) {
    ASSERT_TRUE(r.ok()) << r.status();
  } else {
    ASSERT_FALSE(r.ok());
    if (r.status().message().find("nvJitLink not found") != std::string::npos)
      GTEST_SKIP() << r.status().message();
    // Without a GPU the build stops at the first allocation, after the PTX
    // was compiled and cached.
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  }
  EXPECT_EQ((*jit)->cacheStats().compiles, 1);
  auto again = Jit::create(options);
  ASSERT_TRUE(again.ok());
  (void)(*again)->compile(text);
  EXPECT_EQ((*again)->cacheStats().diskHits, 1);
  EXPECT_EQ((*again)->cacheStats().compiles, 0);
}

TEST(Jit, ModulesCompileLikeTextAndKeepLocations) {
  auto jit = Jit::create(freshOptions("module"));
  ASSERT_TRUE(jit.ok());
  mlir::DialectRegistry registry;
  registry.insert<FusecDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // f32 attention is refused, with its location, GPU or not.
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
    func.func @f(%q: tensor<1x2x8x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32> {
      %0 = fusec.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32>
      return %0 : tensor<1x2x8x64xf32>
    })mlir",
                                                        &context, "built.mlir");
  ASSERT_TRUE(module);
  auto r = compileModule(**jit, *module);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("built.mlir:3:12: 'fusec.attention': the attention "
                                      "intrinsic takes bf16 or f16"),
            std::string::npos)
      << r.status();
}

#define REQUIRE_GPU()                                                          \
  if (absl::Status st = rt::available(); !st.ok())                             \
  GTEST_SKIP() << "no GPU here: " << st.message()

TEST(Jit, RunsTheChainGraph) {
  REQUIRE_GPU();
  JitOptions options = freshOptions("chain");
  options.function = "chain";
  auto jit = Jit::create(options);
  ASSERT_TRUE(jit.ok());
  auto exec = (*jit)->compile(readExample("ptx/vector_add.mlir"));
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_EQ((*exec)->inputs().size(), 2u);
  ASSERT_EQ((*exec)->outputs().size(), 2u);
  ASSERT_EQ((*exec)->kernels().size(), 2u);
  EXPECT_EQ((*exec)->kernels()[0].name, "add_ab");
  EXPECT_EQ((*exec)->kernels()[0].cost.bytes(), 12000);

  HostTensor a = randomTensor(DType::F32, {1000}, 1);
  HostTensor b = randomTensor(DType::F32, {1000}, 2);
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  std::vector<rt::DeviceBuffer> bufs;
  for (const HostTensor *t : {&a, &b}) {
    std::string bytes = toDeviceBytes(*t);
    auto buf = rt::DeviceBuffer::allocate(bytes.size());
    ASSERT_TRUE(buf.ok());
    ASSERT_TRUE(buf->copyFromHost(bytes.data(), bytes.size()).ok());
    bufs.push_back(std::move(*buf));
  }
  for (int i = 0; i < 2; ++i) {
    auto buf = rt::DeviceBuffer::allocate(4000);
    ASSERT_TRUE(buf.ok());
    ASSERT_TRUE(buf->fill(0xFF).ok());
    bufs.push_back(std::move(*buf));
  }
  std::vector<const rt::DeviceBuffer *> in = {&bufs[0], &bufs[1]};
  std::vector<rt::DeviceBuffer *> out = {&bufs[2], &bufs[3]};
  ASSERT_TRUE((*exec)->run(in, out, *stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  std::string bytes(4000, '\0');
  ASSERT_TRUE(bufs[2].copyToHost(bytes.data(), 4000).ok());
  auto sum = fromDeviceBytes(DType::F32, {1000}, bytes);
  ASSERT_TRUE(bufs[3].copyToHost(bytes.data(), 4000).ok());
  auto copy = fromDeviceBytes(DType::F32, {1000}, bytes);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(sum->data[i], roundTo(DType::F32, roundTo(DType::F32, a.data[i] + b.data[i]) + 0.5));
    ASSERT_EQ(copy->data[i], a.data[i]);
  }
  // Wrong buffer counts and sizes are errors.
  EXPECT_FALSE((*exec)->run({in[0]}, out, *stream).ok());
  auto small = rt::DeviceBuffer::allocate(16);
  std::vector<rt::DeviceBuffer *> badOut = {&*small, out[1]};
  EXPECT_EQ((*exec)->run(in, badOut, *stream).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Jit, RunsAGeneratedKernel) {
  REQUIRE_GPU();
  auto jit = Jit::create(freshOptions("run-generated"));
  ASSERT_TRUE(jit.ok());
  const int64_t n = 1000003; // a partial last vector
  std::string t = "tensor<" + std::to_string(n) + "xf32>";
  auto exec = (*jit)->compile("func.func @f(%a: " + t + ", %b: " + t + ") -> " + t +
                              " {\n  %0 = fusec.exp %a : " + t +
                              "\n  %1 = fusec.mul %0, %b : " + t +
                              "\n  return %1 : " + t + "\n}\n");
  ASSERT_TRUE(exec.ok()) << exec.status();
  HostTensor a = randomTensor(DType::F32, {n}, 3), b = randomTensor(DType::F32, {n}, 4);
  std::vector<rt::DeviceBuffer> bufs;
  for (const HostTensor *h : {&a, &b}) {
    std::string bytes = toDeviceBytes(*h);
    auto buf = rt::DeviceBuffer::allocate(bytes.size());
    ASSERT_TRUE(buf.ok() && buf->copyFromHost(bytes.data(), bytes.size()).ok());
    bufs.push_back(std::move(*buf));
  }
  auto out = rt::DeviceBuffer::allocate(n * 4);
  ASSERT_TRUE(out.ok() && out->fill(0xFF).ok());
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*exec)->run({&bufs[0], &bufs[1]}, {&*out}, *stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  std::string bytes(n * 4, '\0');
  ASSERT_TRUE(out->copyToHost(bytes.data(), bytes.size()).ok());
  auto got = fromDeviceBytes(DType::F32, {n}, bytes);
  for (int64_t i = 0; i < n; ++i) {
    double want = std::exp(a.data[i]) * b.data[i];
    ASSERT_NEAR(got->data[i], want, 1e-5 + 1e-5 * std::fabs(want)) << i;
  }
}

TEST(Jit, ReturnedReshapesAreWrittenInPlace) {
  REQUIRE_GPU();
  // A head merge returned as [B, S, H D]: the kernel writes the caller's
  // buffer through the reshape (it was copied after the kernel); the same
  // kernel result returned a second time is the one copy.
  auto jit = Jit::create(freshOptions("reshape-out"));
  ASSERT_TRUE(jit.ok());
  auto exec = (*jit)->compile(R"mlir(
    func.func @f(%x: tensor<2x3x5x8xf32>) -> (tensor<2x5x24xf32>, tensor<2x5x3x8xf32>) {
      %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<2x3x5x8xf32> -> tensor<2x5x3x8xf32>
      %r = fusec.reshape %t : tensor<2x5x3x8xf32> -> tensor<2x5x24xf32>
      return %r, %t : tensor<2x5x24xf32>, tensor<2x5x3x8xf32>
    })mlir");
  ASSERT_TRUE(exec.ok()) << exec.status();
  EXPECT_EQ((*exec)->outputCopies(), 1);
  HostTensor x = randomTensor(DType::F32, {2, 3, 5, 8}, 5);
  std::string bytes = toDeviceBytes(x);
  auto in = rt::DeviceBuffer::allocate(bytes.size());
  ASSERT_TRUE(in.ok() && in->copyFromHost(bytes.data(), bytes.size()).ok());
  auto o0 = rt::DeviceBuffer::allocate(bytes.size()), o1 = rt::DeviceBuffer::allocate(bytes.size());
  ASSERT_TRUE(o0.ok() && o1.ok() && o0->fill(0xFF).ok() && o1->fill(0xFF).ok());
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*exec)->run({&*in}, {&*o0, &*o1}, *stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  for (rt::DeviceBuffer *o : {&*o0, &*o1}) {
    std::string got(bytes.size(), '\0');
    ASSERT_TRUE(o->copyToHost(got.data(), got.size()).ok());
    auto t = fromDeviceBytes(DType::F32, {2, 5, 3, 8}, got);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = 0; s < 5; ++s)
        for (int64_t h = 0; h < 3; ++h)
          for (int64_t d = 0; d < 8; ++d)
            ASSERT_EQ(t->data[((b * 5 + s) * 3 + h) * 8 + d], x.data[((b * 3 + h) * 5 + s) * 8 + d]);
  }
}

TEST(Jit, RunsATensorCoreMatmulAndReencodesItsTensorMaps) {
  REQUIRE_GPU();
  rt::DeviceInfo info = *rt::deviceInfo();
  if (info.computeMajor != 9)
    GTEST_SKIP() << "matmul_wgmma needs sm_90a; this GPU is " << info.arch();
  // Ragged M and N (TMA bounds), K over several stages, a bias and relu
  // fused: bf16 in, f32 out; then the same executable on other buffers (its
  // tensor maps must follow the new addresses).
  const int64_t m = 200, n = 264, k = 520;
  auto jit = Jit::create(freshOptions("wgmma"));
  ASSERT_TRUE(jit.ok());
  auto exec = (*jit)->compile(R"mlir(
    func.func @f(%a: tensor<200x520xbf16>, %b: tensor<520x264xbf16>, %c: tensor<264xf32>) -> tensor<200x264xf32> {
      %0 = fusec.matmul %a, %b : (tensor<200x520xbf16>, tensor<520x264xbf16>) -> tensor<200x264xf32>
      %cb = fusec.broadcast %c dims [1] : tensor<264xf32> -> tensor<200x264xf32>
      %1 = fusec.add %0, %cb : tensor<200x264xf32>
      %z = fusec.constant dense<0.0> : tensor<200x264xf32>
      %2 = fusec.max %1, %z : tensor<200x264xf32>
      return %2 : tensor<200x264xf32>
    })mlir");
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_EQ((*exec)->kernels().size(), 1u);
  EXPECT_EQ((*exec)->kernels()[0].strategy, "matmul_wgmma");
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  for (int round = 0; round < 2; ++round) {
    HostTensor a = randomTensor(DType::BF16, {m, k}, 10 + round);
    HostTensor b = randomTensor(DType::BF16, {k, n}, 20 + round);
    HostTensor c = randomTensor(DType::F32, {n}, 30 + round);
    std::vector<rt::DeviceBuffer> bufs;
    for (const HostTensor *t : {&a, &b, &c}) {
      std::string bytes = toDeviceBytes(*t);
      auto buf = rt::DeviceBuffer::allocate(bytes.size());
      ASSERT_TRUE(buf.ok() && buf->copyFromHost(bytes.data(), bytes.size()).ok());
      bufs.push_back(std::move(*buf));
    }
    auto out = rt::DeviceBuffer::allocate(m * n * 4);
    ASSERT_TRUE(out.ok() && out->fill(0xFF).ok());
    ASSERT_TRUE((*exec)->run({&bufs[0], &bufs[1], &bufs[2]}, {&*out}, *stream).ok());
    ASSERT_TRUE(stream->synchronize().ok());
    std::string bytes(m * n * 4, '\0');
    ASSERT_TRUE(out->copyToHost(bytes.data(), bytes.size()).ok());
    auto got = fromDeviceBytes(DType::F32, {m, n}, bytes);
    ASSERT_TRUE(got.ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = c.data[j];
        for (int64_t x = 0; x < k; ++x)
          want += a.data[i * k + x] * b.data[x * n + j];
        want = std::max(want, 0.0);
        ASSERT_NEAR(got->data[i * n + j], want, 1e-3 + 1e-4 * std::fabs(want))
            << "round " << round << " at " << i << ", " << j;
      }
  }
}

TEST(Jit, ProgrammaticDependentLaunchKeepsAChainOfMatmulsExact) {
  REQUIRE_GPU();
  rt::DeviceInfo info = *rt::deviceInfo();
  if (info.computeMajor != 9)
    GTEST_SKIP() << "matmul_wgmma needs sm_90a; this GPU is " << info.arch();
  // Three decode matmuls, each reading the one before and a weight that its
  // producer loads before griddepcontrol.wait, with SiLU and a residual in
  // the epilogues. With programmatic dependent launch each kernel starts
  // while the one before drains: its results must be those of the
  // serialized launches, bit for bit, run after run, launched directly and
  // replayed as a CUDA graph.
  const char *graph = R"mlir(
    func.func @f(%x: tensor<16x1024xbf16>, %w1: tensor<1024x1024xbf16>, %w2: tensor<1024x1024xbf16>, %w3: tensor<1024x1024xbf16>) -> tensor<16x1024xbf16> {
      %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<16x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<16x1024xbf16>
      %s = fusec.sigmoid %a : tensor<16x1024xbf16>
      %g = fusec.mul %a, %s : tensor<16x1024xbf16>
      %b = fusec.matmul %g, %w2 {transpose_rhs} : (tensor<16x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<16x1024xbf16>
      %r = fusec.add %b, %x : tensor<16x1024xbf16>
      %c = fusec.matmul %r, %w3 {transpose_rhs} : (tensor<16x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<16x1024xbf16>
      return %c : tensor<16x1024xbf16>
    })mlir";
  const int64_t m = 16, n = 1024;
  std::vector<HostTensor> hosts = {randomTensor(DType::BF16, {m, n}, 41),
                                   randomTensor(DType::BF16, {n, n}, 42),
                                   randomTensor(DType::BF16, {n, n}, 43),
                                   randomTensor(DType::BF16, {n, n}, 44)};
  // Weights scaled to keep the chain's values near 1.
  for (size_t t = 1; t < hosts.size(); ++t)
    for (auto &v : hosts[t].data)
      v *= 0.05;
  std::vector<rt::DeviceBuffer> bufs;
  for (const HostTensor &t : hosts) {
    std::string bytes = toDeviceBytes(t);
    auto buf = rt::DeviceBuffer::allocate(bytes.size());
    ASSERT_TRUE(buf.ok() && buf->copyFromHost(bytes.data(), bytes.size()).ok());
    bufs.push_back(std::move(*buf));
  }
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  // Outputs of (pdl, graph replay) runs.
  auto outputsOf = [&](bool pdl, bool replay, int64_t *programmatic) {
    JitOptions options = freshOptions(pdl ? "pdl-on" : "pdl-off");
    options.pdl = pdl;
    options.graphReplay = replay;
    auto jit = Jit::create(options);
    EXPECT_TRUE(jit.ok());
    auto exec = (*jit)->compile(graph);
    EXPECT_TRUE(exec.ok()) << exec.status();
    std::vector<std::string> results;
    if (!exec.ok())
      return results;
    EXPECT_EQ((*exec)->kernels().size(), 3u);
    auto out = rt::DeviceBuffer::allocate(m * n * 2);
    EXPECT_TRUE(out.ok());
    for (int run = 0; run < 30; ++run) {
      EXPECT_TRUE(out->fill(0xFF).ok());
      EXPECT_TRUE(
          (*exec)->run({&bufs[0], &bufs[1], &bufs[2], &bufs[3]}, {&*out}, *stream).ok());
      EXPECT_TRUE(stream->synchronize().ok());
      std::string bytes(m * n * 2, '\0');
      EXPECT_TRUE(out->copyToHost(bytes.data(), bytes.size()).ok());
      results.push_back(std::move(bytes));
    }
    *programmatic = (*exec)->programmaticLaunches();
    return results;
  };
  int64_t serialLaunches = -1, directLaunches = -1, replayLaunches = -1;
  std::vector<std::string> serial = outputsOf(false, false, &serialLaunches);
  ASSERT_EQ(serial.size(), 30u);
  EXPECT_EQ(serialLaunches, 0);
  // The serialized result against float64 here (bf16 rounding of each
  // kernel's output: a loose bound).
  auto got = fromDeviceBytes(DType::BF16, {m, n}, serial[0]);
  ASSERT_TRUE(got.ok());
  {
    auto matmulT = [&](const std::vector<double> &a, const HostTensor &w) {
      std::vector<double> y(m * n, 0.0);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t x = 0; x < n; ++x)
            acc += a[i * n + x] * w.data[j * n + x];
          y[i * n + j] = acc;
        }
      return y;
    };
    std::vector<double> x(hosts[0].data.begin(), hosts[0].data.end());
    std::vector<double> a = matmulT(x, hosts[1]);
    for (double &v : a)
      v = v / (1 + std::exp(-v));
    std::vector<double> r = matmulT(a, hosts[2]);
    for (size_t i = 0; i < r.size(); ++i)
      r[i] += x[i];
    std::vector<double> c = matmulT(r, hosts[3]);
    // bf16 inputs, weights and intermediates: the error is relative to the
    // values' scale, not to each value.
    double err = 0, norm = 0, largest = 0, worst = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      err += (got->data[i] - c[i]) * (got->data[i] - c[i]);
      norm += c[i] * c[i];
      largest = std::max(largest, std::fabs(c[i]));
      worst = std::max(worst, std::fabs(got->data[i] - c[i]));
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-2);
    EXPECT_LT(worst, 0.03 * largest);
  }
  std::vector<std::string> direct = outputsOf(true, false, &directLaunches);
  std::vector<std::string> replayed = outputsOf(true, true, &replayLaunches);
  // Launched directly, every run's second and third kernels overlap the one
  // before, but for the first run's, which follow a copy of their
  // tensor-map tables. Replayed, the first run launches directly (the
  // copies) and the second is captured with its tables already encoded:
  // two programmatic launches, in the graph every run replays.
  EXPECT_EQ(directLaunches, 2 * 29);
  EXPECT_EQ(replayLaunches, 2);
  ASSERT_EQ(direct.size(), 30u);
  ASSERT_EQ(replayed.size(), 30u);
  for (int run = 0; run < 30; ++run) {
    EXPECT_TRUE(direct[run] == serial[0]) << "direct run " << run << " differs";
    EXPECT_TRUE(replayed[run] == serial[0]) << "replayed run " << run << " differs";
    EXPECT_TRUE(serial[run] == serial[0]) << "serialized run " << run << " differs";
  }
}

TEST(Jit, ProgrammaticDependentLaunchAroundTheAttentionIntrinsic) {
  REQUIRE_GPU();
  if (absl::Status st = rt::attentionAvailable(); !st.ok())
    GTEST_SKIP() << st.message();
  // A kernel, the intrinsic, a kernel: with programmatic dependent launch
  // the intrinsic overlaps the kernel before it and the last kernel the
  // intrinsic; each waits at its start. The results must be the serialized
  // launches', bit for bit, run after run.
  const char *graph = R"mlir(
    func.func @f(%q: tensor<1x4x150x64xbf16>, %k: tensor<1x2x150x64xbf16>, %v: tensor<1x2x150x64xbf16>) -> tensor<1x4x150x64xbf16> {
      %e = fusec.exp %q : tensor<1x4x150x64xbf16>
      %0 = fusec.attention %e, %k, %v {scale = 0.125 : f64, causal} : (tensor<1x4x150x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>) -> tensor<1x4x150x64xbf16>
      %1 = fusec.tanh %0 : tensor<1x4x150x64xbf16>
      return %1 : tensor<1x4x150x64xbf16>
    })mlir";
  std::vector<HostTensor> hosts = {randomTensor(DType::BF16, {1, 4, 150, 64}, 51),
                                   randomTensor(DType::BF16, {1, 2, 150, 64}, 52),
                                   randomTensor(DType::BF16, {1, 2, 150, 64}, 53)};
  std::vector<rt::DeviceBuffer> bufs;
  for (const HostTensor &t : hosts) {
    std::string bytes = toDeviceBytes(t);
    auto buf = rt::DeviceBuffer::allocate(bytes.size());
    ASSERT_TRUE(buf.ok() && buf->copyFromHost(bytes.data(), bytes.size()).ok());
    bufs.push_back(std::move(*buf));
  }
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  const int64_t bytes = 4 * 150 * 64 * 2;
  auto outputsOf = [&](bool pdl, bool replay, int64_t *programmatic) {
    JitOptions options = freshOptions(pdl ? "pdl-attn-on" : "pdl-attn-off");
    options.pdl = pdl;
    options.graphReplay = replay;
    auto jit = Jit::create(options);
    EXPECT_TRUE(jit.ok());
    auto exec = (*jit)->compile(graph);
    EXPECT_TRUE(exec.ok()) << exec.status();
    std::vector<std::string> results;
    if (!exec.ok())
      return results;
    EXPECT_EQ((*exec)->kernels().size(), 3u);
    auto out = rt::DeviceBuffer::allocate(bytes);
    EXPECT_TRUE(out.ok());
    for (int run = 0; run < 20; ++run) {
      EXPECT_TRUE(out->fill(0xFF).ok());
      EXPECT_TRUE((*exec)->run({&bufs[0], &bufs[1], &bufs[2]}, {&*out}, *stream).ok());
      EXPECT_TRUE(stream->synchronize().ok());
      std::string b(bytes, '\0');
      EXPECT_TRUE(out->copyToHost(b.data(), b.size()).ok());
      results.push_back(std::move(b));
    }
    *programmatic = (*exec)->programmaticLaunches();
    return results;
  };
  int64_t serialLaunches = -1, directLaunches = -1, replayLaunches = -1;
  std::vector<std::string> serial = outputsOf(false, false, &serialLaunches);
  std::vector<std::string> direct = outputsOf(true, false, &directLaunches);
  std::vector<std::string> replayed = outputsOf(true, true, &replayLaunches);
  EXPECT_EQ(serialLaunches, 0);
  // The intrinsic and the kernel after it, every run (no tensor maps to
  // copy); replayed, the first run and the captured second.
  EXPECT_EQ(directLaunches, 2 * 20);
  EXPECT_EQ(replayLaunches, 2 * 2);
  ASSERT_EQ(serial.size(), 20u);
  ASSERT_EQ(direct.size(), 20u);
  ASSERT_EQ(replayed.size(), 20u);
  for (int run = 0; run < 20; ++run) {
    EXPECT_TRUE(direct[run] == serial[0]) << "direct run " << run << " differs";
    EXPECT_TRUE(replayed[run] == serial[0]) << "replayed run " << run << " differs";
  }
}

TEST(Jit, RunsTheAttentionIntrinsic) {
  REQUIRE_GPU();
  if (absl::Status st = rt::attentionAvailable(); !st.ok())
    GTEST_SKIP() << st.message();
  // Causal grouped-query attention (4 query heads on 2 kv heads), a length
  // that is not a multiple of the kernel's tiles; against float64 here.
  auto jit = Jit::create(freshOptions("attention"));
  ASSERT_TRUE(jit.ok());
  const int h = 4, hk = 2, s = 150, d = 64;
  auto exec = (*jit)->compile(R"mlir(
    func.func @f(%q: tensor<1x4x150x64xbf16>, %k: tensor<1x2x150x64xbf16>, %v: tensor<1x2x150x64xbf16>) -> tensor<1x4x150x64xbf16> {
      %0 = fusec.attention %q, %k, %v {scale = 0.125 : f64, causal} : (tensor<1x4x150x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>) -> tensor<1x4x150x64xbf16>
      return %0 : tensor<1x4x150x64xbf16>
    })mlir");
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_EQ((*exec)->kernels().size(), 1u);
  EXPECT_EQ((*exec)->kernels()[0].strategy, "intrinsic");
  HostTensor q = randomTensor(DType::BF16, {1, h, s, d}, 5);
  HostTensor k = randomTensor(DType::BF16, {1, hk, s, d}, 6);
  HostTensor v = randomTensor(DType::BF16, {1, hk, s, d}, 7);
  std::vector<rt::DeviceBuffer> bufs;
  for (const HostTensor *t : {&q, &k, &v}) {
    std::string bytes = toDeviceBytes(*t);
    auto buf = rt::DeviceBuffer::allocate(bytes.size());
    ASSERT_TRUE(buf.ok() && buf->copyFromHost(bytes.data(), bytes.size()).ok());
    bufs.push_back(std::move(*buf));
  }
  auto out = rt::DeviceBuffer::allocate(h * s * d * 2);
  ASSERT_TRUE(out.ok() && out->fill(0xFF).ok());
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*exec)->run({&bufs[0], &bufs[1], &bufs[2]}, {&*out}, *stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  std::string bytes(h * s * d * 2, '\0');
  ASSERT_TRUE(out->copyToHost(bytes.data(), bytes.size()).ok());
  auto got = fromDeviceBytes(DType::BF16, {1, h, s, d}, bytes);
  ASSERT_TRUE(got.ok());
  double worst = 0;
  for (int hh = 0; hh < h; ++hh)
    for (int i = 0; i < s; ++i) {
      const double *qi = &q.data[(hh * s + i) * d];
      std::vector<double> p(i + 1);
      double m = -1e300, l = 0;
      for (int j = 0; j <= i; ++j) {
        const double *kj = &k.data[((hh / 2) * s + j) * d];
        double dot = 0;
        for (int e = 0; e < d; ++e)
          dot += qi[e] * kj[e];
        p[j] = dot * 0.125;
        m = std::max(m, p[j]);
      }
      for (double &x : p)
        l += (x = std::exp(x - m));
      for (int e = 0; e < d; ++e) {
        double want = 0;
        for (int j = 0; j <= i; ++j)
          want += p[j] / l * v.data[((hh / 2) * s + j) * d + e];
        worst = std::max(worst, std::fabs(got->data[(hh * s + i) * d + e] - want));
      }
    }
  EXPECT_LT(worst, 2e-2); // bf16 output and P
}

TEST(Jit, SecondCompileIsAnExecutableHitAcrossThreads) {
  REQUIRE_GPU();
  JitOptions options = freshOptions("threads");
  options.function = "chain";
  auto jit = Jit::create(options);
  ASSERT_TRUE(jit.ok());
  std::string text = readExample("ptx/vector_add.mlir");
  std::vector<std::shared_ptr<Executable>> got(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto e = (*jit)->compile(text);
      ASSERT_TRUE(e.ok()) << e.status();
      got[i] = *e;
    });
  for (auto &t : threads)
    t.join();
  for (auto &e : got)
    EXPECT_EQ(e.get(), got[0].get());
  EXPECT_EQ((*jit)->executableHits(), 7);
  EXPECT_EQ((*jit)->cacheStats().compiles, 1); // one PTX, used twice
}

} // namespace

namespace {

/// One model of the suite (test/models/models.tar.xz), extracted once.
std::string suiteModel(const std::string &name) {
  std::string dir = ::testing::TempDir() + "/fusec-jit-models-" + std::to_string(getpid());
  std::string cmd = "mkdir -p '" + dir + "' && tar -C '" + dir + "' -xJf '" + sourceDir() +
                    "/test/models/models.tar.xz' " + name;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir + "/" + name;
}

/// Uploads `h` into a new device buffer.
rt::DeviceBuffer upload(const HostTensor &h) {
  std::string bytes = toDeviceBytes(h);
  auto buf = rt::DeviceBuffer::allocate(bytes.size());
  EXPECT_TRUE(buf.ok() && buf->copyFromHost(bytes.data(), bytes.size()).ok());
  return std::move(*buf);
}

} // namespace

TEST(Jit, OptionsAndOnnxErrorsAreReported) {
  JitOptions bad = freshOptions("options");
  bad.precision = "int3";
  auto refused = Jit::create(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("int3"), std::string::npos);

  auto jit = Jit::create(freshOptions("onnx-errors"));
  ASSERT_TRUE(jit.ok());
  auto missing = (*jit)->compileOnnxFile("/nonexistent/model.onnx");
  EXPECT_FALSE(missing.ok());
  // A dynamic input without a shape names the input (no GPU needed: the
  // import fails first).
  std::string dir = suiteModel("bert-torchscript");
  auto unbound = (*jit)->compileOnnxFile(dir + "/model.onnx");
  ASSERT_FALSE(unbound.ok());
  EXPECT_EQ(unbound.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(unbound.status().message().find("input_ids"), std::string::npos)
      << unbound.status();
  auto garbage = (*jit)->compileOnnx("not a model");
  EXPECT_FALSE(garbage.ok());
}

TEST(Jit, ReplaysRepeatedRunsAsACudaGraph) {
  REQUIRE_GPU();
  auto jit = Jit::create(freshOptions("replay"));
  ASSERT_TRUE(jit.ok());
  const int64_t n = 4099;
  std::string t = "tensor<" + std::to_string(n) + "xf32>";
  auto exec = (*jit)->compile("func.func @f(%a: " + t + ", %b: " + t + ") -> " + t +
                              " {\n  %0 = fusec.exp %a : " + t +
                              "\n  %1 = fusec.mul %0, %b : " + t +
                              "\n  %2 = fusec.reduce sum %1 dims [0] : " + t +
                              " -> tensor<f32>\n  %3 = fusec.broadcast %2 dims [] : tensor<f32> -> " +
                              t + "\n  %4 = fusec.sub %1, %3 : " + t + "\n  return %4 : " + t +
                              "\n}\n");
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto stream = rt::Stream::create();
  ASSERT_TRUE(stream.ok());
  auto check = [&](const HostTensor &a, const HostTensor &b, rt::DeviceBuffer &out) {
    std::string bytes(n * 4, '\0');
    ASSERT_TRUE(out.copyToHost(bytes.data(), bytes.size()).ok());
    auto got = fromDeviceBytes(DType::F32, {n}, bytes);
    double sum = 0;
    std::vector<double> prod(n);
    for (int64_t i = 0; i < n; ++i)
      sum += prod[i] = std::exp(a.data[i]) * b.data[i];
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(got->data[i], prod[i] - sum, 1e-4 * (std::abs(sum) + 1)) << i;
  };
  HostTensor a = randomTensor(DType::F32, {n}, 7), b = randomTensor(DType::F32, {n}, 8);
  rt::DeviceBuffer da = upload(a), db = upload(b);
  auto out = rt::DeviceBuffer::allocate(n * 4);
  ASSERT_TRUE(out.ok());
  // First run: direct; second (same buffers): captured; third: replayed.
  for (int r = 0; r < 3; ++r)
    ASSERT_TRUE((*exec)->run({&da, &db}, {&*out}, *stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  EXPECT_EQ((*exec)->graphReplayError(), "");
  EXPECT_EQ((*exec)->graphLaunches(), 2);
  check(a, b, *out);
  // A replay reads the buffers' current contents.
  HostTensor a2 = randomTensor(DType::F32, {n}, 9);
  std::string bytes = toDeviceBytes(a2);
  ASSERT_TRUE(da.copyFromHost(bytes.data(), bytes.size()).ok());
  ASSERT_TRUE((*exec)->run({&da, &db}, {&*out}, *stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  EXPECT_EQ((*exec)->graphLaunches(), 3);
  check(a2, b, *out);
  // Other buffers: launched directly, and right.
  rt::DeviceBuffer da3 = upload(a);
  auto out3 = rt::DeviceBuffer::allocate(n * 4);
  ASSERT_TRUE(out3.ok());
  ASSERT_TRUE((*exec)->run({&da3, &db}, {&*out3}, *stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  EXPECT_EQ((*exec)->graphLaunches(), 3);
  check(a, b, *out3);
}

TEST(Jit, CompilesAnOnnxModelOncePerShape) {
  REQUIRE_GPU();
  auto jit = Jit::create(freshOptions("onnx"));
  ASSERT_TRUE(jit.ok());
  std::string dir = suiteModel("bert-torchscript");
  Jit::InputShapes shapes = {{"input_ids", {2, 16}}, {"attention_mask", {2, 16}}};
  auto first = (*jit)->compileOnnxFile(dir + "/model.onnx", shapes);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->inputs()[0].shape, (std::vector<int64_t>{2, 16}));
  auto again = (*jit)->compileOnnxFile(dir + "/model.onnx", shapes);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), first->get());
  EXPECT_EQ((*jit)->executableHits(), 1);
  Jit::InputShapes other = {{"input_ids", {1, 24}}, {"attention_mask", {1, 24}}};
  auto second = (*jit)->compileOnnxFile(dir + "/model.onnx", other);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->get(), first->get());
  EXPECT_EQ((*second)->inputs()[0].shape, (std::vector<int64_t>{1, 24}));
}

//===----------------------------------------------------------------------===//
// Fault injection (issue #19): failures in the toolchain and the device
// allocator leave no half-built Executable and no device memory behind.
//===----------------------------------------------------------------------===//

#include "fusec/Runtime/Faults.h"

namespace {

struct ClearFaultsAtExit {
  ~ClearFaultsAtExit() { rt::clearFaults(); }
};

/// A matmul whose result feeds a row kernel: owned intermediates, a tensor
/// map table and two modules.
const char *kSetupGraph = R"mlir(
func.func @f(%x: tensor<128x256xbf16>, %w: tensor<256x192xbf16>, %b: tensor<128x192xf32>)
    -> tensor<128x192xf32> {
  %m = fusec.matmul %x, %w : (tensor<128x256xbf16>, tensor<256x192xbf16>) -> tensor<128x192xf32>
  %s = fusec.softmax %m dim 1 : tensor<128x192xf32>
  %r = fusec.add %s, %b : tensor<128x192xf32>
  return %r : tensor<128x192xf32>
}
)mlir";

/// Runs `exec` on fixed random inputs; the result's bytes.
std::string runSetupGraph(Executable &exec) {
  HostTensor x = randomTensor(DType::BF16, {128, 256}, 21);
  HostTensor w = randomTensor(DType::BF16, {256, 192}, 22);
  HostTensor b = randomTensor(DType::F32, {128, 192}, 23);
  rt::DeviceBuffer bx = upload(x), bw = upload(w), bb = upload(b);
  auto out = rt::DeviceBuffer::allocate(128 * 192 * 4);
  EXPECT_TRUE(out.ok() && out->fill(0xFF).ok());
  auto stream = rt::Stream::create();
  EXPECT_TRUE(stream.ok());
  EXPECT_TRUE(exec.run({&bx, &bw, &bb}, {&*out}, *stream).ok());
  EXPECT_TRUE(stream->synchronize().ok());
  std::string bytes(128 * 192 * 4, '\0');
  EXPECT_TRUE(out->copyToHost(bytes.data(), bytes.size()).ok());
  return bytes;
}

} // namespace

TEST(Jit, NvJitLinkFailureIsNotCached) {
  ClearFaultsAtExit guard;
  JitOptions options = freshOptions("fault-link");
  options.target = "sm_90a";
  options.function = "vadd";
  auto jit = Jit::create(options);
  ASSERT_TRUE(jit.ok());
  std::string text = readExample("ptx/vector_add.mlir");
  rt::injectFault(rt::FaultSite::JitLink, 1);
  auto failed = (*jit)->compile(text);
  ASSERT_FALSE(failed.ok());
  if (failed.status().message().find("nvJitLink not found") != std::string::npos)
    GTEST_SKIP() << failed.status().message();
  EXPECT_NE(failed.status().message().find("(injected fault)"), std::string::npos)
      << failed.status();
  // The next compile links again (the failure was cached nowhere) and
  // writes the disk entry a new Jit then reads.
  auto r = (*jit)->compile(text);
  if (rt::available().ok())
    ASSERT_TRUE(r.ok()) << r.status();
  else
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ((*jit)->cacheStats().compiles, 2);
  auto again = Jit::create(options);
  ASSERT_TRUE(again.ok());
  (void)(*again)->compile(text);
  EXPECT_EQ((*again)->cacheStats().diskHits, 1);
  EXPECT_EQ((*again)->cacheStats().compiles, 0);
}

TEST(Jit, AllocationFailuresDuringSetupLeaveNothingBehind) {
  REQUIRE_GPU();
  ClearFaultsAtExit guard;
  JitOptions options = freshOptions("fault-alloc");
  std::string want;
  {
    auto clean = Jit::create(options);
    ASSERT_TRUE(clean.ok());
    auto exec = (*clean)->compile(kSetupGraph);
    ASSERT_TRUE(exec.ok()) << exec.status();
    ASSERT_GE((*exec)->kernels().size(), 2u);
    want = runSetupGraph(**exec);
  }
  int64_t before = rt::liveDeviceBytes();
  auto jit = Jit::create(options);
  ASSERT_TRUE(jit.ok());
  int failures = 0;
  for (int n = 1; n <= 64; ++n) {
    rt::injectFault(rt::FaultSite::Alloc, n);
    auto exec = (*jit)->compile(kSetupGraph);
    if (exec.ok()) {
      rt::clearFaults();
      break; // the setup needs fewer than n allocations
    }
    ++failures;
    EXPECT_EQ(exec.status().code(), absl::StatusCode::kResourceExhausted) << exec.status();
    EXPECT_NE(exec.status().message().find("cuMemAlloc"), std::string::npos) << exec.status();
    EXPECT_EQ(rt::liveDeviceBytes(), before)
        << "allocation " << n << " failed and device memory stayed allocated";
  }
  EXPECT_GE(failures, 1) << "the setup allocates device memory";
  std::printf("setup of the graph: %d allocations, each failed in turn\n", failures);
  // Then the same Jit builds a whole Executable that computes what a clean
  // one does.
  rt::clearFaults();
  auto exec = (*jit)->compile(kSetupGraph);
  ASSERT_TRUE(exec.ok()) << exec.status();
  EXPECT_EQ(runSetupGraph(**exec), want);
  exec->reset();
  jit->reset(); // its Executable cache held the last one
  EXPECT_EQ(rt::liveDeviceBytes(), before);

  // A module that fails to load is an error too, and is not cached.
  auto fresh = Jit::create(freshOptions("fault-module"));
  ASSERT_TRUE(fresh.ok());
  rt::injectFault(rt::FaultSite::Module, 1);
  auto failed = (*fresh)->compile(kSetupGraph);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("(injected fault)"), std::string::npos)
      << failed.status();
  EXPECT_EQ(rt::liveDeviceBytes(), before);
  auto loaded = (*fresh)->compile(kSetupGraph);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(runSetupGraph(**loaded), want);
}
