//===- OnnxProto.h - ONNX protobuf messages (internal) ----------*- C++ -*-===//

#ifndef FUSEC_LIB_IMPORT_ONNXPROTO_H
#define FUSEC_LIB_IMPORT_ONNXPROTO_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fusec::onnx {

/// TensorProto.DataType values.
enum DataType : int32_t {
  kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6,
  kInt64 = 7, kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11,
  kUint32 = 12, kUint64 = 13, kBfloat16 = 16,
};

struct Tensor {
  std::string name;
  int32_t dataType = 0;
  std::vector<int64_t> dims;
  bool hasRaw = false, hasStrings = false, external = false;
  std::string raw;
  std::vector<float> floatData;
  std::vector<int32_t> int32Data;
  std::vector<int64_t> int64Data;
  std::vector<double> doubleData;
  std::vector<uint64_t> uint64Data;
  std::vector<std::pair<std::string, std::string>> externalData;
};

struct Attribute {
  enum : unsigned { kF = 1, kI = 2, kS = 4, kT = 8, kG = 16, kFloats = 32, kInts = 64, kStrings = 128 };
  std::string name;
  int type = 0;
  unsigned has = 0;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::vector<std::string> inputs, outputs;
  std::string name, opType, domain;
  std::vector<Attribute> attributes;
  const Attribute *attr(const std::string &n) const {
    for (const Attribute &a : attributes)
      if (a.name == n)
        return &a;
    return nullptr;
  }
};

struct ValueInfo {
  std::string name;
  bool isTensor = false, hasShape = false;
  int32_t elemType = 0;
  std::vector<int64_t> dims; ///< -1: symbolic or unknown
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Tensor> initializers;
  std::vector<ValueInfo> inputs, outputs, valueInfo;
  bool hasSparseInitializers = false;
};

struct Model {
  int64_t irVersion = 0;
  std::map<std::string, int64_t> opsets; ///< "" is the default domain
  Graph graph;
};

absl::Status parseModel(const std::string &bytes, Model &model);
absl::Status parseTensorProto(const std::string &bytes, Tensor &tensor);
absl::StatusOr<std::string> readFile(const std::string &path);

} // namespace fusec::onnx

#endif // FUSEC_LIB_IMPORT_ONNXPROTO_H
