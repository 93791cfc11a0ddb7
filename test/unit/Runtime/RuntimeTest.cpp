//===- RuntimeTest.cpp - The CUDA runtime on a GPU --------------*- C++ -*-===//
//
// Tests that need a GPU skip with the reason where there is none; the
// no-GPU behaviour and PTX compilation (nvJitLink needs no GPU) run anywhere.
//
//===----------------------------------------------------------------------===//

#include "VectorAddPtx.h"
#include "fusec/Runtime/Runtime.h"

#include "gtest/gtest.h"

#include <cstring>
#include <string>
#include <random>
#include <vector>

using namespace fusec::rt;

namespace {

#define REQUIRE_GPU()                                                          \
  if (absl::Status st = available(); !st.ok())                                 \
  GTEST_SKIP() << "no GPU here: " << st.message()

TEST(RuntimeNoGpu, StatusesNotCrashes) {
  absl::Status st = available();
  if (st.ok())
    GTEST_SKIP() << "a GPU is present; this test covers machines without one";
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_TRUE(st.message().find("no CUDA") != std::string::npos ||
              st.message().find("no usable CUDA") != std::string::npos)
      << st.message();
  auto buf = DeviceBuffer::allocate(1024);
  ASSERT_FALSE(buf.ok());
  EXPECT_EQ(buf.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(Stream::create().ok());
  EXPECT_FALSE(Module::loadPtx(kVectorAddPtx).ok());
  EXPECT_FALSE(deviceInfo().ok());
}

TEST(RuntimeNoGpu, AttentionStridesAreChecked) {
  fusec::rt::AttentionArgs a;
  a.batch = 2;
  a.heads = 8;
  a.kvHeads = 2;
  a.sq = a.skv = 100;
  a.headDim = 64;
  a.scale = 0.125f;
  EXPECT_TRUE(fusec::rt::validateAttention(a).ok());
  // Q as [B, S, H, D]: positive multiples of 8 elements.
  a.strides[0] = 100 * 8 * 64;
  a.strides[1] = 64;
  a.strides[2] = 8 * 64;
  EXPECT_TRUE(fusec::rt::validateAttention(a).ok());
  // K's sequence stride of 4 elements (not 16 bytes): refused, naming K.
  a.strides[3] = 2 * 100 * 64;
  a.strides[4] = 100 * 64;
  a.strides[5] = 4;
  auto st = fusec::rt::validateAttention(a);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("strides of K"), std::string::npos) << st.message();
  a.strides[5] = 64;
  // A negative stride.
  a.strides[9] = -64;
  a.strides[10] = 64;
  a.strides[11] = 512;
  EXPECT_FALSE(fusec::rt::validateAttention(a).ok());
}

TEST(CompilePtx, ToCubinWithoutAGpu) {
  auto cubin = compilePtx(kVectorAddPtx, "sm_90a");
  if (!cubin.ok() && cubin.status().code() == absl::StatusCode::kUnavailable)
    GTEST_SKIP() << cubin.status().message();
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  ASSERT_GT(cubin->size(), 4u);
  EXPECT_EQ(std::memcmp(cubin->data(), "\x7f" "ELF", 4), 0);
  // Blackwell too: the same PTX assembles for sm_100a.
  EXPECT_TRUE(compilePtx(kVectorAddPtx, "sm_100a").ok());
}

TEST(CompilePtx, BadPtxIsACleanError) {
  auto cubin = compilePtx(".version 8.0\n.target sm_80\n.entry f() { frob; }",
                          "sm_90a");
  if (!cubin.ok() && cubin.status().code() == absl::StatusCode::kUnavailable)
    GTEST_SKIP() << cubin.status().message();
  ASSERT_FALSE(cubin.ok());
  EXPECT_NE(cubin.status().message().find("nvJitLink could not compile"),
            std::string::npos)
      << cubin.status();
}

TEST(Runtime, DeviceInfo) {
  REQUIRE_GPU();
  auto info = deviceInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->name.empty());
  EXPECT_GE(info->computeMajor, 7);
  EXPECT_GT(info->smCount, 0);
  EXPECT_GT(info->totalMemory, 0);
  std::printf("device: %s, %s, %d SMs, %lld MiB L2... driver %d\n",
              info->name.c_str(), info->arch().c_str(), info->smCount,
              static_cast<long long>(info->l2Bytes >> 20), info->driverVersion);
}

TEST(Runtime, BuffersRoundTrip) {
  REQUIRE_GPU();
  std::vector<uint8_t> host(1 << 20), back(1 << 20);
  std::mt19937 rng(1);
  for (auto &b : host)
    b = static_cast<uint8_t>(rng());
  auto buf = DeviceBuffer::allocate(host.size());
  ASSERT_TRUE(buf.ok()) << buf.status();
  ASSERT_TRUE(buf->copyFromHost(host.data(), host.size()).ok());
  ASSERT_TRUE(buf->copyToHost(back.data(), back.size()).ok());
  EXPECT_EQ(host, back);
  auto stream = Stream::create();
  ASSERT_TRUE(stream.ok());
  auto other = DeviceBuffer::allocate(host.size());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(other->copyFrom(*buf, host.size(), &*stream).ok());
  std::fill(back.begin(), back.end(), 0);
  ASSERT_TRUE(other->copyToHost(back.data(), back.size(), &*stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  EXPECT_EQ(host, back);
  ASSERT_TRUE(buf->fill(0xAB).ok());
  ASSERT_TRUE(buf->copyToHost(back.data(), back.size()).ok());
  EXPECT_EQ(back[12345], 0xAB);
  // Out of range is an error, not a memory corruption.
  auto st = buf->copyFromHost(host.data(), host.size() + 1);
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
}

TEST(Runtime, VectorAddFromPtx) {
  REQUIRE_GPU();
  auto module = Module::loadPtx(kVectorAddPtx);
  ASSERT_TRUE(module.ok()) << module.status();
  auto kernel = module->kernel("vadd");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const uint32_t n = 1000003; // not a multiple of the block
  std::vector<float> a(n), b(n), c(n, -1.0f);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = dist(rng);
    b[i] = dist(rng);
  }
  auto da = DeviceBuffer::allocate(n * 4), db = DeviceBuffer::allocate(n * 4),
       dc = DeviceBuffer::allocate(n * 4);
  ASSERT_TRUE(da.ok() && db.ok() && dc.ok());
  ASSERT_TRUE(da->copyFromHost(a.data(), n * 4).ok());
  ASSERT_TRUE(db->copyFromHost(b.data(), n * 4).ok());
  ASSERT_TRUE(dc->fill(0xFF).ok()); // poison: NaN
  auto stream = Stream::create();
  ASSERT_TRUE(stream.ok());
  auto start = Event::create(), end = Event::create();
  ASSERT_TRUE(start.ok() && end.ok());
  ASSERT_TRUE(start->record(*stream).ok());
  absl::Status st = kernel->launchWith(Dim3{(n + 255) / 256}, Dim3{256}, 0,
                                       *stream, da->devicePtr(),
                                       db->devicePtr(), dc->devicePtr(), n);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_TRUE(end->record(*stream).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  auto ms = Event::elapsedMs(*start, *end);
  ASSERT_TRUE(ms.ok());
  EXPECT_GT(*ms, 0.0f);
  ASSERT_TRUE(dc->copyToHost(c.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(c[i], a[i] + b[i]) << i;
}

TEST(Runtime, ErrorsNameTheCall) {
  REQUIRE_GPU();
  auto module = Module::loadPtx(kVectorAddPtx);
  ASSERT_TRUE(module.ok());
  auto missing = module->kernel("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cuModuleGetFunction('nope')"),
            std::string::npos)
      << missing.status();
  EXPECT_NE(missing.status().message().find("CUDA_ERROR_NOT_FOUND"),
            std::string::npos);
  auto kernel = module->kernel("empty");
  ASSERT_TRUE(kernel.ok());
  auto stream = Stream::create();
  ASSERT_TRUE(stream.ok());
  absl::Status st = kernel->launch(Dim3{1}, Dim3{4096}, 0, *stream, nullptr);
  EXPECT_FALSE(st.ok()); // 4096 threads per block is over the limit
  EXPECT_NE(st.message().find("cuLaunchKernel('empty'"), std::string::npos) << st;
  auto huge = DeviceBuffer::allocate(int64_t(1) << 50);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted)
      << huge.status();
  EXPECT_FALSE(Module::loadCubin("not a cubin").ok());
}

} // namespace
