//===- OnnxSignal.cpp - Importers of ONNX's signal-processing ops -*- C++
//-*-===//
//
// The ops of an audio front end (a log-mel spectrogram exported from
// PyTorch or written by hand): the window functions and MelWeightMatrix,
// whose results depend only on sizes and known scalars and so are known
// values computed here, and DFT and STFT, which become one matmul by a
// known twiddle matrix (the transform is linear: its real and imaginary
// parts are sums of the input's with cosines and sines as weights). On a
// GPU that matmul runs on the tensor cores; an FFT would do fewer FLOPs,
// but the frames of a spectrogram are a few hundred samples, where the
// matmul is what libraries use too.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include <cmath>
#include <numeric>

namespace fusec::onnximport {

namespace {

#define TRY FUSEC_TRY_ASSIGN

constexpr double kPi = 3.14159265358979323846;

/// The node's `output_datatype` (default float).
absl::StatusOr<DType> outputType(Importer &I) {
  return dtypeFor(static_cast<int32_t>(I.attrInt("output_datatype", 1)));
}

/// A known 1-D tensor of `values`, as `d` (an integer type truncates, as
/// numpy's astype does).
Val knownVector(DType d, const std::vector<double> &values, std::vector<int64_t> shape) {
  HostTensor h(d, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) {
    if (isInteger(d))
      h.ints[i] = std::isfinite(values[i]) ? static_cast<int64_t>(values[i]) : 0;
    else
      h.data[i] = values[i];
  }
  h.roundInPlace();
  return knownVal(std::move(h));
}

/// A known scalar input (one element) as a double.
absl::StatusOr<double> knownScalar(Importer &I, size_t i) {
  TRY(v, I.inputData(i));
  if (!v.known)
    return I.unsupported(absl::StrCat("input #", i, " ('", I.node->inputs[i],
                                      "') must be known at import (a constant or a shape "
                                      "computation)"));
  if (v.elements() != 1)
    return I.invalid(absl::StrCat("input #", i, " must be a scalar, not ", I.ty(v)));
  return v.known->get(0);
}

/// HannWindow, HammingWindow and BlackmanWindow: a cosine sum
/// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) over n < size, where N is
/// the size (periodic, the default) or size - 1 (symmetric).
absl::Status importWindow(Importer &I) {
  TRY(sizes, I.knownInts(0));
  if (sizes.size() != 1 || sizes[0] < 0)
    return I.invalid("size must be one value, at least 0");
  int64_t size = sizes[0];
  TRY(n, I.checkedElements({size}));
  if (n > Importer::kMaxFoldElements)
    return I.unsupported(absl::StrCat("a window of ", n,
                                      " elements (above the 2^26 computed "
                                      "at import)"));
  TRY(d, outputType(I));
  const std::string &op = I.node->opType;
  double a0, a1, a2 = 0;
  if (op == "HannWindow") {
    a0 = a1 = 0.5;
  } else if (op == "HammingWindow") {
    a0 = 25.0 / 46.0;
    a1 = 1 - a0;
  } else {
    a0 = 0.42, a1 = 0.5, a2 = 0.08;
  }
  double period =
      I.attrInt("periodic", 1) ? static_cast<double>(size) : static_cast<double>(size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    // A symmetric window of one sample is that sample's peak (numpy's).
    double x = period > 0 ? 2 * kPi * static_cast<double>(i) / period : 0;
    w[i] = period > 0 ? a0 - a1 * std::cos(x) + a2 * std::cos(2 * x) : 1.0;
  }
  return I.define(0, knownVector(d, w, {size}));
}

/// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters
/// between num_mel_bins + 2 points equally spaced on the mel scale from
/// lower_edge_hertz to upper_edge_hertz, each mapped to its spectrogram bin
/// floor((dft_length + 1) f / sample_rate) (ONNX's definition).
absl::Status importMelWeightMatrix(Importer &I) {
  TRY(melBins, I.knownInts(0));
  TRY(dftLength, I.knownInts(1));
  TRY(sampleRate, I.knownInts(2));
  TRY(lower, knownScalar(I, 3));
  TRY(upper, knownScalar(I, 4));
  if (melBins.size() != 1 || dftLength.size() != 1 || sampleRate.size() != 1)
    return I.invalid("num_mel_bins, dft_length and sample_rate must be scalars");
  int64_t mels = melBins[0], length = dftLength[0], rate = sampleRate[0];
  if (mels < 1 || length < 1 || rate < 1)
    return I.invalid("num_mel_bins, dft_length and sample_rate must be positive");
  if (!(lower >= 0) || !(upper >= lower) || !std::isfinite(upper))
    return I.invalid("the edges must satisfy 0 <= lower_edge_hertz <= upper_edge_hertz");
  int64_t bins = length / 2 + 1;
  TRY(n, I.checkedElements({bins, mels}));
  if (n > Importer::kMaxFoldElements)
    return I.unsupported(absl::StrCat("a mel matrix of ", n,
                                      " elements (above the 2^26 "
                                      "computed at import)"));
  TRY(d, outputType(I));
  auto toMel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double lowMel = toMel(lower), step = (toMel(upper) - lowMel) / static_cast<double>(mels + 2);
  std::vector<int64_t> point(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + lowMel) / 2595) - 1);
    double bin = std::floor(static_cast<double>(length + 1) * hz / static_cast<double>(rate));
    // In range before the conversion (an upper edge of 1e30 Hz).
    if (!(std::fabs(bin) <= static_cast<double>(Importer::kMaxElements)))
      return I.invalid(absl::StrCat("mel point ", i, " falls at DFT bin ", bin));
    point[i] = static_cast<int64_t>(bin);
  }
  std::vector<double> w(static_cast<size_t>(n), 0.0);
  auto at = [&](int64_t bin, int64_t mel) -> double * {
    return bin >= 0 && bin < bins ? &w[bin * mels + mel] : nullptr;
  };
  for (int64_t m = 0; m < mels; ++m) {
    int64_t left = point[m], center = point[m + 1], right = point[m + 2];
    if (center == left) {
      if (double *p = at(center, m))
        *p = 1;
    } else {
      // Only the bins there are (a point far past them is no loop of its
      // length).
      for (int64_t j = std::max<int64_t>(left, 0); j <= std::min(center, bins - 1); ++j)
        if (double *p = at(j, m))
          *p = static_cast<double>(j - left) / static_cast<double>(center - left);
    }
    for (int64_t j = std::max<int64_t>(center, 0); j < std::min(right, bins); ++j)
      if (double *p = at(j, m))
        *p = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  return I.define(0, knownVector(d, w, {bins, mels}));
}

/// The DFT of `x` ([..., n, c], c = 1 for a real signal, 2 for a complex
/// one) along its dim before last, over `length` points (the signal cut or
/// padded with zeros): [..., bins, 2], bins = length or, one-sided,
/// length / 2 + 1. The inverse transform divides by `length`. `window`
/// (known, n values) weights the samples. One matmul of [rows, n c] by the
/// known [n c, bins 2] matrix of cos and sin.
absl::StatusOr<Val> dftAlongRows(Importer &I, Val x, int64_t length, bool inverse, bool onesided,
                                 const HostTensor *window) {
  if (length > Importer::kMaxFoldElements)
    return I.unsupported(absl::StrCat("a DFT over ", length,
                                      " points (its matrix is built at "
                                      "import, at most 2^26 weights)"));
  size_t r = x.shape.size();
  int64_t n = x.shape[r - 2], c = x.shape[r - 1];
  int64_t bins = onesided ? length / 2 + 1 : length;
  int64_t used = std::min(n, length);
  TRY(weights, I.checkedElements({n * c, bins * 2}));
  if (weights > Importer::kMaxFoldElements)
    return I.unsupported(absl::StrCat("a DFT of ", n, " samples into ", bins,
                                      " bins (its matrix of ", weights,
                                      " weights is above the 2^26 built at import)"));
  HostTensor w(x.dtype, {n * c, bins * 2});
  double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t i = 0; i < used; ++i) {
    double s = scale * (window ? window->get(i) : 1.0);
    for (int64_t k = 0; k < bins; ++k) {
      // (k i) mod length keeps the angle small; quarter turns are exact
      // (a cos(pi / 2) of 6e-17 would leak one part into the other).
      int64_t turn = (k * i) % length;
      double cs, sn;
      if ((4 * turn) % length == 0) {
        static constexpr double kCos[] = {1, 0, -1, 0}, kSin[] = {0, 1, 0, -1};
        cs = kCos[4 * turn / length];
        sn = sign * kSin[4 * turn / length];
      } else {
        double angle = sign * 2 * kPi * static_cast<double>(turn) / static_cast<double>(length);
        cs = std::cos(angle);
        sn = std::sin(angle);
      }
      cs *= s;
      sn *= s;
      // (a + ib)(cos + i sin) = (a cos - b sin) + i (a sin + b cos).
      w.data[(i * c) * bins * 2 + k * 2] = cs;
      w.data[(i * c) * bins * 2 + k * 2 + 1] = sn;
      if (c == 2) {
        w.data[(i * c + 1) * bins * 2 + k * 2] = -sn;
        w.data[(i * c + 1) * bins * 2 + k * 2 + 1] = cs;
      }
    }
  }
  w.roundInPlace();
  std::vector<int64_t> lead(x.shape.begin(), x.shape.end() - 2);
  int64_t rows = std::accumulate(lead.begin(), lead.end(), int64_t{1}, std::multiplies<>());
  TRY(y, matmulOf(I, I.reshape(x, {rows, n * c}), knownVal(std::move(w)), false, false));
  std::vector<int64_t> shape = lead;
  shape.push_back(bins);
  shape.push_back(2);
  return I.reshape(y, shape);
}

/// The signal's layout: [..., 1] (real) or [..., 2] (complex), float.
absl::Status checkSignal(Importer &I, const Val &x, size_t minRank) {
  if (x.shape.size() < minRank || (x.shape.back() != 1 && x.shape.back() != 2))
    return I.invalid(absl::StrCat("the signal is ", I.ty(x), "; expected rank ", minRank,
                                  " or more with a last dim of 1 (real) or 2 (complex)"));
  if (isInteger(x.dtype))
    return I.invalid("the signal must be of a float type");
  return absl::OkStatus();
}

/// DFT (opset 17: `axis` an attribute, default 1; opset 20: the third
/// input, default -2), dft_length (the second input; default the axis'
/// size), inverse, onesided. The axis goes next to the last dim, the
/// transform is taken there, and it moves back.
absl::Status importDFT(Importer &I) {
  TRY(x, I.input(0));
  if (auto st = checkSignal(I, x, 2); !st.ok())
    return st;
  int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = I.opset >= 20 ? -2 : I.attrInt("axis", 1);
  if (I.opset >= 20 && I.hasInput(2)) {
    TRY(a, I.knownInts(2));
    if (a.size() != 1)
      return I.invalid("axis must be one value");
    axis = a[0];
  }
  if (axis < -r || axis > r - 2 || axis == -1)
    return I.invalid(absl::StrCat("axis ", axis, " is outside [", -r, ", -2] and [0, ", r - 2,
                                  "] for a signal of rank ", r));
  if (axis < 0)
    axis += r;
  int64_t length = x.shape[axis];
  if (I.hasInput(1)) {
    TRY(l, I.knownInts(1));
    if (l.size() != 1 || l[0] < 1)
      return I.invalid("dft_length must be one positive value");
    length = l[0];
  }
  if (length < 1)
    return I.invalid("a DFT over an empty axis");
  bool inverse = I.attrInt("inverse", 0) != 0, onesided = I.attrInt("onesided", 0) != 0;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < r - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(r - 1);
  bool moved = axis != r - 2;
  Val xt = moved ? I.transpose(x, perm) : x;
  TRY(y, dftAlongRows(I, xt, length, inverse, onesided, nullptr));
  if (!moved)
    return I.define(0, y);
  std::vector<int64_t> back(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d)
    back[perm[d]] = d;
  return I.define(0, I.transpose(y, back));
}

/// STFT: frames of frame_length samples every frame_step of each batch's
/// signal ([batch, length, 1 or 2]), weighted by the window, each one's
/// DFT: [batch, frames, bins, 2]. The frames are one gather (a separable
/// index map); a known window is folded into the DFT's matrix, a run-time
/// one multiplies the frames.
absl::Status importSTFT(Importer &I) {
  TRY(x, I.input(0));
  if (auto st = checkSignal(I, x, 3); !st.ok())
    return st;
  if (x.shape.size() != 3)
    return I.invalid(absl::StrCat("the signal is ", I.ty(x), "; expected [batch, length, 1 or 2]"));
  TRY(steps, I.knownInts(1));
  if (steps.size() != 1 || steps[0] < 1)
    return I.invalid("frame_step must be one positive value");
  int64_t step = steps[0], batch = x.shape[0], length = x.shape[1], c = x.shape[2];
  std::optional<Val> window;
  if (I.hasInput(2)) {
    TRY(wv, I.inputData(2));
    if (wv.shape.size() != 1 || wv.dtype != x.dtype)
      return I.invalid(absl::StrCat("the window is ", I.ty(wv),
                                    "; expected a vector of the "
                                    "signal's type"));
    window = wv;
  }
  int64_t frameLength = window ? window->shape[0] : length;
  if (I.hasInput(3)) {
    TRY(fl, I.knownInts(3));
    if (fl.size() != 1 || fl[0] < 1)
      return I.invalid("frame_length must be one positive value");
    if (window && fl[0] != frameLength)
      return I.invalid(absl::StrCat("frame_length ", fl[0], " differs from the window's ",
                                    frameLength, " samples"));
    frameLength = fl[0];
  }
  if (frameLength < 1 || frameLength > length)
    return I.invalid(absl::StrCat("a frame of ", frameLength, " samples in a signal of ", length));
  int64_t frames = 1 + (length - frameLength) / step;
  std::vector<int64_t> shape = {batch, frames, frameLength, c};
  TRY(count, I.checkedElements(shape));
  (void)count;
  TRY(index, I.separableIndexMap(shape, [&](int64_t d, int64_t at) -> int64_t {
    switch (d) {
    case 0:
      return at * length * c;
    case 1:
      return at * step * c;
    case 2:
      return at * c;
    default:
      return at;
    }
  }));
  Val framed = I.gatherFlat(x, index);
  const HostTensor *known = window && window->known ? window->known.get() : nullptr;
  if (window && !known) {
    TRY(weighted, I.binary("mul", framed, I.reshape(*window, {1, 1, frameLength, 1})));
    framed = weighted;
  }
  bool onesided = I.attrInt("onesided", 1) != 0;
  TRY(y, dftAlongRows(I, framed, frameLength, /*inverse=*/false, onesided, known));
  return I.define(0, y);
}

} // namespace

absl::Status importSignalOp(Importer &I) {
  const std::string &op = I.node->opType;
  if (op == "DFT")
    return importDFT(I);
  if (op == "STFT")
    return importSTFT(I);
  if (op == "MelWeightMatrix")
    return importMelWeightMatrix(I);
  return importWindow(I);
}

} // namespace fusec::onnximport
