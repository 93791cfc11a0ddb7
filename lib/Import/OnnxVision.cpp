//===- OnnxVision.cpp - Importers of convolutional networks' ops -*- C++ -*-===//
//
// Conv, ConvTranspose, ConvInteger, MaxPool, AveragePool,
// BatchNormalization, InstanceNormalization, Resize and Upsample, each read
// through the Importer's building blocks (OnnxImporter.h). Convolution and
// pooling become `fusec.conv` and `fusec.pool` (on 8-bit integers exactly,
// in f32); the normalizations decompose to primitives; Resize becomes one
// gather (nearest) or a few gathers and a weighted sum (linear, cubic) per
// resized axis. A BatchNormalization in inference mode whose input is a
// Conv with known weights is folded into that Conv's filter and bias,
// computed at import by the interpreter.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fusec::onnximport {

namespace {

#define TRY FUSEC_TRY_ASSIGN

std::string arrayAttr(const std::vector<int64_t> &v) {
  return v.empty() ? "array<i64>" : absl::StrCat("array<i64: ", absl::StrJoin(v, ", "), ">");
}

/// The window of a Conv, ConvTranspose or pool node over the spatial dims
/// of its input, with ONNX's auto_pad resolved into explicit pads.
struct WindowAttrs {
  std::vector<int64_t> kernel, strides, dilations, padLow, padHigh;
  std::string autoPad = "NOTSET";
  int64_t extent(size_t i) const { return dilations[i] * (kernel[i] - 1) + 1; }
  std::string text() const {
    return absl::StrCat("strides = ", arrayAttr(strides), ", dilations = ", arrayAttr(dilations),
                        ", pad_low = ", arrayAttr(padLow), ", pad_high = ", arrayAttr(padHigh));
  }
};

/// Reads kernel_shape (or `kernel` where the filter gives it), strides,
/// dilations, pads and auto_pad. With SAME_UPPER or SAME_LOWER the output
/// of a forward window is ceil(in / stride) and the pads are what that
/// needs (the odd one at the end or the start); a transposed one is
/// resolved by its importer.
absl::StatusOr<WindowAttrs> readWindow(Importer &I, const std::vector<int64_t> &spatial,
                                       std::vector<int64_t> kernel, bool transposed) {
  size_t n = spatial.size();
  WindowAttrs w;
  if (auto k = I.attrInts("kernel_shape")) {
    if (!kernel.empty() && *k != kernel)
      return I.invalid(absl::StrCat("kernel_shape [", absl::StrJoin(*k, ", "),
                                    "] differs from the filter's [", absl::StrJoin(kernel, ", "),
                                    "]"));
    kernel = *k;
  }
  if (kernel.size() != n)
    return I.invalid(absl::StrCat("kernel_shape has ", kernel.size(), " values, expected ", n,
                                  " (one per spatial dim)"));
  w.kernel = kernel;
  w.strides = I.attrInts("strides").value_or(std::vector<int64_t>(n, 1));
  w.dilations = I.attrInts("dilations").value_or(std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = I.attrInts("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n)
    return I.invalid(absl::StrCat("strides, dilations and pads need ", n, ", ", n, " and ", 2 * n,
                                  " values"));
  for (size_t i = 0; i < n; ++i) {
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1 || pads[i] < 0 ||
        pads[i + n] < 0 || w.kernel[i] > (1 << 30) || w.strides[i] > (1 << 30) ||
        w.dilations[i] > (1 << 30) || pads[i] > (1 << 30) || pads[i + n] > (1 << 30))
      return I.invalid(absl::StrCat("spatial dim ", i, ": kernel ", w.kernel[i], ", stride ",
                                    w.strides[i], ", dilation ", w.dilations[i], ", pads ",
                                    pads[i], " and ", pads[i + n],
                                    " (expected at least 1, 1, 1, 0 and 0, at most 2^30)"));
  }
  w.padLow.assign(pads.begin(), pads.begin() + n);
  w.padHigh.assign(pads.begin() + n, pads.end());
  w.autoPad = I.attrString("auto_pad").value_or("NOTSET");
  if (w.autoPad == "VALID") {
    std::fill(w.padLow.begin(), w.padLow.end(), 0);
    std::fill(w.padHigh.begin(), w.padHigh.end(), 0);
  } else if (w.autoPad == "SAME_UPPER" || w.autoPad == "SAME_LOWER") {
    if (!transposed)
      for (size_t i = 0; i < n; ++i) {
        int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
        int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + w.extent(i) - spatial[i]);
        w.padLow[i] = w.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
        w.padHigh[i] = total - w.padLow[i];
      }
  } else if (w.autoPad != "NOTSET") {
    return I.invalid(absl::StrCat("auto_pad '", w.autoPad, "'"));
  }
  return w;
}

/// The input's [N, C, spatial...] check and its spatial dims (of a float
/// input unless `floats` is false).
absl::StatusOr<std::vector<int64_t>> spatialDims(Importer &I, const Val &x, const char *what,
                                                 bool floats = true) {
  if (x.shape.size() < 3)
    return I.invalid(absl::StrCat(what, " expects an input of rank at least 3 ([N, C, spatial...]), "
                                  "got rank ", x.shape.size()));
  if (floats && !isFloat(x.dtype))
    return I.unsupported(absl::StrCat(what, " of ", dtypeName(x.dtype),
                                      " (only float tensors are supported)"));
  return std::vector<int64_t>(x.shape.begin() + 2, x.shape.end());
}

/// `v` [C] seen as [1, C, 1, ...] of rank `rank`, for a per-channel operand.
Val perChannel(Importer &I, Val v, size_t rank) {
  std::vector<int64_t> shape(rank, 1);
  shape[1] = v.elements();
  return I.reshape(v, shape);
}

/// The output's spatial dims of a forward window over `spatial`.
absl::StatusOr<std::vector<int64_t>> forwardSpatial(Importer &I,
                                                    const std::vector<int64_t> &spatial,
                                                    const WindowAttrs &win) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < spatial.size(); ++i) {
    int64_t span = spatial[i] + win.padLow[i] + win.padHigh[i] - win.extent(i);
    if (span < 0)
      return I.invalid(absl::StrCat("spatial dim ", i, ": the padded input (",
                                    spatial[i] + win.padLow[i] + win.padHigh[i],
                                    ") is smaller than the window (", win.extent(i), ")"));
    out.push_back(span / win.strides[i] + 1);
  }
  return out;
}

/// The [M, C/group, kernel...] filter fits `channels` in `groups`.
absl::Status checkFilter(Importer &I, const Val &w, int64_t channels, int64_t groups) {
  int64_t product;
  if (__builtin_mul_overflow(w.shape[1], groups, &product) || product != channels ||
      w.shape[0] % groups)
    return I.invalid(absl::StrCat("the filter [", absl::StrJoin(w.shape, ", "), "] does not fit ",
                                  channels, " input channels in ", groups, " groups"));
  return absl::OkStatus();
}

absl::StatusOr<Val> emitConv(Importer &I, Val x, Val w, const WindowAttrs &win, int64_t groups,
                             bool transposed, std::vector<int64_t> shape) {
  if (auto n = I.checkedElements(shape); !n.ok())
    return n.status();
  return I.emit(absl::StrCat("fusec.conv ", I.use(x), ", ", I.use(w), " {", win.text(),
                             ", groups = ", groups, " : i64", transposed ? ", transposed" : "",
                             "} : (", I.ty(x), ", ", I.ty(w), ") -> ", typeOf(x.dtype, shape)),
                x.dtype, shape);
}

/// A BatchNormalization node that reads only `value` and can be folded into
/// it: inference mode, one output, known statistics. Its index, or -1.
int64_t foldableBatchNorm(Importer &I, const std::string &value) {
  if (I.isGraphOutput(value))
    return -1;
  std::vector<size_t> users = I.consumersOf(value);
  if (users.size() != 1)
    return -1;
  const onnx::Node &bn = I.nodeAt(users[0]);
  if (bn.opType != "BatchNormalization" || !(bn.domain.empty() || bn.domain == "ai.onnx") ||
      bn.inputs.size() != 5 || bn.inputs[0] != value)
    return -1;
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (!bn.outputs[i].empty())
      return -1;
  for (const onnx::Attribute &a : bn.attributes)
    if ((a.name == "training_mode" && a.i != 0) || (a.name == "spatial" && a.i != 1))
      return -1;
  for (size_t i = 1; i < 5; ++i) {
    std::optional<Val> v = I.lookup(bn.inputs[i]);
    if (!v || !v->isKnown() || !isFloat(v->dtype) || v->shape.size() != 1)
      return -1;
  }
  return static_cast<int64_t>(users[0]);
}

float epsilonOf(const onnx::Node &n) {
  const onnx::Attribute *a = n.attr("epsilon");
  return a && (a->has & onnx::Attribute::kF) ? a->f : 1e-5f;
}

/// scale / sqrt(var + eps) and bias - mean * that, in f32: BatchNormalization
/// as y = x * s + t per channel.
absl::StatusOr<std::pair<Val, Val>> batchNormAffine(Importer &I, Val scale, Val bias, Val mean,
                                                    Val var, float eps) {
  scale = I.cast(scale, DType::F32);
  bias = I.cast(bias, DType::F32);
  mean = I.cast(mean, DType::F32);
  var = I.cast(var, DType::F32);
  TRY(ve, I.binary("add", var, I.constant(DType::F32, eps)));
  TRY(s, I.binary("mul", scale, I.unary("rsqrt", ve)));
  TRY(ms, I.binary("mul", mean, s));
  TRY(t, I.binary("sub", bias, ms));
  return std::make_pair(s, t);
}

} // namespace

absl::Status importConv(Importer &I) {
  bool transposed = I.node->opType == "ConvTranspose";
  const char *what = transposed ? "ConvTranspose" : "Conv";
  TRY(x, I.input(0));
  TRY(w, I.inputData(1));
  TRY(spatial, spatialDims(I, x, what));
  if (w.shape.size() != x.shape.size())
    return I.invalid(absl::StrCat("the filter has rank ", w.shape.size(), ", expected ",
                                  x.shape.size(), " (that of the input)"));
  if (w.dtype != x.dtype)
    return I.invalid(absl::StrCat("the filter is ", dtypeName(w.dtype), ", the input ",
                                  dtypeName(x.dtype)));
  size_t n = spatial.size();
  int64_t groups = I.attrInt("group", 1);
  int64_t channels = x.shape[1];
  if (groups < 1 || groups > std::max<int64_t>(channels, 1) || channels % groups)
    return I.invalid(absl::StrCat("group ", groups, " does not divide the ", channels,
                                  " input channels (1 to ", std::max<int64_t>(channels, 1),
                                  " groups)"));
  std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
  TRY(win, readWindow(I, spatial, kernel, transposed));
  std::vector<int64_t> shape = {x.shape[0]};
  if (!transposed) {
    if (absl::Status fits = checkFilter(I, w, channels, groups); !fits.ok())
      return fits;
    shape.push_back(w.shape[0]);
    TRY(out, forwardSpatial(I, spatial, win));
    shape.insert(shape.end(), out.begin(), out.end());
  } else {
    if (w.shape[0] != channels)
      return I.invalid(absl::StrCat("the filter [", absl::StrJoin(w.shape, ", "), "] does not fit ",
                                    channels, " input channels ([C, K/group, kernel...])"));
    int64_t outChannels;
    if (__builtin_mul_overflow(w.shape[1], groups, &outChannels))
      return I.invalid(absl::StrCat("the filter's ", w.shape[1], " channels a group times ",
                                    groups, " groups overflow"));
    shape.push_back(outChannels);
    std::vector<int64_t> outPad = I.attrInts("output_padding").value_or(std::vector<int64_t>(n, 0));
    std::optional<std::vector<int64_t>> outShape = I.attrInts("output_shape");
    if (outShape && outShape->size() == n + 2)
      outShape = std::vector<int64_t>(outShape->begin() + 2, outShape->end());
    if (!outShape && (win.autoPad == "SAME_UPPER" || win.autoPad == "SAME_LOWER")) {
      outShape.emplace();
      for (size_t i = 0; i < n; ++i) {
        int64_t o;
        if (__builtin_mul_overflow(spatial[i], win.strides[i], &o))
          return I.invalid(absl::StrCat("spatial dim ", i, " times its stride overflows"));
        outShape->push_back(o);
      }
    }
    if (outPad.size() != n || (outShape && outShape->size() != n))
      return I.invalid(absl::StrCat("output_padding and output_shape need ", n, " values"));
    // In range before any arithmetic on them (a mutated model's INT64_MIN
    // overflowed the pads' subtraction).
    for (size_t i = 0; i < n; ++i) {
      if (outPad[i] < 0 || outPad[i] > (int64_t(1) << 31))
        return I.invalid(absl::StrCat("output_padding ", outPad[i], " is outside [0, 2^31]"));
      if (outShape && ((*outShape)[i] < 1 || (*outShape)[i] > Importer::kMaxElements))
        return I.invalid(absl::StrCat("output_shape ", (*outShape)[i], " is outside [1, 2^40]"));
    }
    for (size_t i = 0; i < n; ++i) {
      // ONNX: out = stride·(in - 1) + output_padding + extent - pads.
      int64_t unpadded;
      if (__builtin_mul_overflow(spatial[i] - 1, win.strides[i], &unpadded) ||
          __builtin_add_overflow(unpadded, win.extent(i), &unpadded) ||
          unpadded > Importer::kMaxElements)
        return I.invalid(absl::StrCat("spatial dim ", i, ": an output past 2^40 (input ",
                                      spatial[i], ", stride ", win.strides[i], ")"));
      int64_t out = unpadded + outPad[i] - win.padLow[i] - win.padHigh[i];
      if (outShape) {
        // The pads are what the requested output needs; a negative total
        // is output padding.
        out = (*outShape)[i];
        int64_t total = std::max<int64_t>(0, unpadded + outPad[i] - out);
        bool upper = win.autoPad == "SAME_UPPER";
        win.padLow[i] = upper ? total / 2 : total - total / 2;
        win.padHigh[i] = total - win.padLow[i];
      }
      int64_t extra = out - (unpadded - win.padLow[i] - win.padHigh[i]);
      if (out < 1 || extra < 0)
        return I.invalid(absl::StrCat("ConvTranspose spatial dim ", i, ": an output of size ", out,
                                      " from pads ", win.padLow[i], " and ", win.padHigh[i]));
      if (extra >= std::max(win.strides[i], win.dilations[i]))
        return I.unsupported(absl::StrCat("ConvTranspose spatial dim ", i, ": output padding ",
                                          extra, " of at least the stride and the dilation"));
      shape.push_back(out);
    }
  }
  bool hasBias = I.hasInput(2);
  Val bias;
  if (hasBias) {
    TRY(b, I.inputData(2));
    if (b.shape != std::vector<int64_t>{shape[1]} || b.dtype != x.dtype)
      return I.invalid(absl::StrCat("the bias is ", I.ty(b), ", expected ",
                                    typeOf(x.dtype, {shape[1]})));
    bias = b;
  }
  // A BatchNormalization after it folds into the filter and the bias.
  int64_t bn = transposed || !w.known || (hasBias && !bias.known) || !I.hasOutput(0)
                   ? -1
                   : foldableBatchNorm(I, I.node->outputs[0]);
  if (bn >= 0) {
    const onnx::Node &bnNode = I.nodeAt(static_cast<size_t>(bn));
    std::vector<Val> params = {w};
    for (size_t i = 1; i < 5; ++i)
      params.push_back(*I.lookup(bnNode.inputs[i]));
    if (hasBias)
      params.push_back(bias);
    bool ok = true;
    for (size_t i = 1; i < 5; ++i)
      ok &= params[i].shape == std::vector<int64_t>{shape[1]};
    if (ok) {
      float eps = epsilonOf(bnNode);
      size_t rank = x.shape.size();
      TRY(folded, I.foldExpr(params, [&](std::vector<Val> &p) -> absl::StatusOr<Val> {
        TRY(st, batchNormAffine(I, p[1], p[2], p[3], p[4], eps));
        std::vector<int64_t> wshape(rank, 1);
        wshape[0] = shape[1];
        TRY(wf, I.binary("mul", I.cast(p[0], DType::F32), I.reshape(st.first, wshape)));
        return I.cast(wf, x.dtype);
      }));
      TRY(foldedBias, I.foldExpr(params, [&](std::vector<Val> &p) -> absl::StatusOr<Val> {
        TRY(st, batchNormAffine(I, p[1], p[2], p[3], p[4], eps));
        if (p.size() == 6) {
          TRY(bs, I.binary("mul", I.cast(p[5], DType::F32), st.first));
          TRY(b2, I.binary("add", bs, st.second));
          return I.cast(b2, x.dtype);
        }
        return I.cast(st.second, x.dtype);
      }));
      TRY(y, emitConv(I, x, folded, win, groups, false, shape));
      TRY(yb, I.binary("add", y, perChannel(I, foldedBias, rank)));
      I.absorbed.insert(static_cast<size_t>(bn));
      return I.define(0, yb);
    }
  }
  TRY(y, emitConv(I, x, w, win, groups, transposed, shape));
  if (!hasBias)
    return I.define(0, y);
  TRY(yb, I.binary("add", y, perChannel(I, bias, x.shape.size())));
  return I.define(0, yb);
}

/// Whether input `i` of the node is ONNX int8 or uint8 (held in i32).
bool eightBitInput(Importer &I, size_t i) {
  std::optional<int32_t> t = I.narrowType(I.node->inputs[i]);
  return t && (*t == onnx::kInt8 || *t == onnx::kUint8);
}

/// ConvInteger: sum((x - x_zero_point) * (w - w_zero_point)) in int32, of
/// int8 or uint8 x and w (a zero point per output channel or one for all).
/// Both differences are integers of at most 255 in magnitude, exact in f32
/// (and in bf16 and the tensor cores' inputs), so the convolution runs as an
/// f32 `fusec.conv`: its products are exact, and so is every partial sum
/// while the sum of the magnitudes stays under 2^24. That bound is 255 x
/// the largest over the output channels of sum |w - w_zero_point| (from the
/// filter when it is known, else 255 a tap). Where it passes 2^24 (K over
/// 258 taps of unknown weights, as a ResNet's 3x3 x 64 channels), the input
/// channels split into runs that each stay under it; each run is a
/// convolution of its own, converted to i32, and the runs add in i32
/// (wrapping, as ONNX's int32 accumulation). Grouped convolutions must fit
/// in one run. The node's inputs `xIn`, `wIn` and the zero points' `xZpIn`
/// and `wZpIn` (each optional); `what` names the op in messages.
absl::StatusOr<Val> integerConv(Importer &I, size_t xIn, size_t wIn, size_t xZpIn, size_t wZpIn,
                                const char *what) {
  TRY(x, I.input(xIn));
  TRY(w, I.inputData(wIn));
  TRY(spatial, spatialDims(I, x, what, /*floats=*/false));
  if (x.dtype != DType::I32 || !eightBitInput(I, xIn) || w.dtype != DType::I32 ||
      !eightBitInput(I, wIn))
    return I.invalid(absl::StrCat(what, " expects an int8 or uint8 input and filter"));
  if (w.shape.size() != x.shape.size())
    return I.invalid(absl::StrCat("the filter has rank ", w.shape.size(), ", expected ",
                                  x.shape.size(), " (that of the input)"));
  int64_t groups = I.attrInt("group", 1);
  int64_t channels = x.shape[1];
  if (groups < 1 || groups > std::max<int64_t>(channels, 1) || channels % groups)
    return I.invalid(absl::StrCat("group ", groups, " does not divide the ", channels,
                                  " input channels (1 to ", std::max<int64_t>(channels, 1),
                                  " groups)"));
  if (absl::Status fits = checkFilter(I, w, channels, groups); !fits.ok())
    return fits;
  std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
  TRY(win, readWindow(I, spatial, kernel, false));
  int64_t m = w.shape[0], perGroup = w.shape[1];
  if (perGroup == 0)
    return I.unsupported(absl::StrCat(what, " of no input channels"));
  std::vector<int64_t> shape = {x.shape[0], m};
  TRY(out, forwardSpatial(I, spatial, win));
  shape.insert(shape.end(), out.begin(), out.end());
  if (auto n = I.checkedElements(shape); !n.ok())
    return n.status();
  // The zero points: x's one value, w's one or one per output channel.
  Val xs = x, ws = w;
  // w's zero point of output channel o, where it is known.
  std::shared_ptr<const HostTensor> wZero;
  bool wZeroKnown = true;
  auto wZeroAt = [&](int64_t o) -> int64_t {
    if (!wZero)
      return 0;
    return wZero->ints[static_cast<size_t>(wZero->ints.size() == 1 ? 0 : o)];
  };
  if (I.hasInput(xZpIn)) {
    TRY(z, I.inputData(xZpIn));
    if (z.elements() != 1 || z.shape.size() > 1 || !eightBitInput(I, xZpIn))
      return I.invalid(absl::StrCat("x_zero_point is ", I.ty(z),
                                    ", expected one int8 or uint8 value"));
    TRY(d, I.binary("sub", x, I.reshape(z, {})));
    xs = d;
  }
  if (I.hasInput(wZpIn)) {
    TRY(z, I.inputData(wZpIn));
    if (z.shape.size() > 1 || (z.elements() != 1 && z.elements() != m) ||
        !eightBitInput(I, wZpIn))
      return I.invalid(absl::StrCat("w_zero_point is ", I.ty(z), ", expected one int8 or uint8 ",
                                    "value or one per output channel (", m, ")"));
    std::vector<int64_t> zshape(w.shape.size(), 1);
    zshape[0] = z.elements();
    wZeroKnown = z.known != nullptr;
    wZero = z.known;
    TRY(d, I.binary("sub", w, I.reshape(z, z.elements() == 1 ? std::vector<int64_t>{} : zshape)));
    ws = d;
  }
  // sum |w - w_zero_point| over each (output channel, input channel of its
  // group) from the filter when it is known (at most kMaxFoldElements
  // values); else 255 a tap for every channel.
  int64_t taps = 1;
  for (int64_t k : kernel)
    if (__builtin_mul_overflow(taps, k, &taps))
      return I.invalid("the filter's taps overflow");
  bool knownFilter = w.known && wZeroKnown;
  std::vector<int64_t> magnitude;
  if (knownFilter) {
    magnitude.assign(static_cast<size_t>(m * perGroup), 0);
    for (int64_t o = 0; o < m; ++o)
      for (int64_t c = 0; c < perGroup; ++c) {
        int64_t sum = 0;
        for (int64_t t = 0; t < taps; ++t)
          sum += std::abs(w.known->ints[static_cast<size_t>((o * perGroup + c) * taps + t)] -
                          wZeroAt(o));
        magnitude[static_cast<size_t>(o * perGroup + c)] = sum;
      }
  }
  // Runs of input channels [c0, c1) (of each group) whose bound stays
  // under 2^24: 255 x (the sum of the run's magnitudes) for every output
  // channel.
  constexpr int64_t kExact = int64_t(1) << 24, kMaxRuns = 64;
  std::vector<std::pair<int64_t, int64_t>> runs;
  if (!knownFilter) {
    int64_t perChannel = 255 * 255 * taps;
    int64_t width = perChannel < kExact ? (kExact - 1) / perChannel : 0;
    if (width == 0)
      return I.unsupported(absl::StrCat(what, " with ", taps, " taps an input channel (",
                                        "their sum could reach 2^24, past f32's exact integers)"));
    if ((perGroup + width - 1) / width > kMaxRuns)
      return I.unsupported(absl::StrCat(what, " of ", perGroup, " input channels of ", taps,
                                        " taps: more than ", kMaxRuns, " runs of ", width));
    for (int64_t c0 = 0; c0 < perGroup; c0 += width)
      runs.push_back({c0, std::min(perGroup, c0 + width)});
  } else {
    for (int64_t c0 = 0; c0 < perGroup;) {
      std::vector<int64_t> sum(static_cast<size_t>(m), 0);
      int64_t c1 = c0;
      for (; c1 < perGroup; ++c1) {
        bool fits = true;
        for (int64_t o = 0; o < m && fits; ++o)
          fits = 255 * (sum[static_cast<size_t>(o)] +
                        magnitude[static_cast<size_t>(o * perGroup + c1)]) < kExact;
        if (!fits)
          break;
        for (int64_t o = 0; o < m; ++o)
          sum[static_cast<size_t>(o)] += magnitude[static_cast<size_t>(o * perGroup + c1)];
      }
      if (c1 == c0)
        return I.unsupported(absl::StrCat(what, " with ", taps, " taps an input channel (",
                                          "their sum reaches 2^24, past f32's exact integers)"));
      if (static_cast<int64_t>(runs.size()) == kMaxRuns)
        return I.unsupported(absl::StrCat(what, " whose sums need more than ", kMaxRuns,
                                          " runs of input channels under 2^24"));
      runs.push_back({c0, c1});
      c0 = c1;
    }
  }
  if (runs.size() > 1 && groups > 1)
    return I.unsupported(absl::StrCat("grouped ", what, " whose sums could reach 2^24 (", groups,
                                      " groups of ", perGroup, " channels of ", taps, " taps)"));
  std::optional<Val> total;
  for (auto [c0, c1] : runs) {
    Val xr = xs, wr = ws;
    if (runs.size() > 1) {
      std::vector<int64_t> off(x.shape.size(), 0), step(x.shape.size(), 1);
      off[1] = c0;
      std::vector<int64_t> xshape = x.shape, wshape = w.shape;
      xshape[1] = wshape[1] = c1 - c0;
      xr = I.slice(xs, off, step, xshape);
      wr = I.slice(ws, off, step, wshape);
    }
    TRY(y, emitConv(I, I.cast(xr, DType::F32), I.cast(wr, DType::F32), win, groups, false, shape));
    if (auto st = addExactRun(I, total, y); !st.ok())
      return st;
  }
  return *total;
}

absl::Status importConvInteger(Importer &I) {
  TRY(y, integerConv(I, 0, 1, 2, 3, "ConvInteger"));
  return I.define(0, y);
}

/// QLinearConv: saturate(round((the int32 convolution + B) x x_scale x
/// w_scale / y_scale) + y_zero_point), the convolution of the zero-point
/// differences exact as ConvInteger's, the rest in f32 (w_scale one value
/// or one per output channel).
absl::Status importQLinearConv(Importer &I) {
  TRY(acc, integerConv(I, 0, 3, 2, 5, "QLinearConv"));
  int64_t m = acc.shape[1];
  std::vector<int64_t> perChannel(acc.shape.size(), 1);
  perChannel[1] = m;
  if (I.hasInput(8)) {
    TRY(b, I.input(8));
    if (b.dtype != DType::I32 || b.shape.size() != 1 || b.shape[0] != m)
      return I.invalid(absl::StrCat("B is ", I.ty(b), ", expected ", m, " int32 values"));
    TRY(sum, I.binary("add", acc, I.reshape(b, perChannel)));
    acc = sum;
  }
  TRY(xs, I.input(1));
  TRY(ws, I.input(4));
  TRY(ys, I.input(6));
  for (const Val *v : {&xs, &ws, &ys})
    if (!isFloat(v->dtype))
      return I.invalid(absl::StrCat("a scale is ", I.ty(*v), ", expected floats"));
  if (xs.elements() != 1 || ys.elements() != 1 || (ws.elements() != 1 && ws.elements() != m))
    return I.invalid(absl::StrCat("x_scale and y_scale must be one value and w_scale one or one "
                                  "per output channel (", m, ")"));
  Val wsShaped = I.cast(I.reshape(ws, ws.elements() == 1 ? std::vector<int64_t>{} : perChannel),
                        DType::F32);
  TRY(num, I.binary("mul", I.cast(I.reshape(xs, {}), DType::F32), wsShaped));
  TRY(mult, I.binary("div", num, I.cast(I.reshape(ys, {}), DType::F32)));
  TRY(q, I.binary("mul", I.cast(acc, DType::F32), mult));
  TRY(y, quantizeRounded(I, q, 7, "y_zero_point"));
  return I.define(0, y);
}

/// MaxPool's Indices: for each output element, the flat index into `x`
/// (row-major, or with its spatial dims column-major for storage_order 1)
/// of the first window position, in the window's row-major order, that
/// holds the maximum `y`. Each tap is a gather of `x` at the tap's
/// (clamped) coordinates, compared with `y` where the tap is inside `x`;
/// the taps are chained by selects from the last to the first, so the
/// first that holds the maximum wins. The index maps are separable (a sum
/// of per-dim terms): constants of per-dim vectors, not of every element.
absl::StatusOr<Val> maxPoolIndices(Importer &I, Val x, Val y, const WindowAttrs &win,
                                   const std::vector<int64_t> &spatial,
                                   const std::vector<int64_t> &shape, bool columnMajor) {
  size_t n = spatial.size();
  int64_t channels = x.shape[1], plane = 1;
  for (int64_t s : spatial)
    plane *= s;
  std::vector<int64_t> rowStride(n, 1), outStride(n, 1);
  for (size_t i = n - 1; i-- > 0;)
    rowStride[i] = rowStride[i + 1] * spatial[i + 1];
  for (size_t i = 1; i < n; ++i)
    outStride[i] = columnMajor ? outStride[i - 1] * spatial[i - 1] : rowStride[i];
  if (!columnMajor)
    outStride[0] = rowStride[0];
  // Checked as it grows: kernel_shape of 2^30 a dim passes the window's
  // checks, and their product overflows.
  int64_t taps = 1;
  for (int64_t k : win.kernel)
    if (__builtin_mul_overflow(taps, k, &taps) || taps > 4096) {
      taps = 4097;
      break;
    }
  if (taps > 4096)
    return I.unsupported("MaxPool's Indices over a window of more than 4096 positions (a "
                         "gather each)");
  std::optional<Val> result;
  for (int64_t t = taps - 1; t >= 0; --t) {
    std::vector<int64_t> k(n);
    for (int64_t i = static_cast<int64_t>(n) - 1, r = t; i >= 0; --i) {
      k[i] = r % win.kernel[i];
      r /= win.kernel[i];
    }
    // The input coordinate of output coordinate o along spatial dim i.
    auto at = [&](size_t i, int64_t o) {
      return o * win.strides[i] - win.padLow[i] + k[i] * win.dilations[i];
    };
    auto flat = [&](const std::vector<int64_t> &stride) {
      return I.separableIndexMap(shape, [&, stride](int64_t d, int64_t o) -> int64_t {
        if (d == 0)
          return o * channels * plane;
        if (d == 1)
          return o * plane;
        size_t i = static_cast<size_t>(d - 2);
        return std::clamp<int64_t>(at(i, o), 0, spatial[i] - 1) * stride[i];
      });
    };
    TRY(index, flat(outStride));
    if (!result) { // the last tap: where no tap holds the maximum (NaN)
      result = index;
      continue;
    }
    Val source = index;
    if (columnMajor) {
      TRY(rows, flat(rowStride));
      source = rows;
    }
    TRY(inside, I.separableMask(shape, [&](int64_t d, int64_t o) {
      if (d < 2)
        return true;
      int64_t c = at(static_cast<size_t>(d - 2), o);
      return c >= 0 && c < spatial[static_cast<size_t>(d - 2)];
    }));
    Val hit = I.compare("eq", I.gatherFlat(x, source), y);
    TRY(take, I.binary("and", hit, inside));
    TRY(chosen, I.select(take, index, *result));
    result = chosen;
  }
  return *result;
}

absl::Status importPool(Importer &I) {
  bool isMax = I.node->opType == "MaxPool";
  const char *what = isMax ? "MaxPool" : "AveragePool";
  TRY(x, I.input(0));
  // MaxPool of int8 or uint8 (opset 12): the maximum in f32, where every
  // such value is exact, and back.
  bool integer = isMax && x.dtype == DType::I32 && eightBitInput(I, 0);
  if (integer)
    x = I.cast(x, DType::F32);
  TRY(spatial, spatialDims(I, x, what));
  if (!isMax && I.opset < 19 && I.attrInts("dilations"))
    return I.invalid("AveragePool takes dilations from opset 19");
  TRY(win, readWindow(I, spatial, {}, false));
  bool ceil = I.attrInt("ceil_mode", 0) != 0;
  std::vector<int64_t> shape = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < spatial.size(); ++i) {
    if (win.padLow[i] >= win.extent(i) || win.padHigh[i] >= win.extent(i))
      return I.invalid(absl::StrCat("spatial dim ", i, ": a pad of at least the window (",
                                    win.extent(i), ")"));
    int64_t span = spatial[i] + win.padLow[i] + win.padHigh[i] - win.extent(i);
    if (span < 0)
      return I.invalid(absl::StrCat("spatial dim ", i, ": the padded input is smaller than the "
                                    "window (", win.extent(i), ")"));
    int64_t out = span / win.strides[i] + 1;
    // Ceil mode keeps a partial last window when it starts inside the input.
    if (ceil && win.autoPad == "NOTSET" && span % win.strides[i] &&
        out * win.strides[i] < spatial[i] + win.padLow[i])
      ++out;
    shape.push_back(out);
  }
  if (auto n = I.checkedElements(shape); !n.ok())
    return n.status();
  bool includePad = !isMax && I.attrInt("count_include_pad", 0) != 0;
  Val y = I.emit(absl::StrCat("fusec.pool ", isMax ? "max " : "mean ", I.use(x),
                              " {kernel = ", arrayAttr(win.kernel), ", ", win.text(),
                              includePad ? ", count_include_pad" : "", "} : ", I.ty(x), " -> ",
                              typeOf(x.dtype, shape)),
                 x.dtype, shape);
  if (isMax && I.hasOutput(1)) {
    TRY(indices, maxPoolIndices(I, x, y, win, spatial, shape,
                                I.attrInt("storage_order", 0) != 0));
    if (absl::Status defined = I.define(1, indices); !defined.ok())
      return defined;
  }
  return I.define(0, integer ? I.cast(y, DType::I32) : y);
}

/// MaxUnpool: Y (zeros of the inferred shape, (in - 1) * stride + kernel -
/// pads per spatial dim) with Y.flat[I[i]] = X[i], the later i winning (as
/// ONNX's reference does). With output_shape the pads are ignored and Y sits
/// at the start of the larger output, zeros after it. Indices known at
/// import are that scatter exactly (a gather through the last writer of
/// each position). Run-time indices are MaxPool's: each points into its
/// own window. An output position lies in at most ceil(kernel / stride)
/// windows per dim, so it is one select per combination of those windows
/// (in order: the later one wins) of X where the window's index names the
/// position; an index outside its window is dropped (see docs/Models.md).
absl::Status importMaxUnpool(Importer &I) {
  TRY(x, I.input(0));
  TRY(index, I.inputData(1));
  TRY(spatial, spatialDims(I, x, "MaxUnpool", /*floats=*/false));
  if (index.shape != x.shape || !isInteger(index.dtype))
    return I.invalid(absl::StrCat("I is ", I.ty(index), "; expected integers of X's shape ",
                                  I.ty(x)));
  TRY(win, readWindow(I, spatial, {}, false));
  for (size_t d = 0; d < spatial.size(); ++d)
    if (win.dilations[d] != 1)
      return I.invalid("MaxUnpool takes no dilations");
  size_t n = spatial.size();
  bool given = I.hasInput(2);
  if (given) // output_shape decides the size: the pads are ignored
    for (size_t d = 0; d < n; ++d)
      win.padLow[d] = win.padHigh[d] = 0;
  std::vector<int64_t> outShape = {x.shape[0], x.shape[1]};
  for (size_t d = 0; d < n; ++d) {
    int64_t o;
    if (__builtin_mul_overflow(spatial[d] - 1, win.strides[d], &o) || o > Importer::kMaxElements)
      return I.invalid(absl::StrCat("spatial dim ", d, ": an output past 2^40 (input ",
                                    spatial[d], ", stride ", win.strides[d], ")"));
    outShape.push_back(o + win.kernel[d] - win.padLow[d] - win.padHigh[d]);
  }
  for (int64_t d : outShape)
    if (d < 1)
      return I.invalid(absl::StrCat("an output of shape [", absl::StrJoin(outShape, ", "), "]"));
  std::vector<int64_t> finalShape = outShape;
  if (given) {
    TRY(dims, I.knownInts(2));
    if (dims.size() != x.shape.size())
      return I.invalid(absl::StrCat("output_shape has ", dims.size(), " values; X has rank ",
                                    x.shape.size()));
    for (size_t d = 0; d < dims.size(); ++d)
      if (d < 2 ? dims[d] != x.shape[d] : dims[d] < outShape[d])
        return I.invalid(absl::StrCat("output_shape [", absl::StrJoin(dims, ", "),
                                      "] is smaller than the inferred [",
                                      absl::StrJoin(outShape, ", "), "] or changes N or C"));
    finalShape = dims;
    if (auto count = I.checkedElements(finalShape); !count.ok())
      return count.status();
  }
  TRY(total, I.checkedElements(outShape));
  // The inferred result at the start of output_shape's, zeros after it.
  auto place = [&](Val y) -> absl::Status {
    if (finalShape == outShape)
      return I.define(0, y);
    std::vector<int64_t> stride(outShape.size(), 1);
    for (size_t d = outShape.size() - 1; d-- > 0;)
      stride[d] = stride[d + 1] * outShape[d + 1];
    TRY(map, I.separableIndexMap(finalShape, [&](int64_t d, int64_t c) -> int64_t {
      return std::min(c, outShape[static_cast<size_t>(d)] - 1) * stride[static_cast<size_t>(d)];
    }));
    TRY(inside, I.separableMask(finalShape, [&](int64_t d, int64_t c) -> bool {
      return c < outShape[static_cast<size_t>(d)];
    }));
    Val zeros = I.broadcastTo(isInteger(y.dtype) ? I.intConstant(y.dtype, 0)
                                                  : I.constant(y.dtype, 0),
                              finalShape);
    TRY(placed, I.select(inside, I.gatherFlat(y, map), zeros));
    return I.define(0, placed);
  };
  if (x.elements() == 0)
    return I.unsupported("a MaxUnpool of an empty tensor");
  Val zero = I.broadcastTo(isInteger(x.dtype) ? I.intConstant(x.dtype, 0)
                                              : I.constant(x.dtype, 0),
                           outShape);
  if (index.known) {
    if (total > Importer::kMaxFoldElements)
      return I.unsupported(absl::StrCat("a MaxUnpool of known indices into ", total,
                                        " elements (at most 2^26)"));
    // Each position's last writer, or none.
    std::vector<int64_t> writer(static_cast<size_t>(total), -1);
    for (int64_t i = 0; i < x.elements(); ++i) {
      int64_t j = index.known->ints[static_cast<size_t>(i)];
      if (j < 0 || j >= total)
        return I.invalid(absl::StrCat("index ", j, " at element ", i, " is outside the output (",
                                      total, " elements)"));
      writer[static_cast<size_t>(j)] = i;
    }
    auto flat = [&](const std::vector<int64_t> &c) {
      int64_t f = 0;
      for (size_t d = 0; d < c.size(); ++d)
        f = f * outShape[d] + c[d];
      return f;
    };
    TRY(map, I.knownIndexMap(outShape, [&](const std::vector<int64_t> &c) {
      return std::max<int64_t>(0, writer[static_cast<size_t>(flat(c))]);
    }));
    TRY(written, I.knownMask(outShape, [&](const std::vector<int64_t> &c) {
      return writer[static_cast<size_t>(flat(c))] >= 0;
    }));
    TRY(y, I.select(written, I.gatherFlat(x, map), zero));
    return place(y);
  }
  // Per dim, the windows over position o are w in [lo(o), hi(o)], at most
  // `span` of them: candidate t is hi(o) - (span - 1) + t.
  std::vector<int64_t> span(n), inStride(n + 2, 1), outStride(n + 2, 1);
  int64_t combos = 1;
  for (size_t d = 0; d < n; ++d) {
    span[d] = (win.kernel[d] + win.strides[d] - 1) / win.strides[d];
    if ((combos *= span[d]) > 256)
      return I.unsupported(absl::StrCat("windows that overlap more than 256 times (kernel [",
                                        absl::StrJoin(win.kernel, ", "), "], strides [",
                                        absl::StrJoin(win.strides, ", "), "])"));
  }
  for (size_t d = x.shape.size() - 1; d-- > 0;) {
    inStride[d] = inStride[d + 1] * x.shape[d + 1];
    outStride[d] = outStride[d + 1] * outShape[d + 1];
  }
  auto window = [&](size_t d, int64_t o, int64_t t) -> std::optional<int64_t> {
    int64_t s = win.strides[d], k = win.kernel[d], p = win.padLow[d];
    int64_t hi = (o + p) / s; // o + p >= 0
    int64_t w = hi - (span[d] - 1) + t;
    if (w < 0 || w >= spatial[d] || w * s - p > o || w * s - p + k <= o)
      return std::nullopt;
    return w;
  };
  TRY(position, I.separableIndexMap(outShape, [&](int64_t d, int64_t c) -> int64_t {
    return c * outStride[static_cast<size_t>(d)];
  }));
  Val flatIndex = I.cast(index, DType::I64);
  std::optional<Val> y;
  for (int64_t combo = 0; combo < combos; ++combo) {
    std::vector<int64_t> t(n);
    for (size_t d = n, rest = static_cast<size_t>(combo); d-- > 0;) {
      t[d] = static_cast<int64_t>(rest % static_cast<size_t>(span[d]));
      rest /= static_cast<size_t>(span[d]);
    }
    TRY(at, I.separableIndexMap(outShape, [&](int64_t d, int64_t c) -> int64_t {
      if (d < 2)
        return c * inStride[static_cast<size_t>(d)];
      size_t sd = static_cast<size_t>(d - 2);
      return window(sd, c, t[sd]).value_or(0) * inStride[static_cast<size_t>(d)];
    }));
    TRY(exists, I.separableMask(outShape, [&](int64_t d, int64_t c) -> bool {
      return d < 2 || window(static_cast<size_t>(d - 2), c, t[static_cast<size_t>(d - 2)]);
    }));
    Val named = I.compare("eq", I.gatherFlat(flatIndex, at), position);
    Val before = y ? *y : zero;
    TRY(picked, I.select(named, I.gatherFlat(x, at), before));
    TRY(next, I.select(exists, picked, before));
    y = next;
  }
  return place(*y);
}

absl::Status importBatchNormalization(Importer &I) {
  TRY(x, I.input(0));
  TRY(scale, I.inputData(1));
  TRY(bias, I.inputData(2));
  TRY(mean, I.inputData(3));
  TRY(var, I.inputData(4));
  if (x.shape.size() < 2 || !isFloat(x.dtype))
    return I.invalid("BatchNormalization expects a float [N, C, ...] input");
  if (I.attrInt("spatial", 1) != 1)
    return I.unsupported("BatchNormalization with spatial = 0");
  int64_t c = x.shape[1];
  for (const Val *p : {&scale, &bias, &mean, &var})
    if (p->shape != std::vector<int64_t>{c} || !isFloat(p->dtype))
      return I.invalid(absl::StrCat("a parameter is ", I.ty(*p), ", expected [", c, "] floats"));
  float eps = I.attrFloat("epsilon", 1e-5f);
  size_t rank = x.shape.size();
  bool training = I.opset >= 14 ? I.attrInt("training_mode", 0) != 0
                                : (I.opset < 7 ? I.attrInt("is_test", 0) == 0 : false) ||
                                      I.hasOutput(1) || I.hasOutput(2);
  if (!training) {
    bool known = scale.known && bias.known && mean.known && var.known;
    auto affine = [&](std::vector<Val> &p, bool first) -> absl::StatusOr<Val> {
      TRY(st, batchNormAffine(I, p[0], p[1], p[2], p[3], eps));
      return I.cast(first ? st.first : st.second, x.dtype);
    };
    std::vector<Val> params = {scale, bias, mean, var};
    Val s, t;
    if (known) {
      TRY(fs, I.foldExpr(params, [&](std::vector<Val> &p) { return affine(p, true); }));
      TRY(ft, I.foldExpr(params, [&](std::vector<Val> &p) { return affine(p, false); }));
      s = fs;
      t = ft;
    } else {
      TRY(fs, affine(params, true));
      TRY(ft, affine(params, false));
      s = fs;
      t = ft;
    }
    TRY(xs, I.binary("mul", x, perChannel(I, s, rank)));
    TRY(y, I.binary("add", xs, perChannel(I, t, rank)));
    return I.define(0, y);
  }
  // Training mode: the batch's statistics over every dim but the channels
  // (variance biased), and the running ones updated with `momentum`.
  std::vector<int64_t> axes = {0};
  for (size_t d = 2; d < rank; ++d)
    axes.push_back(static_cast<int64_t>(d));
  Val xf = I.cast(x, DType::F32);
  TRY(bm, I.reduce("mean", xf, axes, true));
  TRY(dx, I.binary("sub", xf, bm));
  TRY(sq, I.binary("mul", dx, dx));
  TRY(bv, I.reduce("mean", sq, axes, true));
  TRY(ve, I.binary("add", bv, I.constant(DType::F32, eps)));
  TRY(nrm, I.binary("mul", dx, I.unary("rsqrt", ve)));
  TRY(ys, I.binary("mul", nrm, perChannel(I, I.cast(scale, DType::F32), rank)));
  TRY(y, I.binary("add", ys, perChannel(I, I.cast(bias, DType::F32), rank)));
  if (auto st = I.define(0, I.cast(y, x.dtype)); !st.ok())
    return st;
  float momentum = I.attrFloat("momentum", 0.9f);
  auto running = [&](Val old, Val batch) -> absl::StatusOr<Val> {
    TRY(a, I.binary("mul", I.cast(old, DType::F32), I.constant(DType::F32, momentum)));
    TRY(b, I.binary("mul", I.reshape(batch, {c}), I.constant(DType::F32, 1.0 - momentum)));
    TRY(r, I.binary("add", a, b));
    return I.cast(r, old.dtype);
  };
  if (I.hasOutput(1)) {
    TRY(rm, running(mean, bm));
    if (auto st = I.define(1, rm); !st.ok())
      return st;
  }
  if (I.hasOutput(2)) {
    TRY(rv, running(var, bv));
    if (auto st = I.define(2, rv); !st.ok())
      return st;
  }
  return absl::OkStatus();
}

absl::Status importInstanceNormalization(Importer &I) {
  TRY(x, I.input(0));
  TRY(scale, I.input(1));
  TRY(bias, I.input(2));
  TRY(spatial, spatialDims(I, x, "InstanceNormalization"));
  (void)spatial;
  int64_t c = x.shape[1];
  if (scale.shape != std::vector<int64_t>{c} || bias.shape != std::vector<int64_t>{c} ||
      scale.dtype != x.dtype || bias.dtype != x.dtype)
    return I.invalid(absl::StrCat("scale and B must be [", c, "] of the input's type"));
  size_t rank = x.shape.size();
  std::vector<int64_t> axes;
  for (size_t d = 2; d < rank; ++d)
    axes.push_back(static_cast<int64_t>(d));
  Val xf = I.cast(x, DType::F32);
  TRY(mean, I.reduce("mean", xf, axes, true));
  TRY(dx, I.binary("sub", xf, mean));
  TRY(sq, I.binary("mul", dx, dx));
  TRY(var, I.reduce("mean", sq, axes, true));
  TRY(ve, I.binary("add", var, I.constant(DType::F32, I.attrFloat("epsilon", 1e-5f))));
  TRY(nrm, I.binary("mul", dx, I.unary("rsqrt", ve)));
  TRY(ys, I.binary("mul", I.cast(nrm, x.dtype), perChannel(I, scale, rank)));
  TRY(y, I.binary("add", ys, perChannel(I, bias, rank)));
  return I.define(0, y);
}

namespace {

/// One output coordinate of Resize mapped into the input, per ONNX's
/// coordinate_transformation_mode (`roi`: the axis's crop box, start and
/// end as fractions of the input, for tf_crop_and_resize).
absl::StatusOr<double> sourceCoordinate(Importer &I, const std::string &mode, int64_t o,
                                        int64_t in, int64_t out, double scale,
                                        std::pair<double, double> roi = {0.0, 1.0}) {
  double x = static_cast<double>(o);
  if (mode == "tf_crop_and_resize") {
    auto [start, end] = roi;
    return out > 1 ? start * (in - 1) + x * (end - start) * (in - 1) / (out - 1)
                   : 0.5 * (start + end) * (in - 1);
  }
  if (mode == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    double adjustment = out / (scale * in);
    double center = in / 2.0;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") {
    // ONNX's reference divides by the unrounded output length, scale · in.
    double length = scale * in;
    return length == 1 ? 0.0 : x * (in - 1) / (length - 1);
  }
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  return I.unsupported(absl::StrCat("Resize's coordinate_transformation_mode '", mode, "'"));
}

/// Resize along `axis` of `x`: each output element a weighted sum of
/// `taps` gathered input elements (index and weight per output coordinate
/// and tap, known), plus `offset` at each output coordinate where it is
/// given (tf_crop_and_resize's extrapolation value where the coordinate
/// falls outside the input, whose taps weigh 0 there).
absl::StatusOr<Val> resizeAxis(Importer &I, Val x, size_t axis, int64_t out,
                               const std::vector<std::vector<int64_t>> &index,
                               const std::vector<std::vector<double>> &weight,
                               const std::vector<double> &offset = {}) {
  std::vector<int64_t> shape = x.shape;
  shape[axis] = out;
  Val sum;
  for (size_t t = 0; t < index.size(); ++t) {
    HostTensor idx(DType::I64, {out});
    for (int64_t o = 0; o < out; ++o)
      idx.setInt(o, index[t][o]);
    Val iv = knownVal(std::move(idx));
    Val g = I.emit(absl::StrCat("fusec.gather ", I.use(x), "[", I.use(iv), "] axis ", axis,
                                " : (", I.ty(x), ", ", I.ty(iv), ") -> ", typeOf(x.dtype, shape)),
                   x.dtype, shape);
    if (weight.empty())
      return g; // nearest: one tap of weight 1
    HostTensor wt(DType::F32, {out});
    for (int64_t o = 0; o < out; ++o)
      wt.set(o, weight[t][o]);
    std::vector<int64_t> wshape(shape.size(), 1);
    wshape[axis] = out;
    Val wv = I.reshape(knownVal(std::move(wt)), wshape);
    TRY(term, I.binary("mul", I.cast(g, DType::F32), wv));
    if (t == 0) {
      sum = term;
    } else {
      TRY(s, I.binary("add", sum, term));
      sum = s;
    }
  }
  if (!offset.empty()) {
    HostTensor ot(DType::F32, {out});
    for (int64_t o = 0; o < out; ++o)
      ot.set(o, offset[o]);
    std::vector<int64_t> oshape(shape.size(), 1);
    oshape[axis] = out;
    TRY(s, I.binary("add", sum, I.reshape(knownVal(std::move(ot)), oshape)));
    sum = s;
  }
  return I.cast(sum, x.dtype);
}

} // namespace

/// GridSample (opset 16: 4-D, modes bilinear, nearest, bicubic; opset 20:
/// any rank, linear, nearest, cubic): output[n, c, o...] samples X[n, c] at
/// the point grid[n, o...] (normalized to [-1, 1], its last dim in reverse
/// order: x first). Per spatial dim the point is unnormalized
/// (align_corners), brought inside by the padding mode (border: clamped;
/// reflection: reflected about the borders), and split into taps (one for
/// nearest, 2 for linear, 4 for cubic with Keys' alpha = -0.75) with
/// weights; each combination of one tap per dim is one gather of X at run
/// time positions, weighted and summed. Zeros padding gives out-of-range
/// taps the weight 0 (their index clamped, so no read leaves X).
absl::Status importGridSample(Importer &I) {
  TRY(x, I.input(0));
  TRY(grid, I.input(1));
  size_t rank = x.shape.size();
  if (rank < 3 || isInteger(x.dtype))
    return I.invalid(absl::StrCat("X is ", I.ty(x), "; expected [N, C, spatial...] floats"));
  size_t r = rank - 2;
  if (grid.shape.size() != rank || grid.shape[0] != x.shape[0] ||
      grid.shape.back() != static_cast<int64_t>(r) || isInteger(grid.dtype))
    return I.invalid(absl::StrCat("the grid is ", I.ty(grid), "; expected [", x.shape[0],
                                  ", out..., ", r, "] floats for X ", I.ty(x)));
  std::string mode = I.attrString("mode").value_or(I.opset >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  std::string padding = I.attrString("padding_mode").value_or("zeros");
  bool align = I.attrInt("align_corners", 0) != 0;
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return I.invalid(absl::StrCat("unknown mode '", mode, "'"));
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return I.invalid(absl::StrCat("unknown padding_mode '", padding, "'"));
  int64_t batch = x.shape[0], channels = x.shape[1];
  std::vector<int64_t> outSpatial(grid.shape.begin() + 1, grid.shape.end() - 1);
  std::vector<int64_t> pointShape = {batch}; // [N, out...]
  pointShape.insert(pointShape.end(), outSpatial.begin(), outSpatial.end());
  std::vector<int64_t> outShape = {batch, channels};
  outShape.insert(outShape.end(), outSpatial.begin(), outSpatial.end());
  TRY(count, I.checkedElements(outShape));
  if (count == 0 || x.elements() == 0)
    return I.unsupported("a GridSample of an empty tensor");
  int64_t taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  int64_t combos = 1;
  for (size_t d = 0; d < r; ++d)
    if ((combos *= taps) > 4096)
      return I.unsupported(absl::StrCat(r, " spatial dims of ", mode, " taps (more than 4,096 "
                                        "gathers)"));
  const DType F = DType::F32;
  auto k = [&](double v) { return I.constant(F, v); };
  Val g = I.cast(grid, F);
  // Per dim: the taps' indices (i64, clamped into range) and weights (f32,
  // 0 for a zeros-padded tap outside), each [N, out...].
  std::vector<std::vector<std::pair<Val, Val>>> perDim(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t size = x.shape[2 + d];
    std::vector<int64_t> offsets(rank, 0), strides(rank, 1), shape = grid.shape;
    offsets.back() = static_cast<int64_t>(r - 1 - d);
    shape.back() = 1;
    Val n = I.reshape(I.slice(g, offsets, strides, shape), pointShape);
    double len = static_cast<double>(size);
    // Unnormalized: align ? (n + 1) / 2 (len - 1) : ((n + 1) len - 1) / 2.
    TRY(n1, I.binary("add", n, k(1)));
    TRY(scaled, I.binary("mul", n1, k(align ? (len - 1) / 2 : len / 2)));
    Val p = scaled;
    if (!align) {
      TRY(shifted, I.binary("sub", scaled, k(0.5)));
      p = shifted;
    }
    double lo = align ? 0 : -0.5, hi = align ? len - 1 : len - 0.5;
    // Reflection about [lo, hi] of a value v (the reference's loop in
    // closed form): the distance past the near border, folded by its
    // number of whole ranges, odd counts from the far border.
    auto reflect = [&](Val v) -> absl::StatusOr<Val> {
      double range = hi - lo;
      if (range <= 0)
        return I.broadcastTo(k(lo), v.shape);
      TRY(belowDist, I.binary("sub", k(lo), v));
      TRY(aboveDist, I.binary("sub", v, k(hi)));
      Val below = I.compare("lt", v, I.broadcastTo(k(lo), v.shape));
      TRY(dist, I.select(below, belowDist, aboveDist));
      TRY(q, I.binary("div", dist, k(range)));
      Val whole = I.unary("floor", q);
      TRY(wholeRange, I.binary("mul", whole, k(range)));
      TRY(rest, I.binary("sub", dist, wholeRange));
      TRY(half, I.binary("mul", whole, k(0.5)));
      TRY(twice, I.binary("mul", I.unary("floor", half), k(2)));
      TRY(parity, I.binary("sub", whole, twice));
      Val even = I.compare("eq", parity, I.broadcastTo(k(0), v.shape));
      TRY(fromLo, I.binary("add", k(lo), rest));
      TRY(fromHi, I.binary("sub", k(hi), rest));
      TRY(inBelow, I.select(even, fromLo, fromHi));
      TRY(inAbove, I.select(even, fromHi, fromLo));
      TRY(folded, I.select(below, inBelow, inAbove));
      Val outside = I.compare("gt", dist, I.broadcastTo(k(0), v.shape));
      return I.select(outside, folded, v);
    };
    if (padding == "border") {
      TRY(a, I.binary("max", p, k(0)));
      TRY(b, I.binary("min", a, k(len - 1)));
      p = b;
    } else if (padding == "reflection") {
      TRY(b, reflect(p));
      p = b;
    }
    // A tap at integer position t (f32): its index into X along d, clamped
    // (reflected, for reflection padding), and whether it lies inside.
    auto tap = [&](Val t, Val w) -> absl::Status {
      Val pos = t;
      if (padding == "reflection") {
        TRY(b, reflect(t));
        // int() of the reflected value: truncation (it is at least lo).
        TRY(nonneg, I.binary("max", b, k(0)));
        pos = I.unary("floor", nonneg);
      }
      TRY(a, I.binary("max", pos, k(0)));
      TRY(c, I.binary("min", a, k(len - 1)));
      Val weight = w;
      if (padding == "zeros") {
        Val inLo = I.compare("ge", t, I.broadcastTo(k(0), t.shape));
        Val inHi = I.compare("le", t, I.broadcastTo(k(len - 1), t.shape));
        TRY(both, I.select(inLo, I.cast(inHi, F), I.broadcastTo(k(0), t.shape)));
        TRY(ww, I.binary("mul", w, both));
        weight = ww;
      }
      perDim[d].push_back({I.cast(c, DType::I64), weight});
      return absl::OkStatus();
    };
    if (mode == "nearest") {
      // Halves to even in 2-D (PyTorch's nearbyint), away from zero
      // otherwise (std::round).
      Val t = I.unary("round", p);
      if (r != 2) {
        TRY(absP, I.binary("max", p, I.unary("neg", p)));
        TRY(up, I.binary("add", absP, k(0.5)));
        Val mag = I.unary("floor", up);
        Val neg = I.compare("lt", p, I.broadcastTo(k(0), p.shape));
        TRY(away, I.select(neg, I.unary("neg", mag), mag));
        t = away;
      }
      if (auto st = tap(t, I.broadcastTo(k(1), p.shape)); !st.ok())
        return st;
      continue;
    }
    Val base = I.unary("floor", p);
    TRY(frac, I.binary("sub", p, base));
    std::vector<Val> weights;
    if (mode == "linear") {
      TRY(w0, I.binary("sub", k(1), frac));
      weights = {w0, frac};
    } else {
      // Keys' cubic convolution weights at distances 1 + t, t, 1 - t, 2 - t.
      const double a = -0.75;
      auto near = [&](Val s) -> absl::StatusOr<Val> { // ((a + 2) s - (a + 3)) s^2 + 1
        TRY(s1, I.binary("mul", s, k(a + 2)));
        TRY(s2, I.binary("sub", s1, k(a + 3)));
        TRY(s3, I.binary("mul", s2, s));
        TRY(s4, I.binary("mul", s3, s));
        return I.binary("add", s4, k(1));
      };
      auto far = [&](Val s) -> absl::StatusOr<Val> { // ((a s - 5a) s + 8a) s - 4a
        TRY(s1, I.binary("mul", s, k(a)));
        TRY(s2, I.binary("sub", s1, k(5 * a)));
        TRY(s3, I.binary("mul", s2, s));
        TRY(s4, I.binary("add", s3, k(8 * a)));
        TRY(s5, I.binary("mul", s4, s));
        return I.binary("sub", s5, k(4 * a));
      };
      TRY(d0, I.binary("add", frac, k(1)));
      TRY(d2, I.binary("sub", k(1), frac));
      TRY(d3, I.binary("sub", k(2), frac));
      TRY(w0, far(d0));
      TRY(w1, near(frac));
      TRY(w2, near(d2));
      TRY(w3, far(d3));
      weights = {w0, w1, w2, w3};
    }
    double first = mode == "cubic" ? -1 : 0;
    for (size_t j = 0; j < weights.size(); ++j) {
      TRY(t, I.binary("add", base, k(first + static_cast<double>(j))));
      if (auto st = tap(t, weights[j]); !st.ok())
        return st;
    }
  }
  // X's flat index of (n, c) at every output element, then each combination.
  int64_t plane = 1;
  for (size_t d = 0; d < r; ++d)
    plane *= x.shape[2 + d];
  TRY(start, I.separableIndexMap(outShape, [&](int64_t d, int64_t c) -> int64_t {
    return d == 0 ? c * channels * plane : d == 1 ? c * plane : 0;
  }));
  std::vector<int64_t> wide = pointShape;
  wide.insert(wide.begin() + 1, 1);
  auto spread = [&](Val v) { return I.broadcastTo(I.reshape(v, wide), outShape); };
  std::optional<Val> sum;
  for (int64_t combo = 0; combo < combos; ++combo) {
    std::optional<Val> offset, weight;
    int64_t rest = combo, stride = plane;
    for (size_t d = 0; d < r; ++d) {
      auto &[index, w] = perDim[d][rest % taps];
      rest /= taps;
      stride /= x.shape[2 + d];
      TRY(part, I.binary("mul", index, I.intConstant(DType::I64, stride)));
      if (offset) {
        TRY(o, I.binary("add", *offset, part));
        offset = o;
      } else {
        offset = part;
      }
      if (weight) {
        TRY(ww, I.binary("mul", *weight, w));
        weight = ww;
      } else {
        weight = w;
      }
    }
    TRY(at, I.binary("add", start, spread(*offset)));
    Val picked = I.cast(I.gatherFlat(x, at), F);
    TRY(term, I.binary("mul", picked, spread(*weight)));
    if (sum) {
      TRY(s2, I.binary("add", *sum, term));
      sum = s2;
    } else {
      sum = term;
    }
  }
  return I.define(0, I.cast(*sum, x.dtype));
}


/// RoiAlign (opsets 10, 16): Y[r, c, ph, pw] pools X[batch_indices[r], c]
/// over bin (ph, pw) of region r (x1, y1, x2, y2, scaled by spatial_scale,
/// shifted by half a pixel in half_pixel mode; at least 1 x 1 otherwise),
/// from a grid of sampling points per bin, each read bilinearly (4 taps,
/// clamped to the last row and column; a point more than a pixel outside
/// reads 0) and averaged (avg) or the largest weighted tap taken (max), as
/// onnxruntime and ONNX's reference do. The regions and batch indices are
/// run-time values. The grid is sampling_ratio x sampling_ratio, or with
/// sampling_ratio 0 ceil(region / output) per region: that needs the
/// regions known at import (the grid is their largest, masked per region).
absl::Status importRoiAlign(Importer &I) {
  TRY(x, I.input(0));
  TRY(rois, I.inputData(1));
  TRY(batchIndex, I.input(2));
  if (x.shape.size() != 4 || isInteger(x.dtype))
    return I.invalid(absl::StrCat("X is ", I.ty(x), "; expected [N, C, H, W] floats"));
  if (rois.shape.size() != 2 || rois.shape[1] != 4 || isInteger(rois.dtype))
    return I.invalid(absl::StrCat("rois is ", I.ty(rois), "; expected [num_rois, 4] floats"));
  int64_t R = rois.shape[0];
  if (batchIndex.shape != std::vector<int64_t>{R} || !isInteger(batchIndex.dtype))
    return I.invalid(absl::StrCat("batch_indices is ", I.ty(batchIndex), "; expected [", R,
                                  "] integers"));
  std::string mode = I.attrString("mode").value_or("avg");
  if (mode != "avg" && mode != "max")
    return I.invalid(absl::StrCat("unknown mode '", mode, "'"));
  std::string transform = I.opset >= 16 ? I.attrString("coordinate_transformation_mode")
                                              .value_or("half_pixel")
                                        : "output_half_pixel";
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return I.invalid(absl::StrCat("unknown coordinate_transformation_mode '", transform, "'"));
  bool halfPixel = transform == "half_pixel";
  int64_t oh = I.attrInt("output_height", 1), ow = I.attrInt("output_width", 1);
  int64_t ratio = I.attrInt("sampling_ratio", 0);
  float scale = I.attrFloat("spatial_scale", 1.0f);
  // (Each is a known vector of bin indices: at most 2^20.)
  if (oh < 1 || ow < 1 || oh > (1 << 20) || ow > (1 << 20))
    return I.invalid(absl::StrCat("output_height ", oh, " and output_width ", ow,
                                  ": each must be 1 to 2^20"));
  if (ratio < 0 || ratio > 4096)
    return I.invalid(absl::StrCat("sampling_ratio ", ratio, ": expected 0 to 4,096"));
  if (!std::isfinite(scale))
    return I.invalid("spatial_scale is not finite");
  int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3];
  std::vector<int64_t> outShape = {R, C, oh, ow};
  TRY(count, I.checkedElements(outShape));
  if (count == 0 || x.elements() == 0)
    return I.unsupported("a RoiAlign of an empty tensor or of no regions");
  // The grid per region: with sampling_ratio 0 it is each region's own (as
  // onnxruntime computes it, in f32).
  // (Per region only with sampling_ratio 0: known regions, at most
  // kMaxFoldElements of them; else one value for all.)
  bool uniform = ratio > 0;
  if (!uniform && !rois.known)
    return I.unsupported("sampling_ratio 0 (a grid sized by each region) with regions "
                         "computed at run time; give sampling_ratio or known rois");
  if (!uniform && R > Importer::kMaxFoldElements)
    return I.unsupported(absl::StrCat(R, " known regions with sampling_ratio 0 (at most 2^26)"));
  std::vector<int64_t> gridH(static_cast<size_t>(uniform ? 1 : R), ratio),
      gridW(static_cast<size_t>(uniform ? 1 : R), ratio);
  if (!uniform) {
    float offset = halfPixel ? 0.5f : 0.0f;
    for (int64_t r = 0; r < R; ++r) {
      auto at = [&](int k) { return static_cast<float>(rois.known->get(r * 4 + k)) * scale - offset; };
      float rw = at(2) - at(0), rh = at(3) - at(1);
      if (!halfPixel) {
        rw = std::max(rw, 1.0f);
        rh = std::max(rh, 1.0f);
      }
      float gh = std::ceil(rh / static_cast<float>(oh)), gw = std::ceil(rw / static_cast<float>(ow));
      if (!std::isfinite(gh) || !std::isfinite(gw) || gh > 4096 || gw > 4096)
        return I.unsupported(absl::StrCat("region ", r, " takes a sampling grid over 4,096"));
      // Clamped before the conversion: a region of negative extent makes a
      // grid of -1e30.
      gridH[static_cast<size_t>(r)] = static_cast<int64_t>(std::max(0.0f, gh));
      gridW[static_cast<size_t>(r)] = static_cast<int64_t>(std::max(0.0f, gw));
    }
  }
  int64_t GH = std::max<int64_t>(1, *std::max_element(gridH.begin(), gridH.end()));
  int64_t GW = std::max<int64_t>(1, *std::max_element(gridW.begin(), gridW.end()));
  std::vector<int64_t> samples = {R, C, oh, ow, GH, GW};
  if (auto n = I.checkedElements(samples); !n.ok())
    return n.status();
  if (!uniform && R * GH * GW > Importer::kMaxFoldElements)
    return I.unsupported("a sampling grid of more than 2^26 points over the known regions");
  const DType F = DType::F32;
  auto k = [&](double v) { return I.constant(F, v); };
  auto vec = [&](const std::vector<double> &v, std::vector<int64_t> shape) {
    HostTensor h(F, std::move(shape));
    for (size_t i = 0; i < v.size(); ++i)
      h.data[i] = v[i];
    h.roundInPlace();
    return knownVal(std::move(h));
  };
  auto perRegion = [&](const std::vector<int64_t> &v, std::vector<int64_t> shape) {
    return vec(std::vector<double>(v.begin(), v.end()), std::move(shape));
  };
  Val g = I.cast(rois, F);
  auto column = [&](int64_t c) -> absl::StatusOr<Val> {
    Val col = I.reshape(I.slice(g, {0, c}, {1, 1}, {R, 1}), {R, 1, 1, 1, 1});
    TRY(scaled, I.binary("mul", col, k(scale)));
    if (!halfPixel)
      return scaled;
    return I.binary("sub", scaled, k(0.5));
  };
  // Per axis (0: y over ph and iy; 1: x over pw and ix): the sample
  // coordinates, brought inside, split into the two taps' rows (i64) and
  // weights, each of [R, oh, ow, GH, GW] broadcast shape.
  struct Axis {
    Val low, high, wLow, wHigh, valid;
  };
  auto axisOf = [&](int which) -> absl::StatusOr<Axis> {
    int64_t bins = which == 0 ? oh : ow, grid = which == 0 ? GH : GW;
    double len = static_cast<double>(which == 0 ? H : W);
    TRY(start, column(which == 0 ? 1 : 0));
    TRY(end, column(which == 0 ? 3 : 2));
    TRY(extent, I.binary("sub", end, start));
    if (!halfPixel) {
      TRY(e, I.binary("max", extent, k(1)));
      extent = e;
    }
    TRY(bin, I.binary("div", extent, k(static_cast<double>(bins))));
    std::vector<int64_t> binShape = {1, 1, 1, 1, 1}, gridShape = {1, 1, 1, 1, 1};
    binShape[which == 0 ? 1 : 2] = bins;
    gridShape[which == 0 ? 3 : 4] = grid;
    std::vector<double> binIndex, gridMid;
    for (int64_t i = 0; i < bins; ++i)
      binIndex.push_back(static_cast<double>(i));
    for (int64_t i = 0; i < grid; ++i)
      gridMid.push_back(static_cast<double>(i) + 0.5);
    // start + b * bin + (i + 0.5) * bin / grid, in the reference's order.
    TRY(binOffset, I.binary("mul", bin, vec(binIndex, binShape)));
    TRY(binStart, I.binary("add", start, binOffset));
    TRY(inBin, I.binary("mul", bin, vec(gridMid, gridShape)));
    // (A region of no points divides by 1: its masked points stay finite.)
    std::vector<int64_t> divisor = which == 0 ? gridH : gridW;
    for (int64_t &d : divisor)
      d = std::max<int64_t>(d, 1);
    Val gridSize = uniform ? k(static_cast<double>(ratio)) : perRegion(divisor, {R, 1, 1, 1, 1});
    TRY(inBinScaled, I.binary("div", inBin, gridSize));
    TRY(p, I.binary("add", binStart, inBinScaled));
    Val lo = I.compare("ge", p, I.broadcastTo(k(-1), p.shape));
    Val hi = I.compare("le", p, I.broadcastTo(k(len), p.shape));
    TRY(valid, I.select(lo, I.cast(hi, F), I.broadcastTo(k(0), p.shape)));
    TRY(nonneg, I.binary("max", p, k(0)));
    TRY(clamped, I.binary("min", nonneg, k(len - 1)));
    Val low = I.unary("floor", clamped);
    TRY(up, I.binary("add", low, k(1)));
    TRY(high, I.binary("min", up, k(len - 1)));
    TRY(wHigh, I.binary("sub", clamped, low));
    TRY(wLow, I.binary("sub", k(1), wHigh));
    return Axis{I.cast(low, DType::I64), I.cast(high, DType::I64), wLow, wHigh, valid};
  };
  TRY(ay, axisOf(0));
  TRY(ax, axisOf(1));
  // The points of the grid a region really has (sampling_ratio 0).
  std::optional<Val> inGrid;
  if (!uniform) {
    TRY(mask, I.knownMask({R, 1, 1, GH, GW}, [&](const std::vector<int64_t> &c) {
      return c[3] < gridH[static_cast<size_t>(c[0])] && c[4] < gridW[static_cast<size_t>(c[0])];
    }));
    inGrid = mask;
  }
  TRY(validBoth, I.binary("mul", ay.valid, ax.valid));
  Val valid = validBoth;
  if (inGrid && mode == "avg") {
    TRY(v, I.select(I.broadcastTo(*inGrid, valid.shape), valid,
                    I.broadcastTo(k(0), valid.shape)));
    valid = v;
  }
  // X's flat index of (batch_indices[r], c) at each sample.
  Val batch = I.reshape(I.cast(batchIndex, DType::I64), {R, 1, 1, 1, 1, 1});
  TRY(batchStart, I.binary("mul", batch, I.intConstant(DType::I64, C * H * W)));
  TRY(channelStart, I.separableIndexMap(samples, [&](int64_t d, int64_t c) -> int64_t {
    return d == 1 ? c * H * W : 0;
  }));
  TRY(start, I.binary("add", channelStart, I.broadcastTo(batchStart, samples)));
  std::vector<int64_t> pointShape = {R, 1, oh, ow, GH, GW};
  std::optional<Val> total;
  for (int tap = 0; tap < 4; ++tap) {
    Val row = tap < 2 ? ay.low : ay.high, col = tap % 2 ? ax.high : ax.low;
    Val wy = tap < 2 ? ay.wLow : ay.wHigh, wx = tap % 2 ? ax.wHigh : ax.wLow;
    TRY(rowStart, I.binary("mul", row, I.intConstant(DType::I64, W)));
    TRY(pos, I.binary("add", rowStart, col));
    TRY(at, I.binary("add", start, I.broadcastTo(I.reshape(pos, pointShape), samples)));
    Val picked = I.cast(I.gatherFlat(x, at), F);
    TRY(w, I.binary("mul", wy, wx));
    TRY(wValid, I.binary("mul", w, valid));
    TRY(term, I.binary("mul", picked, I.broadcastTo(I.reshape(wValid, pointShape), samples)));
    if (total) {
      TRY(t, I.binary(mode == "avg" ? "add" : "max", *total, term));
      total = t;
    } else {
      total = term;
    }
  }
  if (mode == "avg") {
    TRY(sum, I.reduce("sum", *total, {4, 5}, false));
    std::vector<int64_t> counts;
    for (int64_t r = 0; r < (uniform ? 1 : R); ++r)
      counts.push_back(std::max<int64_t>(1, gridH[static_cast<size_t>(r)] *
                                                gridW[static_cast<size_t>(r)]));
    Val n = uniform ? k(static_cast<double>(counts[0])) : perRegion(counts, {R, 1, 1, 1});
    TRY(mean, I.binary("div", sum, n));
    return I.define(0, I.cast(mean, x.dtype));
  }
  Val best = *total;
  if (inGrid) {
    TRY(masked, I.select(I.broadcastTo(I.reshape(*inGrid, {R, 1, 1, 1, GH, GW}), samples), best,
                         I.broadcastTo(k(-std::numeric_limits<double>::infinity()), samples)));
    best = masked;
  }
  TRY(largest, I.reduce("max", best, {4, 5}, false));
  if (inGrid) {
    // A region with no sampling points gives 0.
    TRY(any, I.knownMask({R, 1, 1, 1}, [&](const std::vector<int64_t> &c) {
      return gridH[static_cast<size_t>(c[0])] * gridW[static_cast<size_t>(c[0])] > 0;
    }));
    TRY(l, I.select(I.broadcastTo(any, outShape), largest, I.broadcastTo(k(0), outShape)));
    largest = l;
  }
  return I.define(0, I.cast(largest, x.dtype));
}

absl::Status importResize(Importer &I) {
  bool upsample = I.node->opType == "Upsample";
  TRY(x, I.input(0));
  size_t rank = x.shape.size();
  std::string mode = I.attrString("mode").value_or("nearest");
  std::string coord = upsample ? "asymmetric"
                               : I.attrString("coordinate_transformation_mode")
                                     .value_or(I.opset < 11 ? "asymmetric" : "half_pixel");
  std::string nearestMode =
      upsample || I.opset < 11 ? "floor" : I.attrString("nearest_mode").value_or("round_prefer_floor");
  if (I.attrInt("antialias", 0) != 0)
    return I.unsupported("Resize with antialias");
  bool crop = coord == "tf_crop_and_resize";
  if (crop && (upsample || I.opset < 11))
    return I.invalid("tf_crop_and_resize needs Resize from opset 11 (its roi input)");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear" && mode != "cubic")
    return I.invalid(absl::StrCat("mode '", mode, "'"));
  if (mode != "nearest" && !isFloat(x.dtype))
    return I.unsupported(absl::StrCat("Resize ", mode, " of ", dtypeName(x.dtype)));
  // The resized axes (all, or `axes` from opset 18) and their scales or sizes.
  std::vector<int64_t> axes;
  if (auto a = I.attrInts("axes")) {
    for (int64_t v : *a) {
      TRY(ax, I.axis(v, rank));
      axes.push_back(ax);
    }
  } else {
    for (size_t d = 0; d < rank; ++d)
      axes.push_back(static_cast<int64_t>(d));
  }
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  auto knownFloats = [&](size_t i) -> absl::StatusOr<std::vector<double>> {
    TRY(v, I.inputData(i));
    if (!v.known)
      return I.unsupported(absl::StrCat("input #", i, " ('", I.node->inputs[i],
                                        "') must be known at import (a constant)"));
    std::vector<double> out;
    for (int64_t k = 0; k < v.known->numElements(); ++k)
      out.push_back(v.known->get(k));
    return out;
  };
  if (upsample && I.opset < 9) {
    const onnx::Attribute *a = I.node->attr("scales");
    if (!a)
      return I.invalid("Upsample needs scales");
    scales.assign(a->floats.begin(), a->floats.end());
  } else {
    size_t scalesInput = upsample || I.opset < 11 ? 1 : 2;
    bool haveScales = false;
    if (I.hasInput(scalesInput)) {
      TRY(sv, I.input(scalesInput));
      haveScales = sv.elements() > 0;
    }
    if (haveScales) {
      TRY(s, knownFloats(scalesInput));
      scales = s;
    } else if (!upsample && I.opset >= 11 && I.hasInput(3)) {
      TRY(s, I.knownInts(3));
      sizes = s;
    } else {
      return I.invalid("Resize needs scales or sizes");
    }
  }
  size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size())
    return I.invalid(absl::StrCat(given, " scales or sizes for ", axes.size(), " axes"));
  std::vector<int64_t> outDims = x.shape;
  std::vector<double> scaleOf(rank, 1.0);
  if (!scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(scales[i] > 0) || !std::isfinite(scales[i]))
        return I.invalid(absl::StrCat("scale ", scales[i]));
      double o = std::floor(x.shape[axes[i]] * scales[i]);
      if (o > static_cast<double>(int64_t(1) << 40))
        return I.invalid("an output dim of more than 2^40");
      outDims[axes[i]] = static_cast<int64_t>(o);
      scaleOf[axes[i]] = scales[i];
    }
  } else {
    std::string policy = I.attrString("keep_aspect_ratio_policy").value_or("stretch");
    double common = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (sizes[i] < 0)
        return I.invalid(absl::StrCat("size ", sizes[i]));
      double r = static_cast<double>(sizes[i]) / x.shape[axes[i]];
      if (policy == "not_larger")
        common = std::min(common, r);
      else if (policy == "not_smaller")
        common = std::max(common, r);
      else if (policy != "stretch")
        return I.invalid(absl::StrCat("keep_aspect_ratio_policy '", policy, "'"));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      double r = policy == "stretch" ? static_cast<double>(sizes[i]) / x.shape[axes[i]] : common;
      if (policy == "stretch") {
        outDims[axes[i]] = sizes[i];
      } else {
        // In range before the conversion (an empty axis makes r infinite,
        // a size near 2^63 past int64).
        double v = std::round(r * x.shape[axes[i]]);
        if (!(v >= 0 && v <= static_cast<double>(Importer::kMaxElements)))
          return I.invalid(absl::StrCat("an output size of ", v, " along axis ", axes[i]));
        outDims[axes[i]] = static_cast<int64_t>(v);
      }
      scaleOf[axes[i]] = r;
    }
  }
  if (auto n = I.checkedElements(outDims); !n.ok())
    return n.status();
  // tf_crop_and_resize: the crop box of each resized axis (roi: the starts,
  // then the ends, one per axis), fractions of the input.
  std::vector<std::pair<double, double>> roiOf(rank, {0.0, 1.0});
  if (crop) {
    if (!I.hasInput(1))
      return I.invalid("tf_crop_and_resize needs roi (input #1)");
    TRY(r, knownFloats(1));
    if (r.size() != 2 * axes.size())
      return I.invalid(absl::StrCat("roi has ", r.size(), " values, expected ", 2 * axes.size(),
                                    " (a start and an end per resized axis)"));
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!std::isfinite(r[i]) || !std::isfinite(r[i + axes.size()]))
        return I.invalid(absl::StrCat("roi value ", r[i], " or ", r[i + axes.size()]));
      roiOf[axes[i]] = {r[i], r[i + axes.size()]};
    }
  }
  double extrapolation = I.attrFloat("extrapolation_value", 0.0f);
  double a = I.attrFloat("cubic_coeff_a", -0.75f);
  bool excludeOutside = I.attrInt("exclude_outside", 0) != 0;
  Val y = x;
  for (size_t d = 0; d < rank; ++d) {
    int64_t in = x.shape[d], out = outDims[d];
    if (in == out && scaleOf[d] == 1.0 && roiOf[d] == std::make_pair(0.0, 1.0))
      continue; // every mode maps an unscaled, uncropped axis onto itself
    if (in == 0 || out == 0)
      return I.unsupported("Resize of an empty dim");
    // Each tap's indices and weights along the axis are known vectors of
    // the axis's output length, built at import: at most 2^22 (32 MB of
    // indices a tap; 2^26 took 1-4 s and 1 GB to import).
    if (out > (int64_t(1) << 22))
      return I.unsupported(absl::StrCat("Resize to ", out, " along axis ", d,
                                        " (more than the 2^22 a tap's index vector holds)"));
    int taps = mode == "nearest" ? 1 : mode == "cubic" ? 4 : 2;
    std::vector<std::vector<int64_t>> index(taps, std::vector<int64_t>(out));
    std::vector<std::vector<double>> weight;
    // tf_crop_and_resize: a coordinate outside the input is the
    // extrapolation value (its taps weigh 0); nearest then takes weights
    // too (1 inside).
    std::vector<bool> outside(out, false);
    std::vector<double> offset;
    if (crop)
      for (int64_t o = 0; o < out; ++o) {
        TRY(src, sourceCoordinate(I, coord, o, in, out, scaleOf[d], roiOf[d]));
        outside[o] = src < 0 || src > static_cast<double>(in - 1);
      }
    bool anyOutside = std::find(outside.begin(), outside.end(), true) != outside.end();
    if (anyOutside) {
      offset.assign(out, 0.0);
      for (int64_t o = 0; o < out; ++o)
        if (outside[o])
          offset[o] = extrapolation;
    }
    if (mode != "nearest" || anyOutside)
      weight.assign(taps, std::vector<double>(out, 1.0));
    for (int64_t o = 0; o < out; ++o) {
      TRY(src, sourceCoordinate(I, coord, o, in, out, scaleOf[d], roiOf[d]));
      if (outside[o]) {
        for (int t = 0; t < taps; ++t) {
          index[t][o] = 0;
          weight[t][o] = 0.0;
        }
        continue;
      }
      if (mode == "nearest") {
        double f = std::floor(src), r = src - f;
        bool up = nearestMode == "round_prefer_floor" ? r > 0.5
                  : nearestMode == "round_prefer_ceil" ? r >= 0.5
                  : nearestMode == "ceil"              ? r > 0
                                                       : false;
        if (nearestMode != "round_prefer_floor" && nearestMode != "round_prefer_ceil" &&
            nearestMode != "floor" && nearestMode != "ceil")
          return I.invalid(absl::StrCat("nearest_mode '", nearestMode, "'"));
        index[0][o] = std::clamp<int64_t>(static_cast<int64_t>(f) + up, 0, in - 1);
        continue;
      }
      if (mode != "cubic")
        src = std::clamp(src, 0.0, static_cast<double>(in - 1));
      double f = std::floor(src), r = src - f;
      int64_t base = static_cast<int64_t>(f) - (taps == 4 ? 1 : 0);
      double c[4];
      if (taps == 2) {
        c[0] = 1 - r;
        c[1] = r;
      } else {
        auto far = [&](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };
        auto near = [&](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };
        c[0] = far(r + 1);
        c[1] = near(r);
        c[2] = near(1 - r);
        c[3] = far(2 - r);
      }
      double total = 0;
      for (int t = 0; t < taps; ++t) {
        int64_t i = base + t;
        if (excludeOutside && (i < 0 || i >= in))
          c[t] = 0;
        total += c[t];
      }
      for (int t = 0; t < taps; ++t) {
        index[t][o] = std::clamp<int64_t>(base + t, 0, in - 1);
        weight[t][o] = excludeOutside && total != 0 ? c[t] / total : c[t];
      }
    }
    TRY(r, resizeAxis(I, y, d, out, index, weight, offset));
    y = r;
  }
  return I.define(0, y);
}

} // namespace fusec::onnximport
