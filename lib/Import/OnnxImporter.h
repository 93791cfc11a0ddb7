//===- OnnxImporter.h - The ONNX importer's core (internal) -----*- C++ -*-===//
//
// The importer walks the graph once, node by node. Each ONNX value is a
// `Val`: its fusec type and, when it is known at import (initializers,
// Constant nodes, shape computations, anything computed from known values
// only), its value. Each op type has a small importer function in a table
// (OnnxOps.cpp) that emits fusec ops as MLIR text through the building
// blocks below. A node whose inputs are all known is folded once, in one
// place, by the reference interpreter: its importer runs into a scratch
// function whose arguments are the known inputs, and the interpreter's
// results become known values. No op keeps its own folding code.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_IMPORT_ONNXIMPORTER_H
#define FUSEC_LIB_IMPORT_ONNXIMPORTER_H

#include "OnnxProto.h"
#include "fusec/Import/Onnx.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace fusec::onnximport {

/// fusec's type for an ONNX element type (f64 is computed in f32).
absl::StatusOr<DType> dtypeFor(int32_t onnxType);
const char *onnxTypeName(int32_t onnxType);
/// A TensorProto's values, integers exact.
absl::StatusOr<HostTensor> decodeTensor(const onnx::Tensor &t, const std::string &baseDir);
std::string typeOf(DType d, const std::vector<int64_t> &shape);
/// A finite float as MLIR reads it (always with a decimal point).
std::string floatText(double v);

/// Numpy broadcasting of two shapes.
absl::StatusOr<std::vector<int64_t>> broadcastShapes(const std::vector<int64_t> &a,
                                                     const std::vector<int64_t> &b);

struct Val {
  std::string ssa; ///< empty until emitted (known values are emitted lazily)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// The value when it is known at import. Shared, never copied: a Val is
  /// passed by value, and a known mask of [batch, 1, seq, seq] is megabytes.
  std::shared_ptr<const HostTensor> known;
  /// Set when the value is `squeezed` with size-1 dims added (ONNX's
  /// keepdims): elementwise ops then compute on the squeezed form, so no
  /// reshape sits between a reduction and its consumers (which would split
  /// the kernel); the reshape is emitted only where a use needs it.
  std::shared_ptr<Val> squeezed;
  /// `known` holds one value in every element (a broadcast splat): its
  /// literal is that value, with no scan of the elements.
  bool splat = false;
  /// A large known splat that is not materialized: `splatOf` (one element)
  /// in every element of `shape`, and `known` is null. Broadcasting a
  /// scalar to millions of elements costs nothing until an importer reads
  /// the elements (`materialized`); emitted, it is a splat literal; folded,
  /// a splat constant of the scratch function.
  std::shared_ptr<const HostTensor> splatOf;
  /// Known at import, materialized or not.
  bool isKnown() const { return known || splatOf; }
  int64_t elements() const { return elementCount(shape); }
};

/// `v` with a lazy splat's elements on the host (`known` set), for an
/// importer that reads them; other values unchanged.
Val materialized(Val v);

/// A known value.
Val knownVal(HostTensor h);
Val knownVal(std::shared_ptr<const HostTensor> h);

class Importer {
public:
  Importer(const onnx::Model &model, std::string baseDir, const OnnxImportOptions &options);
  ~Importer();
  absl::StatusOr<OnnxImport> run();

  // The node being imported.
  const onnx::Node *node = nullptr;
  size_t nodeIndex = 0;
  int64_t opset = 1;
  std::string baseDir;

  std::string nodeName() const;
  absl::Status unsupported(const std::string &why) const;
  absl::Status invalid(const std::string &why) const;

  // Inputs, outputs and attributes of the node.
  absl::StatusOr<Val> input(size_t i);
  bool hasInput(size_t i) const;
  size_t numInputs() const { return node->inputs.size(); }
  size_t numOutputs() const { return node->outputs.size(); }
  bool hasOutput(size_t i) const { return i < node->outputs.size() && !node->outputs[i].empty(); }
  /// Input `i` with a lazy splat materialized: for importers that read a
  /// known input's elements (`input` keeps it one value).
  absl::StatusOr<Val> inputData(size_t i) {
    auto v = input(i);
    if (!v.ok())
      return v;
    return materialized(std::move(*v));
  }
  /// Input `i` as integers; it must be known at import.
  absl::StatusOr<std::vector<int64_t>> knownInts(size_t i);
  int64_t attrInt(const char *name, int64_t dflt) const;
  float attrFloat(const char *name, float dflt) const;
  std::optional<std::vector<int64_t>> attrInts(const char *name) const;
  std::optional<std::string> attrString(const char *name) const;
  absl::Status define(size_t out, Val v);
  /// The element count of `shape`, or an error naming the node for a
  /// negative dim, more than kMaxElements elements (checked: no product of
  /// dims wraps) or more than kMaxRank dims.
  absl::StatusOr<int64_t> checkedElements(const std::vector<int64_t> &shape) const;
  /// No tensor of the graph may have more elements than this,
  static constexpr int64_t kMaxElements = int64_t(1) << 40;
  /// nor more dims (MLIR's parser takes time quadratic in a type's rank).
  static constexpr size_t kMaxRank = 64;
  /// Import-time folding materializes known values of at most this many
  /// elements (512 MiB of doubles); a larger splat stays a constant of the
  /// graph, and other larger values are computed at run time.
  static constexpr int64_t kMaxFoldElements = int64_t(1) << 26;
  /// A known scalar broadcast to more elements than this stays one value
  /// (`Val::splatOf`) until an importer reads its elements.
  static constexpr int64_t kLazySplatElements = int64_t(1) << 12;
  absl::StatusOr<int64_t> axis(int64_t a, size_t rank) const;

  // Building blocks: each emits fusec ops (or, for known values, may stay
  // on the host where no op is needed: reshapes, splat broadcasts).
  /// Emits `rhs` as a new value.
  Val emit(const std::string &rhs, DType d, std::vector<int64_t> shape);
  std::string ty(const Val &v) const { return typeOf(v.dtype, v.shape); }
  /// The SSA name of `v`, emitting its known value first if needed.
  std::string use(Val &v);
  Val constant(DType d, double value);
  Val intConstant(DType d, int64_t value);
  Val broadcastTo(Val v, const std::vector<int64_t> &shape);
  Val cast(Val v, DType to);
  Val reshape(Val v, std::vector<int64_t> shape);
  absl::StatusOr<Val> binary(const char *op, Val a, Val b);
  Val unary(const char *op, Val a);
  /// `v` seen with `shape` (v's shape plus size-1 dims).
  Val wrap(Val v, const std::vector<int64_t> &shape);
  /// compare `pred` of two values of one shape and type.
  Val compare(const char *pred, Val a, Val b);
  /// compare after broadcasting both.
  absl::StatusOr<Val> compareBroadcast(const char *pred, Val a, Val b);
  absl::StatusOr<Val> select(Val c, Val a, Val b);
  absl::StatusOr<Val> reduce(const char *kind, Val x, std::vector<int64_t> axes, bool keep);
  Val transpose(Val x, const std::vector<int64_t> &perm);
  Val slice(Val x, const std::vector<int64_t> &offsets, const std::vector<int64_t> &strides,
            const std::vector<int64_t> &shape);
  /// Elements of `x` at the flat indices `index` (an i64 value of any
  /// shape, the result's): a gather on `x` flattened.
  Val gatherFlat(Val x, Val index);
  /// A known i64 tensor of `shape` whose element at each output coordinate
  /// is `fn(coords)`; an error naming the node past kMaxFoldElements (the
  /// map is a constant of the graph, built on the host).
  absl::StatusOr<Val> knownIndexMap(const std::vector<int64_t> &shape,
                                    const std::function<int64_t(const std::vector<int64_t> &)> &fn);
  /// A known i1 tensor of `shape`, `fn(coords)` at each element; the same
  /// limit.
  absl::StatusOr<Val> knownMask(const std::vector<int64_t> &shape,
                                const std::function<bool(const std::vector<int64_t> &)> &fn);
  /// The coordinate along `axis` at each element of `shape`: a known
  /// [shape[axis]] iota broadcast (no constant of the whole shape).
  absl::StatusOr<Val> axisIota(const std::vector<int64_t> &shape, int64_t axis);
  /// The i64 map sum over d of fn(d, c_d) at each coordinate c of `shape`
  /// (a flat gather index whose parts depend on one dim each): one known
  /// constant up to smallMapElements(true) (folded like any known value),
  /// past that a [shape[d]] constant a dim, broadcast and added at run time
  /// (a pad of a batch of images is not a constant of its elements). The
  /// gather that reads the map is a kernel of its own, so a map built at
  /// run time is written once and read once: past 2^22 elements that costs
  /// less than a constant of 32 MB or more built and uploaded at import.
  absl::StatusOr<Val> separableIndexMap(const std::vector<int64_t> &shape,
                                        const std::function<int64_t(int64_t, int64_t)> &fn);
  /// The i1 map: fn(d, c_d) for every d; the same two forms, the constant
  /// up to smallMapElements(false) (a mask feeds a select, an elementwise
  /// op, which the run-time form fuses into).
  absl::StatusOr<Val> separableMask(const std::vector<int64_t> &shape,
                                    const std::function<bool(int64_t, int64_t)> &fn);
  /// The most elements an index map (2^22) or a mask (2^16) built at import
  /// keeps as one constant; $FUSEC_IMPORT_SMALL_MAP overrides both (for
  /// testing: 0 builds every such map at run time).
  static int64_t smallMapElements(bool indexMap);

  /// Evaluates `fn` on `inputs` (all known) at import: the building blocks
  /// it calls are emitted into a scratch function that the reference
  /// interpreter runs, as a node of known inputs is folded; the result is a
  /// known value. For an importer that computes with known parameters
  /// (BatchNormalization's folded scale, a filter scaled by it).
  absl::StatusOr<Val> foldExpr(std::vector<Val> inputs,
                               const std::function<absl::StatusOr<Val>(std::vector<Val> &)> &fn);

  // The graph around the node being imported.
  /// The indices of the nodes that read value `name`.
  std::vector<size_t> consumersOf(const std::string &name) const;
  bool isGraphOutput(const std::string &name) const;
  /// The value `name` where it is defined by now.
  std::optional<Val> lookup(const std::string &name) const;
  const onnx::Node &nodeAt(size_t i) const;
  /// Nodes an earlier node's importer folded into itself (a
  /// BatchNormalization into the Conv before it): each such node's output
  /// is its input's alias.
  std::set<size_t> absorbed;

  /// True while a node is imported into a scratch function to be folded:
  /// an importer may then produce values it otherwise refuses (empty ones).
  bool folding() const { return foldDepth > 0; }
  /// The ONNX type of value `name` when it is an 8- or 16-bit integer type
  /// (held in i32), else nullopt.
  std::optional<int32_t> narrowType(const std::string &name) const {
    auto it = narrow.find(name);
    return it == narrow.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }

private:
  const onnx::Model &model;
  const OnnxImportOptions &options;
  std::map<std::string, Val> values;
  std::string body;
  int counter = 0;
  bool emptyUse = false;

  // Folding (OnnxImport.cpp): the known inputs of the node being folded,
  // bound to the scratch function's arguments.
  int foldDepth = 0;
  std::vector<std::pair<std::string, std::shared_ptr<const HostTensor>>> foldArgs;
  /// The literals of known splats emitted as constants, by value (the weak
  /// pointer tells a live value from a new one at a freed one's address): a
  /// known mask of millions of elements is used by every layer, and telling
  /// it is a splat scans all of them.
  std::map<const HostTensor *, std::pair<std::weak_ptr<const HostTensor>, std::string>>
      splatLiterals;
  /// The constants already emitted for large known values (not splats), by
  /// (value, type): a Val is passed by value, so its SSA name does not
  /// reach the caller's copy, and an index map used by each of 64 gathers
  /// (a 3-D cubic GridSample) was printed 64 times (805 MB of text; a
  /// fuzz_onnx find). The function body is one straight-line block, so the
  /// first emission dominates every later use.
  std::map<std::pair<const HostTensor *, std::string>,
           std::pair<std::weak_ptr<const HostTensor>, std::string>>
      emittedKnown;
  std::unique_ptr<mlir::MLIRContext> context;

  /// ONNX values of 8/16-bit integer types (held in i32), by name, with
  /// their type.
  std::map<std::string, int32_t> narrow;

  std::string loc() const;
  absl::Status importNode();
  /// After a node is imported: tags its outputs of 8/16-bit integer type and
  /// wraps those that arithmetic may have left the type's range.
  absl::Status narrowOutputs();
  /// Parses and verifies the imported text: an op whose operands break its
  /// rules (an ONNX Log of int32, which ONNX's own type constraints
  /// forbid) is an error at its node, not text that does not verify.
  absl::Status verifyImported(const std::string &text);
  /// Imports the node into a scratch function and evaluates it with the
  /// interpreter; its outputs become known values.
  absl::Status foldNode(const std::function<absl::Status()> &importer);
  /// foldNode's shortcut for an elementwise node whose inputs are all
  /// known splats of more than kLazySplatElements: the node folded on the
  /// scalars and its results broadcast. False where it does not apply.
  absl::StatusOr<bool> foldSplats(const std::function<absl::Status()> &importer);
  /// Set while foldSplats folds a node on its scalars.
  bool foldingScalars = false;
  /// Parses the scratch function `text` (named @fold), runs it on `args`
  /// with the interpreter and returns its results.
  absl::StatusOr<std::vector<std::shared_ptr<const HostTensor>>>
  runScratch(const std::string &text, const std::vector<std::shared_ptr<const HostTensor>> &args);
};

/// An op type's importer: reads the node through `I` and defines its
/// outputs.
using OpImporter = absl::Status (*)(Importer &I);
// The importers of convolutional networks' ops (OnnxVision.cpp).
absl::Status importConv(Importer &I);
absl::Status importConvInteger(Importer &I);
absl::Status importQLinearConv(Importer &I);
/// saturate(round(q) + the node's input `zpIn` (a zero point: one value, or
/// shaped to broadcast against q; absent: 0)) into the range of the output's
/// 8- or 16-bit type (that of the zero point, else the node's output_dtype,
/// else uint8), rounding halves to even; q is f32. The result is i32 (the
/// narrow type is the output's tag).
absl::StatusOr<Val> quantizeRounded(Importer &I, Val q, size_t zpIn, const char *what);
/// One run of an integer contraction computed exactly in f32 (ConvInteger,
/// MatMulInteger), converted to i32 and added to `total` (wrapping, as
/// ONNX's int32 accumulation); the first run becomes the total.
absl::Status addExactRun(Importer &I, std::optional<Val> &total, Val run);
absl::Status importPool(Importer &I);
absl::Status importBatchNormalization(Importer &I);
absl::Status importInstanceNormalization(Importer &I);
absl::Status importResize(Importer &I);
absl::Status importGridSample(Importer &I);
absl::Status importRoiAlign(Importer &I);
absl::Status importMaxUnpool(Importer &I);
/// RNN, GRU and LSTM, unrolled over their steps (OnnxRecurrent.cpp).
absl::Status importRNN(Importer &I);
/// The window functions, MelWeightMatrix, DFT and STFT (OnnxSignal.cpp).
absl::Status importSignalOp(Importer &I);
/// a x b with ONNX MatMul's shape rules (Gemm's transposes as flags).
absl::StatusOr<Val> matmulOf(Importer &I, Val a, Val b, bool ta, bool tb);
/// `parts` (each of one shape but along `axis`) side by side along `axis`.
Val concatAlong(Importer &I, std::vector<Val> parts, int64_t axis);

/// The op types fusec imports (default domain), each with its importer.
const std::map<std::string, OpImporter> &opImporters();

#define FUSEC_TRY_ASSIGN(lhs, expr)                                            \
  auto lhs##_or = (expr);                                                      \
  if (!lhs##_or.ok())                                                          \
    return lhs##_or.status();                                                  \
  auto lhs = std::move(*lhs##_or)

} // namespace fusec::onnximport

#endif // FUSEC_LIB_IMPORT_ONNXIMPORTER_H
