//===- embed_onnx.cpp - Run an ONNX model through the fusec JIT -*- C++ -*-===//
//
// A C++ program that embeds fusec to run an exported model: it compiles the
// ONNX file for the shapes of its inputs with Jit::compileOnnxFile, uploads
// the inputs to device buffers, runs the Executable (a second run replays it
// as a CUDA graph), reads the output back and compares it with the expected
// output stored beside the inputs.
//
//   embed_onnx MODEL_DIR
//
// MODEL_DIR holds model.onnx and test_data_set_0/{input_<i>,output_0}.pb (the
// ONNX backend-test layout; bench/export_models.py writes it for PyTorch
// models). Without a GPU it says so and exits 0 (skipped).
//
//===----------------------------------------------------------------------===//

#include "fusec/Import/Onnx.h"
#include "fusec/Jit.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace {

int fail(const std::string &what) {
  std::fprintf(stderr, "embed_onnx: %s\n", what.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: embed_onnx MODEL_DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  std::string model = dir + "/model.onnx", data = dir + "/test_data_set_0";

  // The inputs, and the shapes they bind (batch and sequence are dynamic
  // in most exports).
  auto names = fusec::onnxGraphInputNames(model);
  if (!names.ok())
    return fail(names.status().ToString());
  std::vector<fusec::HostTensor> inputs;
  fusec::Jit::InputShapes shapes;
  for (size_t i = 0; i < names->size(); ++i) {
    auto t = fusec::readOnnxTensorFile(data + "/input_" + std::to_string(i) + ".pb");
    if (!t.ok())
      return fail(t.status().ToString());
    shapes[(*names)[i]] = t->value.shape;
    inputs.push_back(std::move(t->value));
  }
  auto expected = fusec::readOnnxTensorFile(data + "/output_0.pb");
  if (!expected.ok())
    return fail(expected.status().ToString());

  if (absl::Status st = fusec::rt::available(); !st.ok()) {
    std::printf("embed_onnx: skipped, no GPU: %s\n", std::string(st.message()).c_str());
    return 0;
  }
  auto jit = fusec::Jit::create();
  if (!jit.ok())
    return fail(jit.status().ToString());
  auto t0 = std::chrono::steady_clock::now();
  auto exec = (*jit)->compileOnnxFile(model, shapes);
  auto t1 = std::chrono::steady_clock::now();
  if (!exec.ok())
    return fail(exec.status().ToString());
  std::printf("compiled %s in %.1f ms: %zu kernel(s) for %s\n", model.c_str(),
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              (*exec)->kernels().size(), (*exec)->target().c_str());

  // Device buffers: inputs in device layout, outputs as large as their specs.
  std::vector<fusec::rt::DeviceBuffer> in, out;
  for (const fusec::HostTensor &h : inputs) {
    std::string bytes = fusec::toDeviceBytes(h);
    auto buf = fusec::rt::DeviceBuffer::allocate(bytes.size());
    if (!buf.ok() || !buf->copyFromHost(bytes.data(), bytes.size()).ok())
      return fail("upload failed");
    in.push_back(std::move(*buf));
  }
  for (const fusec::TensorSpec &spec : (*exec)->outputs()) {
    auto buf = fusec::rt::DeviceBuffer::allocate(spec.bytes());
    if (!buf.ok())
      return fail(buf.status().ToString());
    out.push_back(std::move(*buf));
  }
  std::vector<const fusec::rt::DeviceBuffer *> inPtrs;
  std::vector<fusec::rt::DeviceBuffer *> outPtrs;
  for (auto &b : in)
    inPtrs.push_back(&b);
  for (auto &b : out)
    outPtrs.push_back(&b);
  auto stream = fusec::rt::Stream::create();
  if (!stream.ok())
    return fail(stream.status().ToString());
  // Three runs on the same buffers: the second is captured as a CUDA graph,
  // the third replays it.
  for (int r = 0; r < 3; ++r)
    if (auto st = (*exec)->run(inPtrs, outPtrs, *stream); !st.ok())
      return fail("run: " + st.ToString());
  if (auto st = stream->synchronize(); !st.ok())
    return fail(st.ToString());

  const fusec::TensorSpec &spec = (*exec)->outputs()[0];
  std::string bytes(spec.bytes(), '\0');
  if (!out[0].copyToHost(bytes.data(), bytes.size()).ok())
    return fail("download failed");
  auto got = fusec::fromDeviceBytes(spec.dtype, spec.shape, bytes);
  if (!got.ok())
    return fail(got.status().ToString());
  // The deep-graph tolerance of docs/Models.md.
  double scale = 0;
  for (double v : expected->value.values())
    scale = std::max(scale, std::abs(v));
  fusec::Tolerance tol = fusec::onnxTolerance();
  tol.atol = std::max(tol.atol, 1e-5 * scale);
  fusec::Comparison c = fusec::compareTensors(expected->value, *got, tol);
  std::printf("output %s: %s (max abs error %.3g); %lld graph replay(s)\n",
              got->typeString().c_str(), c.ok ? "matches PyTorch" : c.message.c_str(),
              c.maxAbsError, static_cast<long long>((*exec)->graphLaunches()));
  std::printf(c.ok ? "PASS\n" : "FAIL\n");
  return c.ok ? 0 : 1;
}
