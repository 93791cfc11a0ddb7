//===- OnnxImport.cpp - ONNX graphs to fusec MLIR text ----------*- C++ -*-===//
//
// Each ONNX value is tracked with its fusec type and, when it is known at
// import (initializers, Constant nodes, shape computations), its value: ops
// whose inputs are all known and small are folded on the host instead of
// emitted, and a known value is emitted as a fusec.constant only where an
// emitted op uses it. Numpy-style broadcasting becomes fusec.broadcast.
//
//===----------------------------------------------------------------------===//

#include "fusec/Import/Onnx.h"

#include "OnnxProto.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace fusec {

using onnx::Attribute;
using onnx::Node;

namespace {

const char *onnxTypeName(int32_t t) {
  switch (t) {
  case onnx::kFloat: return "float";
  case onnx::kUint8: return "uint8";
  case onnx::kInt8: return "int8";
  case onnx::kUint16: return "uint16";
  case onnx::kInt16: return "int16";
  case onnx::kInt32: return "int32";
  case onnx::kInt64: return "int64";
  case onnx::kString: return "string";
  case onnx::kBool: return "bool";
  case onnx::kFloat16: return "float16";
  case onnx::kDouble: return "double";
  case onnx::kUint32: return "uint32";
  case onnx::kUint64: return "uint64";
  case onnx::kBfloat16: return "bfloat16";
  default: return "unknown";
  }
}

/// fusec's type for an ONNX element type (f64 is computed in f32).
absl::StatusOr<DType> dtypeFor(int32_t t) {
  switch (t) {
  case onnx::kFloat:
  case onnx::kDouble:
    return DType::F32;
  case onnx::kFloat16:
    return DType::F16;
  case onnx::kBfloat16:
    return DType::BF16;
  case onnx::kInt32:
    return DType::I32;
  case onnx::kInt64:
    return DType::I64;
  case onnx::kBool:
    return DType::I1;
  default:
    return absl::UnimplementedError(
        absl::StrCat("element type ", onnxTypeName(t), " is not supported"));
  }
}

template <typename T>
T loadLE(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

absl::StatusOr<HostTensor> decodeTensor(const onnx::Tensor &t, const std::string &baseDir) {
  auto dtype = dtypeFor(t.dataType);
  if (!dtype.ok())
    return dtype.status();
  for (int64_t d : t.dims)
    if (d < 0)
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "' has a negative dim"));
  HostTensor h(*dtype, t.dims);
  int64_t n = h.numElements();
  std::string raw = t.raw;
  bool hasRaw = t.hasRaw;
  if (t.external) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (auto &[k, v] : t.externalData) {
      if (k == "location")
        location = v;
      else if (k == "offset")
        offset = std::atoll(v.c_str());
      else if (k == "length")
        length = std::atoll(v.c_str());
    }
    if (location.empty() || location.find("..") != std::string::npos || location[0] == '/')
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", t.name, "': external data needs a relative 'location' inside the model's folder"));
    auto file = onnx::readFile(baseDir.empty() ? location : baseDir + "/" + location);
    if (!file.ok())
      return absl::NotFoundError(absl::StrCat("tensor '", t.name, "': external data: ",
                                              file.status().message()));
    if (offset < 0 || offset > static_cast<int64_t>(file->size()))
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "': external offset out of range"));
    if (length < 0)
      length = static_cast<int64_t>(file->size()) - offset;
    if (offset + length > static_cast<int64_t>(file->size()))
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "': external data truncated"));
    raw = file->substr(offset, length);
    hasRaw = true;
  }
  auto count = [&](size_t have) -> absl::Status {
    if (static_cast<int64_t>(have) != n)
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s' has %d values for %d elements", t.name, have, n));
    return absl::OkStatus();
  };
  int32_t ty = t.dataType;
  if (hasRaw) {
    int64_t width = ty == onnx::kDouble || ty == onnx::kInt64 ? 8
                    : ty == onnx::kFloat || ty == onnx::kInt32 ? 4
                    : ty == onnx::kBool ? 1 : 2;
    if (static_cast<int64_t>(raw.size()) != n * width)
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s' has %d bytes of data for %d elements of %s", t.name,
          raw.size(), n, onnxTypeName(ty)));
    for (int64_t i = 0; i < n; ++i) {
      const char *p = raw.data() + i * width;
      switch (ty) {
      case onnx::kFloat: h.data[i] = loadLE<float>(p); break;
      case onnx::kDouble: h.data[i] = static_cast<float>(loadLE<double>(p)); break;
      case onnx::kInt32: h.data[i] = loadLE<int32_t>(p); break;
      case onnx::kInt64: h.data[i] = static_cast<double>(loadLE<int64_t>(p)); break;
      case onnx::kBool: h.data[i] = *p ? 1 : 0; break;
      default: h.data[i] = decodeFloat(*dtype, loadLE<uint16_t>(p)); break;
      }
    }
    return h;
  }
  switch (ty) {
  case onnx::kFloat:
    if (auto st = count(t.floatData.size()); !st.ok())
      return st;
    for (int64_t i = 0; i < n; ++i)
      h.data[i] = t.floatData[i];
    break;
  case onnx::kDouble:
    if (auto st = count(t.doubleData.size()); !st.ok())
      return st;
    for (int64_t i = 0; i < n; ++i)
      h.data[i] = static_cast<float>(t.doubleData[i]);
    break;
  case onnx::kInt64:
    if (auto st = count(t.int64Data.size()); !st.ok())
      return st;
    for (int64_t i = 0; i < n; ++i)
      h.data[i] = static_cast<double>(t.int64Data[i]);
    break;
  default: // int32, bool, float16, bfloat16: int32_data
    if (auto st = count(t.int32Data.size()); !st.ok())
      return st;
    for (int64_t i = 0; i < n; ++i)
      h.data[i] = ty == onnx::kFloat16 || ty == onnx::kBfloat16
                      ? decodeFloat(*dtype, static_cast<uint16_t>(t.int32Data[i]))
                      : ty == onnx::kBool ? (t.int32Data[i] != 0) : t.int32Data[i];
  }
  return h;
}

std::string typeOf(DType d, const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t x : shape)
    absl::StrAppend(&s, x, "x");
  return absl::StrCat(s, dtypeName(d), ">");
}

/// A finite float as MLIR reads it: a decimal point always (MLIR lexes
/// "1e-09" as the integer 1 and an identifier).
std::string floatText(double v) {
  std::string f = absl::StrFormat("%.9g", v);
  if (f.find('.') == std::string::npos) {
    size_t e = f.find('e');
    f.insert(e == std::string::npos ? f.size() : e, ".0");
  }
  return f;
}

/// A dense literal, nested to the shape.
std::string literal(const HostTensor &h) {
  std::string s;
  std::function<void(size_t, int64_t)> rec = [&](size_t dim, int64_t offset) {
    if (dim == h.shape.size()) {
      double v = h.data[offset];
      if (h.dtype == DType::I1)
        absl::StrAppend(&s, v != 0 ? "true" : "false");
      else if (!isFloat(h.dtype))
        absl::StrAppend(&s, static_cast<int64_t>(v));
      else if (std::isfinite(v))
        absl::StrAppend(&s, floatText(v));
      else
        absl::StrAppend(&s, absl::StrFormat("0x%X", encodeFloat(h.dtype, v)));
      return;
    }
    int64_t stride = 1;
    for (size_t d = dim + 1; d < h.shape.size(); ++d)
      stride *= h.shape[d];
    s += "[";
    for (int64_t i = 0; i < h.shape[dim]; ++i) {
      if (i)
        s += ", ";
      rec(dim + 1, offset + i * stride);
    }
    s += "]";
  };
  rec(0, 0);
  return s;
}

struct Val {
  std::string ssa; ///< empty until emitted (known values are emitted lazily)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::optional<HostTensor> known;
  /// Set when the value is `squeezed` with size-1 dims added (ONNX's
  /// keepdims): elementwise ops then compute on the squeezed form, so no
  /// reshape sits between a reduction and its consumers (which would split
  /// the kernel); the reshape is emitted only where a use needs it.
  std::shared_ptr<Val> squeezed;
  int64_t elements() const { return elementCount(shape); }
};

std::vector<int64_t> nonUnit(const std::vector<int64_t> &shape) {
  std::vector<int64_t> out;
  for (int64_t d : shape)
    if (d != 1)
      out.push_back(d);
  return out;
}

/// Numpy broadcasting of two shapes.
absl::StatusOr<std::vector<int64_t>> broadcastShapes(const std::vector<int64_t> &a,
                                                     const std::vector<int64_t> &b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1)
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes [", absl::StrJoin(a, ","), "] and [", absl::StrJoin(b, ","),
          "] do not broadcast"));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

class Importer {
public:
  Importer(const onnx::Model &model, std::string baseDir, const OnnxImportOptions &options)
      : model(model), baseDir(std::move(baseDir)), options(options) {
    auto it = model.opsets.find("");
    opset = it == model.opsets.end() ? 1 : it->second;
  }
  absl::StatusOr<OnnxImport> run();
  int64_t opset;

private:
  const onnx::Model &model;
  std::string baseDir;
  const OnnxImportOptions &options;
  std::map<std::string, Val> values;
  std::string body;
  int counter = 0;
  const Node *node = nullptr; ///< the node being imported

  size_t nodeIndex = 0;
  std::string nodeName() const {
    return node->name.empty() ? absl::StrCat("#", nodeIndex) : node->name;
  }
  absl::Status unsupported(const std::string &why) const {
    return absl::UnimplementedError(absl::StrFormat(
        "node '%s' (%s, opset %d): %s", nodeName(), node->opType, opset, why));
  }
  absl::Status invalid(const std::string &why) const {
    return absl::InvalidArgumentError(absl::StrFormat(
        "node '%s' (%s, opset %d): %s", nodeName(), node->opType, opset, why));
  }
  std::string loc() const {
    std::string n = node ? nodeName() + "(" + node->opType + ")" : "onnx";
    std::string e;
    for (char c : n)
      e += c == '"' || c == '\\' ? '_' : c;
    return absl::StrCat(" loc(\"", e, "\")");
  }
  /// Emits `rhs` as a new value of `type`.
  Val emit(const std::string &rhs, DType d, std::vector<int64_t> shape) {
    Val v;
    v.ssa = absl::StrCat("%v", counter++);
    v.dtype = d;
    v.shape = std::move(shape);
    absl::StrAppend(&body, "    ", v.ssa, " = ", rhs, loc(), "\n");
    return v;
  }
  std::string ty(const Val &v) const { return typeOf(v.dtype, v.shape); }
  /// The SSA name of `v`, emitting its known value first if needed.
  bool emptyUse = false;
  std::string use(Val &v) {
    if (v.elements() == 0)
      emptyUse = true;
    if (v.ssa.empty() && v.squeezed && !v.known) {
      std::string src = use(*v.squeezed);
      Val r = emit(absl::StrCat("fusec.reshape ", src, " : ", ty(*v.squeezed), " -> ", ty(v)),
                   v.dtype, v.shape);
      v.ssa = r.ssa;
    }
    if (v.ssa.empty()) {
      Val c = emit(absl::StrCat("fusec.constant dense<", literal(*v.known), "> : ", ty(v)),
                   v.dtype, v.shape);
      v.ssa = c.ssa;
    }
    return v.ssa;
  }
  absl::StatusOr<Val> input(size_t i) {
    if (i >= node->inputs.size() || node->inputs[i].empty())
      return invalid(absl::StrCat("input #", i, " is missing"));
    auto it = values.find(node->inputs[i]);
    if (it == values.end())
      return invalid(absl::StrCat("input '", node->inputs[i], "' is not defined before use"));
    return it->second;
  }
  bool hasInput(size_t i) const { return i < node->inputs.size() && !node->inputs[i].empty(); }
  absl::StatusOr<std::vector<int64_t>> knownInts(size_t i) {
    auto v = input(i);
    if (!v.ok())
      return v.status();
    if (!v->known)
      return unsupported(absl::StrCat("input #", i, " must be known at import (a constant or a shape computation)"));
    std::vector<int64_t> out;
    for (double x : v->known->data)
      out.push_back(static_cast<int64_t>(x));
    return out;
  }
  int64_t attrInt(const char *name, int64_t dflt) const {
    const Attribute *a = node->attr(name);
    return a && (a->has & Attribute::kI) ? a->i : dflt;
  }
  float attrFloat(const char *name, float dflt) const {
    const Attribute *a = node->attr(name);
    return a && (a->has & Attribute::kF) ? a->f : dflt;
  }
  std::optional<std::vector<int64_t>> attrInts(const char *name) const {
    const Attribute *a = node->attr(name);
    if (!a || !(a->has & Attribute::kInts))
      return std::nullopt;
    return a->ints;
  }
  absl::Status define(size_t out, Val v) {
    if (out >= node->outputs.size())
      return invalid("too few outputs");
    if (!node->outputs[out].empty())
      values[node->outputs[out]] = std::move(v);
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> axis(int64_t a, size_t rank) const {
    int64_t r = static_cast<int64_t>(rank);
    if (a < -r || a >= std::max<int64_t>(r, 1))
      return invalid(absl::StrCat("axis ", a, " out of range for rank ", rank));
    return a < 0 ? a + r : a;
  }

  // Building blocks.
  Val broadcastTo(Val v, const std::vector<int64_t> &shape);
  Val cast(Val v, DType to);
  Val constant(DType d, double value) {
    Val v;
    v.dtype = d;
    HostTensor h(d, {});
    h.data = {value};
    v.known = h;
    return v;
  }
  Val reshape(Val v, std::vector<int64_t> shape);
  absl::StatusOr<Val> binary(const char *op, Val a, Val b);
  Val unary(const char *op, Val a) {
    if (a.squeezed && !a.known)
      return wrap(unary(op, *a.squeezed), a.shape);
    return emit(absl::StrCat("fusec.", op, " ", use(a), " : ", ty(a)), a.dtype, a.shape);
  }
  /// `v` seen with `shape` (v's shape plus size-1 dims).
  Val wrap(Val v, const std::vector<int64_t> &shape) {
    if (v.shape == shape)
      return v;
    Val w;
    w.dtype = v.dtype;
    w.shape = shape;
    w.squeezed = std::make_shared<Val>(std::move(v));
    return w;
  }
  Val compare(const char *pred, Val a, Val b);
  absl::StatusOr<Val> select(Val c, Val a, Val b);
  absl::StatusOr<Val> reduce(const char *kind, Val x, std::vector<int64_t> axes, bool keep);
  std::optional<Val> fold(const std::string &op, std::vector<Val> &in);
  absl::Status importNode();
};

Val Importer::broadcastTo(Val v, const std::vector<int64_t> &shape) {
  if (v.shape == shape)
    return v;
  size_t off = shape.size() - v.shape.size();
  std::vector<int64_t> dims;
  for (size_t j = 0; j < v.shape.size(); ++j)
    dims.push_back(static_cast<int64_t>(off + j));
  if (v.known && elementCount(shape) <= 4096 && (v.elements() == 1 || !isFloat(v.dtype))) {
    // Fold: splats and small integer values (shape computations) stay
    // known; a float tensor is broadcast on the device.
    HostTensor h(v.dtype, shape);
    for (int64_t i = 0; i < h.numElements(); ++i) {
      int64_t rem = i, src = 0, srcStride = 1;
      std::vector<int64_t> coord(shape.size());
      for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
        coord[d] = rem % shape[d];
        rem /= shape[d];
      }
      for (int64_t j = static_cast<int64_t>(v.shape.size()) - 1; j >= 0; --j) {
        int64_t c = v.shape[j] == 1 ? 0 : coord[off + j];
        src += c * srcStride;
        srcStride *= v.shape[j];
      }
      h.data[i] = v.known->data[src];
    }
    Val out;
    out.dtype = v.dtype;
    out.shape = shape;
    out.known = h;
    return out;
  }
  if (v.squeezed && !v.known) {
    // Broadcast from the squeezed form: its dims are v's non-unit dims.
    Val &src = *v.squeezed;
    std::vector<int64_t> srcDims;
    for (size_t j = 0; j < v.shape.size(); ++j)
      if (v.shape[j] != 1)
        srcDims.push_back(static_cast<int64_t>(off + j));
    if (src.elements() == 1 && src.shape.size() <= shape.size()) {
      srcDims.clear();
      for (size_t j = shape.size() - src.shape.size(); j < shape.size(); ++j)
        srcDims.push_back(static_cast<int64_t>(j));
    }
    if (srcDims.size() == src.shape.size())
      return emit(absl::StrCat("fusec.broadcast ", use(src), " dims [", absl::StrJoin(srcDims, ", "),
                               "] : ", ty(src), " -> ", typeOf(v.dtype, shape)),
                  v.dtype, shape);
  }
  return emit(absl::StrCat("fusec.broadcast ", use(v), " dims [", absl::StrJoin(dims, ", "),
                           "] : ", ty(v), " -> ", typeOf(v.dtype, shape)),
              v.dtype, shape);
}

Val Importer::cast(Val v, DType to) {
  if (v.dtype == to)
    return v;
  if (v.known) {
    Val out = v;
    out.ssa.clear();
    out.dtype = to;
    out.known->dtype = to;
    for (double &x : out.known->data)
      x = to == DType::I1 ? (x != 0) : isFloat(to) ? x : std::trunc(x);
    out.known->roundInPlace();
    return out;
  }
  return emit(absl::StrCat("fusec.cast ", use(v), " : ", ty(v), " to ", typeOf(to, v.shape)),
              to, v.shape);
}

Val Importer::reshape(Val v, std::vector<int64_t> shape) {
  if (v.shape == shape)
    return v;
  if (!v.known) {
    Val base = v.squeezed ? *v.squeezed : v;
    bool allUnit = base.elements() == 1 && shape.size() >= base.shape.size();
    if (nonUnit(base.shape) == nonUnit(shape) && (nonUnit(base.shape) == base.shape || allUnit))
      return wrap(base, shape);
  }
  if (v.known) {
    Val out = v;
    out.ssa.clear();
    out.shape = shape;
    out.known->shape = shape;
    return out;
  }
  return emit(absl::StrCat("fusec.reshape ", use(v), " : ", ty(v), " -> ", typeOf(v.dtype, shape)),
              v.dtype, shape);
}

absl::StatusOr<Val> Importer::binary(const char *op, Val a, Val b) {
  auto shape = broadcastShapes(a.shape, b.shape);
  if (!shape.ok())
    return invalid(std::string(shape.status().message()));
  if (a.dtype != b.dtype)
    return invalid(absl::StrCat("operands of ", dtypeName(a.dtype), " and ", dtypeName(b.dtype)));
  // Both squeezed to one shape (or one a single known value): compute there.
  auto squeezedShape = [&](const Val &v) -> std::optional<std::vector<int64_t>> {
    if (v.squeezed && !v.known && v.shape == *shape)
      return v.squeezed->shape;
    return std::nullopt;
  };
  auto sa = squeezedShape(a), sb = squeezedShape(b);
  if ((sa || sb) && (!sa || !sb || *sa == *sb)) {
    std::vector<int64_t> inner = sa ? *sa : *sb;
    auto scalarLike = [&](const Val &v) { return v.known && v.elements() == 1; };
    if ((sa || scalarLike(a)) && (sb || scalarLike(b))) {
      Val x = sa ? *a.squeezed : broadcastTo(reshape(a, {}), inner);
      Val y = sb ? *b.squeezed : broadcastTo(reshape(b, {}), inner);
      Val r = emit(absl::StrCat("fusec.", op, " ", use(x), ", ", use(y), " : ", ty(x)), x.dtype, inner);
      return wrap(r, *shape);
    }
  }
  a = broadcastTo(a, *shape);
  b = broadcastTo(b, *shape);
  return emit(absl::StrCat("fusec.", op, " ", use(a), ", ", use(b), " : ", ty(a)), a.dtype, *shape);
}

Val Importer::compare(const char *pred, Val a, Val b) {
  return emit(absl::StrCat("fusec.compare ", pred, ", ", use(a), ", ", use(b), " : ", ty(a)),
              DType::I1, a.shape);
}

absl::StatusOr<Val> Importer::select(Val c, Val a, Val b) {
  auto s1 = broadcastShapes(c.shape, a.shape);
  if (!s1.ok())
    return invalid(std::string(s1.status().message()));
  auto shape = broadcastShapes(*s1, b.shape);
  if (!shape.ok())
    return invalid(std::string(shape.status().message()));
  c = broadcastTo(c, *shape);
  a = broadcastTo(a, *shape);
  b = broadcastTo(b, *shape);
  return emit(absl::StrCat("fusec.select ", use(c), ", ", use(a), ", ", use(b), " : ", ty(a)),
              a.dtype, *shape);
}

absl::StatusOr<Val> Importer::reduce(const char *kind, Val x, std::vector<int64_t> axes, bool keep) {
  std::vector<int64_t> dims;
  for (int64_t a : axes) {
    auto ax = axis(a, x.shape.size());
    if (!ax.ok())
      return ax.status();
    dims.push_back(*ax);
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  std::vector<int64_t> kept, keptDims;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    bool reduced = std::count(dims.begin(), dims.end(), static_cast<int64_t>(d));
    if (!reduced)
      kept.push_back(x.shape[d]);
    keptDims.push_back(reduced ? 1 : x.shape[d]);
  }
  Val r = dims.empty() ? x
                       : emit(absl::StrCat("fusec.reduce ", kind, " ", use(x), " dims [",
                                           absl::StrJoin(dims, ", "), "] : ", ty(x), " -> ",
                                           typeOf(x.dtype, kept)),
                              x.dtype, kept);
  return keep ? reshape(r, keptDims) : r;
}

/// Folds an op whose inputs are all known and small; nullopt otherwise.
std::optional<Val> Importer::fold(const std::string &op, std::vector<Val> &in) {
  for (const Val &v : in)
    if (!v.known || v.elements() > 4096)
      return std::nullopt;
  auto shape = in.size() == 2 ? broadcastShapes(in[0].shape, in[1].shape)
                              : absl::StatusOr<std::vector<int64_t>>(in[0].shape);
  if (!shape.ok() || (in.size() == 2 && in[0].dtype != in[1].dtype))
    return std::nullopt;
  std::function<double(double, double)> f;
  DType out = in[0].dtype;
  if (op == "Add") f = [](double a, double b) { return a + b; };
  else if (op == "Sub") f = [](double a, double b) { return a - b; };
  else if (op == "Mul") f = [](double a, double b) { return a * b; };
  else if (op == "Div" && !isFloat(out))
    f = [](double a, double b) { return b == 0 ? 0 : std::trunc(a / b); };
  else if (op == "Equal") { f = [](double a, double b) { return a == b ? 1 : 0; }; out = DType::I1; }
  else if (op == "Max") f = [](double a, double b) { return std::max(a, b); };
  else if (op == "Min") f = [](double a, double b) { return std::min(a, b); };
  else if (op == "Neg" && in.size() == 1) f = [](double a, double) { return -a; };
  else return std::nullopt;
  if (isFloat(in[0].dtype) && op != "Equal")
    return std::nullopt; // float arithmetic is emitted (rounding as the GPU does)
  std::vector<Val> b;
  for (Val &v : in)
    b.push_back(broadcastTo(v, *shape));
  HostTensor h(out, *shape);
  for (int64_t i = 0; i < h.numElements(); ++i)
    h.data[i] = f(b[0].known->data[i], b.size() > 1 ? b[1].known->data[i] : 0);
  Val v;
  v.dtype = out;
  v.shape = *shape;
  v.known = h;
  return v;
}

#define TRY_ASSIGN(lhs, expr)                                                  \
  auto lhs##_or = (expr);                                                      \
  if (!lhs##_or.ok())                                                          \
    return lhs##_or.status();                                                  \
  auto lhs = std::move(*lhs##_or)

absl::Status Importer::importNode() {
  const std::string &op = node->opType;
  if (!node->domain.empty() && node->domain != "ai.onnx")
    return unsupported(absl::StrCat("domain '", node->domain, "' is not supported"));

  static const std::map<std::string, const char *> unaryOps = {
      {"Neg", "neg"}, {"Abs", "abs"}, {"Floor", "floor"}, {"Ceil", "ceil"},
      {"Sqrt", "sqrt"}, {"Exp", "exp"}, {"Log", "log"}, {"Tanh", "tanh"},
      {"Erf", "erf"}, {"Sigmoid", "sigmoid"}, {"Sign", "sign"}, {"Not", "not"}};
  static const std::map<std::string, const char *> binaryOps = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"},
      {"And", "and"}, {"Or", "or"}};
  static const std::map<std::string, const char *> compareOps = {
      {"Equal", "eq"}, {"Greater", "gt"}, {"GreaterOrEqual", "ge"},
      {"Less", "lt"}, {"LessOrEqual", "le"}};

  if (op == "Identity" || op == "Dropout") {
    if (op == "Dropout" && hasInput(2)) {
      TRY_ASSIGN(mode, input(2));
      if (!mode.known || mode.known->data.empty() || mode.known->data[0] != 0)
        return unsupported("Dropout in training mode is not supported (inference only)");
    }
    TRY_ASSIGN(x, input(0));
    if (op == "Dropout" && node->outputs.size() > 1 && !node->outputs[1].empty())
      if (auto st = define(1, broadcastTo(constant(DType::I1, 1), x.shape)); !st.ok())
        return st; // at inference the mask keeps everything
    return define(0, x);
  }
  if (op == "Constant") {
    Val v;
    if (const Attribute *a = node->attr("value"); a && (a->has & Attribute::kT)) {
      TRY_ASSIGN(h, decodeTensor(a->t, baseDir));
      v.dtype = h.dtype;
      v.shape = h.shape;
      v.known = h;
    } else if (const Attribute *a = node->attr("value_float")) {
      v = constant(DType::F32, a->f);
    } else if (const Attribute *a = node->attr("value_int")) {
      v = constant(DType::I64, static_cast<double>(a->i));
    } else if (const Attribute *a = node->attr("value_floats")) {
      HostTensor h(DType::F32, {static_cast<int64_t>(a->floats.size())});
      for (size_t i = 0; i < a->floats.size(); ++i)
        h.data[i] = a->floats[i];
      v.dtype = DType::F32, v.shape = h.shape, v.known = h;
    } else if (const Attribute *a = node->attr("value_ints")) {
      HostTensor h(DType::I64, {static_cast<int64_t>(a->ints.size())});
      for (size_t i = 0; i < a->ints.size(); ++i)
        h.data[i] = static_cast<double>(a->ints[i]);
      v.dtype = DType::I64, v.shape = h.shape, v.known = h;
    } else {
      return unsupported("only value, value_float(s) and value_int(s) constants are supported");
    }
    return define(0, v);
  }
  if (auto it = unaryOps.find(op); it != unaryOps.end()) {
    TRY_ASSIGN(x, input(0));
    std::vector<Val> in{x};
    if (auto f = fold(op, in))
      return define(0, *f);
    return define(0, unary(it->second, x));
  }
  if (auto it = binaryOps.find(op); it != binaryOps.end()) {
    TRY_ASSIGN(a, input(0));
    TRY_ASSIGN(b, input(1));
    std::vector<Val> in{a, b};
    if (auto f = fold(op, in))
      return define(0, *f);
    TRY_ASSIGN(r, binary(it->second, a, b));
    return define(0, r);
  }
  if (auto it = compareOps.find(op); it != compareOps.end()) {
    TRY_ASSIGN(a, input(0));
    TRY_ASSIGN(b, input(1));
    std::vector<Val> in{a, b};
    if (auto f = fold(op, in))
      return define(0, *f);
    auto shape = broadcastShapes(a.shape, b.shape);
    if (!shape.ok())
      return invalid(std::string(shape.status().message()));
    return define(0, compare(it->second, broadcastTo(a, *shape), broadcastTo(b, *shape)));
  }
  if (op == "Max" || op == "Min" || op == "Sum" || op == "Mean") {
    if (node->inputs.empty())
      return invalid("no inputs");
    TRY_ASSIGN(acc, input(0));
    const char *f = op == "Max" ? "max" : op == "Min" ? "min" : "add";
    for (size_t i = 1; i < node->inputs.size(); ++i) {
      TRY_ASSIGN(b, input(i));
      TRY_ASSIGN(r, binary(f, acc, b));
      acc = r;
    }
    if (op == "Mean") {
      TRY_ASSIGN(r, binary("div", acc, constant(acc.dtype, static_cast<double>(node->inputs.size()))));
      acc = r;
    }
    if (node->inputs.size() == 1 && op == "Mean")
      acc = acc; // a mean of one input is itself
    return define(0, acc);
  }
  if (op == "Pow") {
    TRY_ASSIGN(a, input(0));
    TRY_ASSIGN(b, input(1));
    if (!isFloat(a.dtype))
      return unsupported("integer Pow is not supported");
    TRY_ASSIGN(r, binary("pow", a, cast(b, a.dtype)));
    return define(0, r);
  }
  if (op == "Reciprocal") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(r, binary("div", constant(x.dtype, 1), x));
    return define(0, r);
  }
  if (op == "Relu") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(r, binary("max", x, constant(x.dtype, 0)));
    return define(0, r);
  }
  if (op == "LeakyRelu" || op == "Elu" || op == "Selu") {
    TRY_ASSIGN(x, input(0));
    double alpha = attrFloat("alpha", op == "LeakyRelu" ? 0.01f : op == "Elu" ? 1.0f : 1.67326319217681884765625f);
    Val zero = broadcastTo(constant(x.dtype, 0), x.shape);
    Val neg = compare(op == "Selu" ? "le" : "lt", x, zero);
    Val negPart;
    if (op == "LeakyRelu") {
      TRY_ASSIGN(r, binary("mul", x, constant(x.dtype, alpha)));
      negPart = r;
    } else {
      TRY_ASSIGN(e, binary("sub", unary("exp", x), constant(x.dtype, 1)));
      TRY_ASSIGN(r, binary("mul", e, constant(x.dtype, alpha)));
      negPart = r;
    }
    TRY_ASSIGN(r, select(neg, negPart, x));
    if (op == "Selu") {
      TRY_ASSIGN(g, binary("mul", r, constant(x.dtype, attrFloat("gamma", 1.05070102214813232421875f))));
      return define(0, g);
    }
    return define(0, r);
  }
  if (op == "HardSigmoid") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(a, binary("mul", x, constant(x.dtype, attrFloat("alpha", 0.2f))));
    TRY_ASSIGN(b, binary("add", a, constant(x.dtype, attrFloat("beta", 0.5f))));
    TRY_ASSIGN(c, binary("min", b, constant(x.dtype, 1)));
    TRY_ASSIGN(d, binary("max", c, constant(x.dtype, 0)));
    return define(0, d);
  }
  if (op == "Softplus") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(a, binary("add", unary("exp", x), constant(x.dtype, 1)));
    return define(0, unary("log", a));
  }
  if (op == "Softsign") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(a, binary("add", unary("abs", x), constant(x.dtype, 1)));
    TRY_ASSIGN(r, binary("div", x, a));
    return define(0, r);
  }
  if (op == "Clip") {
    TRY_ASSIGN(x, input(0));
    Val r = x;
    std::optional<Val> lo, hi;
    if (opset < 11) {
      if (node->attr("min"))
        lo = constant(x.dtype, attrFloat("min", 0));
      if (node->attr("max"))
        hi = constant(x.dtype, attrFloat("max", 0));
    } else {
      if (hasInput(1)) {
        TRY_ASSIGN(v, input(1));
        lo = v;
      }
      if (hasInput(2)) {
        TRY_ASSIGN(v, input(2));
        hi = v;
      }
    }
    if (lo) {
      TRY_ASSIGN(m, binary("max", r, *lo));
      r = m;
    }
    if (hi) {
      TRY_ASSIGN(m, binary("min", r, *hi));
      r = m;
    }
    return define(0, r);
  }
  if (op == "Where") {
    TRY_ASSIGN(c, input(0));
    TRY_ASSIGN(a, input(1));
    TRY_ASSIGN(b, input(2));
    TRY_ASSIGN(r, select(c, a, b));
    return define(0, r);
  }
  if (op == "Cast") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(to, dtypeFor(static_cast<int32_t>(attrInt("to", onnx::kFloat))));
    return define(0, cast(x, to));
  }
  if (op == "CastLike") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(like, input(1));
    return define(0, cast(x, like.dtype));
  }
  if (op == "Range") {
    std::vector<Val> in;
    for (size_t i = 0; i < 3; ++i) {
      TRY_ASSIGN(v, input(i));
      if (!v.known || v.elements() != 1)
        return unsupported(absl::StrCat("input #", i, " must be known at import (a constant or a shape computation)"));
      in.push_back(v);
    }
    double start = in[0].known->data[0], limit = in[1].known->data[0], delta = in[2].known->data[0];
    if (delta == 0)
      return invalid("delta is 0");
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
    HostTensor h(in[0].dtype, {n});
    for (int64_t i = 0; i < n; ++i)
      h.data[i] = start + static_cast<double>(i) * delta;
    h.roundInPlace();
    Val v;
    v.dtype = h.dtype, v.shape = h.shape, v.known = h;
    return define(0, v);
  }
  if (op == "Shape") {
    TRY_ASSIGN(x, input(0));
    int64_t r = static_cast<int64_t>(x.shape.size());
    int64_t start = attrInt("start", 0), end = attrInt("end", r);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
    HostTensor h(DType::I64, {std::max<int64_t>(0, end - start)});
    for (int64_t i = start; i < end; ++i)
      h.data[i - start] = static_cast<double>(x.shape[i]);
    Val v;
    v.dtype = DType::I64, v.shape = h.shape, v.known = h;
    return define(0, v);
  }
  if (op == "Size") {
    TRY_ASSIGN(x, input(0));
    return define(0, constant(DType::I64, static_cast<double>(x.elements())));
  }
  if (op == "ConstantOfShape") {
    TRY_ASSIGN(dims, knownInts(0));
    HostTensor fill(DType::F32, {1});
    fill.data = {0};
    if (const Attribute *a = node->attr("value"); a && (a->has & Attribute::kT)) {
      TRY_ASSIGN(h, decodeTensor(a->t, baseDir));
      if (h.numElements() != 1)
        return invalid("value must have one element");
      fill = h;
    }
    HostTensor h(fill.dtype, dims);
    for (double &x : h.data)
      x = fill.data[0];
    Val v;
    v.dtype = fill.dtype, v.shape = dims, v.known = h;
    return define(0, v);
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    TRY_ASSIGN(x, input(0));
    std::vector<int64_t> shape;
    int64_t rank = static_cast<int64_t>(x.shape.size());
    if (op == "Reshape") {
      TRY_ASSIGN(req, knownInts(1));
      bool allowZero = attrInt("allowzero", 0);
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < req.size(); ++i) {
        int64_t d = req[i];
        if (d == 0 && !allowZero) {
          if (static_cast<int64_t>(i) >= rank)
            return invalid("a 0 in the shape past the input's rank");
          d = x.shape[i];
        }
        if (d == -1) {
          if (infer >= 0)
            return invalid("two -1 in the shape");
          infer = static_cast<int64_t>(i);
        } else if (d < 0) {
          return invalid(absl::StrCat("shape value ", d));
        } else {
          known *= d;
        }
        shape.push_back(d);
      }
      if (infer >= 0) {
        if (known == 0 || x.elements() % known)
          return invalid("cannot infer the -1 dim");
        shape[infer] = x.elements() / known;
      }
    } else if (op == "Flatten") {
      int64_t a = attrInt("axis", 1);
      if (a < 0)
        a += rank;
      if (a < 0 || a > rank)
        return invalid(absl::StrCat("axis ", attrInt("axis", 1), " out of range for rank ", rank));
      int64_t outer = 1;
      for (int64_t d = 0; d < a; ++d)
        outer *= x.shape[d];
      shape = {outer, outer ? x.elements() / std::max<int64_t>(outer, 1) : 0};
      if (outer == 0) {
        int64_t inner = 1;
        for (int64_t d = a; d < rank; ++d)
          inner *= x.shape[d];
        shape[1] = inner;
      }
    } else {
      std::vector<int64_t> axes;
      if (opset >= 13 && hasInput(1)) {
        TRY_ASSIGN(v, knownInts(1));
        axes = v;
      } else if (auto a = attrInts("axes")) {
        axes = *a;
      }
      if (op == "Squeeze") {
        std::vector<bool> drop(rank, false);
        if (axes.empty())
          for (int64_t d = 0; d < rank; ++d)
            drop[d] = x.shape[d] == 1;
        for (int64_t a : axes) {
          TRY_ASSIGN(ax, axis(a, rank));
          if (x.shape[ax] != 1)
            return invalid(absl::StrCat("squeezing dim ", ax, " of size ", x.shape[ax]));
          drop[ax] = true;
        }
        for (int64_t d = 0; d < rank; ++d)
          if (!drop[d])
            shape.push_back(x.shape[d]);
      } else {
        int64_t outRank = rank + static_cast<int64_t>(axes.size());
        std::vector<bool> ins(outRank, false);
        for (int64_t a : axes) {
          TRY_ASSIGN(ax, axis(a, outRank));
          ins[ax] = true;
        }
        size_t k = 0;
        for (int64_t d = 0; d < outRank; ++d)
          shape.push_back(ins[d] ? 1 : x.shape[k++]);
      }
    }
    if (elementCount(shape) != x.elements())
      return invalid("the new shape has a different number of elements");
    return define(0, reshape(x, shape));
  }
  if (op == "Expand") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(dims, knownInts(1));
    auto shape = broadcastShapes(x.shape, dims);
    if (!shape.ok())
      return invalid(std::string(shape.status().message()));
    return define(0, broadcastTo(x, *shape));
  }
  if (op == "Transpose") {
    TRY_ASSIGN(x, input(0));
    std::vector<int64_t> perm;
    if (auto p = attrInts("perm"))
      perm = *p;
    else
      for (int64_t d = static_cast<int64_t>(x.shape.size()) - 1; d >= 0; --d)
        perm.push_back(d);
    if (perm.size() != x.shape.size())
      return invalid("perm does not match the rank");
    std::vector<int64_t> shape;
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(x.shape.size()))
        return invalid("perm out of range");
      shape.push_back(x.shape[p]);
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity &= perm[i] == static_cast<int64_t>(i);
    if (identity)
      return define(0, x);
    return define(0, emit(absl::StrCat("fusec.transpose ", use(x), " perm [", absl::StrJoin(perm, ", "),
                                       "] : ", ty(x), " -> ", typeOf(x.dtype, shape)),
                          x.dtype, shape));
  }
  if (op == "Concat") {
    std::vector<Val> in;
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      TRY_ASSIGN(v, input(i));
      if (v.elements() > 0 || in.empty())
        in.push_back(v);
    }
    if (in.empty())
      return invalid("no inputs");
    TRY_ASSIGN(ax, axis(attrInt("axis", 0), in[0].shape.size()));
    std::vector<int64_t> shape = in[0].shape;
    shape[ax] = 0;
    bool allKnown = true;
    for (Val &v : in) {
      if (v.shape.size() != shape.size() || v.dtype != in[0].dtype)
        return invalid("inputs of different ranks or types");
      shape[ax] += v.shape[ax];
      allKnown &= v.known.has_value();
    }
    if (in.size() == 1)
      return define(0, in[0]);
    if (allKnown && elementCount(shape) <= 4096) {
      HostTensor h(in[0].dtype, shape);
      int64_t outer = 1;
      for (int64_t d = 0; d < ax; ++d)
        outer *= shape[d];
      int64_t pos = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (Val &v : in) {
          int64_t chunk = v.elements() / std::max<int64_t>(outer, 1);
          for (int64_t i = 0; i < chunk; ++i)
            h.data[pos++] = v.known->data[o * chunk + i];
        }
      Val v;
      v.dtype = h.dtype, v.shape = shape, v.known = h;
      return define(0, v);
    }
    std::string names, types;
    for (size_t i = 0; i < in.size(); ++i) {
      absl::StrAppend(&names, i ? ", " : "", use(in[i]));
      absl::StrAppend(&types, i ? ", " : "", ty(in[i]));
    }
    return define(0, emit(absl::StrCat("fusec.concat ", names, " dim ", ax, " : (", types, ") -> ",
                                       typeOf(in[0].dtype, shape)),
                          in[0].dtype, shape));
  }
  if (op == "Slice") {
    TRY_ASSIGN(x, input(0));
    std::vector<int64_t> starts, ends, axes, steps;
    if (opset < 10) {
      starts = attrInts("starts").value_or(std::vector<int64_t>{});
      ends = attrInts("ends").value_or(std::vector<int64_t>{});
      axes = attrInts("axes").value_or(std::vector<int64_t>{});
    } else {
      TRY_ASSIGN(s, knownInts(1));
      TRY_ASSIGN(e, knownInts(2));
      starts = s, ends = e;
      if (hasInput(3)) {
        TRY_ASSIGN(a, knownInts(3));
        axes = a;
      }
      if (hasInput(4)) {
        TRY_ASSIGN(st, knownInts(4));
        steps = st;
      }
    }
    int64_t rank = static_cast<int64_t>(x.shape.size());
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i)
        axes.push_back(static_cast<int64_t>(i));
    if (steps.empty())
      steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      return invalid("starts, ends, axes and steps differ in length");
    std::vector<int64_t> offsets(rank, 0), strides(rank, 1), shape = x.shape;
    for (size_t i = 0; i < starts.size(); ++i) {
      TRY_ASSIGN(ax, axis(axes[i], rank));
      int64_t n = x.shape[ax], st = steps[i];
      if (st <= 0)
        return unsupported("negative or zero Slice steps are not supported");
      int64_t b = starts[i] < 0 ? starts[i] + n : starts[i];
      int64_t e = ends[i] < 0 ? ends[i] + n : ends[i];
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      offsets[ax] = b;
      strides[ax] = st;
      shape[ax] = e > b ? (e - b + st - 1) / st : 0;
    }
    if (x.known && elementCount(shape) <= 4096) {
      HostTensor h(x.dtype, shape);
      for (int64_t i = 0; i < h.numElements(); ++i) {
        int64_t rem = i, src = 0, stride = 1;
        std::vector<int64_t> c(rank);
        for (int64_t d = rank - 1; d >= 0; --d)
          c[d] = rem % shape[d], rem /= shape[d];
        for (int64_t d = rank - 1; d >= 0; --d) {
          src += (offsets[d] + c[d] * strides[d]) * stride;
          stride *= x.shape[d];
        }
        h.data[i] = x.known->data[src];
      }
      Val v;
      v.dtype = x.dtype, v.shape = shape, v.known = h;
      return define(0, v);
    }
    if (elementCount(shape) == 0)
      return unsupported("empty slices are not supported");
    return define(0, emit(absl::StrCat("fusec.slice ", use(x), " offsets [", absl::StrJoin(offsets, ", "),
                                       "] strides [", absl::StrJoin(strides, ", "), "] : ", ty(x),
                                       " -> ", typeOf(x.dtype, shape)),
                          x.dtype, shape));
  }
  if (op == "Gather") {
    TRY_ASSIGN(data, input(0));
    TRY_ASSIGN(idx, input(1));
    TRY_ASSIGN(ax, axis(attrInt("axis", 0), data.shape.size()));
    std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + ax);
    shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
    shape.insert(shape.end(), data.shape.begin() + ax + 1, data.shape.end());
    if (data.known && idx.known && elementCount(shape) <= 4096) {
      HostTensor h(data.dtype, shape);
      int64_t inner = 1, outer = 1, n = data.shape[ax];
      for (size_t d = ax + 1; d < data.shape.size(); ++d)
        inner *= data.shape[d];
      for (int64_t d = 0; d < ax; ++d)
        outer *= data.shape[d];
      int64_t pos = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (double id : idx.known->data) {
          int64_t k = static_cast<int64_t>(id);
          if (k < 0)
            k += n;
          if (k < 0 || k >= n)
            return invalid(absl::StrCat("index ", static_cast<int64_t>(id), " out of range"));
          for (int64_t i = 0; i < inner; ++i)
            h.data[pos++] = data.known->data[(o * n + k) * inner + i];
        }
      Val v;
      v.dtype = h.dtype, v.shape = shape, v.known = h;
      return define(0, v);
    }
    if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
      return invalid("indices must be int32 or int64");
    return define(0, emit(absl::StrCat("fusec.gather ", use(data), "[", use(idx), "] axis ", ax,
                                       " : (", ty(data), ", ", ty(idx), ") -> ",
                                       typeOf(data.dtype, shape)),
                          data.dtype, shape));
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    TRY_ASSIGN(x, input(0));
    if (x.shape.size() < 3 || !isFloat(x.dtype))
      return invalid("expects a float [N, C, spatial...] input");
    std::vector<int64_t> axes;
    for (size_t d = 2; d < x.shape.size(); ++d)
      axes.push_back(static_cast<int64_t>(d));
    TRY_ASSIGN(r, reduce(op == "GlobalMaxPool" ? "max" : "mean", x, axes, true));
    return define(0, r);
  }
  if (op == "PRelu") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(slope, input(1));
    TRY_ASSIGN(shape, broadcastShapes(x.shape, slope.shape));
    Val xb = broadcastTo(x, shape);
    TRY_ASSIGN(neg, binary("mul", xb, slope));
    Val lt = compare("lt", xb, broadcastTo(constant(x.dtype, 0), shape));
    TRY_ASSIGN(r, select(lt, neg, xb));
    return define(0, r);
  }
  if (op == "HardSwish" || op == "Mish" || op == "ThresholdedRelu" || op == "Celu") {
    TRY_ASSIGN(x, input(0));
    if (!isFloat(x.dtype))
      return invalid("expects a float input");
    Val zero = broadcastTo(constant(x.dtype, 0), x.shape);
    if (op == "HardSwish") { // x * max(0, min(1, x / 6 + 0.5))
      TRY_ASSIGN(a, binary("mul", x, constant(x.dtype, 1.0 / 6.0)));
      TRY_ASSIGN(b, binary("add", a, constant(x.dtype, 0.5)));
      TRY_ASSIGN(c, binary("min", b, constant(x.dtype, 1)));
      TRY_ASSIGN(d, binary("max", c, constant(x.dtype, 0)));
      TRY_ASSIGN(r, binary("mul", x, d));
      return define(0, r);
    }
    if (op == "Mish") { // x * tanh(log(1 + exp(x)))
      TRY_ASSIGN(a, binary("add", unary("exp", x), constant(x.dtype, 1)));
      TRY_ASSIGN(r, binary("mul", x, unary("tanh", unary("log", a))));
      return define(0, r);
    }
    if (op == "ThresholdedRelu") {
      Val gt = compare("gt", x, broadcastTo(constant(x.dtype, attrFloat("alpha", 1)), x.shape));
      TRY_ASSIGN(r, select(gt, x, zero));
      return define(0, r);
    }
    // Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    double alpha = attrFloat("alpha", 1);
    TRY_ASSIGN(xa, binary("div", x, constant(x.dtype, alpha)));
    TRY_ASSIGN(e, binary("sub", unary("exp", xa), constant(x.dtype, 1)));
    TRY_ASSIGN(ea, binary("mul", e, constant(x.dtype, alpha)));
    TRY_ASSIGN(lo, binary("min", ea, constant(x.dtype, 0)));
    TRY_ASSIGN(hi, binary("max", x, constant(x.dtype, 0)));
    TRY_ASSIGN(r, binary("add", hi, lo));
    return define(0, r);
  }
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" ||
      op == "ReduceSumSquare" || op == "ReduceL1" || op == "ReduceL2" ||
      op == "ReduceLogSum" || op == "ReduceLogSumExp") {
    TRY_ASSIGN(x, input(0));
    bool keep = attrInt("keepdims", 1);
    std::vector<int64_t> axes;
    bool axesFromInput = (op == "ReduceSum" && opset >= 13) || opset >= 18;
    bool given = false;
    if (axesFromInput && hasInput(1)) {
      TRY_ASSIGN(a, knownInts(1));
      axes = a;
      given = true;
    } else if (auto a = attrInts("axes")) {
      axes = *a;
      given = true;
    }
    if (!given || axes.empty()) {
      if (given && attrInt("noop_with_empty_axes", 0))
        return define(0, x);
      for (size_t d = 0; d < x.shape.size(); ++d)
        axes.push_back(static_cast<int64_t>(d));
    }
    if (!isFloat(x.dtype))
      return unsupported("integer reductions are not supported");
    Val in = x;
    if (op == "ReduceSumSquare" || op == "ReduceL2") {
      TRY_ASSIGN(sq, binary("mul", x, x));
      in = sq;
    } else if (op == "ReduceL1") {
      in = unary("abs", x);
    }
    if (op == "ReduceLogSumExp") {
      // log(sum(exp(x - max))) + max: no overflow for large inputs.
      TRY_ASSIGN(m, reduce("max", x, axes, true));
      TRY_ASSIGN(d, binary("sub", x, m));
      TRY_ASSIGN(s, reduce("sum", unary("exp", d), axes, true));
      TRY_ASSIGN(l, binary("add", unary("log", s), m));
      if (keep)
        return define(0, l);
      std::vector<int64_t> kept;
      for (size_t dd = 0; dd < x.shape.size(); ++dd) {
        bool reduced = false;
        for (int64_t a : axes)
          reduced |= (a < 0 ? a + static_cast<int64_t>(x.shape.size()) : a) == static_cast<int64_t>(dd);
        if (!reduced)
          kept.push_back(x.shape[dd]);
      }
      return define(0, reshape(l, kept));
    }
    const char *kind = op == "ReduceMax" ? "max" : op == "ReduceMin" ? "min"
                       : op == "ReduceMean" ? "mean" : "sum";
    TRY_ASSIGN(r, reduce(kind, in, axes, keep));
    if (op == "ReduceL2")
      return define(0, unary("sqrt", r));
    if (op == "ReduceLogSum")
      return define(0, unary("log", r));
    return define(0, r);
  }
  if (op == "MeanVarianceNormalization") {
    // ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9),
    // the moments over `axes` (default 0, 2, 3).
    TRY_ASSIGN(x, input(0));
    if (!isFloat(x.dtype))
      return unsupported("MeanVarianceNormalization needs a float input");
    std::vector<int64_t> axes = {0, 2, 3};
    if (auto a = attrInts("axes"))
      axes = *a;
    TRY_ASSIGN(mean, reduce("mean", x, axes, true));
    TRY_ASSIGN(meanSq, binary("mul", mean, mean));
    TRY_ASSIGN(sq, binary("mul", x, x));
    TRY_ASSIGN(sqMean, reduce("mean", sq, axes, true));
    TRY_ASSIGN(var, binary("sub", sqMean, meanSq));
    TRY_ASSIGN(den, binary("add", unary("sqrt", var), constant(x.dtype, 1e-9)));
    TRY_ASSIGN(centered, binary("sub", x, mean));
    TRY_ASSIGN(y, binary("div", centered, den));
    return define(0, y);
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    TRY_ASSIGN(x, input(0));
    int64_t rank = static_cast<int64_t>(x.shape.size());
    TRY_ASSIGN(ax, axis(attrInt("axis", opset >= 13 ? -1 : 1), rank));
    // Before opset 13 the input is coerced to 2-D at axis.
    Val in = x;
    int64_t dim = ax;
    if (opset < 13 && ax != rank - 1) {
      int64_t outer = 1;
      for (int64_t d = 0; d < ax; ++d)
        outer *= x.shape[d];
      in = reshape(x, {outer, x.elements() / std::max<int64_t>(outer, 1)});
      dim = 1;
    }
    Val r;
    if (op == "Softmax") {
      r = emit(absl::StrCat("fusec.softmax ", use(in), " dim ", dim, " : ", ty(in)), in.dtype, in.shape);
    } else {
      TRY_ASSIGN(m, reduce("max", in, {dim}, true));
      TRY_ASSIGN(d, binary("sub", in, m));
      TRY_ASSIGN(s, reduce("sum", unary("exp", d), {dim}, true));
      TRY_ASSIGN(l, binary("sub", d, unary("log", s)));
      r = l;
    }
    return define(0, reshape(r, x.shape));
  }
  if (op == "LayerNormalization") {
    bool stats = node->outputs.size() > 1 &&
                 std::any_of(node->outputs.begin() + 1, node->outputs.end(),
                             [](const std::string &s) { return !s.empty(); });
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(scale, input(1));
    int64_t rank = static_cast<int64_t>(x.shape.size());
    TRY_ASSIGN(ax, axis(attrInt("axis", -1), rank));
    int64_t outer = 1;
    for (int64_t d = 0; d < ax; ++d)
      outer *= x.shape[d];
    int64_t inner = x.elements() / std::max<int64_t>(outer, 1);
    std::vector<int64_t> normShape(x.shape.begin() + ax, x.shape.end());
    Val bias;
    if (hasInput(2)) {
      TRY_ASSIGN(b, input(2));
      bias = b;
    } else {
      bias = broadcastTo(constant(x.dtype, 0), normShape);
    }
    if (!isFloat(x.dtype) || scale.dtype != x.dtype || bias.dtype != x.dtype)
      return unsupported("LayerNormalization needs one float type");
    Val g = reshape(broadcastTo(scale, normShape), {inner});
    Val b = reshape(broadcastTo(bias, normShape), {inner});
    Val in = reshape(x, {outer, inner});
    if (stats) {
      // Mean and InvStdDev are outputs too: the normalization written out
      // (in the stash type, f32), the statistics kept with size-1 dims.
      Val xf = cast(in, DType::F32);
      TRY_ASSIGN(mean, reduce("mean", xf, {1}, true));
      TRY_ASSIGN(d, binary("sub", xf, mean));
      TRY_ASSIGN(sq, binary("mul", d, d));
      TRY_ASSIGN(var, reduce("mean", sq, {1}, true));
      TRY_ASSIGN(ve, binary("add", var, constant(DType::F32, attrFloat("epsilon", 1e-5f))));
      Val inv = unary("rsqrt", ve);
      TRY_ASSIGN(nrm, binary("mul", d, inv));
      TRY_ASSIGN(sc, binary("mul", cast(nrm, x.dtype), reshape(g, {1, inner})));
      TRY_ASSIGN(y, binary("add", sc, reshape(b, {1, inner})));
      std::vector<int64_t> statShape(x.shape.begin(), x.shape.begin() + ax);
      statShape.resize(x.shape.size(), 1);
      if (auto st = define(0, reshape(y, x.shape)); !st.ok())
        return st;
      if (node->outputs.size() > 1)
        if (auto st = define(1, reshape(mean, statShape)); !st.ok())
          return st;
      if (node->outputs.size() > 2)
        return define(2, reshape(inv, statShape));
      return absl::OkStatus();
    }
    Val y = emit(absl::StrFormat("fusec.layer_norm %s, %s, %s {epsilon = %s : f64} : (%s, %s, %s) -> %s",
                                 use(in), use(g), use(b), floatText(attrFloat("epsilon", 1e-5f)),
                                 ty(in), ty(g), ty(b), ty(in)),
                 in.dtype, in.shape);
    return define(0, reshape(y, x.shape));
  }
  if (op == "MatMul" || op == "Gemm") {
    TRY_ASSIGN(a, input(0));
    TRY_ASSIGN(b, input(1));
    bool ta = op == "Gemm" && attrInt("transA", 0), tb = op == "Gemm" && attrInt("transB", 0);
    if (a.shape.size() < 2 || b.shape.size() < 2)
      return unsupported("1-D MatMul operands are not supported");
    if (a.dtype != b.dtype || !isFloat(a.dtype))
      return unsupported("MatMul needs float operands of one type");
    size_t ra = a.shape.size(), rb = b.shape.size();
    int64_t m = ta ? a.shape[ra - 1] : a.shape[ra - 2], k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
    int64_t k2 = tb ? b.shape[rb - 1] : b.shape[rb - 2], n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
    if (k != k2)
      return invalid(absl::StrCat("contracting dims ", k, " and ", k2));
    std::vector<int64_t> batchA(a.shape.begin(), a.shape.end() - 2),
        batchB(b.shape.begin(), b.shape.end() - 2);
    TRY_ASSIGN(batch, broadcastShapes(batchA, batchB));
    std::vector<int64_t> sa = batch, sb = batch;
    sa.insert(sa.end(), a.shape.end() - 2, a.shape.end());
    a = broadcastTo(a, sa);
    if (rb > 2 || batch.empty()) {
      sb.insert(sb.end(), b.shape.end() - 2, b.shape.end());
      b = broadcastTo(b, sb);
    }
    std::vector<int64_t> shape = batch;
    shape.push_back(m);
    shape.push_back(n);
    std::string flags;
    if (ta || tb)
      flags = absl::StrCat(" {", ta ? "transpose_lhs" : "", ta && tb ? ", " : "",
                           tb ? "transpose_rhs" : "", "}");
    Val r = emit(absl::StrCat("fusec.matmul ", use(a), ", ", use(b), flags, " : (", ty(a), ", ",
                              ty(b), ") -> ", typeOf(a.dtype, shape)),
                 a.dtype, shape);
    if (op == "Gemm") {
      float alpha = attrFloat("alpha", 1), beta = attrFloat("beta", 1);
      if (alpha != 1) {
        TRY_ASSIGN(s, binary("mul", r, constant(r.dtype, alpha)));
        r = s;
      }
      if (hasInput(2) && beta != 0) {
        TRY_ASSIGN(c, input(2));
        if (beta != 1) {
          TRY_ASSIGN(s, binary("mul", c, constant(c.dtype, beta)));
          c = s;
        }
        TRY_ASSIGN(s, binary("add", r, c));
        r = s;
      }
    }
    return define(0, r);
  }
  if (op == "Trilu") {
    TRY_ASSIGN(x, input(0));
    int64_t k = 0;
    if (hasInput(1)) {
      TRY_ASSIGN(kv, knownInts(1));
      if (kv.size() != 1)
        return invalid("k must be a scalar");
      k = kv[0];
    }
    if (x.shape.size() < 2)
      return invalid("Trilu needs rank 2 or more");
    bool upper = attrInt("upper", 1);
    int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
    HostTensor mask(DType::I1, {rows, cols});
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        mask.data[i * cols + j] = upper ? (j - i >= k) : (j - i <= k);
    Val mv;
    mv.dtype = DType::I1, mv.shape = mask.shape, mv.known = mask;
    TRY_ASSIGN(r, select(mv, x, constant(x.dtype, 0)));
    return define(0, r);
  }
  if (op == "Split") {
    TRY_ASSIGN(x, input(0));
    TRY_ASSIGN(ax, axis(attrInt("axis", 0), x.shape.size()));
    std::vector<int64_t> sizes;
    if (opset >= 13 && hasInput(1)) {
      TRY_ASSIGN(s, knownInts(1));
      sizes = s;
    } else if (auto s = attrInts("split")) {
      sizes = *s;
    } else {
      int64_t parts = static_cast<int64_t>(node->outputs.size());
      int64_t each = (x.shape[ax] + parts - 1) / parts;
      for (int64_t i = 0, left = x.shape[ax]; i < parts; ++i, left -= each)
        sizes.push_back(std::min(each, left));
    }
    if (sizes.size() != node->outputs.size())
      return invalid("split sizes and outputs differ in number");
    int64_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<int64_t> shape = x.shape, offsets(x.shape.size(), 0),
                           strides(x.shape.size(), 1);
      shape[ax] = sizes[i];
      offsets[ax] = offset;
      offset += sizes[i];
      if (sizes[i] == 0)
        return unsupported("empty split outputs are not supported");
      if (auto st = define(i, emit(absl::StrCat("fusec.slice ", use(x), " offsets [",
                                                absl::StrJoin(offsets, ", "), "] strides [",
                                                absl::StrJoin(strides, ", "), "] : ", ty(x), " -> ",
                                                typeOf(x.dtype, shape)),
                                   x.dtype, shape));
          !st.ok())
        return st;
    }
    if (offset != x.shape[ax])
      return invalid("split sizes do not add up to the dim");
    return absl::OkStatus();
  }
  return unsupported("op type is not supported");
}

absl::StatusOr<OnnxImport> Importer::run() {
  const onnx::Graph &g = model.graph;
  if (g.hasSparseInitializers)
    return absl::UnimplementedError("sparse initializers are not supported");
  OnnxImport result;
  result.opset = opset;
  for (const onnx::Tensor &t : g.initializers) {
    auto h = decodeTensor(t, baseDir);
    if (!h.ok())
      return absl::Status(h.status().code(),
                          absl::StrCat("initializer '", t.name, "': ", h.status().message()));
    Val v;
    v.dtype = h->dtype, v.shape = h->shape, v.known = *h;
    values[t.name] = v;
  }
  std::vector<std::string> params;
  for (const onnx::ValueInfo &in : g.inputs) {
    if (values.count(in.name))
      continue; // an initializer listed as an input
    result.graphInputs.push_back(in.name);
    if (auto k = options.knownInputs.find(in.name); k != options.knownInputs.end()) {
      Val v;
      v.dtype = k->second.dtype, v.shape = k->second.shape, v.known = k->second;
      values[in.name] = v;
      result.boundInputs.push_back(in.name);
      continue;
    }
    if (!in.isTensor)
      return absl::UnimplementedError(absl::StrCat("input '", in.name, "' is not a tensor"));
    auto d = dtypeFor(in.elemType);
    if (!d.ok())
      return absl::UnimplementedError(absl::StrCat("input '", in.name, "': ", d.status().message()));
    if (!in.hasShape)
      return absl::UnimplementedError(absl::StrCat("input '", in.name, "' has no shape"));
    for (int64_t x : in.dims)
      if (x == 0)
        return absl::UnimplementedError(absl::StrCat(
            "input '", in.name, "' is empty (a 0 dim); empty tensors are not supported unless "
            "the input must be known at import (bound to a value)"));
    for (int64_t x : in.dims)
      if (x < 0)
        return absl::UnimplementedError(absl::StrCat(
            "input '", in.name, "' has a dynamic dim; fusec needs static shapes"));
    Val v;
    v.ssa = absl::StrCat("%arg", params.size());
    v.dtype = *d;
    v.shape = in.dims;
    params.push_back(absl::StrCat(v.ssa, ": ", ty(v)));
    values[in.name] = v;
    result.inputs.push_back(in.name);
  }
  for (const Node &n : g.nodes) {
    node = &n;
    nodeIndex = static_cast<size_t>(&n - g.nodes.data());
    if (auto st = importNode(); !st.ok())
      return st;
    for (const std::string &out : n.outputs)
      if (auto it = values.find(out);
          it != values.end() && it->second.elements() == 0 && !it->second.known)
        return unsupported(absl::StrCat("output '", out, "' is empty (a 0 dim); empty tensors are not supported"));
    if (emptyUse)
      return unsupported("an empty tensor (a 0 dim) would be computed on; empty tensors are not supported");
  }
  node = nullptr;
  std::vector<std::string> rets, retTypes;
  for (const onnx::ValueInfo &out : g.outputs) {
    auto it = values.find(out.name);
    if (it == values.end())
      return absl::InvalidArgumentError(absl::StrCat("output '", out.name, "' is never computed"));
    Val &v = it->second;
    if (out.isTensor) {
      auto d = dtypeFor(out.elemType);
      if (!d.ok())
        return absl::UnimplementedError(absl::StrCat("output '", out.name, "': ", d.status().message()));
      if (*d != v.dtype)
        return absl::InvalidArgumentError(absl::StrCat(
            "output '", out.name, "' is declared ", dtypeName(*d), " but computes ", dtypeName(v.dtype)));
    }
    rets.push_back(use(v));
    retTypes.push_back(ty(v));
    result.outputs.push_back(out.name);
  }
  if (rets.empty())
    return absl::InvalidArgumentError("the graph has no outputs");
  result.mlir = absl::StrCat("func.func @", options.functionName, "(", absl::StrJoin(params, ", "),
                             ") -> (", absl::StrJoin(retTypes, ", "), ") {\n", body,
                             "    return ", absl::StrJoin(rets, ", "), " : ",
                             absl::StrJoin(retTypes, ", "), "\n}\n");
  return result;
}

std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

} // namespace

absl::StatusOr<OnnxTensorData> readOnnxTensor(const std::string &bytes, const std::string &baseDir) {
  onnx::Tensor t;
  if (auto st = onnx::parseTensorProto(bytes, t); !st.ok())
    return st;
  auto h = decodeTensor(t, baseDir);
  if (!h.ok())
    return h.status();
  OnnxTensorData out;
  out.name = t.name;
  out.dataType = t.dataType;
  out.dims = t.dims;
  out.value = std::move(*h);
  return out;
}

absl::StatusOr<OnnxTensorData> readOnnxTensorFile(const std::string &path) {
  auto bytes = onnx::readFile(path);
  if (!bytes.ok())
    return bytes.status();
  auto t = readOnnxTensor(*bytes, dirOf(path));
  if (!t.ok())
    return absl::Status(t.status().code(), absl::StrCat(path, ": ", t.status().message()));
  return t;
}

absl::StatusOr<OnnxImport> importOnnxFile(const std::string &path, const OnnxImportOptions &options) {
  auto bytes = onnx::readFile(path);
  if (!bytes.ok())
    return bytes.status();
  onnx::Model model;
  if (auto st = onnx::parseModel(*bytes, model); !st.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", st.message()));
  Importer importer(model, dirOf(path), options);
  auto r = importer.run();
  if (!r.ok())
    return absl::Status(r.status().code(), absl::StrCat(path, ": ", r.status().message()));
  return r;
}

absl::StatusOr<std::vector<std::string>> onnxGraphInputNames(const std::string &path) {
  auto bytes = onnx::readFile(path);
  if (!bytes.ok())
    return bytes.status();
  onnx::Model model;
  if (auto st = onnx::parseModel(*bytes, model); !st.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", st.message()));
  std::vector<std::string> names;
  for (const onnx::ValueInfo &in : model.graph.inputs) {
    bool init = false;
    for (const onnx::Tensor &t : model.graph.initializers)
      init |= t.name == in.name;
    if (!init)
      names.push_back(in.name);
  }
  return names;
}

Tolerance onnxTolerance() { return {1e-3, 1e-7}; }

} // namespace fusec
