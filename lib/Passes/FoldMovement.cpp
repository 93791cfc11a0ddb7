//===- FoldMovement.cpp - Movement kernels into neighbours --*- C++ -*-===//
//
// The last step of fusec-fuse. Fusion leaves every transpose and slice a
// kernel of its own; next to a matmul they need not be:
//
// - Into the store. A slice or transpose kernel that reads a matmul kernel's
//   output (directly or through free reshapes) becomes another output of the
//   matmul kernel, its movement ops cloned into the body after the epilogue:
//   the epilogue writes each element where the movement puts it (a QKV
//   projection writes Q, K and V head-major). The output it read is dropped
//   when nothing else reads it. A convolution's conv_pad kernel (its input
//   between zero splats, then moved into stride phases) folds the same way:
//   the epilogue writes each element into the padded layout, and the zeros
//   are never written (the JIT zeroes the output's buffer once:
//   fusec.zero_init).
// - Into the load. A transpose kernel whose result (through free reshapes)
//   is a matmul's operand is cloned into the matmul kernel, which then reads
//   the transpose's input: the tensor-core strategy reads it through a
//   tensor map over its factors (an attention output [B, H, S, D] as rows of
//   [B S, H D]). A convolution's conv_window kernel (the taps' row windows
//   of its padded, channels-last input, side by side along K) folds whole:
//   the tensor-core strategy reads each k-block from its tap's window
//   (implicit GEMM), and the im2col matrix is never written.
//
// A fold is kept only where the tensor-core strategies take the new kernel
// (matmulOnTensorCores); every other target still runs it (the SIMT
// fallback writes through the same maps). Both remove a kernel launch and
// one round trip of the moved tensor through HBM.
//
// - Into an elementwise consumer. A concat, slice or last-dim-keeping
//   transpose kernel (elementwise ops beside it allowed; no gather,
//   reduction or matmul), or a lone transpose of the last dim where the
//   consumer then runs as transpose_tiled, whose
//   result one elementwise kernel reads (directly or through free
//   reshapes), and does not broadcast, is cloned
//   into that kernel, which reads the movement's inputs at the element's
//   mapped index: rotary embedding's rotate_half, concat(-x2, x1), is no
//   longer a kernel of its own before x * cos + rotate_half(x) * sin.
//
//===----------------------------------------------------------------------===//

#include "FoldMovement.h"

#include "fusec/CodeGen/LaunchPlan.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/Debug.h"

#include <set>

#define DEBUG_TYPE "fusec-fuse"

using namespace mlir;

namespace fusec {

namespace {

bool hasMatmul(KernelOp k) {
  bool found = false;
  k.getBody().walk([&](MatmulOp) { found = true; });
  return found;
}

/// The one op of a kernel that only moves data (a unit-stride slice or a
/// transpose of its one operand into its one result), or null.
Operation *movementOp(KernelOp k, bool transposeOnly) {
  Block &b = k.getBody().front();
  if (k.getNumResults() != 1 || k.getInputs().size() != 1 || b.getOperations().size() != 2)
    return nullptr;
  Operation *op = &b.front();
  bool ok = isa<TransposeOp>(op);
  if (auto sl = dyn_cast<SliceOp>(op))
    ok = !transposeOnly && llvm::all_of(sl.getStrides(), [](int64_t s) { return s == 1; });
  if (!ok || op->getOperand(0) != b.getArgument(0) ||
      b.getTerminator()->getOperand(0) != op->getResult(0))
    return nullptr;
  return op;
}

/// Whether `k` (one input, one result) only pads and moves its input: a
/// convolution's conv_pad (concats of it between zero splats, reshapes,
/// transposes, unit-stride slices: padding, stride phases), each op
/// reading the input's chain once.
bool paddingKernel(KernelOp k) {
  Block &b = k.getBody().front();
  if (k.getNumResults() != 1 || k.getInputs().size() != 1)
    return false;
  Value chain = b.getArgument(0);
  for (Operation &op : b.without_terminator()) {
    if (op.getNumResults() == 1 && isZeroSplat(op.getResult(0)))
      continue;
    if (auto sl = dyn_cast<SliceOp>(op);
        sl && llvm::any_of(sl.getStrides(), [](int64_t s) { return s != 1; }))
      return false;
    if (!isa<ConcatOp, ReshapeOp, TransposeOp, SliceOp>(op))
      return false;
    // The chain's one value among its operands, the rest zeros.
    for (Value operand : op.getOperands())
      if (operand != chain && !isZeroSplat(operand))
        return false;
    if (!llvm::is_contained(op.getOperands(), chain) || !chain.hasOneUse())
      return false;
    chain = op.getResult(0);
  }
  return chain != b.getArgument(0) && b.getTerminator()->getOperand(0) == chain;
}

/// `v` through top-level reshapes back to what they reshape, collecting them
/// (outermost last).
Value throughReshapes(Value v, SmallVectorImpl<ReshapeOp> &chain) {
  while (auto r = v.getDefiningOp<ReshapeOp>()) {
    chain.push_back(r);
    v = r.getInput();
  }
  std::reverse(chain.begin(), chain.end());
  return v;
}

/// A copy of `k` before it with operands `inputs` (block arguments mapped by
/// `prologue` first, which may clone ops that compute some old arguments from
/// new ones), the old body, then `epilogue`'s extra outputs (of
/// `extraTypes`); the results are the old ones whose index `keep` holds,
/// then the extras.
KernelOp rebuild(KernelOp k, ArrayRef<Value> inputs,
                 function_ref<void(OpBuilder &, Block &, IRMapping &)> prologue,
                 function_ref<SmallVector<Value>(OpBuilder &, IRMapping &)> epilogue,
                 ArrayRef<bool> keep, TypeRange extraTypes = {}, bool matmulEpilogue = true) {
  OpBuilder builder(k);
  Block &old = k.getBody().front();
  Operation *yield = old.getTerminator();
  SmallVector<Type> types;
  for (auto [i, v] : llvm::enumerate(yield->getOperands()))
    if (keep[i])
      types.push_back(v.getType());
  types.append(extraTypes.begin(), extraTypes.end());
  auto kernel = KernelOp::create(builder, k.getLoc(), types, inputs, k.getNameAttr());
  kernel->setDiscardableAttrs(k->getDiscardableAttrDictionary());
  if (matmulEpilogue)
    kernel->setAttr("fusec.matmul_epilogue", builder.getUnitAttr());
  Block *block = new Block();
  kernel.getBody().push_back(block);
  for (Value in : inputs)
    block->addArgument(in.getType(), in.getLoc());
  IRMapping map;
  OpBuilder inner = OpBuilder::atBlockEnd(block);
  prologue(inner, *block, map);
  for (Operation &op : old.without_terminator())
    inner.clone(op, map);
  SmallVector<Value> yielded;
  for (auto [i, v] : llvm::enumerate(yield->getOperands()))
    if (keep[i])
      yielded.push_back(map.lookupOrDefault(v));
  SmallVector<Value> extra = epilogue(inner, map);
  yielded.append(extra.begin(), extra.end());
  YieldOp::create(inner, yield->getLoc(), yielded);
  return kernel;
}

/// Folds one movement kernel into the store of matmul kernel `k`; the
/// kernel that replaces `k` if it did (`k` is erased), else null.
KernelOp foldIntoStore(KernelOp k) {
  for (Value result : k.getResults())
    for (Operation *user : result.getUsers()) {
      // The user directly, or the first non-reshape user down reshape chains.
      SmallVector<Operation *> frontier{user};
      while (!frontier.empty()) {
        Operation *u = frontier.pop_back_val();
        if (isa<ReshapeOp>(u)) {
          for (Operation *next : u->getResult(0).getUsers())
            frontier.push_back(next);
          continue;
        }
        auto m = dyn_cast<KernelOp>(u);
        Operation *move = m ? movementOp(m, /*transposeOnly=*/false) : nullptr;
        // A convolution's padding folds whole: the epilogue writes the
        // image into the padded layout, whose zeros its buffer holds from
        // the start (fusec.zero_init), and no conv_pad kernel copies it.
        bool padding = m && !move && paddingKernel(m);
        if (!move && !padding)
          continue;
        SmallVector<ReshapeOp> chain;
        if (throughReshapes(m.getInputs()[0], chain) != result)
          continue;
        unsigned index = cast<OpResult>(result).getResultNumber();
        SmallVector<bool> keep(k.getNumResults(), true);
        SmallVector<Value> inputs(k.getInputs().begin(), k.getInputs().end());
        KernelOp folded = rebuild(
            k, inputs,
            [&](OpBuilder &, Block &b, IRMapping &map) {
              for (auto [arg, nb] :
                   llvm::zip(k.getBody().front().getArguments(), b.getArguments()))
                map.map(arg, nb);
            },
            [&](OpBuilder &b, IRMapping &map) -> SmallVector<Value> {
              Value v = map.lookup(k.getBody().front().getTerminator()->getOperand(index));
              for (ReshapeOp r : chain)
                v = ReshapeOp::create(b, r.getLoc(), r.getType(), v).getResult();
              IRMapping moved;
              if (padding) {
                Block &pb = m.getBody().front();
                moved.map(pb.getArgument(0), v);
                for (Operation &op : pb.without_terminator())
                  b.clone(op, moved);
                return {moved.lookup(pb.getTerminator()->getOperand(0))};
              }
              moved.map(move->getOperand(0), v);
              return {b.clone(*move, moved)->getResult(0)};
            },
            keep, m.getResultTypes());
        if (!matmulOnTensorCores(folded)) {
          LLVM_DEBUG(llvm::dbgs() << "fold-movement: not into the store of " << k.getNameAttr()
                                  << "\n");
          folded.erase();
          continue;
        }
        LLVM_DEBUG(llvm::dbgs() << "fold-movement: " << m.getNameAttr() << " into the store of "
                                << k.getNameAttr() << "\n");
        for (auto [from, to] : llvm::zip(k.getResults(), folded.getResults()))
          from.replaceAllUsesWith(to);
        m.getResult(0).replaceAllUsesWith(folded.getResults().back());
        m.erase();
        for (ReshapeOp r : llvm::reverse(chain))
          if (r->use_empty())
            r.erase();
        k.erase();
        return folded;
      }
    }
  return {};
}

/// Drops the outputs of `k` nothing reads; returns the kernel (a new one if
/// it dropped any).
KernelOp dropDeadOutputs(KernelOp k) {
  SmallVector<bool> keep;
  for (Value r : k.getResults())
    keep.push_back(!r.use_empty());
  if (llvm::all_of(keep, [](bool b) { return b; }) || llvm::none_of(keep, [](bool b) { return b; }))
    return k;
  SmallVector<Value> inputs(k.getInputs().begin(), k.getInputs().end());
  KernelOp slim = rebuild(
      k, inputs,
      [&](OpBuilder &, Block &b, IRMapping &map) {
        for (auto [arg, nb] : llvm::zip(k.getBody().front().getArguments(), b.getArguments()))
          map.map(arg, nb);
      },
      [](OpBuilder &, IRMapping &) { return SmallVector<Value>(); }, keep);
  unsigned next = 0;
  for (auto [i, r] : llvm::enumerate(k.getResults()))
    if (keep[i])
      r.replaceAllUsesWith(slim.getResult(next++));
  k.erase();
  return slim;
}

/// Folds one transpose kernel into the operand load of matmul kernel `k`;
/// the kernel that replaces `k` if it did (`k` is erased), else null.
KernelOp foldIntoLoad(KernelOp k) {
  Block &body = k.getBody().front();
  for (auto [j, input] : llvm::enumerate(k.getInputs())) {
    // Only operands the kernel reads as a matmul's lhs or rhs.
    BlockArgument arg = body.getArgument(j);
    bool operandOnly = !arg.use_empty() && llvm::all_of(arg.getUsers(), [](Operation *u) {
      return isa<MatmulOp>(u);
    });
    if (!operandOnly)
      continue;
    SmallVector<ReshapeOp> chain;
    Value moved = throughReshapes(input, chain);
    auto m = moved.getDefiningOp<KernelOp>();
    Operation *move = m ? movementOp(m, /*transposeOnly=*/true) : nullptr;
    // A convolution's shifted windows (conv_window: row windows of one
    // input side by side) fold whole: the matmul reads each window through
    // the input's tensor map (implicit GEMM).
    bool window = m && !move && m.getName() == "conv_window" && m.getInputs().size() == 1 &&
                  m.getNumResults() == 1;
    if (!move && !window)
      continue;
    SmallVector<Value> inputs(k.getInputs().begin(), k.getInputs().end());
    inputs[j] = m.getInputs()[0];
    SmallVector<bool> keep(k.getNumResults(), true);
    KernelOp folded = rebuild(
        k, inputs,
        [&](OpBuilder &b, Block &nb, IRMapping &map) {
          for (auto [i, a] : llvm::enumerate(body.getArguments()))
            if (i != j)
              map.map(a, nb.getArgument(i));
          IRMapping through;
          Value v;
          if (window) {
            Block &wb = m.getBody().front();
            through.map(wb.getArgument(0), nb.getArgument(j));
            for (Operation &op : wb.without_terminator())
              b.clone(op, through);
            v = through.lookup(wb.getTerminator()->getOperand(0));
          } else {
            through.map(move->getOperand(0), nb.getArgument(j));
            v = b.clone(*move, through)->getResult(0);
          }
          for (ReshapeOp r : chain)
            v = ReshapeOp::create(b, r.getLoc(), r.getType(), v).getResult();
          map.map(arg, v);
        },
        [](OpBuilder &, IRMapping &) { return SmallVector<Value>(); }, keep);
    if (!matmulOnTensorCores(folded)) {
      folded.erase();
      continue;
    }
    LLVM_DEBUG(llvm::dbgs() << "fold-movement: " << m.getNameAttr() << " into the load of "
                            << k.getNameAttr() << "\n");
    for (auto [from, to] : llvm::zip(k.getResults(), folded.getResults()))
      from.replaceAllUsesWith(to);
    k.erase();
    for (ReshapeOp r : llvm::reverse(chain))
      if (r->use_empty())
        r.erase();
    if (m->use_empty())
      m.erase();
    return folded;
  }
  return {};
}

bool hasReductionOrMatmul(KernelOp k) {
  bool found = false;
  k.getBody().walk([&](Operation *op) { found |= isa<MatmulOp, ReduceOp>(op); });
  return found;
}

/// A kernel of one result that moves data by concat, slice or a transpose
/// that keeps the last dim (a head transpose [B, S, H, D] -> [B, H, S, D]:
/// read through its map, each element's row of D stays contiguous), with at
/// most elementwise ops beside (rotate_half's neg): no reduction, matmul or
/// gather. A transpose of the last dim counts only as the kernel's one op
/// (`tiledOnly` says so): the consumer it folds into must then be one that
/// transpose_tiled takes, through shared-memory tiles.
bool concatOrSliceKernel(KernelOp k, bool &tiledOnly) {
  tiledOnly = false;
  if (k.getNumResults() != 1)
    return false;
  bool moves = false;
  Block &b = k.getBody().front();
  for (Operation &op : b.without_terminator()) {
    if (auto t = dyn_cast<TransposeOp>(op)) {
      ArrayRef<int64_t> perm = t.getPermutation();
      if (perm.empty())
        return false;
      if (perm.back() != static_cast<int64_t>(perm.size()) - 1) {
        if (b.getOperations().size() != 2 || !isa<BlockArgument>(t.getInput()))
          return false;
        tiledOnly = true;
      }
      moves = true;
      continue;
    }
    if (isa<MatmulOp, ReduceOp, GatherOp, KernelOp>(op))
      return false;
    moves |= isa<ConcatOp, SliceOp>(op);
  }
  return moves;
}

/// Folds concat or slice kernel `m` into the load of the one kernel that
/// reads its result (directly or through free reshapes, each read once: a
/// transposed convolution's phases interleaved by a concat, reshaped, then
/// sliced), when that kernel is elementwise. Returns the rebuilt consumer,
/// or null; `erasing` is told of `m` and the old consumer before they are
/// erased.
KernelOp foldIntoConsumer(KernelOp m, llvm::function_ref<void(Operation *)> erasing) {
  bool tiledOnly = false;
  if (!concatOrSliceKernel(m, tiledOnly) || !m.getResult(0).hasOneUse())
    return nullptr;
  SmallVector<ReshapeOp> chain;
  Value read = m.getResult(0);
  while (read.hasOneUse())
    if (auto r = dyn_cast<ReshapeOp>(*read.getUsers().begin())) {
      chain.push_back(r);
      read = r.getResult();
    } else {
      break;
    }
  if (!read.hasOneUse())
    return nullptr;
  auto k = dyn_cast<KernelOp>(*read.getUsers().begin());
  if (!k || hasReductionOrMatmul(k))
    return nullptr;
  Block &body = k.getBody().front();
  unsigned j = read.getUses().begin()->getOperandNumber();
  // Read once per element: a broadcast of the moved value would recompute
  // the movement kernel's ops (an exp, say) for every element it spans.
  if (llvm::any_of(body.getArgument(j).getUsers(),
                   [](Operation *u) { return isa<BroadcastOp>(u); }))
    return nullptr;
  // The consumer's inputs: the moved value's place taken by the movement's
  // inputs, each value once (rotate_half's slices and the consumer read the
  // same x: one argument, one load per element).
  SmallVector<Value> inputs;
  llvm::DenseMap<Value, unsigned> position;
  auto place = [&](Value v) {
    auto [it, added] = position.try_emplace(v, inputs.size());
    if (added)
      inputs.push_back(v);
    return it->second;
  };
  SmallVector<unsigned> kArg, mArg;
  for (auto [i, v] : llvm::enumerate(k.getInputs()))
    kArg.push_back(i == j ? 0 : place(v));
  for (Value v : m.getInputs())
    mArg.push_back(place(v));
  if (inputs.size() + k.getNumResults() > kMaxKernelParams)
    return nullptr;
  SmallVector<bool> keep(k.getNumResults(), true);
  KernelOp folded = rebuild(
      k, inputs,
      [&](OpBuilder &b, Block &nb, IRMapping &map) {
        for (auto [i, a] : llvm::enumerate(body.getArguments()))
          if (i != j)
            map.map(a, nb.getArgument(kArg[i]));
        IRMapping through;
        Block &moved = m.getBody().front();
        for (auto [i, a] : llvm::enumerate(moved.getArguments()))
          through.map(a, nb.getArgument(mArg[i]));
        for (Operation &op : moved.without_terminator())
          b.clone(op, through);
        Value v = through.lookup(moved.getTerminator()->getOperand(0));
        for (ReshapeOp r : chain)
          v = ReshapeOp::create(b, r.getLoc(), r.getType(), v).getResult();
        map.map(body.getArgument(j), v);
      },
      [](OpBuilder &, IRMapping &) { return SmallVector<Value>(); }, keep, {},
      /*matmulEpilogue=*/false);
  // A transpose of the last dim stays a kernel of its own unless the
  // consumer's tiles take it (read element by element, it would stride).
  if (tiledOnly && !transposeTiled(folded)) {
    folded.erase();
    return nullptr;
  }
  LLVM_DEBUG(llvm::dbgs() << "fold-movement: " << m.getNameAttr() << " into the load of "
                          << k.getNameAttr() << "\n");
  for (auto [from, to] : llvm::zip(k.getResults(), folded.getResults()))
    from.replaceAllUsesWith(to);
  erasing(k);
  erasing(m);
  k.erase();
  for (ReshapeOp r : llvm::reverse(chain))
    r.erase();
  m.erase();
  return folded;
}

} // namespace

void foldMovementIntoConsumers(func::FuncOp func) {
  // The folds a walk from the top would make, one after another (walking
  // again after each was quadratic: an unrolled LSTM of 1,000 steps spent
  // 90% of the pipeline there). The kernels still to try are kept in
  // program order; a fold erases two kernels (the movement and its
  // consumer) and builds one, which is tried again with the kernels that
  // feed it (their consumer changed). Every other kernel that did not fold
  // still cannot, so the first one in order that can is the one the walk
  // would find.
  auto before = [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); };
  std::set<Operation *, decltype(before)> pending(before);
  for (Operation &op : func.getBody().front())
    if (isa<KernelOp>(op))
      pending.insert(&op);
  while (!pending.empty()) {
    auto m = cast<KernelOp>(*pending.begin());
    pending.erase(pending.begin());
    KernelOp folded = foldIntoConsumer(m, [&](Operation *op) { pending.erase(op); });
    if (!folded)
      continue;
    pending.insert(folded.getOperation());
    for (Value v : folded.getInputs()) {
      while (auto r = v.getDefiningOp<ReshapeOp>())
        v = r.getInput();
      if (auto producer = v.getDefiningOp<KernelOp>())
        pending.insert(producer.getOperation());
    }
  }
}

void foldMovementIntoMatmuls(func::FuncOp func) {
  // Each matmul kernel in order, folded until nothing more folds into it.
  // A fold erases only `k` and the movement kernel it takes (never another
  // matmul kernel), and what folds into one matmul kernel does not depend
  // on another's folds, so one walk does (it used to walk again from the
  // start after each fold: quadratic in the matmuls of a model).
  SmallVector<KernelOp> kernels;
  func.walk([&](KernelOp k) {
    if (hasMatmul(k))
      kernels.push_back(k);
  });
  for (KernelOp k : kernels) {
    while (true) {
      KernelOp next = foldIntoStore(k);
      if (!next)
        next = foldIntoLoad(k);
      if (!next)
        break;
      k = next;
    }
    dropDeadOutputs(k);
  }
  // Outputs the folds left unread.
  kernels.clear();
  func.walk([&](KernelOp k) {
    if (hasMatmul(k))
      kernels.push_back(k);
  });
  for (KernelOp k : kernels)
    dropDeadOutputs(k);
}

} // namespace fusec
