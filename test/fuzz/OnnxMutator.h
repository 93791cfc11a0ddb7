//===- OnnxMutator.h - Structure-aware changes to ONNX models ---*- C++ -*-===//
//
// fuzz_onnx's custom mutator. Byte mutations of a serialized ModelProto
// mostly break its wire format (a length that no longer matches), so the
// importer rejects them in the protobuf reader and never sees a node. These
// decode the protobuf wire format along onnx.proto's message layout (model,
// graph, node, attribute, tensor, value info, type, shape, dimension),
// change one thing the way another model would differ, and encode it again
// with every length right:
//  - a number: a dimension (of a value's type or an initializer), an
//    attribute's integer or one of its integer list, an element type, an
//    opset version, an attribute's float (NaN, infinities, zero, huge);
//  - a name: a node's op type for another the importer knows, a node's
//    input for another value of the graph (rewiring it), an attribute's
//    name, a string attribute's value (a mode, an auto_pad);
//  - the structure: a node, an attribute, a node input or an integer list
//    entry duplicated or removed; an initializer's raw data cut short;
//  - a node of its own: a known op type over values of the graph, with
//    attributes copied or made, its output read by a later node or
//    returned.
// The model it returns may be invalid ONNX (that is the point), but its
// bytes always decode.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TEST_FUZZ_ONNXMUTATOR_H
#define FUSEC_TEST_FUZZ_ONNXMUTATOR_H

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace fusec::fuzz::onnx {

/// The messages of onnx.proto this walks into.
enum class Kind { Model, OpsetId, Graph, Node, Attribute, Tensor, ValueInfo, Type, TensorType,
                  Shape, Dim, Opaque };

/// The message kind of field `number` of a `kind` message, or Opaque for a
/// scalar, a string or a message it does not walk.
inline Kind childKind(Kind kind, uint32_t number) {
  switch (kind) {
  case Kind::Model:
    return number == 7 ? Kind::Graph : number == 8 ? Kind::OpsetId : Kind::Opaque;
  case Kind::Graph:
    switch (number) {
    case 1: return Kind::Node;
    case 5: return Kind::Tensor;
    case 11: case 12: case 13: return Kind::ValueInfo;
    default: return Kind::Opaque;
    }
  case Kind::Node:
    return number == 5 ? Kind::Attribute : Kind::Opaque;
  case Kind::Attribute:
    return number == 5 || number == 10 ? Kind::Tensor
           : number == 6 || number == 11 ? Kind::Graph
                                          : Kind::Opaque;
  case Kind::ValueInfo:
    return number == 2 ? Kind::Type : Kind::Opaque;
  case Kind::Type:
    return number == 1 ? Kind::TensorType : Kind::Opaque;
  case Kind::TensorType:
    return number == 2 ? Kind::Shape : Kind::Opaque;
  case Kind::Shape:
    return number == 1 ? Kind::Dim : Kind::Opaque;
  default:
    return Kind::Opaque;
  }
}

/// Packed repeated integers: an attribute's `ints`, a tensor's `dims`,
/// `int32_data`, `int64_data`.
inline bool packedInts(Kind kind, uint32_t number) {
  return (kind == Kind::Attribute && number == 8) ||
         (kind == Kind::Tensor && (number == 1 || number == 5 || number == 7));
}

struct Field {
  uint32_t number = 0;
  uint8_t wire = 0;          // 0 varint, 1 fixed64, 2 bytes, 5 fixed32
  uint64_t value = 0;        // wire 0, 1, 5
  std::string bytes;         // wire 2, when not decoded into children or ints
  Kind kind = Kind::Opaque;  // of the message this field is in
  Kind child = Kind::Opaque; // wire 2: the message it holds, when walked
  std::vector<Field> children;
  bool packed = false;       // wire 2: packed integers, in `ints`
  std::vector<uint64_t> ints;
};

inline bool readVarint(const std::string &s, size_t &at, uint64_t &v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= s.size())
      return false;
    uint8_t b = static_cast<uint8_t>(s[at++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80))
      return true;
  }
  return false;
}

inline void writeVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

/// Decodes a `kind` message; false where the bytes are not protobuf (then
/// the caller falls back to byte mutations). `depth` bounds the nesting.
inline bool decode(const std::string &s, Kind kind, std::vector<Field> &out, int depth = 0) {
  if (depth > 24)
    return false;
  size_t at = 0;
  while (at < s.size()) {
    uint64_t tag;
    if (!readVarint(s, at, tag) || (tag >> 3) == 0 || (tag >> 3) > (1u << 29))
      return false;
    Field f;
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire = static_cast<uint8_t>(tag & 7);
    f.kind = kind;
    switch (f.wire) {
    case 0:
      if (!readVarint(s, at, f.value))
        return false;
      break;
    case 1:
    case 5: {
      size_t n = f.wire == 1 ? 8 : 4;
      if (s.size() - at < n)
        return false;
      for (size_t i = 0; i < n; ++i)
        f.value |= static_cast<uint64_t>(static_cast<uint8_t>(s[at + i])) << (8 * i);
      at += n;
      break;
    }
    case 2: {
      uint64_t n;
      if (!readVarint(s, at, n) || n > s.size() - at)
        return false;
      std::string body = s.substr(at, n);
      at += n;
      f.child = childKind(kind, f.number);
      if (f.child != Kind::Opaque) {
        if (!decode(body, f.child, f.children, depth + 1))
          return false;
      } else if (packedInts(kind, f.number)) {
        size_t p = 0;
        uint64_t v;
        f.packed = true;
        while (p < body.size() && readVarint(body, p, v))
          f.ints.push_back(v);
        if (p != body.size()) { // not varints after all: keep the bytes
          f.packed = false;
          f.ints.clear();
          f.bytes = std::move(body);
        }
      } else {
        f.bytes = std::move(body);
      }
      break;
    }
    default:
      return false; // groups: not in onnx.proto
    }
    out.push_back(std::move(f));
  }
  return true;
}

inline std::string encode(const std::vector<Field> &fields) {
  std::string out;
  for (const Field &f : fields) {
    writeVarint(out, (static_cast<uint64_t>(f.number) << 3) | f.wire);
    switch (f.wire) {
    case 0:
      writeVarint(out, f.value);
      break;
    case 1:
    case 5:
      for (size_t i = 0; i < (f.wire == 1 ? 8u : 4u); ++i)
        out.push_back(static_cast<char>((f.value >> (8 * i)) & 0xff));
      break;
    default: {
      std::string body;
      if (f.child != Kind::Opaque) {
        body = encode(f.children);
      } else if (f.packed) {
        for (uint64_t v : f.ints)
          writeVarint(body, v);
      } else {
        body = f.bytes;
      }
      writeVarint(out, body.size());
      out += body;
    }
    }
  }
  return out;
}

/// Every field of the tree, with the list that holds it (to duplicate or
/// remove it) and its index there.
struct Site {
  std::vector<Field> *list;
  size_t index;
  Field &field() const { return (*list)[index]; }
};

inline void sites(std::vector<Field> &fields, std::vector<Site> &out) {
  for (size_t i = 0; i < fields.size(); ++i) {
    out.push_back({&fields, i});
    if (fields[i].child != Kind::Opaque)
      sites(fields[i].children, out);
  }
}

template <typename T> const T &pickOne(const std::vector<T> &v, std::mt19937_64 &rng) {
  return v[rng() % v.size()];
}

/// An integer near `v` or one that tests a bound (as a varint: negative
/// values are ten bytes, as protobuf writes int64).
inline uint64_t interestingInt(uint64_t v, std::mt19937_64 &rng) {
  // In unsigned arithmetic: it wraps, as the varint would.
  auto s = [](uint64_t u) { return static_cast<int64_t>(u); };
  const std::vector<int64_t> values = {0, 1, 2, 3, -1, -2, s(v + 1), s(v - 1), s(v * 2), s(0 - v),
                                       127, 65535, int64_t{1} << 31, int64_t{1} << 32,
                                       int64_t{1} << 62, std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max()};
  return static_cast<uint64_t>(pickOne(values, rng));
}

inline uint32_t interestingFloat(std::mt19937_64 &rng) {
  const std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-30f, 1e30f, 65504.0f,
                                     std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN(),
                                     std::numeric_limits<float>::denorm_min()};
  float f = pickOne(values, rng);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline const std::vector<std::string> &knownOps() {
  static const std::vector<std::string> ops = {
      "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh",
      "AveragePool", "BatchNormalization", "BitShift", "BlackmanWindow", "Cast", "CastLike",
      "Ceil", "Celu", "Clip", "Compress", "Concat", "Constant", "ConstantOfShape", "Conv",
      "ConvInteger", "ConvTranspose", "Cos", "Cosh", "CumSum", "DFT", "DepthToSpace",
      "DequantizeLinear", "Div", "Dropout", "DynamicQuantizeLinear", "Einsum", "Elu", "Equal",
      "Erf", "Exp", "Expand", "EyeLike", "Flatten", "Floor", "GRU", "Gather", "GatherElements",
      "GridSample", "GatherND", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Greater",
      "GreaterOrEqual", "HammingWindow", "HannWindow", "HardSigmoid", "HardSwish", "Hardmax", "Identity",
      "InstanceNormalization", "IsInf", "IsNaN", "LRN", "LSTM", "LayerNormalization", "LeakyRelu",
      "Less", "LessOrEqual", "Log", "LogSoftmax", "MatMul", "MatMulInteger", "Max", "MaxPool",
      "MaxUnpool", "Mean", "MeanVarianceNormalization", "MelWeightMatrix", "Min", "Mish", "Mod", "Mul", "Neg",
      "NegativeLogLikelihoodLoss", "Not", "OneHot", "Or", "PRelu", "Pad", "Pow", "QLinearConv",
      "QLinearMatMul", "QuantizeLinear", "RNN", "Range", "Reciprocal", "ReduceL1", "ReduceL2",
      "ReduceLogSum",
      "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
      "ReduceSumSquare", "Relu", "Reshape", "Resize", "ReverseSequence", "RoiAlign", "Round", "STFT",
      "Scatter", "ScatterElements", "ScatterND", "Selu", "Shape", "Shrink", "Sigmoid", "Sign",
      "Sin", "Sinh", "Size", "Slice", "Softmax", "SoftmaxCrossEntropyLoss", "Softplus", "Softsign",
      "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu",
      "Tile", "TopK", "Transpose", "Trilu", "Unsqueeze", "Upsample", "Where", "Xor"};
  return ops;
}

/// An empty field `number` of wire type `wire` in a `kind` message.
inline Field makeField(Kind kind, uint32_t number, uint8_t wire) {
  Field f;
  f.number = number;
  f.wire = wire;
  f.kind = kind;
  return f;
}
/// A field holding a string (wire 2) or a varint, of a `kind` message.
inline Field stringField(Kind kind, uint32_t number, std::string bytes) {
  Field f = makeField(kind, number, 2);
  f.bytes = std::move(bytes);
  return f;
}
inline Field varintField(Kind kind, uint32_t number, uint64_t value) {
  Field f = makeField(kind, number, 0);
  f.value = value;
  return f;
}

/// An attribute of a name nodes often take, of the type it usually has
/// (an int, a list of ints, a float or a string), its value a small or a
/// bounding one.
inline Field madeAttribute(std::mt19937_64 &rng) {
  static const std::vector<std::string> ints = {"axis", "keepdims", "to", "group", "transA",
                                                "transB", "k", "largest", "batch_dims",
                                                "select_last_index", "upper", "exclusive",
                                                "reverse", "allowzero", "blocksize"};
  static const std::vector<std::string> lists = {"axes", "perm", "kernel_shape", "strides",
                                                 "pads", "dilations", "output_padding", "split",
                                                 "shape", "output_shape"};
  static const std::vector<std::string> floats = {"alpha", "beta", "epsilon", "gamma", "bias",
                                                  "lambd", "min", "max", "ratio"};
  static const std::vector<std::string> strings = {"mode", "auto_pad", "direction",
                                                   "coordinate_transformation_mode",
                                                   "padding_mode", "reduction"};
  Field a = makeField(Kind::Node, 5, 2);
  a.child = Kind::Attribute;
  auto small = [&]() -> uint64_t {
    return rng() % 4 ? static_cast<uint64_t>(static_cast<int64_t>(rng() % 7) - 2)
                     : interestingInt(1, rng);
  };
  switch (rng() % 4) {
  case 0:
    a.children.push_back(stringField(Kind::Attribute, 1, pickOne(ints, rng)));
    a.children.push_back(varintField(Kind::Attribute, 3, small()));
    a.children.push_back(varintField(Kind::Attribute, 20, 2)); // INT
    break;
  case 1: {
    a.children.push_back(stringField(Kind::Attribute, 1, pickOne(lists, rng)));
    Field l = makeField(Kind::Attribute, 8, 2);
    l.packed = true;
    for (uint64_t i = 0, n = rng() % 7; i < n; ++i)
      l.ints.push_back(small());
    a.children.push_back(std::move(l));
    a.children.push_back(varintField(Kind::Attribute, 20, 7)); // INTS
    break;
  }
  case 2: {
    a.children.push_back(stringField(Kind::Attribute, 1, pickOne(floats, rng)));
    Field f = makeField(Kind::Attribute, 2, 5);
    f.value = interestingFloat(rng);
    a.children.push_back(f);
    a.children.push_back(varintField(Kind::Attribute, 20, 1)); // FLOAT
    break;
  }
  default: {
    static const std::vector<std::string> modes = {"constant", "reflect", "edge", "linear",
                                                   "nearest", "cubic", "SAME_UPPER", "VALID",
                                                   "reverse", "bidirectional", "add", "max",
                                                   "align_corners", ""};
    a.children.push_back(stringField(Kind::Attribute, 1, pickOne(strings, rng)));
    a.children.push_back(stringField(Kind::Attribute, 4, pickOne(modes, rng)));
    a.children.push_back(varintField(Kind::Attribute, 20, 3)); // STRING
  }
  }
  return a;
}

/// Adds a node of its own to `graph` (a Graph field): an op type the
/// importer knows, one to three inputs drawn from `valueNames` (the empty
/// name sometimes: an omitted optional input), up to two attributes copied
/// from `attributes` or made, and a new output. It goes anywhere in the
/// node list (before its inputs' producers too), mostly last, and half the
/// time a later node's input or a graph output is rewired to read it.
/// Returns the new output's name.
inline std::string addNode(Field &graph, const std::vector<std::string> &valueNames,
                           const std::vector<Site> &attributes, std::mt19937_64 &rng) {
  Field node = makeField(Kind::Graph, 1, 2);
  node.child = Kind::Node;
  for (uint64_t i = 0, n = 1 + rng() % 3; i < n; ++i)
    node.children.push_back(stringField(
        Kind::Node, 1, valueNames.empty() || rng() % 8 == 0 ? std::string() : pickOne(valueNames, rng)));
  std::string out = "fuzz_" + std::to_string(rng() % 100000);
  node.children.push_back(stringField(Kind::Node, 2, out));
  node.children.push_back(stringField(Kind::Node, 4, pickOne(knownOps(), rng)));
  for (uint64_t i = 0, n = rng() % 3; i < n; ++i) {
    if (!attributes.empty() && rng() % 2) {
      Field copy = pickOne(attributes, rng).field();
      node.children.push_back(std::move(copy));
    } else {
      node.children.push_back(madeAttribute(rng));
    }
  }
  std::vector<Field> &list = graph.children;
  std::vector<size_t> nodeAt;
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].number == 1 && list[i].child == Kind::Node)
      nodeAt.push_back(i);
  size_t at = nodeAt.empty() || rng() % 3 != 0 ? (nodeAt.empty() ? list.size() : nodeAt.back() + 1)
                                               : pickOne(nodeAt, rng) + (rng() % 2);
  list.insert(list.begin() + static_cast<long>(at), std::move(node));
  if (rng() % 2) {
    std::vector<Field *> readers;
    for (size_t i = at + 1; i < list.size(); ++i) {
      Field &g = list[i];
      bool reads = g.number == 1 && g.child == Kind::Node;
      bool returns = g.number == 12 && g.child == Kind::ValueInfo;
      if (reads || returns)
        for (Field &c : g.children)
          if (c.number == 1 && c.wire == 2)
            readers.push_back(&c);
    }
    if (!readers.empty())
      pickOne(readers, rng)->bytes = out;
  }
  return out;
}

/// One change to the decoded model; false where it found nothing to change.
inline bool mutateFields(std::vector<Field> &model, std::mt19937_64 &rng) {
  std::vector<Site> all;
  sites(model, all);
  std::vector<Site> numbers, floats, opTypes, nodeInputs, attrNames, attrStrings, nodes,
      attributes, packed, raw, graphs;
  std::vector<std::string> valueNames;
  for (const Site &s : all) {
    Field &f = s.field();
    if (f.wire == 0)
      numbers.push_back(s);
    if (f.wire == 5 && f.kind == Kind::Attribute && f.number == 2)
      floats.push_back(s);
    if (f.packed)
      packed.push_back(s);
    if (f.child == Kind::Graph)
      graphs.push_back(s);
    if (f.wire != 2 || f.packed)
      continue;
    switch (f.kind) {
    case Kind::Node:
      if (f.number == 4)
        opTypes.push_back(s);
      if (f.number == 1)
        nodeInputs.push_back(s);
      if (f.number == 1 || f.number == 2)
        valueNames.push_back(f.bytes);
      break;
    case Kind::Attribute:
      if (f.number == 1)
        attrNames.push_back(s);
      if (f.number == 4)
        attrStrings.push_back(s);
      break;
    case Kind::Graph:
      if (f.number == 1)
        nodes.push_back(s);
      break;
    case Kind::ValueInfo:
    case Kind::Tensor:
      if (f.number == (f.kind == Kind::Tensor ? 8u : 1u))
        valueNames.push_back(f.bytes);
      if (f.kind == Kind::Tensor && f.number == 9)
        raw.push_back(s);
      break;
    default:
      break;
    }
    if (f.child == Kind::Attribute)
      attributes.push_back(s);
  }
  switch (rng() % 12) {
  case 0:
  case 1: { // a number
    if (numbers.empty())
      return false;
    Field &f = pickOne(numbers, rng).field();
    f.value = interestingInt(f.value, rng);
    return true;
  }
  case 2: { // an integer list entry changed, duplicated or removed
    if (packed.empty())
      return false;
    Field &f = pickOne(packed, rng).field();
    if (f.ints.empty()) {
      f.ints.push_back(interestingInt(1, rng));
      return true;
    }
    size_t i = rng() % f.ints.size();
    switch (rng() % 3) {
    case 0: f.ints[i] = interestingInt(f.ints[i], rng); break;
    case 1: f.ints.insert(f.ints.begin() + static_cast<long>(i), f.ints[i]); break;
    default: f.ints.erase(f.ints.begin() + static_cast<long>(i)); break;
    }
    return true;
  }
  case 3: { // an op type
    if (opTypes.empty())
      return false;
    pickOne(opTypes, rng).field().bytes = pickOne(knownOps(), rng);
    return true;
  }
  case 4: { // a node input rewired, dropped or repeated
    if (nodeInputs.empty() || valueNames.empty())
      return false;
    Site s = pickOne(nodeInputs, rng);
    switch (rng() % 4) {
    case 0: s.list->erase(s.list->begin() + static_cast<long>(s.index)); break;
    case 1: { Field copy = s.field(); s.list->insert(s.list->begin() + static_cast<long>(s.index), copy); break; }
    case 2: s.field().bytes.clear(); break; // an omitted optional input
    default: s.field().bytes = pickOne(valueNames, rng); break;
    }
    return true;
  }
  case 5: { // a float attribute
    if (floats.empty())
      return false;
    pickOne(floats, rng).field().value = interestingFloat(rng);
    return true;
  }
  case 6: { // a node duplicated or removed
    if (nodes.empty())
      return false;
    Site s = pickOne(nodes, rng);
    if (rng() % 2) {
      Field copy = s.field();
      s.list->insert(s.list->begin() + static_cast<long>(s.index), std::move(copy));
    } else
      s.list->erase(s.list->begin() + static_cast<long>(s.index));
    return true;
  }
  case 7: { // an attribute duplicated, removed or renamed
    if (attributes.empty())
      return false;
    Site s = pickOne(attributes, rng);
    switch (rng() % 3) {
    case 0: { Field copy = s.field(); s.list->insert(s.list->begin() + static_cast<long>(s.index), std::move(copy)); break; }
    case 1: s.list->erase(s.list->begin() + static_cast<long>(s.index)); break;
    default: {
      if (attrNames.empty())
        return false;
      std::string name = pickOne(attrNames, rng).field().bytes;
      for (Field &c : s.field().children)
        if (c.number == 1 && c.wire == 2)
          c.bytes = name;
    }
    }
    return true;
  }
  case 8: { // raw data cut short or grown
    if (raw.empty())
      return false;
    std::string &b = pickOne(raw, rng).field().bytes;
    if (!b.empty() && rng() % 2)
      b.resize(rng() % b.size());
    else
      b.append(1 + rng() % 8, '\x7f');
    return true;
  }
  case 9: { // a string attribute's value (a mode, an auto_pad) for another
    if (attrStrings.empty())
      return false;
    static const std::vector<std::string> values = {
        "constant", "reflect", "edge", "wrap", "SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET",
        "nearest", "linear", "cubic", "half_pixel", "align_corners", "asymmetric",
        "pytorch_half_pixel", "tf_crop_and_resize", "round_prefer_floor", "floor", "ceil",
        "DCR", "CRD", "", "not a mode"};
    pickOne(attrStrings, rng).field().bytes = pickOne(values, rng);
    return true;
  }
  case 10: // a node of its own
    if (graphs.empty() || valueNames.empty())
      return false;
    addNode(pickOne(graphs, rng).field(), valueNames, attributes, rng);
    return true;
  default: { // a field removed anywhere (a required one, often)
    if (all.empty())
      return false;
    Site s = pickOne(all, rng);
    s.list->erase(s.list->begin() + static_cast<long>(s.index));
    return true;
  }
  }
}

/// Decodes `bytes` as a ModelProto, applies one to three changes and
/// encodes it again; false where the bytes do not decode or nothing
/// changed.
inline bool mutateModel(std::string &bytes, std::mt19937_64 &rng) {
  std::vector<Field> model;
  if (!decode(bytes, Kind::Model, model))
    return false;
  bool changed = false;
  for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i)
    for (int attempt = 0; attempt < 4; ++attempt)
      if (mutateFields(model, rng)) {
        changed = true;
        break;
      }
  if (!changed)
    return false;
  bytes = encode(model);
  return true;
}

} // namespace fusec::fuzz::onnx

#endif // FUSEC_TEST_FUZZ_ONNXMUTATOR_H
