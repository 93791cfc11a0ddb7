//===- embed.cpp - A C++ program that embeds the fusec JIT ------*- C++ -*-===//
//
// Compiles a graph with fusec::Jit, runs it on the GPU and checks the result
// on the CPU. Without a GPU it says so and exits 0 (skipped), so CI can build
// and run it anywhere; on the GPU machine it really runs.
//
//   embed [graph.mlir]   (default: examples/ptx/vector_add.mlir, @vadd)
//
//===----------------------------------------------------------------------===//

#include "fusec/Jit.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

int main(int argc, char **argv) {
  std::string path = argc > 1 ? argv[1] : FUSEC_EXAMPLE_GRAPH;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "embed: cannot read %s\n", path.c_str());
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();

  if (absl::Status st = fusec::rt::available(); !st.ok()) {
    std::printf("embed: skipped, no GPU: %s\n", std::string(st.message()).c_str());
    return 0;
  }

  fusec::JitOptions options;
  options.function = "vadd";
  auto jit = fusec::Jit::create(options);
  if (!jit.ok()) {
    std::fprintf(stderr, "embed: %s\n", jit.status().ToString().c_str());
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto exec = (*jit)->compile(text.str(), path);
  auto t1 = std::chrono::steady_clock::now();
  if (!exec.ok()) {
    std::fprintf(stderr, "embed: %s\n", exec.status().ToString().c_str());
    return 1;
  }
  std::printf("compiled %s in %.1f ms (%zu kernel(s), target %s)\n", path.c_str(),
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              (*exec)->kernels().size(), (*exec)->target().c_str());

  // Inputs: seeded random host tensors, uploaded in device layout.
  std::vector<fusec::HostTensor> hostIn;
  std::vector<fusec::rt::DeviceBuffer> inBufs, outBufs;
  for (size_t i = 0; i < (*exec)->inputs().size(); ++i) {
    const fusec::TensorSpec &spec = (*exec)->inputs()[i];
    hostIn.push_back(fusec::randomTensor(spec.dtype, spec.shape, 100 + i));
    std::string bytes = fusec::toDeviceBytes(hostIn.back());
    auto buf = fusec::rt::DeviceBuffer::allocate(bytes.size());
    if (!buf.ok() || !buf->copyFromHost(bytes.data(), bytes.size()).ok()) {
      std::fprintf(stderr, "embed: upload failed\n");
      return 1;
    }
    inBufs.push_back(std::move(*buf));
  }
  for (const fusec::TensorSpec &spec : (*exec)->outputs()) {
    auto buf = fusec::rt::DeviceBuffer::allocate(spec.bytes());
    if (!buf.ok()) {
      std::fprintf(stderr, "embed: %s\n", buf.status().ToString().c_str());
      return 1;
    }
    outBufs.push_back(std::move(*buf));
  }
  std::vector<const fusec::rt::DeviceBuffer *> inPtrs;
  std::vector<fusec::rt::DeviceBuffer *> outPtrs;
  for (auto &b : inBufs)
    inPtrs.push_back(&b);
  for (auto &b : outBufs)
    outPtrs.push_back(&b);

  auto stream = fusec::rt::Stream::create();
  if (!stream.ok()) {
    std::fprintf(stderr, "embed: %s\n", stream.status().ToString().c_str());
    return 1;
  }
  if (auto st = (*exec)->run(inPtrs, outPtrs, *stream); !st.ok()) {
    std::fprintf(stderr, "embed: run: %s\n", st.ToString().c_str());
    return 1;
  }
  if (auto st = stream->synchronize(); !st.ok()) {
    std::fprintf(stderr, "embed: %s\n", st.ToString().c_str());
    return 1;
  }

  // Check: the graph is c = a + b.
  const fusec::TensorSpec &spec = (*exec)->outputs()[0];
  std::string bytes(spec.bytes(), '\0');
  if (!outBufs[0].copyToHost(bytes.data(), bytes.size()).ok()) {
    std::fprintf(stderr, "embed: download failed\n");
    return 1;
  }
  auto out = fusec::fromDeviceBytes(spec.dtype, spec.shape, bytes);
  int64_t wrong = 0;
  for (int64_t i = 0; i < out->numElements(); ++i)
    if (out->data[i] != fusec::roundTo(fusec::DType::F32,
                                       hostIn[0].data[i] + hostIn[1].data[i]))
      ++wrong;
  std::printf("%lld of %lld elements wrong\n", static_cast<long long>(wrong),
              static_cast<long long>(out->numElements()));
  std::printf(wrong ? "FAIL\n" : "PASS\n");
  return wrong ? 1 : 0;
}
