//===- OnnxProto.cpp - ONNX protobuf wire format ----------------*- C++ -*-===//
//
// A reader for the protobuf wire format and the ONNX messages fusec needs
// (field numbers from onnx.proto). Every read is bounds-checked.
//
//===----------------------------------------------------------------------===//

#include "OnnxProto.h"

#include "absl/strings/str_cat.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace fusec::onnx {

namespace {

class Reader {
public:
  Reader(const char *p, size_t n, std::string what)
      : p(reinterpret_cast<const uint8_t *>(p)),
        end(reinterpret_cast<const uint8_t *>(p) + n), what(std::move(what)) {}
  bool done() const { return p >= end; }

  absl::Status varint(uint64_t &v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end)
        return error("truncated varint");
      uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80))
        return absl::OkStatus();
    }
    return error("varint longer than 10 bytes");
  }
  absl::Status tag(uint32_t &field, uint32_t &wire) {
    uint64_t t;
    if (auto st = varint(t); !st.ok())
      return st;
    field = static_cast<uint32_t>(t >> 3);
    wire = static_cast<uint32_t>(t & 7);
    if (field == 0)
      return error("field number 0");
    return absl::OkStatus();
  }
  absl::Status bytes(std::string_view &out) {
    uint64_t n;
    if (auto st = varint(n); !st.ok())
      return st;
    if (n > static_cast<uint64_t>(end - p))
      return error(absl::StrCat("a field of ", n, " bytes runs past the end (",
                                end - p, " left)"));
    out = std::string_view(reinterpret_cast<const char *>(p), n);
    p += n;
    return absl::OkStatus();
  }
  absl::Status fixed(void *out, size_t n) {
    if (static_cast<size_t>(end - p) < n)
      return error("truncated fixed-width field");
    std::memcpy(out, p, n);
    p += n;
    return absl::OkStatus();
  }
  absl::Status skip(uint32_t wire) {
    uint64_t v;
    std::string_view s;
    switch (wire) {
    case 0:
      return varint(v);
    case 1:
      return fixed(&v, 8);
    case 2:
      return bytes(s);
    case 5: {
      uint32_t x;
      return fixed(&x, 4);
    }
    default:
      return error(absl::StrCat("unsupported wire type ", wire));
    }
  }
  absl::Status error(const std::string &why) const {
    return absl::InvalidArgumentError(absl::StrCat("malformed ONNX ", what, ": ", why));
  }
  absl::Status expect(uint32_t wire, uint32_t want, uint32_t field) const {
    if (wire == want)
      return absl::OkStatus();
    return error(absl::StrCat("field ", field, " has wire type ", wire, ", expected ", want));
  }

  /// A repeated scalar field, packed (wire 2) or one element (wire 0/1/5).
  template <typename T, int Wire>
  absl::Status repeated(uint32_t wire, std::vector<T> &out) {
    if (wire == 2) {
      std::string_view s;
      if (auto st = bytes(s); !st.ok())
        return st;
      Reader inner(s.data(), s.size(), what);
      while (!inner.done()) {
        T v;
        if (auto st = inner.scalar<T, Wire>(v); !st.ok())
          return st;
        out.push_back(v);
      }
      return absl::OkStatus();
    }
    if (wire != Wire)
      return error(absl::StrCat("repeated field has wire type ", wire));
    T v;
    if (auto st = scalar<T, Wire>(v); !st.ok())
      return st;
    out.push_back(v);
    return absl::OkStatus();
  }
  template <typename T, int Wire>
  absl::Status scalar(T &v) {
    if constexpr (Wire == 0) {
      uint64_t u;
      if (auto st = varint(u); !st.ok())
        return st;
      v = static_cast<T>(u);
      return absl::OkStatus();
    } else if constexpr (Wire == 5) {
      static_assert(sizeof(T) == 4);
      return fixed(&v, 4);
    } else {
      static_assert(sizeof(T) == 8);
      return fixed(&v, 8);
    }
  }

private:
  const uint8_t *p, *end;
  std::string what;
};

#define TRY(x)                                                                 \
  do {                                                                         \
    if (absl::Status _st = (x); !_st.ok())                                     \
      return _st;                                                              \
  } while (0)

absl::Status parseTensor(std::string_view data, Tensor &t);
absl::Status parseGraph(std::string_view data, Graph &g, int depth);

absl::Status parseStringEntry(std::string_view data, std::string &key, std::string &value) {
  Reader r(data.data(), data.size(), "StringStringEntryProto");
  while (!r.done()) {
    uint32_t f, w;
    TRY(r.tag(f, w));
    std::string_view s;
    if ((f == 1 || f == 2) && w == 2) {
      TRY(r.bytes(s));
      (f == 1 ? key : value) = std::string(s);
    } else {
      TRY(r.skip(w));
    }
  }
  return absl::OkStatus();
}

absl::Status parseTensor(std::string_view data, Tensor &t) {
  Reader r(data.data(), data.size(), "TensorProto");
  while (!r.done()) {
    uint32_t f, w;
    TRY(r.tag(f, w));
    std::string_view s;
    switch (f) {
    case 1:
      TRY((r.repeated<int64_t, 0>(w, t.dims)));
      break;
    case 2: {
      TRY(r.expect(w, 0, f));
      uint64_t v;
      TRY(r.varint(v));
      t.dataType = static_cast<int32_t>(v);
      break;
    }
    case 4:
      TRY((r.repeated<float, 5>(w, t.floatData)));
      break;
    case 5: {
      std::vector<uint64_t> v;
      TRY((r.repeated<uint64_t, 0>(w, v)));
      for (uint64_t x : v)
        t.int32Data.push_back(static_cast<int32_t>(x));
      break;
    }
    case 6:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      t.hasStrings = true;
      break;
    case 7:
      TRY((r.repeated<int64_t, 0>(w, t.int64Data)));
      break;
    case 8:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      t.name = std::string(s);
      break;
    case 9:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      t.raw = std::string(s);
      t.hasRaw = true;
      break;
    case 10:
      TRY((r.repeated<double, 1>(w, t.doubleData)));
      break;
    case 11:
      TRY((r.repeated<uint64_t, 0>(w, t.uint64Data)));
      break;
    case 13: {
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      std::string k, v;
      TRY(parseStringEntry(s, k, v));
      t.externalData.emplace_back(k, v);
      break;
    }
    case 14: {
      TRY(r.expect(w, 0, f));
      uint64_t v;
      TRY(r.varint(v));
      t.external = v == 1;
      break;
    }
    default:
      TRY(r.skip(w));
    }
  }
  return absl::OkStatus();
}

absl::Status parseAttribute(std::string_view data, Attribute &a, int depth) {
  Reader r(data.data(), data.size(), "AttributeProto");
  while (!r.done()) {
    uint32_t f, w;
    TRY(r.tag(f, w));
    std::string_view s;
    switch (f) {
    case 1:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      a.name = std::string(s);
      break;
    case 2:
      TRY(r.expect(w, 5, f));
      TRY(r.fixed(&a.f, 4));
      a.has |= Attribute::kF;
      break;
    case 3: {
      TRY(r.expect(w, 0, f));
      uint64_t v;
      TRY(r.varint(v));
      a.i = static_cast<int64_t>(v);
      a.has |= Attribute::kI;
      break;
    }
    case 4:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      a.s = std::string(s);
      a.has |= Attribute::kS;
      break;
    case 5:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      TRY(parseTensor(s, a.t));
      a.has |= Attribute::kT;
      break;
    case 6:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      a.has |= Attribute::kG;
      break;
    case 7:
      TRY((r.repeated<float, 5>(w, a.floats)));
      a.has |= Attribute::kFloats;
      break;
    case 8:
      TRY((r.repeated<int64_t, 0>(w, a.ints)));
      a.has |= Attribute::kInts;
      break;
    case 9:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      a.strings.emplace_back(s);
      a.has |= Attribute::kStrings;
      break;
    case 20: {
      TRY(r.expect(w, 0, f));
      uint64_t v;
      TRY(r.varint(v));
      a.type = static_cast<int>(v);
      break;
    }
    default:
      TRY(r.skip(w));
    }
  }
  (void)depth;
  return absl::OkStatus();
}

absl::Status parseNode(std::string_view data, Node &n, int depth) {
  Reader r(data.data(), data.size(), "NodeProto");
  while (!r.done()) {
    uint32_t f, w;
    TRY(r.tag(f, w));
    std::string_view s;
    switch (f) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 7:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      if (f == 1)
        n.inputs.emplace_back(s);
      else if (f == 2)
        n.outputs.emplace_back(s);
      else if (f == 3)
        n.name = std::string(s);
      else if (f == 4)
        n.opType = std::string(s);
      else
        n.domain = std::string(s);
      break;
    case 5: {
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      Attribute a;
      TRY(parseAttribute(s, a, depth));
      n.attributes.push_back(std::move(a));
      break;
    }
    default:
      TRY(r.skip(w));
    }
  }
  return absl::OkStatus();
}

absl::Status parseShape(std::string_view data, ValueInfo &v) {
  Reader r(data.data(), data.size(), "TensorShapeProto");
  v.hasShape = true;
  while (!r.done()) {
    uint32_t f, w;
    TRY(r.tag(f, w));
    std::string_view s;
    if (f == 1 && w == 2) {
      TRY(r.bytes(s));
      Reader d(s.data(), s.size(), "TensorShapeProto.Dimension");
      int64_t dim = -1;
      while (!d.done()) {
        uint32_t df, dw;
        TRY(d.tag(df, dw));
        if (df == 1 && dw == 0) {
          uint64_t x;
          TRY(d.varint(x));
          dim = static_cast<int64_t>(x);
        } else {
          TRY(d.skip(dw));
        }
      }
      v.dims.push_back(dim);
    } else {
      TRY(r.skip(w));
    }
  }
  return absl::OkStatus();
}

absl::Status parseValueInfo(std::string_view data, ValueInfo &v) {
  Reader r(data.data(), data.size(), "ValueInfoProto");
  while (!r.done()) {
    uint32_t f, w;
    TRY(r.tag(f, w));
    std::string_view s;
    if (f == 1 && w == 2) {
      TRY(r.bytes(s));
      v.name = std::string(s);
    } else if (f == 2 && w == 2) {
      TRY(r.bytes(s));
      Reader t(s.data(), s.size(), "TypeProto");
      while (!t.done()) {
        uint32_t tf, tw;
        TRY(t.tag(tf, tw));
        std::string_view ts;
        if (tf == 1 && tw == 2) { // tensor_type
          TRY(t.bytes(ts));
          Reader tt(ts.data(), ts.size(), "TypeProto.Tensor");
          while (!tt.done()) {
            uint32_t ef, ew;
            TRY(tt.tag(ef, ew));
            std::string_view es;
            if (ef == 1 && ew == 0) {
              uint64_t x;
              TRY(tt.varint(x));
              v.elemType = static_cast<int32_t>(x);
            } else if (ef == 2 && ew == 2) {
              TRY(tt.bytes(es));
              TRY(parseShape(es, v));
            } else {
              TRY(tt.skip(ew));
            }
          }
          v.isTensor = true;
        } else {
          TRY(t.skip(tw));
        }
      }
    } else {
      TRY(r.skip(w));
    }
  }
  return absl::OkStatus();
}

absl::Status parseGraph(std::string_view data, Graph &g, int depth) {
  Reader r(data.data(), data.size(), "GraphProto");
  while (!r.done()) {
    uint32_t f, w;
    TRY(r.tag(f, w));
    std::string_view s;
    switch (f) {
    case 1: {
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      Node n;
      TRY(parseNode(s, n, depth));
      g.nodes.push_back(std::move(n));
      break;
    }
    case 2:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      g.name = std::string(s);
      break;
    case 5: {
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      Tensor t;
      TRY(parseTensor(s, t));
      g.initializers.push_back(std::move(t));
      break;
    }
    case 11:
    case 12:
    case 13: {
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      ValueInfo v;
      TRY(parseValueInfo(s, v));
      (f == 11 ? g.inputs : f == 12 ? g.outputs : g.valueInfo).push_back(std::move(v));
      break;
    }
    case 15:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      g.hasSparseInitializers = true;
      break;
    default:
      TRY(r.skip(w));
    }
  }
  return absl::OkStatus();
}

} // namespace

absl::Status parseModel(const std::string &bytes, Model &m) {
  Reader r(bytes.data(), bytes.size(), "ModelProto");
  bool sawGraph = false;
  while (!r.done()) {
    uint32_t f, w;
    TRY(r.tag(f, w));
    std::string_view s;
    switch (f) {
    case 1: {
      TRY(r.expect(w, 0, f));
      uint64_t v;
      TRY(r.varint(v));
      m.irVersion = static_cast<int64_t>(v);
      break;
    }
    case 7:
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      TRY(parseGraph(s, m.graph, 0));
      sawGraph = true;
      break;
    case 8: {
      TRY(r.expect(w, 2, f));
      TRY(r.bytes(s));
      Reader o(s.data(), s.size(), "OperatorSetIdProto");
      std::string domain;
      int64_t version = 0;
      while (!o.done()) {
        uint32_t of, ow;
        TRY(o.tag(of, ow));
        std::string_view os;
        if (of == 1 && ow == 2) {
          TRY(o.bytes(os));
          domain = std::string(os);
        } else if (of == 2 && ow == 0) {
          uint64_t v;
          TRY(o.varint(v));
          version = static_cast<int64_t>(v);
        } else {
          TRY(o.skip(ow));
        }
      }
      m.opsets[domain == "ai.onnx" ? "" : domain] = version;
      break;
    }
    default:
      TRY(r.skip(w));
    }
  }
  if (!sawGraph)
    return absl::InvalidArgumentError("malformed ONNX ModelProto: no graph");
  return absl::OkStatus();
}

absl::Status parseTensorProto(const std::string &bytes, Tensor &t) {
  return parseTensor(bytes, t);
}

absl::StatusOr<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace fusec::onnx
