//===- OnnxRecurrent.cpp - Importers of RNN, GRU and LSTM -------*- C++ -*-===//
//
// ONNX's recurrent layers, unrolled at import over their (static) sequence
// length. Each direction's input projection is one matmul over every step
// at once ([seq x batch, input] by W^T), the recurrence one [batch, hidden]
// by R^T matmul a step, and each step's gates are elementwise ops that the
// fusion pass puts into that matmul's epilogue or one kernel beside it.
// Everything ONNX specifies is read: the three directions, both layouts,
// the per-direction activation lists with their alphas and betas, clip,
// peepholes, GRU's linear_before_reset, initial states, and sequence_lens
// (forward steps past a sequence's length keep its state and write zeros).
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"

#include <cmath>
#include <map>

namespace fusec::onnximport {

namespace {

#define TRY FUSEC_TRY_ASSIGN

/// Steps a recurrent node may unroll into: each is a few ops, and a
/// sequence past this is a loop fusec does not have.
constexpr int64_t kMaxSteps = 4096;

struct Activation {
  std::string name; ///< lower case
  double alpha = 0, beta = 0;
};

/// The node's activation list: `perDirection` names for each direction,
/// the attribute's or the op's defaults, with alphas and betas consumed in
/// order by the functions that take them (as onnxruntime reads them).
absl::StatusOr<std::vector<Activation>> activations(Importer &I, int dirs, int perDirection,
                                                    std::vector<std::string> defaults) {
  std::vector<std::string> names;
  if (const onnx::Attribute *a = I.node->attr("activations"); a && !a->strings.empty()) {
    names = a->strings;
  } else {
    for (int d = 0; d < dirs; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() == static_cast<size_t>(perDirection) && dirs == 2)
    names.insert(names.end(), names.begin(), names.end());
  if (names.size() != static_cast<size_t>(dirs * perDirection))
    return I.invalid(absl::StrCat("activations lists ", names.size(), " functions, expected ",
                                  dirs * perDirection));
  std::vector<float> alphas, betas;
  if (const onnx::Attribute *a = I.node->attr("activation_alpha"))
    alphas = a->floats;
  if (const onnx::Attribute *a = I.node->attr("activation_beta"))
    betas = a->floats;
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string &n : names) {
    Activation act{absl::AsciiStrToLower(n)};
    // (default alpha, default beta; NaN: the function takes none).
    static const std::map<std::string, std::pair<double, double>> params = {
        {"tanh", {NAN, NAN}},        {"sigmoid", {NAN, NAN}},  {"relu", {NAN, NAN}},
        {"softsign", {NAN, NAN}},    {"softplus", {NAN, NAN}}, {"affine", {1.0, 0.0}},
        {"leakyrelu", {0.01, NAN}},  {"thresholdedrelu", {1.0, NAN}},
        {"scaledtanh", {1.0, 1.0}},  {"hardsigmoid", {0.2, 0.5}}, {"elu", {1.0, NAN}},
    };
    auto it = params.find(act.name);
    if (it == params.end())
      return I.unsupported(absl::StrCat("activation function '", n, "'"));
    if (!std::isnan(it->second.first))
      act.alpha = ai < alphas.size() ? alphas[ai++] : it->second.first;
    if (!std::isnan(it->second.second))
      act.beta = bi < betas.size() ? betas[bi++] : it->second.second;
    out.push_back(act);
  }
  return out;
}

absl::StatusOr<Val> activate(Importer &I, const Activation &a, Val x) {
  auto k = [&](double v) { return I.constant(x.dtype, v); };
  const std::string &n = a.name;
  if (n == "tanh" || n == "sigmoid")
    return I.unary(n.c_str(), x);
  if (n == "relu")
    return I.binary("max", x, k(0));
  if (n == "affine") {
    TRY(m, I.binary("mul", x, k(a.alpha)));
    return I.binary("add", m, k(a.beta));
  }
  if (n == "scaledtanh") {
    TRY(m, I.binary("mul", x, k(a.beta)));
    return I.binary("mul", I.unary("tanh", m), k(a.alpha));
  }
  if (n == "hardsigmoid") {
    TRY(m, I.binary("mul", x, k(a.alpha)));
    TRY(s, I.binary("add", m, k(a.beta)));
    TRY(lo, I.binary("max", s, k(0)));
    return I.binary("min", lo, k(1));
  }
  if (n == "softsign") {
    TRY(d, I.binary("add", I.unary("abs", x), k(1)));
    return I.binary("div", x, d);
  }
  if (n == "softplus") {
    TRY(e, I.binary("add", I.unary("exp", x), k(1)));
    return I.unary("log", e);
  }
  Val zero = I.broadcastTo(k(0), x.shape);
  if (n == "leakyrelu" || n == "elu") {
    Val neg = I.compare("lt", x, zero);
    Val negPart;
    if (n == "leakyrelu") {
      TRY(m, I.binary("mul", x, k(a.alpha)));
      negPart = m;
    } else {
      TRY(e, I.binary("sub", I.unary("exp", x), k(1)));
      TRY(m, I.binary("mul", e, k(a.alpha)));
      negPart = m;
    }
    return I.select(neg, negPart, x);
  }
  // thresholdedrelu: x where x > alpha, else 0.
  Val above = I.compare("gt", x, I.broadcastTo(k(a.alpha), x.shape));
  return I.select(above, x, zero);
}

/// One recurrent node: RNN (1 gate), GRU (3: z, r, h) or LSTM (4: i, o, f, c).
absl::Status importRecurrent(Importer &I) {
  const std::string &op = I.node->opType;
  const bool gru = op == "GRU", lstm = op == "LSTM";
  const int gates = lstm ? 4 : gru ? 3 : 1;
  std::string direction = I.attrString("direction").value_or("forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return I.invalid(absl::StrCat("direction '", direction, "'"));
  const int dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = I.attrInt("layout", 0);
  if (layout != 0 && layout != 1)
    return I.invalid(absl::StrCat("layout ", layout, ", expected 0 or 1"));
  if (lstm && I.attrInt("input_forget", 0) != 0)
    return I.unsupported("LSTM input_forget = 1");
  const bool linearBeforeReset = gru && I.attrInt("linear_before_reset", 0) != 0;

  TRY(x, I.input(0));
  TRY(w, I.input(1));
  TRY(r, I.input(2));
  if (!isFloat(x.dtype) || x.dtype != w.dtype || x.dtype != r.dtype)
    return I.invalid(absl::StrCat("X, W and R are ", I.ty(x), ", ", I.ty(w), ", ", I.ty(r),
                                  ": expected floats of one type"));
  if (x.shape.size() != 3)
    return I.invalid(absl::StrCat("X is ", I.ty(x), ", expected rank 3"));
  if (layout == 1)
    x = I.transpose(x, {1, 0, 2});
  const int64_t seq = x.shape[0], batch = x.shape[1], inSize = x.shape[2];
  if (w.shape.size() != 3 || w.shape[0] != dirs || w.shape[1] % gates != 0 ||
      w.shape[2] != inSize)
    return I.invalid(absl::StrCat("W is ", I.ty(w), ", expected [", dirs, ", ", gates,
                                  " x hidden_size, ", inSize, "]"));
  const int64_t hidden = w.shape[1] / gates, gh = gates * hidden;
  if (I.attrInt("hidden_size", hidden) != hidden)
    return I.invalid(absl::StrCat("hidden_size ", I.attrInt("hidden_size", hidden),
                                  " but W holds ", hidden));
  if (r.shape != std::vector<int64_t>{dirs, gh, hidden})
    return I.invalid(absl::StrCat("R is ", I.ty(r), ", expected [", dirs, ", ", gh, ", ",
                                  hidden, "]"));
  if (seq > kMaxSteps)
    return I.unsupported(absl::StrCat("a sequence of ", seq,
                                      " steps (recurrent layers are unrolled at import, at most ",
                                      kMaxSteps, " steps)"));
  const DType dt = x.dtype;
  auto k = [&](double v) { return I.constant(dt, v); };

  std::optional<Val> bias;
  if (I.hasInput(3)) {
    TRY(b, I.input(3));
    if (b.dtype != dt || b.shape != std::vector<int64_t>{dirs, 2 * gh})
      return I.invalid(absl::StrCat("B is ", I.ty(b), ", expected [", dirs, ", ", 2 * gh, "]"));
    bias = b;
  }
  // sequence_lens: forward steps at or past a sequence's length keep the
  // state and write zeros. A reverse pass over ragged sequences starts each
  // at its own last step, which needs per-sequence gathers: refused, unless
  // the lengths are known and all full.
  std::optional<Val> lens;
  if (I.hasInput(4)) {
    TRY(l, I.inputData(4));
    if (l.shape != std::vector<int64_t>{batch} || isFloat(l.dtype))
      return I.invalid(absl::StrCat("sequence_lens is ", I.ty(l), ", expected [", batch,
                                    "] integers"));
    bool full = false;
    if (l.known) {
      full = true;
      for (int64_t i = 0; i < batch; ++i)
        full &= l.known->getInt(i) == seq;
    }
    if (!full) {
      if (direction != "forward")
        return I.unsupported(absl::StrCat(
            "sequence_lens on a ", direction,
            " pass (only a forward pass takes sequences shorter than the input)"));
      lens = I.cast(l, DType::I64);
    }
  }
  auto state = [&](size_t in, const char *what) -> absl::StatusOr<std::optional<Val>> {
    if (!I.hasInput(in))
      return std::optional<Val>();
    TRY(s, I.input(in));
    if (s.dtype != dt || s.shape.size() != 3)
      return I.invalid(absl::StrCat(what, " is ", I.ty(s), ", expected rank 3 of X's type"));
    if (layout == 1)
      s = I.transpose(s, {1, 0, 2});
    if (s.shape != std::vector<int64_t>{dirs, batch, hidden})
      return I.invalid(absl::StrCat(what, " is ", I.ty(s), ", expected [", dirs, ", ", batch,
                                    ", ", hidden, "] in this layout"));
    return std::optional<Val>(s);
  };
  TRY(initialH, state(5, "initial_h"));
  std::optional<Val> initialC, peep;
  if (lstm) {
    TRY(c0, state(6, "initial_c"));
    initialC = c0;
    if (I.hasInput(7)) {
      TRY(p, I.input(7));
      if (p.dtype != dt || p.shape != std::vector<int64_t>{dirs, 3 * hidden})
        return I.invalid(absl::StrCat("P is ", I.ty(p), ", expected [", dirs, ", ",
                                      3 * hidden, "]"));
      peep = p;
    }
  }
  std::optional<double> clip;
  if (const onnx::Attribute *a = I.node->attr("clip"); a && (a->has & onnx::Attribute::kF)) {
    if (!(a->f > 0))
      return I.invalid(absl::StrCat("clip ", a->f, ", expected a positive threshold"));
    clip = a->f;
  }
  TRY(acts, activations(I, dirs, lstm ? 3 : gru ? 2 : 1,
                        lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                        : gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                              : std::vector<std::string>{"Tanh"}));

  // Pieces along the last dim of a [rows, n] value.
  auto cols = [&](Val v, int64_t at, int64_t n) {
    return I.slice(v, {0, at}, {1, 1}, {v.shape[0], n});
  };
  auto row = [&](Val v, int64_t d) { // v[d] of a [dirs, ...] value
    std::vector<int64_t> off(v.shape.size(), 0), one(v.shape.size(), 1), shape = v.shape;
    off[0] = d;
    shape[0] = 1;
    std::vector<int64_t> rest(v.shape.begin() + 1, v.shape.end());
    return I.reshape(I.slice(v, off, one, shape), rest);
  };
  auto clipped = [&](Val v) -> absl::StatusOr<Val> {
    if (!clip)
      return v;
    TRY(lo, I.binary("max", v, k(-*clip)));
    return I.binary("min", lo, k(*clip));
  };

  std::vector<Val> yDirs, hDirs, cDirs;
  Val x2 = I.reshape(x, {seq * batch, inSize});
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const Activation *f = &acts[d * (lstm ? 3 : gru ? 2 : 1)];
    Val wd = row(w, d), rd = row(r, d);
    // The input projection of every step, with W's bias (and R's, except
    // for GRU's h gate, which R's product or the reset gate must see).
    TRY(xwFlat, matmulOf(I, x2, wd, false, true));
    std::optional<Val> rBias;
    if (bias) {
      Val bd = row(*bias, d);
      Val wb = I.slice(bd, {0}, {1}, {gh}), rb = I.slice(bd, {gh}, {1}, {gh});
      if (gru) {
        rBias = rb;
        TRY(s, I.binary("add", xwFlat, wb));
        xwFlat = s;
      } else {
        TRY(both, I.binary("add", wb, rb));
        TRY(s, I.binary("add", xwFlat, both));
        xwFlat = s;
      }
    }
    Val xw = I.reshape(xwFlat, {seq, batch, gh});
    Val h = initialH ? row(*initialH, d) : I.broadcastTo(k(0), {batch, hidden});
    Val c;
    if (lstm)
      c = initialC ? row(*initialC, d) : I.broadcastTo(k(0), {batch, hidden});
    std::optional<Val> pi, po, pf;
    if (peep) {
      Val pd = row(*peep, d);
      pi = I.slice(pd, {0}, {1}, {hidden});
      po = I.slice(pd, {hidden}, {1}, {hidden});
      pf = I.slice(pd, {2 * hidden}, {1}, {hidden});
    }
    // GRU without linear_before_reset multiplies the reset gate into h
    // before R_h: R splits into its z/r rows and its h rows.
    Val rzr = gru && !linearBeforeReset ? I.slice(rd, {0, 0}, {1, 1}, {2 * hidden, hidden}) : rd;
    Val rh = gru && !linearBeforeReset ? I.slice(rd, {2 * hidden, 0}, {1, 1}, {hidden, hidden})
                                       : rd;
    std::vector<Val> ys(seq);
    for (int64_t s = 0; s < seq; ++s) {
      int64_t t = reverse ? seq - 1 - s : s;
      Val xt = I.reshape(I.slice(xw, {t, 0, 0}, {1, 1, 1}, {1, batch, gh}), {batch, gh});
      TRY(hr, matmulOf(I, h, rzr, false, true));
      Val hNew, cNew;
      if (!gru && !lstm) {
        TRY(pre, I.binary("add", xt, hr));
        TRY(pc, clipped(pre));
        TRY(a, activate(I, f[0], pc));
        hNew = a;
      } else if (gru) {
        if (rBias) {
          Val rb = linearBeforeReset ? *rBias : I.slice(*rBias, {0}, {1}, {2 * hidden});
          TRY(s2, I.binary("add", hr, rb));
          hr = s2;
        }
        TRY(zPre, I.binary("add", cols(xt, 0, hidden), cols(hr, 0, hidden)));
        TRY(rPre, I.binary("add", cols(xt, hidden, hidden), cols(hr, hidden, hidden)));
        TRY(zc, clipped(zPre));
        TRY(rc, clipped(rPre));
        TRY(z, activate(I, f[0], zc));
        TRY(rg, activate(I, f[0], rc));
        Val hh;
        if (linearBeforeReset) {
          TRY(m, I.binary("mul", rg, cols(hr, 2 * hidden, hidden)));
          hh = m;
        } else {
          TRY(rhPrev, I.binary("mul", rg, h));
          TRY(m, matmulOf(I, rhPrev, rh, false, true));
          hh = m;
          if (rBias) {
            TRY(s2, I.binary("add", hh, I.slice(*rBias, {2 * hidden}, {1}, {hidden})));
            hh = s2;
          }
        }
        TRY(hPre, I.binary("add", cols(xt, 2 * hidden, hidden), hh));
        TRY(hc, clipped(hPre));
        TRY(cand, activate(I, f[1], hc));
        // (1 - z) h~ + z h = h~ + z (h - h~)
        TRY(diff, I.binary("sub", h, cand));
        TRY(zd, I.binary("mul", z, diff));
        TRY(sum, I.binary("add", cand, zd));
        hNew = sum;
      } else {
        auto gate = [&](int g, const std::optional<Val> &p, const Val &cell,
                        const Activation &act) -> absl::StatusOr<Val> {
          TRY(pre, I.binary("add", cols(xt, g * hidden, hidden), cols(hr, g * hidden, hidden)));
          if (p) {
            TRY(pc, I.binary("mul", *p, cell));
            TRY(s2, I.binary("add", pre, pc));
            pre = s2;
          }
          TRY(cl, clipped(pre));
          return activate(I, act, cl);
        };
        TRY(ig, gate(0, pi, c, f[0]));
        TRY(fg, gate(2, pf, c, f[0]));
        TRY(cg, gate(3, std::nullopt, c, f[1]));
        TRY(fc, I.binary("mul", fg, c));
        TRY(ic, I.binary("mul", ig, cg));
        TRY(cn, I.binary("add", fc, ic));
        TRY(og, gate(1, po, cn, f[0]));
        TRY(hc, activate(I, f[2], cn));
        TRY(hn, I.binary("mul", og, hc));
        hNew = hn;
        cNew = cn;
      }
      Val y = hNew;
      if (lens) {
        // Step t counts where t < sequence_lens[b].
        TRY(live, I.compareBroadcast("lt", I.intConstant(DType::I64, t), *lens));
        Val liveRows = I.reshape(live, {batch, 1});
        TRY(hs, I.select(liveRows, hNew, h));
        hNew = hs;
        if (lstm) {
          TRY(cs, I.select(liveRows, cNew, c));
          cNew = cs;
        }
        TRY(ym, I.select(liveRows, hNew, I.broadcastTo(k(0), {batch, hidden})));
        y = ym;
      }
      ys[t] = I.reshape(y, {1, batch, hidden});
      h = hNew;
      if (lstm)
        c = cNew;
    }
    if (I.hasOutput(0))
      yDirs.push_back(I.reshape(concatAlong(I, ys, 0), {seq, 1, batch, hidden}));
    hDirs.push_back(I.reshape(h, {1, batch, hidden}));
    if (lstm)
      cDirs.push_back(I.reshape(c, {1, batch, hidden}));
  }
  if (I.hasOutput(0)) {
    Val y = concatAlong(I, yDirs, 1);
    if (absl::Status st = I.define(0, layout == 1 ? I.transpose(y, {2, 0, 1, 3}) : y); !st.ok())
      return st;
  }
  auto finalState = [&](size_t out, std::vector<Val> &parts) -> absl::Status {
    if (!I.hasOutput(out))
      return absl::OkStatus();
    Val v = concatAlong(I, parts, 0);
    return I.define(out, layout == 1 ? I.transpose(v, {1, 0, 2}) : v);
  };
  if (absl::Status st = finalState(1, hDirs); !st.ok())
    return st;
  if (lstm)
    return finalState(2, cDirs);
  return absl::OkStatus();
}

} // namespace

absl::Status importRNN(Importer &I) { return importRecurrent(I); }

} // namespace fusec::onnximport
