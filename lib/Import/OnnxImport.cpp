//===- OnnxImport.cpp - ONNX graphs to fusec MLIR text ----------*- C++ -*-===//
//
// The importer's core (OnnxImporter.h): reading tensors, the building
// blocks that write fusec ops as MLIR text, folding by the reference
// interpreter, and the graph walk. The op types are in OnnxOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "fusec/IR/Fusec.h"
#include "fusec/Interpreter/Interpreter.h"

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

namespace fusec {

namespace onnximport {

using onnx::Attribute;
using onnx::Node;

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
  case onnx::kInt8:
  case onnx::kUint8:
  case onnx::kInt16:
  case onnx::kUint16:
    // 8- and 16-bit integers are held in i32 and wrapped back into their
    // range where arithmetic could leave it (Importer::narrowOutputs).
    return DType::I32;
  case onnx::kUint32:
    // Held in i64 (every value fits) and wrapped back into [0, 2^32) as
    // the narrow types are.
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
  // The element count, checked before anything is allocated: a corrupt or
  // mistyped file (a SequenceProto read as a tensor) must not ask for
  // petabytes. Every element takes at least one byte of raw data or one
  // typed value (the count is checked exactly below).
  // The non-zero dims' product is bounded too: an empty tensor's other
  // dims ([0, 2^62, 2^62]) would overflow what importers compute from them.
  int64_t n = 1, nonZero = 1;
  for (int64_t d : t.dims) {
    if (d < 0)
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "' has a negative dim"));
    if (d != 0 && nonZero > (int64_t{1} << 40) / d)
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", t.name, "' has more than 2^40 elements (its non-zero dims' product)"));
    if (d != 0)
      nonZero *= d;
    n = d == 0 ? 0 : n * d;
  }
  if (!t.external) {
    size_t have = t.raw.size() + t.floatData.size() + t.int32Data.size() + t.int64Data.size() +
                  t.doubleData.size() + t.uint64Data.size();
    if (n > static_cast<int64_t>(have))
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor '%s' has %d values for %d elements", t.name, have, n));
  }
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
    if (length > static_cast<int64_t>(file->size()) - offset)
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "': external data truncated"));
    raw = file->substr(offset, length);
    hasRaw = true;
    // As for inline data: the file holds at least a byte an element before
    // anything is allocated (fuzz_tensors: 2^40 elements of external data
    // were allocated first, an out-of-memory).
    if (n > static_cast<int64_t>(raw.size()))
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s' has %d bytes of external data for %d elements", t.name, raw.size(), n));
  }
  HostTensor h(*dtype, t.dims);
  auto count = [&](size_t have) -> absl::Status {
    if (static_cast<int64_t>(have) != n)
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s' has %d values for %d elements", t.name, have, n));
    return absl::OkStatus();
  };
  int32_t ty = t.dataType;
  if (hasRaw) {
    int64_t width = ty == onnx::kDouble || ty == onnx::kInt64                       ? 8
                    : ty == onnx::kFloat || ty == onnx::kInt32 || ty == onnx::kUint32 ? 4
                    : ty == onnx::kBool || ty == onnx::kInt8 || ty == onnx::kUint8 ? 1
                                                                                      : 2;
    if (static_cast<int64_t>(raw.size()) != n * width)
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s' has %d bytes of data for %d elements of %s", t.name,
          raw.size(), n, onnxTypeName(ty)));
    for (int64_t i = 0; i < n; ++i) {
      const char *p = raw.data() + i * width;
      switch (ty) {
      case onnx::kFloat: h.data[i] = loadLE<float>(p); break;
      case onnx::kDouble: h.data[i] = static_cast<float>(loadLE<double>(p)); break;
      case onnx::kInt32: h.ints[i] = loadLE<int32_t>(p); break;
      case onnx::kInt64: h.ints[i] = loadLE<int64_t>(p); break;
      case onnx::kBool: h.data[i] = *p ? 1 : 0; break;
      case onnx::kInt8: h.ints[i] = loadLE<int8_t>(p); break;
      case onnx::kUint8: h.ints[i] = loadLE<uint8_t>(p); break;
      case onnx::kInt16: h.ints[i] = loadLE<int16_t>(p); break;
      case onnx::kUint16: h.ints[i] = loadLE<uint16_t>(p); break;
      case onnx::kUint32: h.ints[i] = loadLE<uint32_t>(p); break;
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
      h.ints[i] = t.int64Data[i];
    break;
  case onnx::kUint32: // uint64_data, each value's low 32 bits
    if (auto st = count(t.uint64Data.size()); !st.ok())
      return st;
    for (int64_t i = 0; i < n; ++i)
      h.ints[i] = static_cast<int64_t>(t.uint64Data[i] & 0xFFFFFFFFu);
    break;
  default: // int32, 8/16-bit integers, bool, float16, bfloat16: int32_data
    if (auto st = count(t.int32Data.size()); !st.ok())
      return st;
    for (int64_t i = 0; i < n; ++i) {
      if (*dtype == DType::I32)
        h.ints[i] = t.int32Data[i];
      else
        h.data[i] = ty == onnx::kFloat16 || ty == onnx::kBfloat16
                        ? decodeFloat(*dtype, static_cast<uint16_t>(t.int32Data[i]))
                        : (t.int32Data[i] != 0);
    }
  }
  return h;
}

std::string typeOf(DType d, const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t x : shape)
    absl::StrAppend(&s, x, "x");
  return absl::StrCat(s, dtypeName(d), ">");
}

std::string floatText(double v) {
  std::string f = absl::StrFormat("%.9g", v);
  if (f.find('.') == std::string::npos) {
    size_t e = f.find('e');
    f.insert(e == std::string::npos ? f.size() : e, ".0");
  }
  return f;
}

namespace {

std::string elementText(const HostTensor &h, int64_t i) {
  if (h.isInteger())
    return absl::StrCat(h.ints[i]);
  double v = h.data[i];
  if (h.dtype == DType::I1)
    return v != 0 ? "true" : "false";
  if (std::isfinite(v))
    return floatText(v);
  return absl::StrFormat("0x%X", encodeFloat(h.dtype, v));
}

/// A dense literal: a splat, hex bytes for large tensors, else nested.
std::string literal(const HostTensor &h) {
  int64_t n = h.numElements();
  bool splat = n > 0;
  for (int64_t i = 1; i < n && splat; ++i)
    splat = h.isInteger() ? h.ints[i] == h.ints[0]
                          : (h.data[i] == h.data[0] && std::signbit(h.data[i]) ==
                                                           std::signbit(h.data[0])) ||
                                (std::isnan(h.data[i]) && std::isnan(h.data[0]));
  if (splat)
    return elementText(h, 0);
  if (n == 0)
    return ""; // dense<> : an empty tensor
  if (n > 64 && h.dtype != DType::I1) {
    std::string bytes = toDeviceBytes(h), hex = "\"0x";
    static const char digits[] = "0123456789ABCDEF";
    hex.reserve(bytes.size() * 2 + 4);
    for (unsigned char c : bytes) {
      hex += digits[c >> 4];
      hex += digits[c & 15];
    }
    return hex + "\"";
  }
  std::string s;
  std::function<void(size_t, int64_t)> rec = [&](size_t dim, int64_t offset) {
    if (dim == h.shape.size()) {
      s += elementText(h, offset);
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

std::vector<int64_t> nonUnit(const std::vector<int64_t> &shape) {
  std::vector<int64_t> out;
  for (int64_t d : shape)
    if (d != 1)
      out.push_back(d);
  return out;
}

} // namespace

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

Val knownVal(HostTensor h) {
  // Not make_shared: the importer's weak pointers (splatLiterals) must not
  // keep a dead tensor's elements allocated.
  return knownVal(std::shared_ptr<const HostTensor>(new HostTensor(std::move(h))));
}

Val knownVal(std::shared_ptr<const HostTensor> h) {
  Val v;
  v.dtype = h->dtype;
  v.shape = h->shape;
  v.known = std::move(h);
  return v;
}

Val materialized(Val v) {
  if (!v.splatOf)
    return v;
  HostTensor h;
  h.dtype = v.dtype;
  h.shape = v.shape;
  size_t n = static_cast<size_t>(v.elements());
  if (v.splatOf->isInteger())
    h.ints.assign(n, v.splatOf->ints[0]);
  else
    h.data.assign(n, v.splatOf->data[0]);
  Val out = knownVal(std::move(h));
  out.ssa = v.ssa;
  out.splat = true;
  return out;
}

//===----------------------------------------------------------------------===//
// Importer: the node, its inputs and attributes
//===----------------------------------------------------------------------===//

Importer::Importer(const onnx::Model &model, std::string baseDir,
                   const OnnxImportOptions &options)
    : baseDir(std::move(baseDir)), model(model), options(options) {
  auto it = model.opsets.find("");
  opset = it == model.opsets.end() ? 1 : it->second;
}

Importer::~Importer() = default;

std::string Importer::nodeName() const {
  return node->name.empty() ? absl::StrCat("#", nodeIndex) : node->name;
}

absl::Status Importer::unsupported(const std::string &why) const {
  return absl::UnimplementedError(
      absl::StrFormat("node '%s' (%s, opset %d): %s", nodeName(), node->opType, opset, why));
}

absl::Status Importer::invalid(const std::string &why) const {
  return absl::InvalidArgumentError(
      absl::StrFormat("node '%s' (%s, opset %d): %s", nodeName(), node->opType, opset, why));
}

std::string Importer::loc() const {
  std::string n = node ? nodeName() + "(" + node->opType + ")" : "onnx";
  std::string e;
  for (char c : n)
    e += c == '"' || c == '\\' ? '_' : c;
  return absl::StrCat(" loc(\"", e, "\")");
}

absl::StatusOr<Val> Importer::input(size_t i) {
  if (i >= node->inputs.size() || node->inputs[i].empty())
    return invalid(absl::StrCat("input #", i, " is missing"));
  auto it = values.find(node->inputs[i]);
  if (it == values.end())
    return invalid(absl::StrCat("input '", node->inputs[i], "' is not defined before use"));
  return it->second;
}

bool Importer::hasInput(size_t i) const {
  return i < node->inputs.size() && !node->inputs[i].empty();
}

absl::StatusOr<std::vector<int64_t>> Importer::knownInts(size_t i) {
  auto v = input(i);
  if (!v.ok())
    return v.status();
  if (!v->isKnown())
    return unsupported(absl::StrCat("input #", i, " ('", node->inputs[i],
                                    "') must be known at import (a constant or a shape "
                                    "computation)"));
  *v = materialized(std::move(*v));
  std::vector<int64_t> out;
  for (int64_t k = 0; k < v->known->numElements(); ++k)
    out.push_back(v->known->getInt(k));
  return out;
}

int64_t Importer::attrInt(const char *name, int64_t dflt) const {
  const Attribute *a = node->attr(name);
  return a && (a->has & Attribute::kI) ? a->i : dflt;
}

float Importer::attrFloat(const char *name, float dflt) const {
  const Attribute *a = node->attr(name);
  return a && (a->has & Attribute::kF) ? a->f : dflt;
}

std::optional<std::vector<int64_t>> Importer::attrInts(const char *name) const {
  const Attribute *a = node->attr(name);
  if (!a || !(a->has & Attribute::kInts))
    return std::nullopt;
  return a->ints;
}

std::optional<std::string> Importer::attrString(const char *name) const {
  const Attribute *a = node->attr(name);
  if (!a || !(a->has & Attribute::kS))
    return std::nullopt;
  return a->s;
}

absl::StatusOr<int64_t> Importer::checkedElements(const std::vector<int64_t> &shape) const {
  if (shape.size() > kMaxRank)
    return invalid(absl::StrCat("a result of rank ", shape.size(), ": more than ", kMaxRank,
                                " dims"));
  // The non-zero dims' product is bounded too, so that no arithmetic on an
  // empty tensor's other dims ([0, 2^62, 2^62]) can overflow.
  int64_t n = 1, nonZero = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return invalid(absl::StrCat("a result of shape [", absl::StrJoin(shape, ", "),
                                  "] has a negative dim"));
    if (d != 0 && nonZero > kMaxElements / d)
      return invalid(absl::StrCat("a result of shape [", absl::StrJoin(shape, ", "),
                                  "] has more than 2^40 elements",
                                  n == 0 ? " in its non-zero dims" : ""));
    if (d != 0)
      nonZero *= d;
    n = d == 0 ? 0 : n * d;
  }
  return n;
}

absl::Status Importer::define(size_t out, Val v) {
  if (out >= node->outputs.size())
    return invalid("too few outputs");
  if (auto n = checkedElements(v.shape); !n.ok())
    return n.status();
  // An empty tensor has no data: it is always known.
  if (v.elements() == 0 && !v.known) {
    v = knownVal(HostTensor(v.dtype, v.shape));
  }
  if (!node->outputs[out].empty())
    values[node->outputs[out]] = std::move(v);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Importer::axis(int64_t a, size_t rank) const {
  // An axis names a dim: a rank-0 tensor has none (fuzz_onnx: ArgMax of a
  // scalar with axis 0 read past its empty shape).
  int64_t r = static_cast<int64_t>(rank);
  if (a < -r || a >= r)
    return invalid(absl::StrCat("axis ", a, " out of range for rank ", rank));
  return a < 0 ? a + r : a;
}

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

Val Importer::emit(const std::string &rhs, DType d, std::vector<int64_t> shape) {
  Val v;
  v.ssa = absl::StrCat("%v", counter++);
  v.dtype = d;
  v.shape = std::move(shape);
  absl::StrAppend(&body, "    ", v.ssa, " = ", rhs, loc(), "\n");
  return v;
}

std::string Importer::use(Val &v) {
  if (v.elements() == 0 && !folding())
    emptyUse = true;
  if (folding() && v.known && !absl::StartsWith(v.ssa, "%fk")) {
    // A known value is an argument of the scratch function.
    v.ssa = absl::StrCat("%fk", foldArgs.size());
    foldArgs.push_back({v.ssa, v.known});
    return v.ssa;
  }
  if (folding() && v.splatOf) {
    // A constant of the scratch function, named afresh for each use: the
    // Val (which may be a node's output) keeps only names of the graph.
    return emit(absl::StrCat("fusec.constant dense<", elementText(*v.splatOf, 0), "> : ", ty(v)),
                v.dtype, v.shape)
        .ssa;
  }
  if (v.ssa.empty() && v.squeezed && !v.known) {
    std::string src = use(*v.squeezed);
    Val r = emit(absl::StrCat("fusec.reshape ", src, " : ", ty(*v.squeezed), " -> ", ty(v)),
                 v.dtype, v.shape);
    v.ssa = r.ssa;
  }
  if (v.ssa.empty()) {
    std::string text;
    auto it = splatLiterals.find(v.known.get());
    if (v.splatOf) {
      text = elementText(*v.splatOf, 0);
    } else if (v.splat && v.known->numElements() > 0) {
      text = elementText(*v.known, 0);
    } else if (it != splatLiterals.end() && it->second.first.lock() == v.known) {
      text = it->second.second;
    } else {
      auto key = std::make_pair(v.known.get(), ty(v));
      if (auto e = emittedKnown.find(key);
          e != emittedKnown.end() && e->second.first.lock() == v.known) {
        v.ssa = e->second.second;
        return v.ssa;
      }
      text = literal(*v.known);
      if (text.size() < 64) { // a splat (or a tiny tensor)
        splatLiterals[v.known.get()] = {v.known, text};
      } else {
        Val c = emit(absl::StrCat("fusec.constant dense<", text, "> : ", ty(v)), v.dtype,
                     v.shape);
        emittedKnown[key] = {v.known, c.ssa};
        v.ssa = c.ssa;
        return v.ssa;
      }
    }
    Val c = emit(absl::StrCat("fusec.constant dense<", text, "> : ", ty(v)), v.dtype, v.shape);
    v.ssa = c.ssa;
  }
  return v.ssa;
}

Val Importer::constant(DType d, double value) {
  HostTensor h(d, {});
  h.set(0, value);
  h.roundInPlace();
  return knownVal(std::move(h));
}

Val Importer::intConstant(DType d, int64_t value) {
  HostTensor h(d, {});
  h.setInt(0, value);
  h.roundInPlace();
  return knownVal(std::move(h));
}

Val Importer::wrap(Val v, const std::vector<int64_t> &shape) {
  if (v.shape == shape)
    return v;
  Val w;
  w.dtype = v.dtype;
  w.shape = shape;
  w.squeezed = std::make_shared<Val>(std::move(v));
  return w;
}

Val Importer::broadcastTo(Val v, const std::vector<int64_t> &shape) {
  if (v.shape == shape)
    return v;
  size_t off = shape.size() - v.shape.size();
  std::vector<int64_t> dims;
  for (size_t j = 0; j < v.shape.size(); ++j)
    dims.push_back(static_cast<int64_t>(off + j));
  if ((v.splatOf || (v.known && v.elements() == 1)) && elementCount(shape) > kMaxFoldElements) {
    // Too large to hold on the host: a splat constant of the graph.
    return emit(absl::StrCat("fusec.constant dense<",
                             elementText(v.splatOf ? *v.splatOf : *v.known, 0), "> : ",
                             typeOf(v.dtype, shape)),
                v.dtype, shape);
  }
  if (v.splatOf) {
    // Still one value.
    v.ssa.clear();
    v.shape = shape;
    return v.elements() > kLazySplatElements ? v : materialized(std::move(v));
  }
  if (v.known && v.elements() == 1 && elementCount(shape) > kLazySplatElements) {
    Val out;
    out.dtype = v.dtype;
    out.shape = shape;
    out.splat = true;
    out.splatOf = v.known;
    return out;
  }
  if (v.known && v.elements() == 1) {
    // A small splat is materialized (its literal is still one value).
    Val lazy;
    lazy.dtype = v.dtype;
    lazy.shape = shape;
    lazy.splatOf = v.known;
    return materialized(std::move(lazy));
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
  if (v.splatOf) {
    Val one = cast(knownVal(v.splatOf), to);
    v.ssa.clear();
    v.dtype = to;
    v.splatOf = one.known;
    return v;
  }
  if (v.known && v.elements() == 1) {
    HostTensor h(to, v.shape);
    if (v.known->isInteger())
      h.setInt(0, v.known->ints[0]);
    else if (to == DType::I1)
      h.data[0] = v.known->data[0] != 0;
    else
      h.set(0, v.known->data[0]);
    h.roundInPlace();
    return knownVal(std::move(h));
  }
  return emit(absl::StrCat("fusec.cast ", use(v), " : ", ty(v), " to ", typeOf(to, v.shape)),
              to, v.shape);
}

Val Importer::reshape(Val v, std::vector<int64_t> shape) {
  if (v.shape == shape)
    return v;
  if (v.known)
    return knownVal(v.known->reshaped(shape));
  if (v.splatOf) {
    v.ssa.clear();
    v.shape = std::move(shape);
    return v.elements() > kLazySplatElements ? v : materialized(std::move(v));
  }
  Val base = v.squeezed ? *v.squeezed : v;
  bool allUnit = base.elements() == 1 && shape.size() >= base.shape.size();
  if (nonUnit(base.shape) == nonUnit(shape) && (nonUnit(base.shape) == base.shape || allUnit))
    return wrap(base, shape);
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

Val Importer::unary(const char *op, Val a) {
  if (a.squeezed && !a.known)
    return wrap(unary(op, *a.squeezed), a.shape);
  return emit(absl::StrCat("fusec.", op, " ", use(a), " : ", ty(a)), a.dtype, a.shape);
}

Val Importer::compare(const char *pred, Val a, Val b) {
  return emit(absl::StrCat("fusec.compare ", pred, ", ", use(a), ", ", use(b), " : ", ty(a)),
              DType::I1, a.shape);
}

absl::StatusOr<Val> Importer::compareBroadcast(const char *pred, Val a, Val b) {
  auto shape = broadcastShapes(a.shape, b.shape);
  if (!shape.ok())
    return invalid(std::string(shape.status().message()));
  if (a.dtype != b.dtype)
    return invalid(absl::StrCat("operands of ", dtypeName(a.dtype), " and ", dtypeName(b.dtype)));
  return compare(pred, broadcastTo(a, *shape), broadcastTo(b, *shape));
}

absl::StatusOr<Val> Importer::select(Val c, Val a, Val b) {
  auto s1 = broadcastShapes(c.shape, a.shape);
  if (!s1.ok())
    return invalid(std::string(s1.status().message()));
  auto shape = broadcastShapes(*s1, b.shape);
  if (!shape.ok())
    return invalid(std::string(shape.status().message()));
  if (a.dtype != b.dtype)
    return invalid(absl::StrCat("operands of ", dtypeName(a.dtype), " and ", dtypeName(b.dtype)));
  c = broadcastTo(c, *shape);
  a = broadcastTo(a, *shape);
  b = broadcastTo(b, *shape);
  return emit(absl::StrCat("fusec.select ", use(c), ", ", use(a), ", ", use(b), " : ", ty(a)),
              a.dtype, *shape);
}

absl::StatusOr<Val> Importer::reduce(const char *kind, Val x, std::vector<int64_t> axes,
                                     bool keep) {
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

Val Importer::transpose(Val x, const std::vector<int64_t> &perm) {
  bool identity = true;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < perm.size(); ++i) {
    identity &= perm[i] == static_cast<int64_t>(i);
    shape.push_back(x.shape[perm[i]]);
  }
  if (identity)
    return x;
  return emit(absl::StrCat("fusec.transpose ", use(x), " perm [", absl::StrJoin(perm, ", "),
                           "] : ", ty(x), " -> ", typeOf(x.dtype, shape)),
              x.dtype, shape);
}

Val Importer::slice(Val x, const std::vector<int64_t> &offsets,
                    const std::vector<int64_t> &strides, const std::vector<int64_t> &shape) {
  if (shape == x.shape)
    return x;
  return emit(absl::StrCat("fusec.slice ", use(x), " offsets [", absl::StrJoin(offsets, ", "),
                           "] strides [", absl::StrJoin(strides, ", "), "] : ", ty(x), " -> ",
                           typeOf(x.dtype, shape)),
              x.dtype, shape);
}

Val Importer::gatherFlat(Val x, Val index) {
  Val flat = reshape(x, {x.elements()});
  return emit(absl::StrCat("fusec.gather ", use(flat), "[", use(index), "] axis 0 : (", ty(flat),
                           ", ", ty(index), ") -> ", typeOf(x.dtype, index.shape)),
              x.dtype, index.shape);
}

namespace {
template <typename Fn> void forEachCoord(const std::vector<int64_t> &shape, Fn fn) {
  int64_t n = elementCount(shape);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(flat, c);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++c[d] < shape[d])
        break;
      c[d] = 0;
    }
  }
}
} // namespace

namespace {
/// Whether a map of `shape` may be built on the host.
absl::Status mapFits(const Importer &I, const std::vector<int64_t> &shape, const char *what) {
  auto n = I.checkedElements(shape);
  if (!n.ok())
    return n.status();
  if (*n > Importer::kMaxFoldElements)
    return I.unsupported(absl::StrCat("the ", what, " this import builds would have ", *n,
                                      " elements, more than the 2^26 built at import"));
  return absl::OkStatus();
}
} // namespace

absl::StatusOr<Val>
Importer::knownIndexMap(const std::vector<int64_t> &shape,
                        const std::function<int64_t(const std::vector<int64_t> &)> &fn) {
  if (auto fits = mapFits(*this, shape, "index map"); !fits.ok())
    return fits;
  HostTensor h(DType::I64, shape);
  forEachCoord(shape, [&](int64_t flat, const std::vector<int64_t> &c) { h.ints[flat] = fn(c); });
  return knownVal(std::move(h));
}

absl::StatusOr<Val> Importer::axisIota(const std::vector<int64_t> &shape, int64_t axis) {
  auto iota = knownIndexMap({shape[axis]}, [](const std::vector<int64_t> &c) { return c[0]; });
  if (!iota.ok())
    return iota;
  std::vector<int64_t> along(shape.size(), 1);
  along[axis] = shape[axis];
  return broadcastTo(wrap(*iota, along), shape);
}

int64_t Importer::smallMapElements(bool indexMap) {
  static const int64_t forced = [] {
    const char *env = std::getenv("FUSEC_IMPORT_SMALL_MAP");
    int64_t v = 0;
    if (env && absl::SimpleAtoi(env, &v) && v >= 0)
      return v;
    return int64_t(-1);
  }();
  if (forced >= 0)
    return forced;
  return indexMap ? int64_t(1) << 22 : int64_t(1) << 16;
}

absl::StatusOr<Val>
Importer::separableIndexMap(const std::vector<int64_t> &shape,
                            const std::function<int64_t(int64_t, int64_t)> &fn) {
  int64_t rank = static_cast<int64_t>(shape.size());
  auto total = checkedElements(shape);
  if (!total.ok())
    return total.status();
  if (*total <= smallMapElements(/*indexMap=*/true))
    return knownIndexMap(shape, [&](const std::vector<int64_t> &c) {
      int64_t f = 0;
      for (int64_t d = 0; d < rank; ++d)
        f += fn(d, c[d]);
      return f;
    });
  std::optional<Val> sum;
  for (int64_t d = 0; d < rank; ++d) {
    if (auto fits = mapFits(*this, {shape[d]}, "index map"); !fits.ok())
      return fits;
    HostTensor h(DType::I64, {shape[d]});
    bool zero = true;
    for (int64_t i = 0; i < shape[d]; ++i)
      zero &= (h.ints[i] = fn(d, i)) == 0;
    if (zero)
      continue;
    std::vector<int64_t> along(shape.size(), 1);
    along[d] = shape[d];
    Val part = reshape(knownVal(std::move(h)), along);
    if (!sum) {
      sum = part;
      continue;
    }
    auto added = binary("add", *sum, part);
    if (!added.ok())
      return added;
    sum = *added;
  }
  return broadcastTo(sum ? *sum : intConstant(DType::I64, 0), shape);
}

absl::StatusOr<Val> Importer::separableMask(const std::vector<int64_t> &shape,
                                            const std::function<bool(int64_t, int64_t)> &fn) {
  int64_t rank = static_cast<int64_t>(shape.size());
  auto total = checkedElements(shape);
  if (!total.ok())
    return total.status();
  if (*total <= smallMapElements(/*indexMap=*/false))
    return knownMask(shape, [&](const std::vector<int64_t> &c) {
      for (int64_t d = 0; d < rank; ++d)
        if (!fn(d, c[d]))
          return false;
      return true;
    });
  std::optional<Val> all;
  for (int64_t d = 0; d < rank; ++d) {
    if (auto fits = mapFits(*this, {shape[d]}, "mask"); !fits.ok())
      return fits;
    HostTensor h(DType::I1, {shape[d]});
    bool every = true;
    for (int64_t i = 0; i < shape[d]; ++i) {
      bool in = fn(d, i);
      h.data[i] = in ? 1.0 : 0.0;
      every &= in;
    }
    if (every)
      continue;
    std::vector<int64_t> along(shape.size(), 1);
    along[d] = shape[d];
    Val part = reshape(knownVal(std::move(h)), along);
    if (!all) {
      all = part;
      continue;
    }
    auto both = binary("and", *all, part);
    if (!both.ok())
      return both;
    all = *both;
  }
  if (!all) {
    HostTensor yes(DType::I1, {});
    yes.data[0] = 1.0;
    return broadcastTo(knownVal(std::move(yes)), shape);
  }
  return broadcastTo(*all, shape);
}

absl::StatusOr<Val>
Importer::knownMask(const std::vector<int64_t> &shape,
                    const std::function<bool(const std::vector<int64_t> &)> &fn) {
  if (auto fits = mapFits(*this, shape, "mask"); !fits.ok())
    return fits;
  HostTensor h(DType::I1, shape);
  forEachCoord(shape, [&](int64_t flat, const std::vector<int64_t> &c) {
    h.data[flat] = fn(c) ? 1.0 : 0.0;
  });
  return knownVal(std::move(h));
}

//===----------------------------------------------------------------------===//
// Folding by the interpreter
//===----------------------------------------------------------------------===//

absl::Status Importer::foldNode(const std::function<absl::Status()> &importer) {
  // An elementwise op whose every input is a known splat gives a splat:
  // evaluated once on the scalars and broadcast, not over every element
  // (fuzz_onnx: Erf and Cos of a 48M-element ConstantOfShape took 12 s
  // to fold, past 30 under ASan).
  if (!foldingScalars)
    if (auto st = foldSplats(importer); !st.ok() || *st)
      return st.ok() ? absl::OkStatus() : st.status();
  std::string saved = std::move(body);
  body.clear();
  foldArgs.clear();
  ++foldDepth;
  absl::Status st = importer();
  --foldDepth;
  auto restore = [&] { body = std::move(saved); };
  if (!st.ok()) {
    restore();
    return st;
  }
  // The outputs the importer did not already know.
  std::vector<std::pair<size_t, Val>> pending;
  int64_t total = 0;
  for (size_t i = 0; i < node->outputs.size(); ++i) {
    if (node->outputs[i].empty())
      continue;
    auto it = values.find(node->outputs[i]);
    if (it == values.end() || it->second.isKnown())
      continue;
    pending.push_back({i, it->second});
    total += it->second.elements();
  }
  if (pending.empty()) {
    restore();
    return absl::OkStatus();
  }
  // Ops whose outputs select elements of their first input (movement,
  // gathers, reversal) map a splat to the splat: no evaluation, which would
  // materialize it (fuzz_onnx: a ConstantOfShape of 30M elements reversed
  // by ReverseSequence took 4 s to fold, 33 s under ASan).
  static const std::set<std::string> kSelects = {
      "Identity", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Slice",
      "Gather", "GatherElements", "GatherND", "Tile", "Expand", "ReverseSequence",
      "DepthToSpace", "SpaceToDepth", "Split", "Compress"};
  if (kSelects.count(node->opType) && !node->inputs.empty() && !node->inputs[0].empty()) {
    auto in = values.find(node->inputs[0]);
    if (in != values.end() && (in->second.splatOf || (in->second.known && in->second.splat))) {
      const HostTensor &one = in->second.splatOf ? *in->second.splatOf : *in->second.known;
      restore();
      for (auto &[i, v] : pending) {
        HostTensor scalar(v.dtype, {});
        if (v.dtype != one.dtype)
          return absl::InternalError("a selection changed its input's element type");
        scalar.copyElement(0, one, 0);
        values[node->outputs[i]] = broadcastTo(knownVal(std::move(scalar)), v.shape);
      }
      return absl::OkStatus();
    }
  }
  if (total > (int64_t(1) << 26)) {
    // Too large to hold on the host: import it as usual.
    restore();
    return importer();
  }
  std::vector<std::string> rets, retTypes, params;
  ++foldDepth;
  for (auto &[i, v] : pending) {
    rets.push_back(use(v));
    retTypes.push_back(ty(v));
  }
  --foldDepth;
  std::vector<std::shared_ptr<const HostTensor>> args;
  for (auto &[name, t] : foldArgs) {
    params.push_back(absl::StrCat(name, ": ", t->typeString()));
    args.push_back(t);
  }
  std::string text = absl::StrCat("func.func @fold(", absl::StrJoin(params, ", "), ") -> (",
                                  absl::StrJoin(retTypes, ", "), ") {\n", body, "    return ",
                                  absl::StrJoin(rets, ", "), " : ",
                                  absl::StrJoin(retTypes, ", "), "\n}\n");
  restore();
  auto results = runScratch(text, args);
  if (!results.ok())
    return results.status();
  for (size_t r = 0; r < pending.size(); ++r)
    values[node->outputs[pending[r].first]] = knownVal((*results)[r]);
  return absl::OkStatus();
}

absl::StatusOr<bool> Importer::foldSplats(const std::function<absl::Status()> &importer) {
  // Unary ops: the result has input 0's shape (other inputs are scalars
  // of the op: Clip's bounds). N-ary ones broadcast all their inputs.
  static const std::set<std::string> kUnary = {
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil", "Celu",
      "Clip", "Cos", "Cosh", "Elu", "Erf", "Exp", "Floor", "HardSigmoid", "HardSwish",
      "IsInf", "IsNaN", "LeakyRelu", "Log", "Mish", "Neg", "Not", "Reciprocal", "Relu",
      "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign",
      "Sqrt", "Tan", "Tanh", "ThresholdedRelu"};
  static const std::set<std::string> kBroadcast = {
      "Add", "And", "BitShift", "Div", "Equal", "Greater", "GreaterOrEqual", "Less",
      "LessOrEqual", "Max", "Mean", "Min", "Mod", "Mul", "Or", "Pow", "Sub", "Sum",
      "Where", "Xor"};
  const std::string &op = node->opType;
  bool unary = kUnary.count(op) > 0;
  if ((!unary && !kBroadcast.count(op)) || node->inputs.empty() || node->inputs[0].empty())
    return false;
  std::vector<std::pair<std::string, Val>> inputs;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < node->inputs.size(); ++i) {
    const std::string &name = node->inputs[i];
    if (name.empty())
      continue;
    auto it = values.find(name);
    if (it == values.end() || !(it->second.splatOf || (it->second.known && it->second.splat)))
      return false;
    if (i == 0 || !unary) {
      auto both = broadcastShapes(i == 0 ? it->second.shape : shape, it->second.shape);
      if (!both.ok())
        return false; // the importer reports it
      shape = *both;
    }
    if (std::none_of(inputs.begin(), inputs.end(), [&](auto &p) { return p.first == name; }))
      inputs.push_back({name, it->second});
  }
  if (elementCount(shape) <= kLazySplatElements)
    return false; // small: folded as usual
  // The node on the scalars, then its results broadcast.
  for (auto &[name, v] : inputs) {
    const HostTensor &one = v.splatOf ? *v.splatOf : *v.known;
    HostTensor scalar(one.dtype, {});
    scalar.copyElement(0, one, 0);
    values[name] = knownVal(std::move(scalar));
  }
  foldingScalars = true;
  absl::Status st = foldNode(importer);
  foldingScalars = false;
  for (auto &[name, v] : inputs)
    values[name] = v;
  if (!st.ok())
    return st;
  for (const std::string &out : node->outputs) {
    auto it = values.find(out);
    if (out.empty() || it == values.end())
      continue;
    if (!it->second.isKnown() || !it->second.shape.empty())
      return absl::InternalError(absl::StrCat("node '", nodeName(), "' (", op,
                                              "): folding its splats gave no scalar"));
    it->second = broadcastTo(it->second, shape);
  }
  return true;
}

absl::StatusOr<std::vector<std::shared_ptr<const HostTensor>>>
Importer::runScratch(const std::string &text,
                     const std::vector<std::shared_ptr<const HostTensor>> &args) {
  if (!context) {
    context = std::make_unique<mlir::MLIRContext>();
    context->getOrLoadDialect<FusecDialect>();
    context->getOrLoadDialect<mlir::func::FuncDialect>();
  }
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "fold"), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, context.get(), os);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, context.get());
  if (!module || mlir::failed(mlir::verify(*module)))
    return absl::InternalError(absl::StrCat("node '", nodeName(), "' (", node->opType,
                                            "): folding it built an invalid graph: ", diagnostics));
  auto func = findFunction(*module, "fold");
  if (!func.ok())
    return func.status();
  auto results = interpretShared(*func, args);
  if (!results.ok())
    return invalid(absl::StrCat("evaluating it at import: ", results.status().message()));
  return std::move(*results);
}

absl::StatusOr<Val> Importer::foldExpr(
    std::vector<Val> inputs, const std::function<absl::StatusOr<Val>(std::vector<Val> &)> &fn) {
  for (Val &v : inputs) {
    if (!v.isKnown())
      return absl::InternalError("foldExpr on a value not known at import");
    v = materialized(std::move(v));
    v.ssa.clear(); // named afresh as arguments of this scratch function
  }
  std::string savedBody = std::move(body);
  auto savedArgs = std::move(foldArgs);
  body.clear();
  foldArgs.clear();
  ++foldDepth;
  absl::StatusOr<Val> r = fn(inputs);
  std::string ret;
  if (r.ok() && !r->isKnown())
    ret = use(*r);
  --foldDepth;
  std::string text = std::move(body);
  auto args = std::move(foldArgs);
  body = std::move(savedBody);
  foldArgs = std::move(savedArgs);
  if (!r.ok())
    return r.status();
  if (r->known)
    return knownVal(r->known);
  if (r->splatOf) {
    r->ssa.clear();
    return *r;
  }
  std::vector<std::string> params;
  std::vector<std::shared_ptr<const HostTensor>> values;
  for (auto &[name, t] : args) {
    params.push_back(absl::StrCat(name, ": ", t->typeString()));
    values.push_back(t);
  }
  std::string t = ty(*r);
  std::string fnText = absl::StrCat("func.func @fold(", absl::StrJoin(params, ", "), ") -> (", t,
                                    ") {\n", text, "    return ", ret, " : ", t, "\n}\n");
  auto results = runScratch(fnText, values);
  if (!results.ok())
    return results.status();
  return knownVal((*results)[0]);
}

std::vector<size_t> Importer::consumersOf(const std::string &name) const {
  std::vector<size_t> out;
  const auto &nodes = model.graph.nodes;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string &in : nodes[i].inputs)
      if (in == name) {
        out.push_back(i);
        break;
      }
  return out;
}

bool Importer::isGraphOutput(const std::string &name) const {
  for (const onnx::ValueInfo &o : model.graph.outputs)
    if (o.name == name)
      return true;
  return false;
}

const onnx::Node &Importer::nodeAt(size_t i) const { return model.graph.nodes[i]; }

std::optional<Val> Importer::lookup(const std::string &name) const {
  auto it = values.find(name);
  if (it == values.end())
    return std::nullopt;
  return it->second;
}

absl::Status Importer::importNode() {
  if (absorbed.count(nodeIndex)) {
    // Folded into the node that produces its input, whose output is this
    // node's: an alias.
    auto x = input(0);
    if (!x.ok())
      return x.status();
    return define(0, *x);
  }
  if (!node->domain.empty() && node->domain != "ai.onnx")
    return unsupported(absl::StrCat("domain '", node->domain, "' is not supported"));
  const auto &table = opImporters();
  auto it = table.find(node->opType);
  if (it == table.end())
    return unsupported("op type is not supported");
  OpImporter importer = it->second;
  bool allKnown = true;
  for (const std::string &in : node->inputs) {
    if (in.empty())
      continue;
    auto v = values.find(in);
    allKnown &= v != values.end() && v->second.isKnown();
  }
  auto run = [&]() -> absl::Status {
    if (auto st = importer(*this); !st.ok())
      return st;
    return narrowOutputs();
  };
  if (allKnown)
    return foldNode(run);
  return run();
}

namespace {

bool isNarrowInt(int32_t t) {
  return t == onnx::kInt8 || t == onnx::kUint8 || t == onnx::kInt16 || t == onnx::kUint16 ||
         t == onnx::kUint32;
}

/// The modulus of narrow type `t`: 2^8, 2^16 or 2^32.
int64_t narrowModulus(int32_t t) {
  return t == onnx::kInt8 || t == onnx::kUint8     ? 256
         : t == onnx::kInt16 || t == onnx::kUint16 ? 65536
                                                   : int64_t(1) << 32;
}

/// v wrapped into the range of the 8/16-bit ONNX type `t` (two's
/// complement) or of uint32, exactly.
int64_t wrapNarrow(int32_t t, int64_t v) {
  int64_t m = narrowModulus(t);
  bool isSigned = t == onnx::kInt8 || t == onnx::kInt16;
  int64_t x = isSigned ? v + m / 2 : v;
  int64_t r = ((x % m) + m) % m;
  return isSigned ? r - m / 2 : r;
}

} // namespace

absl::Status Importer::narrowOutputs() {
  // Ops whose integer result can leave the range of their 8/16-bit inputs'
  // type (wrapped back), and ops whose result stays in it (tagged only).
  static const std::set<std::string> wrapping = {
      "Add", "Sub", "Mul", "Neg", "Abs", "Pow", "Sum", "CumSum", "ReduceSum",
      "ReduceSumSquare", "MatMul", "Gemm", "Einsum", "Cast", "CastLike"};
  static const std::set<std::string> keeping = {
      "Max", "Min", "Mean", "Where", "Reshape", "Transpose", "Gather", "GatherElements",
      "GatherND", "Concat", "Slice", "Identity", "Expand", "Squeeze", "Unsqueeze",
      "Flatten", "Tile", "Pad", "Div", "Mod", "ReduceMax", "ReduceMin", "Clip", "Split",
      "ScatterND", "ScatterElements", "Scatter", "Dropout", "TopK", "Trilu", "Constant",
      "ConstantOfShape", "MaxPool", "BitShift", "Compress"};
  const std::string &op = node->opType;
  int32_t type = 0;
  if (op == "Cast") {
    type = static_cast<int32_t>(attrInt("to", 0));
  } else if (op == "CastLike") {
    if (node->inputs.size() > 1)
      if (auto it = narrow.find(node->inputs[1]); it != narrow.end())
        type = it->second;
  } else if (op == "QuantizeLinear") {
    // Its zero point's type, else output_dtype, else uint8 (in range: not
    // wrapped).
    type = node->inputs.size() > 2 && narrow.count(node->inputs[2])
               ? narrow.at(node->inputs[2])
               : static_cast<int32_t>(attrInt("output_dtype", 0)
                                          ? attrInt("output_dtype", 0)
                                          : static_cast<int64_t>(onnx::kUint8));
  } else if (op == "QLinearMatMul" || op == "QLinearConv") {
    // y_zero_point's type, else uint8.
    type = node->inputs.size() > 7 && narrow.count(node->inputs[7]) ? narrow.at(node->inputs[7])
                                                                     : onnx::kUint8;
  } else if (op == "DynamicQuantizeLinear") {
    type = onnx::kUint8; // y and y_zero_point (y_scale is f32)
  } else if (op == "Constant" || op == "ConstantOfShape") {
    if (const onnx::Attribute *a = node->attr("value"); a && (a->has & onnx::Attribute::kT))
      type = a->t.dataType;
  } else if (wrapping.count(op) || keeping.count(op)) {
    for (size_t i = op == "Where" ? 1 : 0; i < node->inputs.size() && !type; ++i)
      if (auto it = narrow.find(node->inputs[i]); it != narrow.end())
        type = it->second;
  }
  if (!isNarrowInt(type))
    return absl::OkStatus();
  // A scatter that adds or multiplies its updates into the data can leave
  // the range.
  std::string reduction = attrString("reduction").value_or("none");
  bool wrap = wrapping.count(op) > 0 ||
              (op.rfind("Scatter", 0) == 0 && (reduction == "add" || reduction == "mul"));
  // The holder: i32 for the 8/16-bit types, i64 for uint32.
  DType holder = type == onnx::kUint32 ? DType::I64 : DType::I32;
  for (const std::string &out : node->outputs) {
    auto it = values.find(out);
    if (out.empty() || it == values.end() || it->second.dtype != holder)
      continue;
    narrow[out] = type;
    if (!wrap)
      continue;
    Val &v = it->second;
    if (v.splatOf) {
      HostTensor one(holder, {});
      one.setInt(0, wrapNarrow(type, v.splatOf->getInt(0)));
      v.splatOf = std::make_shared<const HostTensor>(std::move(one));
      v.ssa.clear();
      continue;
    }
    if (v.known) {
      HostTensor wrapped = *v.known; // shared: wrap a copy
      for (int64_t &x : wrapped.ints)
        x = wrapNarrow(type, x);
      v.known = std::make_shared<const HostTensor>(std::move(wrapped));
      continue;
    }
    int64_t m = narrowModulus(type);
    bool isSigned = type == onnx::kInt8 || type == onnx::kInt16;
    Val x = v;
    auto c = [&](int64_t k) { return broadcastTo(intConstant(holder, k), v.shape); };
    if (isSigned) {
      FUSEC_TRY_ASSIGN(s, binary("add", x, c(m / 2)));
      x = s;
    }
    FUSEC_TRY_ASSIGN(q, binary("div", x, c(m)));
    FUSEC_TRY_ASSIGN(p, binary("mul", q, c(m)));
    FUSEC_TRY_ASSIGN(r, binary("sub", x, p));
    FUSEC_TRY_ASSIGN(rm, binary("add", r, c(m)));
    FUSEC_TRY_ASSIGN(pos, select(compare("lt", r, c(0)), rm, r));
    Val result = pos;
    if (isSigned) {
      FUSEC_TRY_ASSIGN(back, binary("sub", pos, c(m / 2)));
      result = back;
    }
    values[out] = result;
  }
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

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
    values[t.name] = knownVal(std::move(*h));
    if (isNarrowInt(t.dataType))
      narrow[t.name] = t.dataType;
  }
  std::vector<std::string> params;
  for (const onnx::ValueInfo &in : g.inputs) {
    if (values.count(in.name))
      continue; // an initializer listed as an input
    result.graphInputs.push_back(in.name);
    if (auto k = options.knownInputs.find(in.name); k != options.knownInputs.end()) {
      values[in.name] = knownVal(k->second);
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
    std::vector<int64_t> dims = in.dims;
    bool dynamic = std::count(dims.begin(), dims.end(), -1) > 0;
    if (dynamic)
      result.dynamicInputs.push_back(in.name);
    if (auto s = options.inputShapes.find(in.name); s != options.inputShapes.end()) {
      // Bound to a concrete shape: it must agree with every static dim.
      bool agrees = s->second.size() == dims.size();
      for (size_t i = 0; agrees && i < dims.size(); ++i)
        agrees = dims[i] < 0 || dims[i] == s->second[i];
      if (!agrees)
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", in.name, "' is declared [", absl::StrJoin(dims, ", "),
            "] (-1: dynamic) but bound to [", absl::StrJoin(s->second, ", "), "]"));
      dims = s->second;
    } else if (dynamic) {
      return absl::UnimplementedError(absl::StrCat(
          "input '", in.name, "' has a dynamic dim ([", absl::StrJoin(in.dims, ", "),
          "], -1: dynamic): bind its shape (fusec-run binds it from the inputs it runs with; "
          "OnnxImportOptions::inputShapes)"));
    }
    for (int64_t x : dims)
      if (x == 0)
        return absl::UnimplementedError(absl::StrCat(
            "input '", in.name, "' is empty (a 0 dim); empty tensors are not supported unless "
            "the input must be known at import (bound to a value)"));
    if (dims.size() > Importer::kMaxRank)
      return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' has rank ",
                                                     dims.size(), ": more than ",
                                                     Importer::kMaxRank, " dims"));
    {
      int64_t n = 1;
      for (int64_t x : dims) {
        if (x < 0 || n > Importer::kMaxElements / x)
          return absl::InvalidArgumentError(absl::StrCat(
              "input '", in.name, "' of shape [", absl::StrJoin(dims, ", "),
              "] has a negative dim or more than 2^40 elements"));
        n *= x;
      }
    }
    if (isNarrowInt(in.elemType))
      narrow[in.name] = in.elemType;
    Val v;
    v.ssa = absl::StrCat("%arg", params.size());
    v.dtype = *d;
    v.shape = dims;
    params.push_back(absl::StrCat(v.ssa, ": ", ty(v)));
    values[in.name] = v;
    result.inputs.push_back(in.name);
  }
  for (const Node &n : g.nodes) {
    node = &n;
    nodeIndex = static_cast<size_t>(&n - g.nodes.data());
    emptyUse = false;
    if (auto st = importNode(); !st.ok())
      return st;
    if (emptyUse)
      return unsupported("an empty tensor (a 0 dim) would be computed on; empty tensors are not "
                         "supported");
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
    if (v.elements() == 0 && !v.known)
      return absl::UnimplementedError(absl::StrCat("output '", out.name,
                                                   "' is empty (a 0 dim); empty tensors are "
                                                   "not supported"));
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
  if (auto st = verifyImported(result.mlir); !st.ok())
    return st;
  return result;
}

absl::Status Importer::verifyImported(const std::string &text) {
  if (!context) {
    context = std::make_unique<mlir::MLIRContext>();
    context->getOrLoadDialect<FusecDialect>();
    context->getOrLoadDialect<mlir::func::FuncDialect>();
  }
  // The first error, and the node its location names ("name(OpType)").
  std::string first, where;
  mlir::ScopedDiagnosticHandler handler(context.get(), [&](mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error || !first.empty())
      return mlir::success();
    first = d.str();
    if (auto name = mlir::dyn_cast<mlir::NameLoc>(d.getLocation()))
      where = name.getName().str();
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(
      text, mlir::ParserConfig(context.get(), /*verifyAfterParse=*/false));
  if (!module)
    return absl::InternalError("the importer wrote text that does not parse: " + first);
  if (mlir::failed(mlir::verify(*module)))
    return absl::InvalidArgumentError(
        where.empty() ? first : absl::StrCat("node ", where, ", opset ", opset, ": ", first));
  return absl::OkStatus();
}

namespace {
std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}
} // namespace

} // namespace onnximport

using onnximport::decodeTensor;
using onnximport::dirOf;
using onnximport::Importer;

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

absl::StatusOr<OnnxImport> importOnnx(absl::string_view bytes, const std::string &baseDir,
                                      const OnnxImportOptions &options,
                                      const std::string &sourceName) {
  onnx::Model model;
  if (auto st = onnx::parseModel(std::string(bytes), model); !st.ok())
    return absl::InvalidArgumentError(absl::StrCat(sourceName, ": ", st.message()));
  Importer importer(model, baseDir, options);
  auto r = importer.run();
  if (!r.ok())
    return absl::Status(r.status().code(), absl::StrCat(sourceName, ": ", r.status().message()));
  return r;
}

absl::StatusOr<OnnxImport> importOnnxFile(const std::string &path, const OnnxImportOptions &options) {
  auto bytes = onnx::readFile(path);
  if (!bytes.ok())
    return bytes.status();
  return importOnnx(*bytes, dirOf(path), options, path);
}

bool OnnxValueInfo::dynamic() const {
  return !hasShape || std::count(dims.begin(), dims.end(), -1) > 0;
}

absl::StatusOr<OnnxSignature> onnxSignature(const std::string &path) {
  auto bytes = onnx::readFile(path);
  if (!bytes.ok())
    return bytes.status();
  onnx::Model model;
  if (auto st = onnx::parseModel(*bytes, model); !st.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", st.message()));
  auto info = [](const onnx::ValueInfo &v) {
    OnnxValueInfo i;
    i.name = v.name;
    i.elemType = v.isTensor ? v.elemType : 0;
    i.dims = v.dims;
    i.hasShape = v.hasShape;
    return i;
  };
  OnnxSignature sig;
  for (const onnx::ValueInfo &in : model.graph.inputs) {
    bool init = false;
    for (const onnx::Tensor &t : model.graph.initializers)
      init |= t.name == in.name;
    if (!init)
      sig.inputs.push_back(info(in));
  }
  for (const onnx::ValueInfo &out : model.graph.outputs)
    sig.outputs.push_back(info(out));
  return sig;
}

absl::StatusOr<std::vector<std::string>> onnxGraphInputNames(const std::string &path) {
  auto sig = onnxSignature(path);
  if (!sig.ok())
    return sig.status();
  std::vector<std::string> names;
  for (const OnnxValueInfo &in : sig->inputs)
    names.push_back(in.name);
  return names;
}

HostTensor onnxTensorAs(const OnnxTensorData &t, int32_t declared) {
  if (t.dataType != onnx::kUint16 || (declared != onnx::kBfloat16 && declared != onnx::kFloat16))
    return t.value;
  DType d = declared == onnx::kBfloat16 ? DType::BF16 : DType::F16;
  HostTensor h(d, t.value.shape);
  for (int64_t i = 0; i < h.numElements(); ++i)
    h.data[i] = decodeFloat(d, static_cast<uint32_t>(t.value.ints[i]));
  return h;
}

absl::StatusOr<std::map<std::string, std::vector<int64_t>>>
parseOnnxInputShapes(const std::vector<std::string> &specs) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string &spec : specs) {
    size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0)
      return absl::InvalidArgumentError(
          absl::StrCat("input shape '", spec, "': expected NAME=D0xD1x..."));
    std::vector<int64_t> dims;
    for (absl::string_view d : absl::StrSplit(spec.substr(eq + 1), 'x')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(d, &v) || v < 1)
        return absl::InvalidArgumentError(
            absl::StrCat("input shape '", spec, "': '", d, "' is not a positive dim"));
      dims.push_back(v);
    }
    shapes[spec.substr(0, eq)] = std::move(dims);
  }
  return shapes;
}

Tolerance onnxTolerance() { return {1e-3, 1e-7}; }

} // namespace fusec
