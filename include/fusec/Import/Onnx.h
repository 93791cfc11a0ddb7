//===- Onnx.h - ONNX models to fusec graphs ---------------------*- C++ -*-===//
//
// Reads ONNX protobuf files with a small wire-format reader of its own (no
// protobuf library: every length and field is checked, so a truncated or
// corrupted file is an error, never a crash) and translates a model's graph
// into a fusec graph, as MLIR text: one func.func whose arguments are the
// graph inputs that are not initializers. Initializers and Constant nodes
// become fusec.constant. Every node whose inputs are all known at import
// (constants, shape computations) is evaluated there, by the reference
// interpreter, so shape and mask arithmetic of any op folds away. Integers
// are exact (never through a double); f64 is computed in f32. Inputs with
// dynamic dims are imported for a concrete shape (`inputShapes`).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_IMPORT_ONNX_H
#define FUSEC_IMPORT_ONNX_H

#include "fusec/Support/HostTensor.h"

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <map>
#include <string>
#include <vector>

namespace fusec {

/// A TensorProto (a .pb file of the ONNX backend tests, an initializer).
struct OnnxTensorData {
  std::string name;
  int32_t dataType = 0; ///< TensorProto.DataType
  std::vector<int64_t> dims;
  HostTensor value;     ///< decoded (f64 data as f32)
};

/// Reads a serialized TensorProto. `baseDir` resolves external data.
absl::StatusOr<OnnxTensorData> readOnnxTensor(const std::string &bytes,
                                              const std::string &baseDir = "");
absl::StatusOr<OnnxTensorData> readOnnxTensorFile(const std::string &path);

struct OnnxImportOptions {
  std::string functionName = "main";
  /// Graph inputs bound to values at import (they become constants and
  /// leave the function's arguments): e.g. the shape input of a Reshape,
  /// which fusec needs to know. The conformance runner binds these from a
  /// test's data set when a model needs them.
  std::map<std::string, HostTensor> knownInputs;
  /// Concrete shapes for graph inputs declared with dynamic dims (symbolic
  /// or unknown): the shapes a model is run with. An input with a dynamic
  /// dim and no shape here is an error naming it.
  std::map<std::string, std::vector<int64_t>> inputShapes;
};

struct OnnxImport {
  std::string mlir;                  ///< the graph as MLIR text
  std::vector<std::string> inputs;   ///< ONNX names of the function arguments
  std::vector<std::string> outputs;  ///< ONNX names of the results
  std::vector<std::string> boundInputs; ///< inputs bound by knownInputs
  /// Every graph input that is not an initializer, in order (the order of
  /// a backend test's input_<i>.pb files), bound or not.
  std::vector<std::string> graphInputs;
  /// The inputs declared with dynamic dims (bound by `inputShapes`).
  std::vector<std::string> dynamicInputs;
  int64_t opset = 0;                 ///< the default domain's opset
};

/// Imports the model at `path`. Errors: kNotFound / kInvalidArgument for
/// unreadable or malformed files; kUnimplemented for a node fusec does not
/// import, naming the node, its op type and the opset.
absl::StatusOr<OnnxImport> importOnnxFile(const std::string &path,
                                          const OnnxImportOptions &options = {});

/// Imports a serialized model; `baseDir` resolves external data, and
/// `sourceName` names the model in errors.
absl::StatusOr<OnnxImport> importOnnx(absl::string_view bytes, const std::string &baseDir = "",
                                      const OnnxImportOptions &options = {},
                                      const std::string &sourceName = "<onnx>");

/// A graph input or output as the model declares it.
struct OnnxValueInfo {
  std::string name;
  int32_t elemType = 0;      ///< TensorProto.DataType (0: not a tensor)
  std::vector<int64_t> dims; ///< -1: symbolic or unknown
  bool hasShape = false;
  bool dynamic() const;
};
struct OnnxSignature {
  std::vector<OnnxValueInfo> inputs; ///< the graph inputs that are not initializers
  std::vector<OnnxValueInfo> outputs;
};
absl::StatusOr<OnnxSignature> onnxSignature(const std::string &path);

/// `t`'s value as a tensor of the declared element type: numpy has no
/// bfloat16, so the backend tests store bf16 (and some f16) data as uint16
/// bit patterns; those are reinterpreted. Other data is returned as is.
HostTensor onnxTensorAs(const OnnxTensorData &t, int32_t declaredElemType);

/// Parses `--input-shape` specs, "NAME=D0xD1x...", into
/// OnnxImportOptions::inputShapes.
absl::StatusOr<std::map<std::string, std::vector<int64_t>>>
parseOnnxInputShapes(const std::vector<std::string> &specs);

/// The names of the graph inputs that are not initializers, in order.
absl::StatusOr<std::vector<std::string>> onnxGraphInputNames(const std::string &path);

/// The ONNX backend tests' comparison: |a - e| <= atol + rtol * |e|.
Tolerance onnxTolerance();

} // namespace fusec

#endif // FUSEC_IMPORT_ONNX_H
