//===- fuzz_tensors.cpp - The .npy and TensorProto readers ------*- C++ -*-===//
//
// libFuzzer: the first byte picks the reader (even: .npy, odd: a
// serialized ONNX TensorProto, as the backend tests' .pb files), the rest
// is the file. Every input gives a tensor or an error. Seeds: corpus/tensors.
//
//===----------------------------------------------------------------------===//

#include "fusec/Import/Onnx.h"
#include "fusec/Support/HostTensor.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    for (fusec::DType t : {fusec::DType::F32, fusec::DType::I64, fusec::DType::BF16})
      (void)fusec::parseNpy(bytes, t);
  } else {
    auto t = fusec::readOnnxTensor(bytes, /*baseDir=*/"");
    if (t.ok())
      (void)fusec::onnxTensorAs(*t, t->dataType);
  }
  return 0;
}
