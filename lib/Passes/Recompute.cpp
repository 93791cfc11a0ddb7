//===- Recompute.cpp - Recompute rather than store and reload ---*- C++ -*-===//

#include "fusec/Passes/Passes.h"
#include "fusec/Target/Roofline.h"

#include "absl/strings/str_format.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SetVector.h"

namespace fusec {
#define GEN_PASS_DEF_RECOMPUTE
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

/// The ops of `kernel` that compute its result #`index` from its block
/// arguments, in order; empty if that needs anything but elementwise ops
/// (or more than `limit` of them).
SmallVector<Operation *> sliceOf(KernelOp kernel, unsigned index,
                                 unsigned limit) {
  Block &body = kernel.getBody().front();
  Value root = body.getTerminator()->getOperand(index);
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work = {root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || slice.contains(def))
      continue;
    if (isa<ReduceOp, MatmulOp, AttentionOp, ConvOp, PoolOp, TransposeOp, SliceOp,
            ConcatOp, GatherOp, ReshapeOp>(def) ||
        slice.size() >= limit)
      return {};
    slice.insert(def);
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

/// Whether `outer` (an input of `kernel`) reaches an operand of one of its
/// matmuls. Such a value is not recomputed there: a tensor-core matmul reads
/// its operands from memory (TMA), so a computed operand would push it to
/// the SIMT fallback (Llama's rotary embedding before q·kᵀ did).
bool feedsMatmulOperand(KernelOp kernel, Value outer) {
  Block &body = kernel.getBody().front();
  SmallVector<Value> work;
  body.walk([&](MatmulOp m) {
    work.push_back(m.getLhs());
    work.push_back(m.getRhs());
  });
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &body && kernel.getInputs()[arg.getArgNumber()] == outer)
        return true;
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  return false;
}

/// The block arguments a slice reads.
SmallVector<BlockArgument> sliceInputs(ArrayRef<Operation *> slice) {
  llvm::SetVector<BlockArgument> args;
  for (Operation *op : slice)
    for (Value o : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(o))
        args.insert(arg);
  return SmallVector<BlockArgument>(args.begin(), args.end());
}

double roofSeconds(double bytes, double fp32, double tensor, double sfu,
                   const Target &t) {
  return std::max({bytes / t.hbmBytesPerSecond(), fp32, tensor, sfu}) +
         t.launchSeconds();
}

/// Replaces `consumer`'s operand `value` with a recomputation of `slice`
/// (ops of `producer`) from `producer`'s operands.
KernelOp recomputeInto(KernelOp consumer, Value value, KernelOp producer,
                       ArrayRef<Operation *> slice, Value yielded) {
  OpBuilder b(consumer);
  SmallVector<Value> operands;
  for (Value v : consumer.getInputs())
    if (v != value)
      operands.push_back(v);
  SmallVector<BlockArgument> needs = sliceInputs(slice);
  for (BlockArgument arg : needs) {
    Value outer = producer.getInputs()[arg.getArgNumber()];
    if (!llvm::is_contained(operands, outer))
      operands.push_back(outer);
  }
  auto kernel = KernelOp::create(b, consumer.getLoc(), consumer.getResultTypes(),
                                 operands, consumer.getNameAttr());
  kernel->setDiscardableAttrs(consumer->getDiscardableAttrDictionary());
  Block *body = new Block();
  kernel.getBody().push_back(body);
  IRMapping outerToArg;
  for (Value v : operands)
    outerToArg.map(v, body->addArgument(v.getType(), v.getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  // The slice first, reading the producer's operands.
  IRMapping map;
  for (BlockArgument arg : needs)
    map.map(arg, outerToArg.lookup(producer.getInputs()[arg.getArgNumber()]));
  for (Operation *op : slice)
    inner.clone(*op, map);
  Value recomputed = map.lookup(yielded);
  // Then the consumer's own body.
  Block &old = consumer.getBody().front();
  IRMapping bodyMap;
  for (auto [i, arg] : llvm::enumerate(old.getArguments())) {
    Value outer = consumer.getInputs()[i];
    bodyMap.map(arg, outer == value ? recomputed : outerToArg.lookup(outer));
  }
  for (Operation &op : old)
    inner.clone(op, bodyMap);
  consumer.replaceAllUsesWith(kernel.getResults());
  consumer.erase();
  return kernel;
}

/// Drops the results of `kernel` nobody uses; erases it if none is left.
void dropDeadResults(KernelOp kernel) {
  SmallVector<unsigned> keep;
  for (auto [i, r] : llvm::enumerate(kernel.getResults()))
    if (!r.use_empty())
      keep.push_back(i);
  if (keep.size() == kernel.getNumResults())
    return;
  if (keep.empty()) {
    kernel.erase();
    return;
  }
  OpBuilder b(kernel);
  SmallVector<Type> types;
  for (unsigned i : keep)
    types.push_back(kernel.getResult(i).getType());
  auto slim = KernelOp::create(b, kernel.getLoc(), types, kernel.getInputs(),
                               kernel.getNameAttr());
  slim->setDiscardableAttrs(kernel->getDiscardableAttrDictionary());
  slim.getBody().takeBody(kernel.getBody());
  Operation *yield = slim.getBody().front().getTerminator();
  SmallVector<Value> values;
  for (unsigned i : keep)
    values.push_back(yield->getOperand(i));
  yield->setOperands(values);
  for (auto [n, i] : llvm::enumerate(keep))
    kernel.getResult(i).replaceAllUsesWith(slim.getResult(n));
  kernel.erase();
  // Ops that fed only the dropped results are dead now.
  Block &body = slim.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty())
      op.erase();
}

class RecomputePass : public fusec::impl::RecomputeBase<RecomputePass> {
public:
  using RecomputeBase::RecomputeBase;

  void runOnOperation() override {
    auto loaded = loadTargetFor(getOperation(), "fusec-recompute", target);
    if (!loaded)
      return signalPassFailure();
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        runOnFunction(func, *loaded);
  }

  void runOnFunction(func::FuncOp func, const Target &t) {
    double graphFlops = analyzeFunction(func, t).totals.flops;
    double extraFlops = 0;
    Block &block = func.getBody().front();
    // Sweeps in op order until one changes nothing. A recomputation
    // rewrites its producer (dropping results, or erasing it) and its
    // consumers, which come later, in place; the ops before the producer
    // stay, so the sweep resumes at the op after them (the producer's
    // remains first) instead of starting over: linear in the kernels a
    // sweep, where a restart after every change was quadratic (666
    // recomputations over 2,666 kernels in bench/compile_scaling.py's
    // 20,000-op graph). A later sweep revisits producers whose consumers
    // changed after them.
    bool changed = true;
    while (changed) {
      changed = false;
      Operation *op = block.empty() ? nullptr : &block.front();
      while (op) {
        auto producer = dyn_cast<KernelOp>(op);
        if (!producer) {
          op = op->getNextNode();
          continue;
        }
        Operation *prev = op->getPrevNode();
        bool took = false;
        // A recomputation that takes may erase `producer` (its results
        // all recomputed): stop before touching it again (found by
        // fuzz_mlir under ASan, a use after free).
        for (unsigned i = 0; !took && i < producer.getNumResults(); ++i)
          took = tryOne(func, producer, i, t, graphFlops, extraFlops);
        if (!took) {
          op = op->getNextNode();
          continue;
        }
        changed = true;
        op = prev ? prev->getNextNode() : &block.front();
      }
    }
  }

  /// Considers recomputing result #index of `producer` in its consumers.
  bool tryOne(func::FuncOp func, KernelOp producer, unsigned index,
              const Target &t, double graphFlops, double &extraFlops) {
    Value value = producer.getResult(index);
    Operation *terminator = func.getBody().front().getTerminator();
    SmallVector<KernelOp> consumers;
    for (Operation *user : value.getUsers()) {
      auto k = dyn_cast<KernelOp>(user);
      if (!k || user == terminator)
        return false; // returned, or read by a non-kernel op: must be stored
      if (!llvm::is_contained(consumers, k))
        consumers.push_back(k);
    }
    if (consumers.empty())
      return false;
    for (KernelOp c : consumers)
      if (feedsMatmulOperand(c, value))
        return false;
    Value yielded = producer.getBody().front().getTerminator()->getOperand(index);
    if (isa<BlockArgument>(yielded))
      return false; // a pass-through: nothing to recompute
    SmallVector<Operation *> slice = sliceOf(producer, index, maxSliceOps);
    if (slice.empty())
      return false;

    // The slice's work, and what its inputs weigh.
    double sliceFp32 = 0, sliceSfu = 0, sliceFlops = 0;
    for (Operation *op : slice)
      if (auto c = dyn_cast<CostOpInterface>(op)) {
        OpCost cost = c.getCost();
        sliceFlops += cost.flops;
        sliceFp32 += cost.flops / t.fp32FlopsPerSecond();
        sliceSfu += cost.sfuOps / t.sfuOpsPerSecond();
      }
    SmallVector<BlockArgument> needs = sliceInputs(slice);
    double valueBytes = tensorBytes(value.getType());

    // Before: the producer and the consumers as they are.
    KernelAnalysis p = analyzeOp(producer, t);
    double before = p.predictedSeconds, after = 0;
    for (KernelOp c : consumers) {
      KernelAnalysis ca = analyzeOp(c, t);
      before += ca.predictedSeconds;
      double bytes = ca.cost.bytes() - valueBytes;
      for (BlockArgument arg : needs) {
        Value outer = producer.getInputs()[arg.getArgNumber()];
        if (!llvm::is_contained(c.getInputs(), outer))
          bytes += tensorBytes(outer.getType());
      }
      after += roofSeconds(bytes, ca.fp32Seconds + sliceFp32, ca.tensorSeconds,
                           ca.sfuSeconds + sliceSfu, t);
    }
    bool producerGone = producer.getNumResults() == 1;
    if (!producerGone)
      after += roofSeconds(p.cost.bytes() - valueBytes, p.fp32Seconds,
                           p.tensorSeconds, p.sfuSeconds, t);
    double added = sliceFlops * consumers.size() - (producerGone ? sliceFlops : 0);
    std::string numbers = absl::StrFormat(
        "%d-op slice into %d kernel(s): %.3f us -> %.3f us predicted, %+.0f "
        "FLOPs, %.0f bytes no longer stored",
        static_cast<int>(slice.size()), static_cast<int>(consumers.size()),
        before * 1e6, after * 1e6, added, valueBytes);

    bool take = after < before;
    std::string why = "recompute (faster than storing and reloading)";
    if (!take && extraFlops + added <= maxExtraFlops * graphFlops) {
      // Checkpointing: does it lower peak memory?
      int64_t peakBefore = analyzeFunction(func, t).totals.peakBytes;
      OwningOpRef<func::FuncOp> trial(func.clone());
      // (apply on the clone, measure, then decide)
      SmallVector<KernelOp> trialKernels(trial->getOps<KernelOp>());
      auto position = [&](KernelOp k) {
        return std::distance(func.getOps<KernelOp>().begin(),
                             llvm::find(func.getOps<KernelOp>(), k));
      };
      KernelOp tp = trialKernels[position(producer)];
      SmallVector<KernelOp> tcs;
      for (KernelOp c : consumers)
        tcs.push_back(trialKernels[position(c)]);
      Value tv = tp.getResult(index);
      Value ty = tp.getBody().front().getTerminator()->getOperand(index);
      SmallVector<Operation *> tslice = sliceOf(tp, index, maxSliceOps);
      for (KernelOp c : tcs)
        recomputeInto(c, tv, tp, tslice, ty);
      dropDeadResults(tp);
      int64_t peakAfter = analyzeFunction(*trial, t).totals.peakBytes;
      if (peakAfter < peakBefore) {
        take = true;
        why = absl::StrFormat("recompute (checkpointing: peak memory %d -> %d bytes)",
                              peakBefore, peakAfter);
      }
    }
    if (remarks)
      emitRooflineRemark(producer, t,
                         llvm::Twine(take ? why : "materialize (cheaper than recomputing)") +
                             ": " + numbers);
    if (!take)
      return false;
    extraFlops += std::max(0.0, added);
    for (KernelOp c : consumers)
      recomputeInto(c, value, producer, slice, yielded);
    dropDeadResults(producer);
    return true;
  }
};

} // namespace
