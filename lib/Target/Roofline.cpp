//===- Roofline.cpp - The roofline model and its report ---------*- C++ -*-===//

#include "fusec/Target/Roofline.h"
#include "fusec/IR/Fusec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace fusec {

const char *roofName(Roof roof) {
  switch (roof) {
  case Roof::Hbm:
    return "hbm";
  case Roof::Tensor:
    return "tensor";
  case Roof::Fp32:
    return "fp32";
  case Roof::Sfu:
    return "sfu";
  }
  return "?";
}

double KernelAnalysis::roofSeconds(Roof r) const {
  switch (r) {
  case Roof::Hbm:
    return hbmSeconds;
  case Roof::Tensor:
    return tensorSeconds;
  case Roof::Fp32:
    return fp32Seconds;
  case Roof::Sfu:
    return sfuSeconds;
  }
  return 0;
}

double KernelAnalysis::headroom(Roof r) const {
  double t = roofSeconds(r);
  if (t <= 0)
    return std::numeric_limits<double>::infinity();
  return roofSeconds(bound) / t;
}

namespace {

constexpr Roof kRoofs[] = {Roof::Hbm, Roof::Tensor, Roof::Fp32, Roof::Sfu};


std::string locationOf(Operation *op) {
  if (auto fl = op->getLoc()->findInstanceOf<FileLineColLoc>())
    return absl::StrCat(fl.getFilename().getValue().str(), ":", fl.getLine(),
                        ":", fl.getColumn());
  return "";
}

/// Adds one primitive op's compute work to `k`.
void addWork(KernelAnalysis &k, Operation *op, const OpCost &cost,
             const Target &t) {
  if (isa<MatmulOp, AttentionOp>(op)) {
    k.tensorFlops = OpCost::saturatingAdd(k.tensorFlops, cost.flops);
    k.tensorSeconds +=
        cost.flops / t.tensorFlopsPerSecond(dtypeOf(op->getOperand(0).getType()).value_or(DType::F32));
  } else {
    k.fp32Seconds += cost.flops / t.fp32FlopsPerSecond();
  }
  k.sfuSeconds += cost.sfuOps / t.sfuOpsPerSecond();
}

void finish(KernelAnalysis &k, const Target &t) {
  k.hbmSeconds = k.cost.bytes() / t.hbmBytesPerSecond();
  k.launchSeconds = t.launchSeconds();
  k.bound = Roof::Hbm;
  for (Roof r : kRoofs)
    if (k.roofSeconds(r) > k.roofSeconds(k.bound))
      k.bound = r;
  k.predictedSeconds = k.roofSeconds(k.bound) + k.launchSeconds;
}

bool isFree(const OpCost &c) {
  return c.flops == 0 && c.bytes() == 0 && c.sfuOps == 0;
}

/// Peak bytes alive when `nodes` run in order. Each node defines some
/// buffers and uses others; `aliasOf` maps views (reshapes) and kernel
/// block arguments/results onto the buffer they share.
struct Liveness {
  llvm::DenseMap<Value, Value> alias;
  std::vector<std::pair<std::vector<Value>, std::vector<Value>>> nodes;

  Value canon(Value v) const {
    for (auto it = alias.find(v); it != alias.end(); it = alias.find(v))
      v = it->second;
    return v;
  }

  int64_t peak(ArrayRef<Value> args, ArrayRef<Value> returned) const {
    struct Interval {
      int start, end;
      int64_t bytes;
    };
    llvm::DenseMap<Value, Interval> live;
    auto touch = [&](Value v, int at, bool def) {
      v = canon(v);
      auto it = live.find(v);
      if (it == live.end()) {
        live[v] = {def ? at : -1, at, tensorBytes(v.getType())};
        return;
      }
      it->second.end = std::max(it->second.end, at);
    };
    for (Value a : args)
      touch(a, -1, true);
    for (auto [i, node] : llvm::enumerate(nodes)) {
      for (Value u : node.second)
        touch(u, static_cast<int>(i), false);
      for (Value d : node.first)
        touch(d, static_cast<int>(i), true);
    }
    int n = static_cast<int>(nodes.size());
    for (Value r : returned)
      touch(r, n, false);
    // The arguments are the caller's, held for the whole call.
    for (Value a : args)
      touch(a, n, false);
    // Sweep: +bytes where an interval starts, -bytes after it ends.
    // In 128 bits: a valid graph's tensors may each be near 2^62 bytes
    // (fuzz_mlir found sums that wrapped); the peak saturates at INT64_MAX.
    std::vector<__int128> delta(n + 3, 0);
    for (auto &kv : live) {
      delta[kv.second.start + 1] += kv.second.bytes;
      delta[kv.second.end + 2] -= kv.second.bytes;
    }
    __int128 best = 0, sum = 0;
    for (int t = 0; t <= n + 1; ++t) {
      sum += delta[t];
      best = std::max(best, sum);
    }
    return static_cast<int64_t>(std::min<__int128>(best, INT64_MAX));
  }
};

void addTotals(GraphTotals &t, const KernelAnalysis &k) {
  ++t.kernels;
  // Saturating, as the costs are: a valid graph's figures may pass int64.
  t.flops = OpCost::saturatingAdd(t.flops, k.cost.flops);
  t.bytes = OpCost::saturatingAdd(t.bytes, k.cost.bytes());
  t.sfuOps = OpCost::saturatingAdd(t.sfuOps, k.cost.sfuOps);
  t.predictedSeconds += k.predictedSeconds;
}

} // namespace

double matmulEpilogueInstructions(Block &body) {
  // Rough SASS instructions per output element (ScalarMath.cpp's
  // expansions): an op 1, and 1 more to round a narrow result; a cast to a
  // narrow type 2; the SFU's functions 4-8, erf's polynomial 18, an IEEE
  // division 10 (by a constant: a multiply); a full-shape input (a
  // residual) 8, for the latency of its load; each output's store 2.
  MatmulOp mm;
  double n = 0;
  for (Operation &op : body) {
    if (auto m = dyn_cast<MatmulOp>(op)) {
      mm = m;
      continue;
    }
    if (isa<BroadcastOp, ReshapeOp, TransposeOp, ConstantOp>(op))
      continue;
    if (isa<YieldOp>(op)) {
      n += 2.0 * op.getNumOperands();
      continue;
    }
    // A narrow result rounds (to f16/bf16 and back): one more.
    if (!isa<CastOp>(op) && op.getNumResults() == 1 &&
        elementBytes(getElementTypeOrSelf(op.getResult(0).getType())) < 4)
      n += 1;
    if (auto g = dyn_cast<GeluOp>(op)) {
      n += g.getTanh() ? 14 : 24; // before decomposition: its primitives
    } else if (isa<SiluOp>(op)) {
      n += 10;
    } else if (isa<ErfOp>(op)) {
      n += 18;
    } else if (isa<DivOp>(op)) {
      Value rhs = op.getOperand(1);
      if (auto b = rhs.getDefiningOp<BroadcastOp>())
        rhs = b.getInput();
      n += rhs.getDefiningOp<ConstantOp>() ? 1 : 10;
    } else if (isa<TanhOp, SigmoidOp, PowOp, SinOp, CosOp, SqrtOp>(op)) {
      n += 8;
    } else if (isa<ExpOp, Exp2Op, LogOp, RsqrtOp>(op)) {
      n += 4;
    } else if (auto c = dyn_cast<CastOp>(op)) {
      n += elementBytes(getElementTypeOrSelf(c.getType())) < 4 ? 2 : 1;
    } else {
      n += 1;
    }
  }
  if (!mm)
    return n;
  // Inputs of the result's shape read by the epilogue (not the operands:
  // a square matmul's lhs has the result's shape too).
  auto shape = cast<RankedTensorType>(mm.getType()).getShape();
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getShape() != shape)
      continue;
    SmallVector<Value> work{arg};
    bool operand = false;
    while (!work.empty() && !operand) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (isa<MatmulOp>(user))
          operand = true;
        else if (isa<ReshapeOp, TransposeOp>(user))
          work.push_back(user->getResult(0));
      }
    }
    if (!operand)
      n += 8;
  }
  return n;
}

/// The attention intrinsic's tiled kernel (runtime_kernels/attention_sm90.cu)
/// as its grid runs it, in seconds, or 0 where the target has no figures
/// for it or the problem goes to its decode and split-KV kernels (at most
/// 16 query rows: memory-bound, the roofline's). A tile is 128 query rows
/// of a head; it visits key blocks of 128 (64 at head dim 256), fewer when
/// causal. A block costs its two GEMMs at attention_tensor_efficiency of
/// the tensor rate plus the softmax of its scores at
/// attention_softmax_scores_per_clock_per_sm (the part the GEMMs do not
/// hide); the blocks spread evenly over the CTAs (one an SM, or one a tile
/// when there are fewer), and each wave of tiles adds attention_tile_us
/// (Q's load, the first K block's, the epilogue). Fitted on the H200 to
/// 18 shapes (bench/results/2026-12-04-h200-attention-persistent): every
/// one within 0.85-1.11 of its measured time.
double attentionTiledSeconds(AttentionOp op, const Target &t) {
  const double eff = t.value("attention_tensor_efficiency");
  const double scores = t.value("attention_softmax_scores_per_clock_per_sm");
  const double tileUs = t.value("attention_tile_us");
  const double sms = t.value("sm_count"), clock = t.value("clock_ghz") * 1e9;
  if (eff <= 0 || scores <= 0 || tileUs <= 0 || sms <= 0 || clock <= 0)
    return 0;
  auto q = dyn_cast<RankedTensorType>(op.getQuery().getType());
  auto k = dyn_cast<RankedTensorType>(op.getKey().getType());
  if (!q || !k || q.getRank() != 4 || k.getRank() != 4 || !q.hasStaticShape() ||
      !k.hasStaticShape())
    return 0;
  SmallVector<int64_t, 4> qShape = op.logicalShape(0), kShape = op.logicalShape(1);
  const int64_t b = qShape[0], h = qShape[1], sq = qShape[2], d = qShape[3], skv = kShape[2];
  constexpr int64_t kBlockM = 128, kSplitMaxRows = 16, kMaxRowBlocks = int64_t(1) << 20;
  const int64_t mBlocks = (sq + kBlockM - 1) / kBlockM;
  if (sq <= kSplitMaxRows || (d != 64 && d != 128 && d != 256) || mBlocks > kMaxRowBlocks)
    return 0;
  const int64_t bn = d <= 128 ? 128 : 64;
  // Key blocks one head's row blocks visit (the kernel's tileAt).
  double blocks = 0;
  for (int64_t m = 0; m < mBlocks; ++m) {
    int64_t end = skv;
    if (op.getCausal())
      end = std::min(end, (m + 1) * kBlockM + (skv - sq));
    blocks += end > 0 ? double((end + bn - 1) / bn) : 0.0;
  }
  const double heads = double(b) * double(h);
  const double tiles = heads * double(mBlocks);
  const double perSm =
      t.tensorFlopsPerSecond(dtypeOf(q).value_or(DType::BF16)) / sms * eff;
  const double block = 4.0 * kBlockM * bn * d / perSm + double(kBlockM * bn) / (scores * clock);
  return heads * blocks * block / std::min(tiles, sms) + std::ceil(tiles / sms) * tileUs * 1e-6;
}

KernelAnalysis analyzeOp(Operation *op, const Target &target) {
  KernelAnalysis k;
  double gemmLatency = 0;
  k.location = locationOf(op);
  if (auto kernel = dyn_cast<KernelOp>(op)) {
    k.name = kernel.getName() ? kernel.getName()->str() : "kernel";
    k.cost = kernel.getCost();
    k.ops = 0;
    kernel.getBody().walk([&](Operation *inner) {
      auto costed = dyn_cast<CostOpInterface>(inner);
      if (!costed)
        return;
      ++k.ops;
      addWork(k, inner, costed.getCost(), target);
    });
    // A tensor-core GEMM's mainloop reaches a measured fraction of the
    // tensor rate, and its work units come in waves over the grid: the last
    // wave may leave SMs idle.
    auto launch = kernel->getAttrOfType<LaunchAttr>("fusec.launch");
    if (launch && (launch.getStrategy() == Strategy::matmul_wgmma ||
                   launch.getStrategy() == Strategy::matmul_tcgen05) &&
        launch.getTile().size() == 3) {
      MatmulOp mm;
      kernel.getBody().walk([&](MatmulOp m) { mm = m; });
      if (mm) {
        auto out = cast<RankedTensorType>(mm.getType());
        int64_t m = out.getDimSize(out.getRank() - 2), n = out.getDimSize(out.getRank() - 1);
        int64_t batch = tensorElements(out) / std::max<int64_t>(1, m * n);
        auto tile = launch.getTile();
        double tiles = double((m + tile[0] - 1) / tile[0]) * ((n + tile[1] - 1) / tile[1]) *
                       batch;
        // Waves over the SMs, not over the grid: a grid of fewer units than
        // SMs (one CTA an SM) leaves the others' tensor cores idle (104
        // tiles of ResNet-50's last 3x3 take 104 of 132 SMs: 1.27x the
        // time of the whole chip's rate). A split unit is a 1/split share
        // of a tile's mainloop; with unsplit tiles, the busiest SM runs its
        // share of the whole tiles' waves, then of the split tiles'.
        double sms = target.value("sm_count");
        double slots = sms > 0 ? sms : std::max<double>(1, launch.getGrid());
        double split = static_cast<double>(launch.getSplit());
        double whole = std::min<double>(static_cast<double>(launch.getUnsplit()), tiles);
        double busiest = std::ceil(whole / slots) +
                         std::ceil((tiles - whole) * split / slots) / split;
        // Stream-K: each of the grid's CTAs (at most one an SM) runs an even
        // share of the k-blocks.
        if (launch.getStreamk()) {
          auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
          int64_t k = lhs.getDimSize(lhs.getRank() - (mm.getTransposeLhs() ? 2 : 1));
          double blocks = double((k + tile[2] - 1) / tile[2]);
          double ctas = std::min<double>(slots, std::max<double>(1, launch.getGrid()));
          busiest = std::ceil(tiles * blocks / ctas) / blocks;
        }
        double waves = tiles > 0 ? busiest / (tiles / slots) : 1;
        k.tensorSeconds *= waves / target.tensorEfficiency();
        // The epilogue's arithmetic runs on the consumer warpgroups between
        // two mainloops: after the tensor cores, not beside them. In
        // ping-pong (two consumers of 64-row tiles, 384 threads) one
        // warpgroup's epilogue runs beside the other's mainloop. Measured
        // on the H200 (bench/results/2026-12-03-h200-pingpong): its
        // mainloop is 1.14x slower (each B tile read for 64 rows, one
        // warpgroup at a time on the tensor cores: 8192^3 1.35 -> 1.54 ms),
        // and a warpgroup's epilogue of a 64-row tile takes as long as both
        // warpgroups' of a 128-row one (its warps alone on their
        // schedulers, latency-bound), so two tiles take max(mainloop,
        // half the mainloop + the cooperative epilogue).
        // Its issue rate, not the FMA pipes' peak: two warps a scheduler
        // with dependent chains issue about every other cycle.
        double lanes = target.value("sm_count") * 128 * target.value("clock_ghz") * 1e9 * 0.5;
        double epilogue =
            std::max(k.fp32Seconds + k.sfuSeconds,
                     lanes > 0 ? double(tensorElements(out)) *
                                     matmulEpilogueInstructions(kernel.getBody().front()) / lanes
                               : 0.0);
        bool pingpong = tile[0] == 64 && launch.getBlock() == 384;
        constexpr double kPingpongMainloop = 1.14;
        double mainloop = k.tensorSeconds * (pingpong ? kPingpongMainloop : 1.0);
        k.tensorSeconds = pingpong ? std::max(mainloop, mainloop / 2 + epilogue)
                                   : mainloop + epilogue;
        // The swapped decode tile (fewer than 64 rows: tokens as wgmma's
        // N) fills its ring of small stages and drains its few columns
        // sooner than the 64- and 128-row tiles: a figure of its own.
        double swapped = target.value("gemm_latency_swapped_us");
        gemmLatency = (tile[0] < 64 && swapped > 0 ? swapped : target.value("gemm_latency_us")) * 1e-6;
      }
    }
  } else {
    k.name = op->getName().getStringRef().str();
    if (auto costed = dyn_cast<CostOpInterface>(op)) {
      k.cost = costed.getCost();
      addWork(k, op, k.cost, target);
    }
    // The attention intrinsic: its tiled kernel's model where the target
    // has one (its tensor time, as the GEMM strategies' is theirs).
    if (auto attention = dyn_cast<AttentionOp>(op))
      k.tensorSeconds = std::max(k.tensorSeconds, attentionTiledSeconds(attention, target));
  }
  finish(k, target);
  // A GEMM kernel's pipeline fill and drain (the first TMA loads, the last
  // wgmmas, the last epilogue) add to whichever roof binds.
  k.launchSeconds += gemmLatency;
  k.predictedSeconds += gemmLatency;
  return k;
}

GraphAnalysis analyzeFunction(func::FuncOp func, const Target &target) {
  GraphAnalysis g;
  g.function = func.getSymName().str();
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  Liveness fused, unfused;

  auto record = [](Liveness &l, Operation *op) {
    if (auto r = dyn_cast<ReshapeOp>(op)) {
      l.alias[r.getResult()] = r.getInput();
      return;
    }
    std::vector<Value> defs(op->getResults().begin(), op->getResults().end());
    std::vector<Value> uses(op->getOperands().begin(), op->getOperands().end());
    l.nodes.emplace_back(std::move(defs), std::move(uses));
  };

  for (Operation &op : body) {
    if (&op == terminator)
      continue;
    record(fused, &op);
    auto kernel = dyn_cast<KernelOp>(op);
    auto costed = dyn_cast<CostOpInterface>(op);
    if (costed && !isFree(costed.getCost())) {
      g.kernels.push_back(analyzeOp(&op, target));
      addTotals(g.totals, g.kernels.back());
    }
    if (!kernel) {
      record(unfused, &op);
      if (costed && !isFree(costed.getCost())) {
        g.unfused.push_back(g.kernels.back());
        addTotals(g.unfusedTotals, g.unfused.back());
      }
      continue;
    }
    // Unfused: the body's ops, each its own kernel, on the kernel's operands.
    Block &kb = kernel.getBody().front();
    for (auto [arg, operand] : llvm::zip(kb.getArguments(), kernel.getInputs()))
      unfused.alias[arg] = operand;
    for (Operation &inner : kb) {
      if (auto yield = dyn_cast<YieldOp>(inner)) {
        for (auto [res, val] : llvm::zip(kernel.getResults(), yield.getValues()))
          unfused.alias[res] = val;
        continue;
      }
      record(unfused, &inner);
      auto c = dyn_cast<CostOpInterface>(inner);
      if (c && !isFree(c.getCost())) {
        g.unfused.push_back(analyzeOp(&inner, target));
        addTotals(g.unfusedTotals, g.unfused.back());
      }
    }
  }
  SmallVector<Value> args(func.getArguments().begin(), func.getArguments().end());
  SmallVector<Value> rets(terminator->getOperands().begin(),
                          terminator->getOperands().end());
  g.totals.peakBytes = fused.peak(args, rets);
  g.unfusedTotals.peakBytes = unfused.peak(args, rets);
  return g;
}

//===----------------------------------------------------------------------===//
// Formatting
//===----------------------------------------------------------------------===//

namespace {

std::string num(double v) {
  if (std::isinf(v) || std::isnan(v))
    return "null";
  return absl::StrFormat("%.12g", v);
}

std::string human(double v, const char *unit) {
  const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return absl::StrFormat("%.3g %s%s", v, prefixes[i], unit);
}

std::string micros(double seconds) { return absl::StrFormat("%.3f us", seconds * 1e6); }

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string kernelJson(const KernelAnalysis &k, const std::string &function,
                       bool detailed) {
  std::string s = absl::StrCat(
      "{\"name\": ", jsonString(k.name), ", \"function\": ",
      jsonString(function), ", \"location\": ", jsonString(k.location),
      ", \"ops\": ", k.ops, ", \"flops\": ", k.cost.flops,
      ", \"tensor_flops\": ", k.tensorFlops, ", \"bytes_read\": ",
      k.cost.bytesRead, ", \"bytes_written\": ", k.cost.bytesWritten,
      ", \"sfu_ops\": ", k.cost.sfuOps, ", \"intensity\": ",
      num(k.cost.intensity()), ", \"bound\": \"", roofName(k.bound),
      "\", \"predicted_us\": ", num(k.predictedSeconds * 1e6));
  if (k.measuredSeconds > 0)
    absl::StrAppend(&s, ", \"measured_us\": ", num(k.measuredSeconds * 1e6),
                    ", \"measured_over_predicted\": ",
                    num(k.measuredSeconds / k.predictedSeconds));
  if (detailed) {
    absl::StrAppend(&s, ", \"launch_us\": ", num(k.launchSeconds * 1e6),
                    ", \"roof_us\": {");
    for (Roof r : kRoofs)
      absl::StrAppend(&s, r == Roof::Hbm ? "" : ", ", "\"", roofName(r),
                      "\": ", num(k.roofSeconds(r) * 1e6));
    absl::StrAppend(&s, "}, \"headroom\": {");
    for (Roof r : kRoofs)
      absl::StrAppend(&s, r == Roof::Hbm ? "" : ", ", "\"", roofName(r),
                      "\": ", num(k.headroom(r)));
    absl::StrAppend(&s, "}");
  }
  return s + "}";
}

std::string totalsJson(const GraphTotals &t) {
  return absl::StrCat("\"kernels\": ", t.kernels, ", \"flops\": ", t.flops,
                      ", \"bytes\": ", t.bytes, ", \"sfu_ops\": ", t.sfuOps,
                      ", \"predicted_us\": ", num(t.predictedSeconds * 1e6),
                      ", \"peak_bytes\": ", t.peakBytes);
}

GraphTotals sumTotals(const std::vector<GraphAnalysis> &graphs, bool unfused) {
  GraphTotals all;
  for (const GraphAnalysis &g : graphs) {
    const GraphTotals &t = unfused ? g.unfusedTotals : g.totals;
    all.kernels += t.kernels;
    all.flops = OpCost::saturatingAdd(all.flops, t.flops);
    all.bytes = OpCost::saturatingAdd(all.bytes, t.bytes);
    all.sfuOps = OpCost::saturatingAdd(all.sfuOps, t.sfuOps);
    all.predictedSeconds += t.predictedSeconds;
    all.peakBytes = std::max(all.peakBytes, t.peakBytes);
  }
  return all;
}

struct Ridge {
  const char *name;
  double flopsPerSecond;
};

std::vector<Ridge> computeRoofs(const Target &t) {
  return {{"fp32", t.fp32FlopsPerSecond()},
          {"tensor_tf32", t.tensorFlopsPerSecond(DType::F32)},
          {"tensor_bf16", t.tensorFlopsPerSecond(DType::BF16)},
          {"tensor_fp8", t.tensorFlopsPerSecond(DType::F8E4M3FN)}};
}

} // namespace

std::string formatReportJson(const std::vector<GraphAnalysis> &graphs,
                             const Target &target) {
  std::string s = absl::StrCat("{\"target\": ", jsonString(target.name()),
                               ", \"roofs\": {\"hbm_bytes_per_s\": ",
                               num(target.hbmBytesPerSecond()));
  for (const Ridge &r : computeRoofs(target))
    absl::StrAppend(&s, ", \"", r.name, "_flops_per_s\": ", num(r.flopsPerSecond));
  absl::StrAppend(&s, ", \"sfu_ops_per_s\": ", num(target.sfuOpsPerSecond()),
                  ", \"launch_us\": ", num(target.launchSeconds() * 1e6),
                  ", \"ridge_flop_per_byte\": {");
  bool first = true;
  for (const Ridge &r : computeRoofs(target)) {
    absl::StrAppend(&s, first ? "" : ", ", "\"", r.name, "\": ",
                    num(r.flopsPerSecond / target.hbmBytesPerSecond()));
    first = false;
  }
  absl::StrAppend(&s, "}, \"sfu_ridge_ops_per_byte\": ",
                  num(target.sfuOpsPerSecond() / target.hbmBytesPerSecond()),
                  "}, \"kernels\": [");
  first = true;
  for (const GraphAnalysis &g : graphs)
    for (const KernelAnalysis &k : g.kernels) {
      absl::StrAppend(&s, first ? "" : ", ", kernelJson(k, g.function, true));
      first = false;
    }
  absl::StrAppend(&s, "], \"totals\": {", totalsJson(sumTotals(graphs, false)),
                  "}, \"unfused\": {", totalsJson(sumTotals(graphs, true)),
                  ", \"ops\": [");
  first = true;
  for (const GraphAnalysis &g : graphs)
    for (const KernelAnalysis &k : g.unfused) {
      absl::StrAppend(&s, first ? "" : ", ", kernelJson(k, g.function, false));
      first = false;
    }
  return s + "]}}\n";
}

std::string formatReportText(const std::vector<GraphAnalysis> &graphs,
                             const Target &target) {
  std::string s = absl::StrCat(
      "roofline report for ", target.name(), ": HBM ",
      human(target.hbmBytesPerSecond(), "B/s"), ", FP32 ",
      human(target.fp32FlopsPerSecond(), "FLOP/s"), " (ridge ",
      absl::StrFormat("%.1f", target.fp32FlopsPerSecond() / target.hbmBytesPerSecond()),
      " FLOP/B), bf16 tensor ",
      human(target.tensorFlopsPerSecond(DType::BF16), "FLOP/s"), " (ridge ",
      absl::StrFormat("%.0f", target.tensorFlopsPerSecond(DType::BF16) /
                                  target.hbmBytesPerSecond()),
      " FLOP/B), SFU ", human(target.sfuOpsPerSecond(), "op/s"), ", launch ",
      micros(target.launchSeconds()), "\n");
  for (const GraphAnalysis &g : graphs) {
    absl::StrAppend(&s, "\n@", g.function, "\n",
                    absl::StrFormat("  %-22s %4s %12s %12s %10s %9s %-6s %12s  %s\n",
                                    "kernel", "ops", "FLOPs", "bytes",
                                    "SFU ops", "FLOP/B", "bound",
                                    "predicted", "headroom (x) to hbm/tensor/fp32/sfu"));
    for (const KernelAnalysis &k : g.kernels) {
      std::string head;
      for (Roof r : kRoofs) {
        double h = k.headroom(r);
        absl::StrAppend(&head, r == Roof::Hbm ? "" : "/",
                        std::isinf(h) ? std::string("-") : absl::StrFormat("%.3g", h));
      }
      absl::StrAppend(&s, absl::StrFormat(
                              "  %-22s %4d %12s %12s %10s %9.3f %-6s %12s  %s",
                              k.name.substr(0, 22), k.ops,
                              human(static_cast<double>(k.cost.flops), ""),
                              human(static_cast<double>(k.cost.bytes()), "B"),
                              human(static_cast<double>(k.cost.sfuOps), ""),
                              k.cost.intensity(), roofName(k.bound),
                              micros(k.predictedSeconds), head));
      if (k.measuredSeconds > 0)
        absl::StrAppend(&s, absl::StrFormat("  measured %s (%.2fx predicted)",
                                            micros(k.measuredSeconds),
                                            k.measuredSeconds / k.predictedSeconds));
      absl::StrAppend(&s, "\n");
    }
    auto line = [&](const char *what, const GraphTotals &t) {
      absl::StrAppend(&s, absl::StrFormat(
                              "  %-8s %3d kernels, %s FLOPs, %s moved, %s predicted, peak memory %s\n",
                              what, t.kernels, human(static_cast<double>(t.flops), ""),
                              human(static_cast<double>(t.bytes), "B"),
                              micros(t.predictedSeconds),
                              human(static_cast<double>(t.peakBytes), "B")));
    };
    line("as is:", g.totals);
    line("unfused:", g.unfusedTotals);
  }
  return s;
}

std::string formatRooflineSvg(const std::vector<GraphAnalysis> &graphs,
                              const Target &target) {
  const double W = 960, H = 640, left = 90, right = 230, top = 50, bottom = 80;
  const double pw = W - left - right, ph = H - top - bottom;
  double bw = target.hbmBytesPerSecond();
  std::vector<Ridge> roofs = computeRoofs(target);
  double maxRoof = 0;
  for (const Ridge &r : roofs)
    maxRoof = std::max(maxRoof, r.flopsPerSecond);
  // Axis ranges in decades, covering the points and the ridges.
  double xmin = 1e-3, xmax = 1e4, ymin = 1e9, ymax = std::pow(10, std::ceil(std::log10(maxRoof)) + 0.3);
  auto consider = [&](const KernelAnalysis &k) {
    double x = k.cost.intensity();
    if (x <= 0 || k.predictedSeconds <= 0)
      return;
    xmin = std::min(xmin, std::pow(10, std::floor(std::log10(x))));
    xmax = std::max(xmax, std::pow(10, std::ceil(std::log10(x))));
    double y = k.cost.flops / k.predictedSeconds;
    if (k.measuredSeconds > 0)
      y = std::min(y, k.cost.flops / k.measuredSeconds);
    ymin = std::min(ymin, std::pow(10, std::floor(std::log10(y))));
  };
  for (const GraphAnalysis &g : graphs) {
    for (const KernelAnalysis &k : g.kernels)
      consider(k);
    for (const KernelAnalysis &k : g.unfused)
      consider(k);
  }
  auto X = [&](double x) {
    return left + pw * (std::log10(x) - std::log10(xmin)) /
                      (std::log10(xmax) - std::log10(xmin));
  };
  auto Y = [&](double y) {
    return top + ph * (1 - (std::log10(y) - std::log10(ymin)) /
                               (std::log10(ymax) - std::log10(ymin)));
  };
  auto color = [](Roof r) {
    switch (r) {
    case Roof::Hbm:
      return "#1f77b4";
    case Roof::Tensor:
      return "#2ca02c";
    case Roof::Fp32:
      return "#ff7f0e";
    case Roof::Sfu:
      return "#d62728";
    }
    return "#000";
  };
  auto esc = [](const std::string &t) {
    std::string o;
    for (char c : t) {
      if (c == '<')
        o += "&lt;";
      else if (c == '>')
        o += "&gt;";
      else if (c == '&')
        o += "&amp;";
      else if (c == '"')
        o += "&quot;";
      else
        o += c;
    }
    return o;
  };

  int kernelCount = 0, unfusedCount = 0;
  for (const GraphAnalysis &g : graphs) {
    kernelCount += static_cast<int>(g.kernels.size());
    unfusedCount += static_cast<int>(g.unfused.size());
  }
  std::string s = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"24\" font-size=\"16\">Roofline of %s: %d kernel(s) "
      "as compiled, %d op(s) unfused (faint)</text>\n",
      W, H, W, H, left, esc(target.name()), kernelCount, unfusedCount);
  // Memory-bound region: under the bandwidth line, left of the fp32 ridge.
  double fp32Ridge = target.fp32FlopsPerSecond() / bw;
  absl::StrAppend(&s, absl::StrFormat(
                          "<polygon class=\"memory-bound-region\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" "
                          "fill=\"#1f77b4\" fill-opacity=\"0.07\"/>\n"
                          "<text x=\"%.1f\" y=\"%.1f\" fill=\"#1f77b4\">memory-bound</text>\n",
                          X(xmin), Y(ymin), X(xmin), Y(std::max(ymin, bw * xmin)), X(fp32Ridge),
                          Y(bw * fp32Ridge), X(fp32Ridge), Y(ymin), X(xmin) + 8,
                          Y(ymin) - 8));
  // Grid and axes.
  for (double x = xmin; x <= xmax * 1.001; x *= 10)
    absl::StrAppend(&s, absl::StrFormat(
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                            X(x), top, X(x), top + ph, X(x), top + ph + 16, x));
  for (double y = ymin; y <= ymax * 1.001; y *= 10)
    absl::StrAppend(&s, absl::StrFormat(
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                            left, Y(y), left + pw, Y(y), left - 6, Y(y) + 4,
                            human(y, "").c_str()));
  absl::StrAppend(&s, absl::StrFormat(
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n"
                          "<text transform=\"translate(20,%.1f) rotate(-90)\" text-anchor=\"middle\">FLOP/s (FLOPs / predicted time)</text>\n",
                          left, top, pw, ph, left + pw / 2, top + ph + 40, top + ph / 2));
  // Roofs: the bandwidth diagonal up to the highest roof, then each compute
  // roof flat from its ridge.
  absl::StrAppend(&s, absl::StrFormat(
                          "<line class=\"roof\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n"
                          "<text x=\"%.1f\" y=\"%.1f\" fill=\"#1f77b4\">HBM %s</text>\n",
                          X(std::max(xmin, ymin / bw)), Y(std::max(ymin, bw * xmin)),
                          X(maxRoof / bw), Y(maxRoof), X(std::max(xmin, ymin / bw)) + 30,
                          Y(std::max(ymin, bw * std::max(xmin, ymin / bw))) - 30,
                          human(bw, "B/s").c_str()));
  for (const Ridge &r : roofs) {
    double ridge = r.flopsPerSecond / bw;
    absl::StrAppend(&s, absl::StrFormat(
                            "<line class=\"roof\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"%s\"/>\n"
                            "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">%s %s (ridge %.3g)</text>\n",
                            X(ridge), Y(r.flopsPerSecond), X(xmax), Y(r.flopsPerSecond),
                            std::string(r.name) == "fp32" ? "none" : "4 3",
                            X(xmax) - 250, Y(r.flopsPerSecond) - 5, r.name,
                            human(r.flopsPerSecond, "FLOP/s").c_str(), ridge));
  }
  // Points: unfused ops faint, kernels solid and labelled.
  std::vector<std::string> noFlops;
  for (const GraphAnalysis &g : graphs)
    for (const KernelAnalysis &k : g.unfused) {
      double x = k.cost.intensity();
      if (x <= 0)
        continue;
      absl::StrAppend(&s, absl::StrFormat(
                              "<circle class=\"unfused\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#888\" fill-opacity=\"0.3\"><title>%s (unfused): %s</title></circle>\n",
                              X(x), Y(k.cost.flops / k.predictedSeconds), esc(k.name),
                              roofName(k.bound)));
    }
  int labelIndex = 0;
  for (const GraphAnalysis &g : graphs)
    for (const KernelAnalysis &k : g.kernels) {
      double x = k.cost.intensity();
      if (x <= 0) {
        noFlops.push_back(absl::StrCat(
            k.name, " (", roofName(k.bound), ", ", micros(k.predictedSeconds),
            k.measuredSeconds > 0
                ? absl::StrCat(", measured ", micros(k.measuredSeconds))
                : std::string(),
            ")"));
        continue;
      }
      double px = X(x), py = Y(k.cost.flops / k.predictedSeconds);
      if (k.measuredSeconds > 0) {
        double my = Y(k.cost.flops / k.measuredSeconds);
        absl::StrAppend(&s, absl::StrFormat(
                                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"2 2\"/>"
                                "<circle class=\"measured\" cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"white\" stroke=\"%s\" stroke-width=\"2\"><title>%s measured: %s, %.2fx predicted</title></circle>\n",
                                px, py, px, my, color(k.bound), px, my, color(k.bound),
                                esc(k.name), micros(k.measuredSeconds),
                                k.measuredSeconds / k.predictedSeconds));
      }
      absl::StrAppend(&s, absl::StrFormat(
                              "<circle class=\"kernel\" cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\"><title>%s: %s-bound, %s</title></circle>"
                              "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
                              px, py, color(k.bound), esc(k.name), roofName(k.bound),
                              micros(k.predictedSeconds), px + 8,
                              py - 6 + 13 * (labelIndex++ % 3), esc(k.name)));
    }
  // Legend and the kernels that do no arithmetic (they cannot sit on a log
  // axis): listed with their time.
  double lx = left + pw + 20, ly = top + 10;
  for (Roof r : kRoofs) {
    absl::StrAppend(&s, absl::StrFormat(
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s-bound</text>\n",
                            lx, ly, color(r), lx + 12, ly + 4, roofName(r)));
    ly += 20;
  }
  absl::StrAppend(&s, absl::StrFormat(
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#888\" fill-opacity=\"0.3\"/><text x=\"%.1f\" y=\"%.1f\">unfused op</text>\n",
                          lx, ly, lx + 12, ly + 4));
  ly += 20;
  absl::StrAppend(&s, absl::StrFormat(
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"white\" stroke=\"#333\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\">measured</text>\n",
                          lx, ly, lx + 12, ly + 4));
  // Kernel scatter also considers measured points for the y range.
  ly += 30;
  if (!noFlops.empty()) {
    absl::StrAppend(&s, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\">no FLOPs (data movement):</text>\n", lx - 6, ly));
    for (const std::string &n : noFlops) {
      ly += 16;
      absl::StrAppend(&s, absl::StrFormat("<text class=\"kernel-no-flops\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
                                          lx, ly, esc(n)));
    }
  }
  return s + "</svg>\n";
}

absl::StatusOr<int> applyMeasurements(std::vector<GraphAnalysis> &graphs,
                                      const std::string &json) {
  auto parsed = llvm::json::parse(json);
  if (!parsed)
    return absl::InvalidArgumentError(
        "measurements: " + llvm::toString(parsed.takeError()));
  int applied = 0;
  auto apply = [&](llvm::StringRef function, std::optional<llvm::StringRef> kernel,
                   double ms) -> absl::Status {
    if (!(ms > 0))
      return absl::InvalidArgumentError(absl::StrCat(
          "measurements: @", function.str(), ": median_ms must be positive"));
    bool found = false;
    for (GraphAnalysis &g : graphs) {
      if (g.function != function)
        continue;
      found = true;
      if (!kernel) {
        if (g.kernels.size() != 1)
          return absl::InvalidArgumentError(absl::StrCat(
              "measurements: @", function.str(), " has ", g.kernels.size(),
              " kernels; say which (\"kernel\")"));
        g.kernels[0].measuredSeconds = ms * 1e-3;
        ++applied;
        return absl::OkStatus();
      }
      for (KernelAnalysis &k : g.kernels)
        if (k.name == *kernel) {
          k.measuredSeconds = ms * 1e-3;
          ++applied;
          return absl::OkStatus();
        }
    }
    if (!found)
      return absl::InvalidArgumentError(absl::StrCat(
          "measurements: no function @", function.str(), " in the graphs"));
    return absl::InvalidArgumentError(absl::StrCat(
        "measurements: no kernel '", kernel->str(), "' in @", function.str()));
  };
  auto entry = [&](const llvm::json::Value &v) -> absl::Status {
    const llvm::json::Object *o = v.getAsObject();
    if (!o)
      return absl::InvalidArgumentError("measurements: an entry is not an object");
    auto function = o->getString("function");
    if (!function)
      return absl::InvalidArgumentError("measurements: an entry has no \"function\"");
    if (const llvm::json::Array *kernels = o->getArray("kernels")) {
      for (const llvm::json::Value &k : *kernels) {
        const llvm::json::Object *ko = k.getAsObject();
        auto name = ko ? ko->getString("name") : std::nullopt;
        auto ms = ko ? ko->getNumber("median_ms") : std::nullopt;
        if (!name || !ms)
          return absl::InvalidArgumentError(
              "measurements: a kernel needs \"name\" and \"median_ms\"");
        if (absl::Status st = apply(*function, *name, *ms); !st.ok())
          return st;
      }
      return absl::OkStatus();
    }
    auto ms = o->getNumber("median_ms");
    if (!ms)
      return absl::InvalidArgumentError("measurements: an entry has no \"median_ms\"");
    return apply(*function, o->getString("kernel"), *ms);
  };
  if (const llvm::json::Array *list = parsed->getAsArray()) {
    for (const llvm::json::Value &v : *list)
      if (absl::Status st = entry(v); !st.ok())
        return st;
  } else if (absl::Status st = entry(*parsed); !st.ok()) {
    return st;
  }
  return applied;
}

std::optional<Target> loadTargetFor(Operation *op, llvm::StringRef pass,
                                    llvm::StringRef name) {
  auto loaded = Target::load(absl::string_view(name.data(), name.size()));
  if (loaded.ok())
    return std::move(*loaded);
  op->emitError() << pass << ": " << std::string(loaded.status().message());
  return std::nullopt;
}

void emitRooflineRemark(Operation *op, const Target &target,
                        const llvm::Twine &decision) {
  KernelAnalysis k = analyzeOp(op, target);
  std::string why = absl::StrCat(
      roofName(k.bound), "-bound on ", target.name(), ": ",
      human(static_cast<double>(k.cost.flops), "FLOPs"), ", ",
      human(static_cast<double>(k.cost.bytes()), "B"), ", ",
      human(static_cast<double>(k.cost.sfuOps), "SFU ops"), ", ",
      absl::StrFormat("%.3g", k.cost.intensity()), " FLOP/B; predicted ",
      micros(k.predictedSeconds), " (");
  for (Roof r : kRoofs)
    absl::StrAppend(&why, r == Roof::Hbm ? "" : ", ", roofName(r), " ",
                    micros(k.roofSeconds(r)));
  absl::StrAppend(&why, ", launch ", micros(k.launchSeconds), ")");
  mlir::emitRemark(op->getLoc()) << decision << ": " << why;
}

} // namespace fusec
