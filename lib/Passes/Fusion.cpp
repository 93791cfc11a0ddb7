//===- Fusion.cpp - Cost-guided kernel fusion -------------------*- C++ -*-===//
//
// Groups the ops of a function into fusec.kernel regions, greedily by the
// predicted time each merge saves on the target's roofline. See Passes.td
// for the legality rules.
//
//===----------------------------------------------------------------------===//

#include "FoldMovement.h"
#include "fusec/Passes/Passes.h"
#include "fusec/Target/Roofline.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <queue>
#include <vector>

namespace fusec {
#define GEN_PASS_DEF_FUSE
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

#define DEBUG_TYPE "fusec-fuse"

using namespace mlir;
using namespace fusec;

namespace {

enum class Kind { Elementwise, Reduce, Matmul, Fixed, Free };

/// The most ops one kernel takes (see Fuser::tryMerge).
constexpr size_t kMaxKernelOps = 1024;

Kind kindOf(Operation *op) {
  if (auto c = dyn_cast<ConstantOp>(op))
    return Kind::Free;
  // Attention is a call of the runtime's library kernel, not a generated
  // one: it stays a top-level op, like the free reshapes. So does a kernel
  // an earlier run of the pipeline formed (it is not wrapped again).
  if (isa<ReshapeOp, AttentionOp, KernelOp>(op))
    return Kind::Free;
  if (isa<ReduceOp>(op))
    return Kind::Reduce;
  if (isa<MatmulOp>(op))
    return Kind::Matmul;
  // A convolution or a pool is a kernel of its own (no fused epilogue yet).
  if (isa<TransposeOp, SliceOp, ConcatOp, GatherOp, ConvOp, PoolOp>(op))
    return Kind::Fixed;
  if (isa<CostOpInterface>(op))
    return Kind::Elementwise; // elementwise, cast, broadcast
  return Kind::Fixed;
}

bool isSplatConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  return c && isa<SplatElementsAttr>(c.getValue());
}


using Shape = SmallVector<int64_t, 4>;

Shape shapeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return Shape(t.getShape().begin(), t.getShape().end());
}

/// A group of ops that will become one kernel.
struct Group {
  int id = 0;
  int version = 0;
  bool alive = true;
  SmallVector<int, 4> ops; // indices into Fuser::ops, increasing
  bool hasMatmul = false;
  bool hasReduce = false;
  Shape reduceInput;           // the shape all reductions reduce
  SmallVector<int64_t, 2> dims; // the dimensions they reduce
  Shape domain;                // D (see Passes.td)
  double fp32 = 0, tensor = 0, sfu = 0; // seconds of compute work
  llvm::SetVector<Value> inputs, outputs;
  int minIndex = 0, maxIndex = 0;
};

struct Candidate {
  double benefit;
  int a, b, va, vb;
  bool operator<(const Candidate &o) const { return benefit < o.benefit; }
};

class Fuser {
public:
  Fuser(func::FuncOp func, const Target &target, bool remarks, bool verifyPeak = false)
      : func(func), target(target), remarks(remarks), verifyPeak(verifyPeak) {}

  LogicalResult run();

private:
  // Setup and costs.
  void collect();
  double seconds(const Group &g) const;
  double bytesOf(const llvm::SetVector<Value> &values) const;
  bool returned(Value v) const { return returnedValues.contains(v); }
  /// The group of a top-level op, or -1 for ops in no group (free ops,
  /// ops of other regions).
  int groupOfOp(Operation *op) const {
    auto it = opIndex.find(op);
    if (it == opIndex.end() || opGroup[it->second] < 0)
      return -1;
    return find(it->second);
  }
  int find(int opIdx) const {
    int g = opGroup[opIdx];
    while (groupParent[g] != g)
      g = groupParent[g];
    return g;
  }

  // Merging.
  std::optional<Group> tryMerge(const Group &a, const Group &b,
                                bool vertical) const;
  bool reaches(int from, int to, int skipDirect) const;
  /// The first op index from `l` on that no live merged group spans (has
  /// ops at or before it and after it): past it, no group reaches a group
  /// whose ops end at `l`.
  int spanBound(int l) const;
  /// The live merged groups' spans, kept as each group changes: a max
  /// segment tree over op indices whose leaf at a group's minIndex holds
  /// its maxIndex (live groups are disjoint, so no two share a leaf), and
  /// `spanOwner`, the group a leaf is for. A prefix maximum answers "how
  /// far do the groups that start at or before l reach" in O(log n), so a
  /// merge costs O(log n), not a sort of every span (quadratic past 10,000
  /// ops).
  std::vector<int> spanTree, spanOwner, spanLeaf;
  size_t spanLeaves = 0;
  void resetSpans();
  void setSpanLeaf(int pos, int owner, int value);
  int spanPrefixMax(int r) const;
  /// Records group `id`'s current span (or drops it: dead or one op).
  void changed(int id);
  SmallVector<int> successors(const Group &g, SmallVectorImpl<int> *viaFree = nullptr) const;
  /// The groups that define `g`'s inputs (through free ops, as successors
  /// goes through them forward).
  SmallVector<int> predecessors(const Group &g, SmallVectorImpl<int> *viaFree = nullptr) const;
  /// reaches() searched backward from `to`, visiting at most `budget`
  /// groups: the answer, or nothing when the budget ran out.
  std::optional<bool> reachesBackward(int from, int to, int budget) const;
  mutable std::vector<unsigned> listed, listedViaFree; ///< successors' stamps, by group
  mutable unsigned listStamp = 0;
  void pushCandidates(int g);
  void applyMerges(size_t count);

  // Output.
  int64_t peakOf(bool fused) const;
  LogicalResult materialize();

  // The memory replay's peak, kept as merges apply and revert (O(inputs +
  // outputs) a merge, not a whole evaluation a test). A value's life is an
  // interval of positions: a group runs at its last op's position, a lone op
  // at its own, arguments from -1 and returned values to ops.size(). A max
  // segment tree with range adds over the positions holds the live bytes;
  // its root is the peak. That is peakOf(true)'s answer as long as the
  // positions are a topological order of the kernels. A merge moves a group
  // later, so the only way to break the order is a reader of the merged
  // group's outputs placed before it (a lone op between its ops); such
  // groups are kept in `disordered`, and while any is, the peak is a whole
  // evaluation again (peakOf topologically sorts).
  struct Life {
    int first, last;
  };
  llvm::DenseMap<Value, Value> views;     // reshape result -> its input
  llvm::DenseMap<Value, Life> lives;      // by view root
  std::vector<__int128> peakMax, peakAdd; // the segment tree (1-based)
  size_t peakLeaves = 0;
  llvm::DenseSet<int> disordered;
  struct LifeUndo {
    Value v;
    std::optional<Life> old;
  };
  std::vector<LifeUndo> lifeUndo;
  std::vector<std::pair<int, bool>> disorderUndo; // (group, was in the set)
  bool peakMismatch = false;
  size_t peakTests = 0, windowedTests = 0; // for the replay's remark
  Value viewRoot(Value v) const {
    for (auto it = views.find(v); it != views.end(); it = views.find(v))
      v = it->second;
    return v;
  }
  void peakRangeAdd(size_t node, size_t lo, size_t hi, size_t l, size_t r, __int128 bytes);
  void setLife(Value v, std::optional<Life> life, bool logged = true);
  void setDisordered(int g, bool in);
  /// Whether a reader of one of `g`'s outputs runs before `g` (at a position
  /// before its last op's).
  bool readBefore(const Group &g) const;
  /// Builds the intervals and the tree from the current groups.
  void peakReset();
  /// Updates them for the merge of `a` and `b` (as they were) into `m`
  /// (the groups' state already has it).
  void peakMerged(const Group &a, const Group &b, const Group &m);
  /// Undoes the updates logged past the marks.
  void peakRevert(size_t lifeMark, size_t disorderMark);
  /// The fused graph's peak now.
  int64_t peakNow();
  /// peakOf(true)'s answer while some group is disordered, without a whole
  /// evaluation: the topological order (earliest position first) differs
  /// from the positions only inside windows of positions around each
  /// disordered group and the readers it delays; those are ordered and
  /// swept locally, and the tree answers for every other position.
  int64_t peakWindowed() const;
  /// The position a top-level op runs at: its group's last op's, or its own.
  int nodeAt(int opIdx) const {
    return opGroup[opIdx] < 0 ? opIdx : groups[find(opIdx)].maxIndex;
  }
  /// The positions of the nodes (groups or lone ops) that read the outputs
  /// of the node at `at`, through views; `at` itself is left out.
  void readersOf(int at, SmallVectorImpl<int> &out) const;
  __int128 peakRangeMax(size_t node, size_t lo, size_t hi, size_t l, size_t r) const;

  mutable func::FuncOp func;
  const Target &target;
  bool remarks;
  bool verifyPeak;

  std::vector<Operation *> ops;
  llvm::DenseMap<Operation *, int> opIndex;
  std::vector<int> opGroup;     // op index -> group id (or -1 if ungrouped)
  std::vector<int> groupParent; // union-find over group ids
  std::vector<Group> groups;
  std::vector<Group> initial;
  llvm::DenseSet<Value> returnedValues;
  std::priority_queue<Candidate> queue;
  std::vector<std::pair<int, int>> merges; // (kept, absorbed) in order
};

void Fuser::collect() {
  Block &body = func.getBody().front();
  for (Value v : body.getTerminator()->getOperands())
    returnedValues.insert(v);
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    opIndex[&op] = static_cast<int>(ops.size());
    ops.push_back(&op);
  }
  opGroup.assign(ops.size(), -1);
  for (auto [i, op] : llvm::enumerate(ops)) {
    Kind k = kindOf(op);
    if (k == Kind::Free)
      continue;
    Group g;
    g.id = static_cast<int>(groups.size());
    g.ops.push_back(static_cast<int>(i));
    g.minIndex = g.maxIndex = static_cast<int>(i);
    g.hasMatmul = k == Kind::Matmul;
    g.hasReduce = k == Kind::Reduce;
    if (auto r = dyn_cast<ReduceOp>(op)) {
      g.reduceInput = shapeOf(r.getInput());
      g.dims.assign(r.getDims().begin(), r.getDims().end());
      llvm::sort(g.dims);
      g.domain = g.reduceInput;
    } else if (op->getNumResults() == 1) {
      g.domain = shapeOf(op->getResult(0));
    }
    if (auto costed = dyn_cast<CostOpInterface>(op)) {
      OpCost c = costed.getCost();
      if (k == Kind::Matmul || isa<AttentionOp, ConvOp>(op))
        g.tensor = c.flops / target.tensorFlopsPerSecond(
                                 dtypeOf(op->getOperand(0).getType()).value_or(DType::F32));
      else
        g.fp32 = c.flops / target.fp32FlopsPerSecond();
      g.sfu = c.sfuOps / target.sfuOpsPerSecond();
    }
    for (Value v : op->getOperands())
      if (!isSplatConstant(v))
        g.inputs.insert(v);
    for (Value r : op->getResults())
      g.outputs.insert(r);
    opGroup[i] = g.id;
    groupParent.push_back(g.id);
    groups.push_back(std::move(g));
  }
  initial = groups;
}

double Fuser::bytesOf(const llvm::SetVector<Value> &values) const {
  double b = 0;
  for (Value v : values)
    b += tensorBytes(v.getType());
  return b;
}

double Fuser::seconds(const Group &g) const {
  double hbm = (bytesOf(g.inputs) + bytesOf(g.outputs)) / target.hbmBytesPerSecond();
  return std::max({hbm, g.fp32, g.tensor, g.sfu}) + target.launchSeconds();
}

SmallVector<int> Fuser::successors(const Group &g, SmallVectorImpl<int> *viaFree) const {
  SmallVector<int> out;
  // Free ops (reshapes) stay outside every group: they pass the dependence
  // on to their users, through chains of them. A group reached only through
  // one is listed in `viaFree` too: merging with it would put the free op
  // between two parts of one kernel (a cycle).
  // Each group listed once, by a stamp a call (a wide group has thousands
  // of readers: a search of the list for each was quadratic).
  unsigned stamp = ++listStamp;
  if (listed.size() < groups.size()) {
    listed.resize(groups.size(), 0);
    listedViaFree.resize(groups.size(), 0);
  }
  SmallVector<Value, 8> work(g.outputs.begin(), g.outputs.end());
  llvm::DenseSet<Operation *> seenFree;
  SmallVector<bool, 8> isFreePath(work.size(), false);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    bool throughFree = isFreePath.pop_back_val();
    for (Operation *user : v.getUsers()) {
      int ug = groupOfOp(user);
      if (ug < 0) {
        if (opIndex.count(user) && kindOf(user) == Kind::Free && seenFree.insert(user).second)
          for (Value r : user->getResults()) {
            work.push_back(r);
            isFreePath.push_back(true);
          }
        continue;
      }
      if (ug == g.id)
        continue;
      if (listed[ug] != stamp) {
        listed[ug] = stamp;
        out.push_back(ug);
      }
      if (throughFree && viaFree && listedViaFree[ug] != stamp) {
        listedViaFree[ug] = stamp;
        viaFree->push_back(ug);
      }
    }
  }
  return out;
}

void Fuser::resetSpans() {
  spanLeaves = 1;
  while (spanLeaves < std::max<size_t>(ops.size(), 1))
    spanLeaves *= 2;
  spanTree.assign(2 * spanLeaves, -1);
  spanOwner.assign(spanLeaves, -1);
  spanLeaf.assign(groups.size(), -1);
}

void Fuser::setSpanLeaf(int pos, int owner, int value) {
  spanOwner[pos] = owner;
  size_t i = spanLeaves + static_cast<size_t>(pos);
  spanTree[i] = value;
  for (i /= 2; i >= 1; i /= 2)
    spanTree[i] = std::max(spanTree[2 * i], spanTree[2 * i + 1]);
}

int Fuser::spanPrefixMax(int r) const {
  // The maximum over leaves [0, r].
  int best = -1;
  size_t lo = spanLeaves, hi = spanLeaves + static_cast<size_t>(r) + 1;
  while (lo < hi) {
    if (lo & 1)
      best = std::max(best, spanTree[lo++]);
    if (hi & 1)
      best = std::max(best, spanTree[--hi]);
    lo /= 2;
    hi /= 2;
  }
  return best;
}

void Fuser::changed(int id) {
  if (spanLeaf.size() < groups.size())
    spanLeaf.resize(groups.size(), -1);
  const Group &g = groups[id];
  int old = spanLeaf[static_cast<size_t>(id)];
  // The leaf may since belong to the group this one merged into.
  if (old >= 0 && spanOwner[old] == id)
    setSpanLeaf(old, -1, -1);
  spanLeaf[static_cast<size_t>(id)] = -1;
  if (g.alive && g.maxIndex > g.minIndex) {
    setSpanLeaf(g.minIndex, id, g.maxIndex);
    spanLeaf[static_cast<size_t>(id)] = g.minIndex;
  }
}

int Fuser::spanBound(int l) const {
  // The groups that start at or before l end at most at their prefix
  // maximum; past l, that is the new point (such a group spans l), until
  // none reaches past. `to`'s own span is among them; it ends at l, so it
  // never widens.
  for (;;) {
    int reach = spanPrefixMax(std::min<int>(l, static_cast<int>(spanLeaves) - 1));
    if (reach <= l)
      return l;
    l = reach;
  }
}

SmallVector<int> Fuser::predecessors(const Group &g, SmallVectorImpl<int> *viaFree) const {
  SmallVector<int> out;
  unsigned stamp = ++listStamp;
  if (listed.size() < groups.size()) {
    listed.resize(groups.size(), 0);
    listedViaFree.resize(groups.size(), 0);
  }
  SmallVector<std::pair<Value, bool>, 8> work;
  for (Value v : g.inputs)
    work.push_back({v, false});
  llvm::SmallPtrSet<Operation *, 8> seenFree;
  while (!work.empty()) {
    auto [v, throughFree] = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    int dg = groupOfOp(def);
    if (dg < 0) {
      if (opIndex.count(def) && kindOf(def) == Kind::Free && seenFree.insert(def).second)
        for (Value operand : def->getOperands())
          work.push_back({operand, true});
      continue;
    }
    if (dg == g.id)
      continue;
    if (listed[dg] != stamp) {
      listed[dg] = stamp;
      out.push_back(dg);
    }
    if (throughFree && viaFree && listedViaFree[dg] != stamp) {
      listedViaFree[dg] = stamp;
      viaFree->push_back(dg);
    }
  }
  return out;
}

std::optional<bool> Fuser::reachesBackward(int from, int to, int budget) const {
  SmallVector<int, 16> stack;
  llvm::SmallDenseSet<int, 16> seen;
  SmallVector<int, 4> viaFree;
  for (int p : predecessors(groups[to], &viaFree)) {
    if (p == from) {
      if (llvm::is_contained(viaFree, from))
        return true; // through a free op: a third node
      continue;      // the direct edge
    }
    stack.push_back(p);
  }
  while (!stack.empty()) {
    int g = stack.pop_back_val();
    if (g == from)
      return true;
    if (!seen.insert(g).second)
      continue;
    if (static_cast<int>(seen.size()) > budget)
      return std::nullopt;
    for (int p : predecessors(groups[g]))
      stack.push_back(p);
  }
  return false;
}

/// Is there a path from group `from` to group `to` that passes through at
/// least one other group? (`skipDirect`: ignore the direct edge.)
///
/// First searched backward from `to` within a small budget: a group's
/// inputs are few (at most kMaxKernelParams), while a wide group has
/// thousands of readers, which the forward search lists at every merge
/// (quadratic on a fan-out). Either search is exact; the forward one, with
/// its span bound, takes over when the backward one runs out of budget.
bool Fuser::reaches(int from, int to, int skipDirect) const {
  constexpr int kBackwardBudget = 64;
  if (skipDirect)
    if (std::optional<bool> r = reachesBackward(from, to, kBackwardBudget))
      return *r;
  SmallVector<int, 16> stack;
  llvm::DenseSet<int> seen;
  SmallVector<int, 4> viaFree;
  for (int s : successors(groups[from], &viaFree)) {
    if (skipDirect && s == to && llvm::is_contained(viaFree, to))
      return true; // a path through a free op counts as through a third node
    if (!(skipDirect && s == to))
      stack.push_back(s);
  }
  // Op order bounds the search: an edge into a group always goes to a
  // later op. But a merged group need not be contiguous in op order, so a
  // group whose ops all come after `to`'s last op can still reach `to`,
  // through a group with ops on both sides of that point: past spanBound,
  // none can (the first group of such a path at or before the bound would
  // have an op after it).
  std::optional<int> bound;
  auto prunable = [&](const Group &g) {
    if (g.minIndex <= groups[to].maxIndex)
      return false;
    if (!bound)
      bound = spanBound(groups[to].maxIndex);
    return g.minIndex > *bound;
  };
  while (!stack.empty()) {
    int g = stack.pop_back_val();
    if (g == to)
      return true;
    if (!seen.insert(g).second || prunable(groups[g]))
      continue;
    for (int s : successors(groups[g]))
      stack.push_back(s);
  }
  return false;
}

/// The merged group, or nothing if the merge is illegal.
std::optional<Group> Fuser::tryMerge(const Group &a, const Group &b,
                                     bool vertical) const {
  auto fixed = [&](const Group &g) {
    return g.ops.size() == 1 && kindOf(ops[g.ops[0]]) == Kind::Fixed;
  };
  if (fixed(a) || fixed(b))
    return std::nullopt;
  // A kernel of at most kMaxKernelOps ops: code generation walks a kernel's
  // body depth first (16,000 chained ops overflowed the 8 MB stack), and
  // compiles it as one function.
  if (a.ops.size() + b.ops.size() > kMaxKernelOps)
    return std::nullopt;
  // Matmul: only as the root of an elementwise epilogue; two matmuls of one
  // lhs by rhs of one shape (SwiGLU's gate and up) run as one GEMM with two
  // accumulators.
  if (a.hasMatmul && b.hasMatmul) {
    auto only = [&](const Group &g) -> MatmulOp {
      MatmulOp found;
      for (int oi : g.ops)
        if (auto m = dyn_cast<MatmulOp>(ops[oi])) {
          if (found)
            return MatmulOp();
          found = m;
        }
      return found;
    };
    MatmulOp x = only(a), y = only(b);
    if (!x || !y || a.hasReduce || b.hasReduce || a.domain != b.domain ||
        x.getLhs() != y.getLhs() || x.getRhs().getType() != y.getRhs().getType() ||
        x.getType() != y.getType() || x.getTransposeLhs() != y.getTransposeLhs() ||
        x.getTransposeRhs() != y.getTransposeRhs() || x.getRhs() == y.getRhs())
      return std::nullopt;
    // Neither matmul may read the other group's results (its operands are
    // the kernel's inputs).
    for (Value v : llvm::concat<const Value>(a.outputs, b.outputs))
      if (v == x.getRhs() || v == y.getRhs() || v == x.getLhs())
        return std::nullopt;
  } else if (a.hasMatmul || b.hasMatmul) {
    const Group &mm = a.hasMatmul ? a : b;
    const Group &epi = a.hasMatmul ? b : a;
    if (!vertical || epi.hasReduce || mm.hasReduce)
      return std::nullopt;
    if (&mm != &a) {
      // A producer of the epilogue's other inputs (a bias broadcast to the
      // result's shape) joins it; one of the matmul's operands does not.
      for (int oi : mm.ops)
        if (auto matmul = dyn_cast<MatmulOp>(ops[oi]))
          for (Value v : epi.outputs)
            if (v == matmul.getLhs() || v == matmul.getRhs())
              return std::nullopt;
    }
    if (epi.domain != mm.domain)
      return std::nullopt;
  }
  // A side producer: a small elementwise group (a per-feature vector, say)
  // whose results the consumer only broadcasts; it is recomputed inside the
  // consumer's iteration domain.
  bool side = false;
  if (vertical && !a.hasReduce && !a.hasMatmul && a.domain != b.domain &&
      !returned(a.outputs.front())) {
    side = true;
    for (Value v : a.outputs)
      for (Operation *user : v.getUsers())
        side &= groupOfOp(user) == b.id && isa<BroadcastOp>(user) &&
                !returned(v);
  }
  Group m;
  m.id = a.id;
  m.version = a.version + 1;
  m.hasMatmul = a.hasMatmul || b.hasMatmul;
  m.hasReduce = a.hasReduce || b.hasReduce;
  if (a.hasReduce && b.hasReduce &&
      (a.reduceInput != b.reduceInput || a.dims != b.dims))
    return std::nullopt;
  m.reduceInput = a.hasReduce ? a.reduceInput : b.reduceInput;
  m.dims = a.hasReduce ? a.dims : b.dims;
  // One iteration domain: D, or D without the reduced dims.
  if (m.hasReduce) {
    Shape rowShape;
    for (auto [i, d] : llvm::enumerate(m.reduceInput))
      if (!llvm::is_contained(m.dims, static_cast<int64_t>(i)))
        rowShape.push_back(d);
    for (const Group *g : {&a, &b})
      if (!g->hasReduce && g->domain != m.reduceInput && g->domain != rowShape &&
          !(side && g == &a))
        return std::nullopt;
    m.domain = m.reduceInput;
  } else {
    if (a.domain != b.domain && !side)
      return std::nullopt;
    m.domain = side ? b.domain : a.domain;
  }
  // No cycles through a third group.
  if (reaches(a.id, b.id, /*skipDirect=*/true) ||
      reaches(b.id, a.id, /*skipDirect=*/true))
    return std::nullopt;

  // Both lists are sorted: merge them (a sort of the wide group's ops at
  // every merge was a tenth of a fan-out's fusion time).
  m.ops.resize(a.ops.size() + b.ops.size());
  std::merge(a.ops.begin(), a.ops.end(), b.ops.begin(), b.ops.end(), m.ops.begin());
  m.minIndex = std::min(a.minIndex, b.minIndex);
  m.maxIndex = std::max(a.maxIndex, b.maxIndex);
  m.fp32 = a.fp32 + b.fp32;
  m.tensor = a.tensor + b.tensor;
  m.sfu = a.sfu + b.sfu;
  llvm::SmallDenseSet<int, 8> members = {a.id, b.id};
  auto inside = [&](Operation *op) {
    int g = groupOfOp(op);
    return g >= 0 && members.contains(g);
  };
  for (const Group *g : {&a, &b})
    for (Value v : g->inputs) {
      Operation *def = v.getDefiningOp();
      if (!def || !inside(def))
        m.inputs.insert(v);
    }
  for (const Group *g : {&a, &b})
    for (Value v : g->outputs) {
      bool escapes = returned(v);
      for (Operation *user : v.getUsers())
        escapes |= !inside(user);
      if (escapes)
        m.outputs.insert(v);
    }
  if (m.inputs.size() + m.outputs.size() > kMaxKernelParams)
    return std::nullopt;
  return m;
}

void Fuser::pushCandidates(int gi) {
  const Group &g = groups[gi];
  auto consider = [&](int other, bool vertical) {
    if (other < 0 || other == gi || !groups[other].alive)
      return;
    const Group &a = vertical ? groups[other] : g; // producer first
    const Group &b = vertical ? g : groups[other];
    auto m = tryMerge(a, b, vertical);
    if (!m)
      return;
    double benefit = seconds(a) + seconds(b) - seconds(*m);
    if (benefit > 0)
      queue.push({benefit, a.id, b.id, a.version, b.version});
  };
  // Producers of this group's inputs, and other readers of its inputs: at
  // most 8 of them among its first 64 users (a value read by 8,000 ops made
  // every merge into its readers' group rescan them all: 222 s at 24,000
  // ops). A reader further down the list finds this group from its side.
  for (Value v : g.inputs) {
    if (Operation *def = v.getDefiningOp())
      consider(groupOfOp(def), /*vertical=*/true);
    int siblings = 0, scanned = 0;
    for (Operation *user : v.getUsers()) {
      if (siblings >= 8 || scanned++ >= 64)
        break;
      int ug = groupOfOp(user);
      if (ug >= 0 && ug != gi) {
        ++siblings;
        consider(ug, /*vertical=*/false);
      }
    }
  }
  // Consumers of its outputs.
  for (Value v : g.outputs)
    for (Operation *user : v.getUsers()) {
      int ug = groupOfOp(user);
      if (ug < 0 || ug == gi || !groups[ug].alive)
        continue;
      auto m = tryMerge(g, groups[ug], /*vertical=*/true);
      if (!m)
        continue;
      double benefit = seconds(g) + seconds(groups[ug]) - seconds(*m);
      if (benefit > 0)
        queue.push({benefit, g.id, ug, g.version, groups[ug].version});
    }
}

void Fuser::applyMerges(size_t count) {
  groups = initial;
  resetSpans();
  for (const Group &g : groups)
    changed(g.id);
  for (auto [i, g] : llvm::enumerate(groupParent))
    g = static_cast<int>(i);
  for (size_t i = 0; i < count; ++i) {
    auto [a, b] = merges[i];
    bool vertical = false;
    for (Value v : groups[b].inputs)
      if (Operation *def = v.getDefiningOp())
        vertical |= groupOfOp(def) == a;
    auto m = tryMerge(groups[a], groups[b], vertical);
    if (!m) // cannot happen: the same merges, in the same order
      continue;
    groups[a] = std::move(*m);
    groups[b].alive = false;
    groupParent[b] = a;
    changed(a);
    changed(b);
  }
}

LogicalResult Fuser::run() {
  collect();
  resetSpans();
  for (const Group &g : groups)
    changed(g.id);
  for (const Group &g : groups)
    pushCandidates(g.id);
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    Group &a = groups[c.a];
    Group &b = groups[c.b];
    if (!a.alive || !b.alive)
      continue;
    bool vertical = false;
    for (Value v : b.inputs)
      if (Operation *def = v.getDefiningOp())
        vertical |= groupOfOp(def) == c.a;
    if (a.version != c.va || b.version != c.vb) {
      // Stale: re-price it.
      auto m = tryMerge(a, b, vertical);
      if (m) {
        double benefit = seconds(a) + seconds(b) - seconds(*m);
        if (benefit > 0)
          queue.push({benefit, a.id, b.id, a.version, b.version});
      }
      continue;
    }
    auto m = tryMerge(a, b, vertical);
    if (!m)
      continue;
    if (remarks)
      emitRooflineRemark(ops[b.ops.front()], target,
                         llvm::Twine("fused with ") +
                             ops[a.ops.front()]->getName().getStringRef() +
                             " (saves " +
                             llvm::Twine(static_cast<int64_t>(c.benefit * 1e9)) +
                             " ns)");
    merges.push_back({a.id, b.id});
    groups[a.id] = std::move(*m);
    b.alive = false;
    changed(a.id);
    changed(b.id);
    groupParent[b.id] = a.id;
    pushCandidates(a.id);
  }

  // Memory: never above the unfused graph's peak. The merges are replayed in
  // their order, and each one that would raise the peak above it is left
  // out; the later ones still apply where they stay legal (tryMerge checks
  // them again against the groups the replay has formed).
  //
  // The peak is a whole evaluation of the graph (peakOf), so the replay
  // tests it on runs of merges, not on each: a run of merges is applied and
  // kept if the graph after it stays under the peak, and the runs double
  // while they pass. When one fails, bisection over it finds a merge that
  // raises the peak of a state that passed (each tried prefix of the run is
  // applied merge by merge, as the replay would), which is left out, and
  // the runs go on at half the length. A run's own intermediate states are not
  // tested: what holds is that every state the replay keeps (and so the
  // final graph) stays under the unfused graph's peak. On a fan-out of
  // 2,000 multiplies (6,000 ops; 3,979 merges, 211 left out) this takes a
  // few peak evaluations a refusal, not one a merge.
  int64_t unfusedPeak = peakOf(/*fused=*/false);
  if (peakOf(/*fused=*/true) > unfusedPeak) {
    std::vector<std::pair<int, int>> all = std::move(merges);
    merges.clear();
    applyMerges(0);
    peakReset();
    struct Applied {
      size_t index; // in `all`
      Group saved;  // groups[a] before the merge
      size_t lifeMark, disorderMark; // the peak's undo logs before it
    };
    std::vector<Applied> log;
    // Applies all[i] if it is still legal; true if it did.
    auto apply = [&](size_t i) {
      auto [a, b] = all[i];
      if (!groups[a].alive || !groups[b].alive)
        return false;
      bool vertical = false;
      for (Value v : groups[b].inputs)
        if (Operation *def = v.getDefiningOp())
          vertical |= groupOfOp(def) == a;
      auto m = tryMerge(groups[a], groups[b], vertical);
      if (!m)
        return false;
      log.push_back({i, std::move(groups[a]), lifeUndo.size(), disorderUndo.size()});
      groups[a] = std::move(*m);
      groups[b].alive = false;
      groupParent[b] = a;
      changed(a);
      changed(b);
      peakMerged(log.back().saved, groups[b], groups[a]);
      return true;
    };
    // Undoes the applied merges past the first `keep`.
    auto revert = [&](size_t keep) {
      while (log.size() > keep) {
        Applied &u = log.back();
        auto [a, b] = all[u.index];
        groups[a] = std::move(u.saved);
        groups[b].alive = true;
        groupParent[b] = b;
        changed(a);
        changed(b);
        peakRevert(u.lifeMark, u.disorderMark);
        log.pop_back();
      }
    };
    size_t skipped = 0, next = 0, run = 1;
    while (next < all.size()) {
      log.clear();
      lifeUndo.clear(); // the merges before are kept: nothing reverts them
      disorderUndo.clear();
      size_t end = std::min(all.size(), next + run);
      std::vector<size_t> tried; // the run's merges that applied
      for (size_t i = next; i < end; ++i)
        if (apply(i))
          tried.push_back(i);
      if (log.empty() || peakNow() <= unfusedPeak) {
        for (const Applied &u : log)
          merges.push_back(all[u.index]);
        next = end;
        run *= 2;
        continue;
      }
      // Prefixes of `tried`: `lo` merges keep the peak (none do: the state
      // the run started from), `hi` raise it.
      size_t lo = 0, hi = tried.size();
      int64_t failedPeak = 0;
      revert(0);
      while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        for (size_t t = lo; t < mid; ++t)
          (void)apply(tried[t]); // legal: the same merges from the same state
        if (int64_t peak = peakNow(); peak <= unfusedPeak) {
          lo = mid;
        } else {
          failedPeak = peak;
          revert(lo);
          hi = mid;
        }
      }
      if (failedPeak == 0) {
        // The first merge alone: measure it for the remark.
        if (apply(tried[lo]))
          failedPeak = peakNow();
        revert(lo);
      }
      for (const Applied &u : log)
        merges.push_back(all[u.index]);
      auto [a, b] = all[tried[lo]];
      if (remarks)
        mlir::emitRemark(ops[groups[b].ops.front()]->getLoc())
            << "not fused with " << ops[groups[a].ops.front()]->getName().getStringRef()
            << ": peak memory would be " << failedPeak
            << " bytes, above the unfused graph's " << unfusedPeak;
      ++skipped;
      next = tried[lo] + 1;
      run = std::max<size_t>(1, run / 2);
    }
    if (remarks)
      mlir::emitRemark(func.getLoc())
          << "fusion left out " << skipped << " of " << all.size()
          << " merges: each would raise peak memory above the unfused graph's " << unfusedPeak
          << " bytes (" << merges.size() << " kept; " << peakTests << " peak tests, "
          << windowedTests << " with a kernel placed after a reader)";
    if (peakMismatch)
      return func.emitError("fusec-fuse: the incrementally kept peak differs from a "
                            "whole evaluation of the graph (verify-peak)");
  }
  return materialize();
}

/// A node of the memory replay's evaluation: a group (at its last op's
/// position) or a lone op, with the values it defines and reads.
struct PeakNode {
  int at;
  SmallVector<Value, 4> defs, uses;
};

/// Kahn's algorithm over `nodes`, the earliest position first: the order
/// (indices into `nodes`), or fewer than all of them on a cycle.
std::vector<int> earliestFirst(const std::vector<PeakNode> &nodes) {
  llvm::DenseMap<Value, int> producer;
  for (auto [i, n] : llvm::enumerate(nodes))
    for (Value d : n.defs)
      producer[d] = static_cast<int>(i);
  std::vector<SmallVector<int, 4>> succ(nodes.size());
  std::vector<int> indegree(nodes.size(), 0);
  for (auto [i, n] : llvm::enumerate(nodes)) {
    llvm::SmallDenseSet<int, 8> preds;
    for (Value u : n.uses)
      if (auto it = producer.find(u); it != producer.end() && it->second != static_cast<int>(i))
        preds.insert(it->second);
    for (int p : preds) {
      succ[p].push_back(static_cast<int>(i));
      ++indegree[i];
    }
  }
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> ready;
  for (auto [i, n] : llvm::enumerate(nodes))
    if (indegree[i] == 0)
      ready.push({n.at, static_cast<int>(i)});
  std::vector<int> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    int i = ready.top().second;
    ready.pop();
    order.push_back(i);
    for (int t : succ[i])
      if (--indegree[t] == 0)
        ready.push({nodes[t].at, t});
  }
  return order;
}

/// Peak live bytes running the groups (fused) or the ops (unfused) in a
/// topological order that follows the original one. A reshape is a view
/// (the runtime gives it its input's bytes): its result extends its input's
/// life instead of holding bytes of its own.
int64_t Fuser::peakOf(bool fused) const {
  // Node per group (fused) or per op, placed at the position of its last op
  // and then ordered topologically (a lone op between a group's ops may read
  // one of its outputs; ties keep the positions).
  llvm::DenseMap<Value, Value> view; // reshape result -> the value it views
  auto root = [&](Value v) {
    for (auto it = view.find(v); it != view.end(); it = view.find(v))
      v = it->second;
    return v;
  };
  std::vector<PeakNode> nodes;
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (isa<ConstantOp>(op) && isSplatConstant(op->getResult(0)))
      continue;
    int g = opGroup[i] < 0 ? -1 : find(static_cast<int>(i));
    if (fused && g >= 0) {
      if (groups[g].maxIndex != static_cast<int>(i))
        continue;
      nodes.push_back({static_cast<int>(i),
                       SmallVector<Value, 4>(groups[g].outputs.begin(), groups[g].outputs.end()),
                       SmallVector<Value, 4>(groups[g].inputs.begin(), groups[g].inputs.end())});
      continue;
    }
    if (auto r = dyn_cast<ReshapeOp>(op); r && (!fused || g < 0)) {
      view[r.getResult()] = r.getInput();
      continue;
    }
    PeakNode n{static_cast<int>(i), {}, {}};
    for (Value r : op->getResults())
      n.defs.push_back(r);
    for (Value v : op->getOperands())
      if (!isSplatConstant(v))
        n.uses.push_back(v);
    nodes.push_back(std::move(n));
  }
  for (PeakNode &n : nodes)
    for (Value &u : n.uses)
      u = root(u);
  // The earliest position first among the ready nodes.
  {
    std::vector<int> order = earliestFirst(nodes);
    if (order.size() == nodes.size()) { // else a cycle: keep the positions
      std::vector<PeakNode> sorted;
      sorted.reserve(nodes.size());
      for (int i : order)
        sorted.push_back(std::move(nodes[i]));
      nodes = std::move(sorted);
    }
  }
  llvm::DenseMap<Value, std::pair<int, int>> live; // first, last node
  int end = static_cast<int>(nodes.size());
  // The arguments are the caller's: held for the whole call, fused or not
  // (an argument read early is not freed early; without this, a kernel that
  // reads every argument and writes every result, an optimizer step, looked
  // like it raised the peak over the op-by-op graph).
  for (Value a : func.getArguments())
    live[a] = {-1, end};
  for (auto [i, n] : llvm::enumerate(nodes)) {
    for (Value d : n.defs)
      live.try_emplace(d, static_cast<int>(i), static_cast<int>(i));
    for (Value u : n.uses) {
      auto it = live.find(u);
      if (it != live.end())
        it->second.second = std::max(it->second.second, static_cast<int>(i));
    }
  }
  for (Value r : returnedValues)
    if (auto it = live.find(root(r)); it != live.end())
      it->second.second = end;
  // In 128 bits (tensors of a valid graph may each be near 2^62 bytes); the
  // peak saturates at INT64_MAX.
  std::vector<__int128> delta(nodes.size() + 3, 0);
  for (auto &[v, span] : live) {
    delta[span.first + 1] += tensorBytes(v.getType());
    delta[span.second + 2] -= tensorBytes(v.getType());
  }
  __int128 best = 0, sum = 0;
  for (__int128 d : delta) {
    sum += d;
    best = std::max(best, sum);
  }
  return static_cast<int64_t>(std::min<__int128>(best, INT64_MAX));
}

void Fuser::peakRangeAdd(size_t node, size_t lo, size_t hi, size_t l, size_t r,
                         __int128 bytes) {
  if (r < lo || hi < l)
    return;
  if (l <= lo && hi <= r) {
    peakAdd[node] += bytes;
    peakMax[node] += bytes;
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  peakRangeAdd(2 * node, lo, mid, l, r, bytes);
  peakRangeAdd(2 * node + 1, mid + 1, hi, l, r, bytes);
  peakMax[node] = std::max(peakMax[2 * node], peakMax[2 * node + 1]) + peakAdd[node];
}

void Fuser::setLife(Value v, std::optional<Life> life, bool logged) {
  auto it = lives.find(v);
  std::optional<Life> old;
  if (it != lives.end())
    old = it->second;
  if (!old && !life)
    return;
  if (old && life && old->first == life->first && old->last == life->last)
    return;
  if (logged)
    lifeUndo.push_back({v, old});
  __int128 bytes = tensorBytes(v.getType());
  // Positions -1 .. ops.size() are leaves 0 .. ops.size() + 1.
  if (old)
    peakRangeAdd(1, 0, peakLeaves - 1, static_cast<size_t>(old->first + 1),
                 static_cast<size_t>(old->last + 1), -bytes);
  if (life) {
    peakRangeAdd(1, 0, peakLeaves - 1, static_cast<size_t>(life->first + 1),
                 static_cast<size_t>(life->last + 1), bytes);
    lives[v] = *life;
  } else {
    lives.erase(v);
  }
}

void Fuser::setDisordered(int g, bool in) {
  bool was = disordered.contains(g);
  if (was == in)
    return;
  disorderUndo.push_back({g, was});
  if (in)
    disordered.insert(g);
  else
    disordered.erase(g);
}

bool Fuser::readBefore(const Group &g) const {
  SmallVector<int> readers;
  readersOf(g.maxIndex, readers);
  return llvm::any_of(readers, [&](int at) { return at < g.maxIndex; });
}

void Fuser::peakReset() {
  views.clear();
  lives.clear();
  disordered.clear();
  lifeUndo.clear();
  disorderUndo.clear();
  for (Operation *op : ops)
    if (auto r = dyn_cast<ReshapeOp>(op))
      views[r.getResult()] = r.getInput();
  int end = static_cast<int>(ops.size());
  // The intervals, as peakOf(true) takes them but over positions.
  llvm::MapVector<Value, Life> found;
  for (Value a : func.getArguments())
    found[a] = {-1, end};
  for (auto [i, op] : llvm::enumerate(ops)) {
    int at = static_cast<int>(i);
    if ((isa<ConstantOp>(op) && isSplatConstant(op->getResult(0))) || isa<ReshapeOp>(op))
      continue;
    int g = opGroup[i] < 0 ? -1 : find(at);
    auto define = [&](Value d) { found.try_emplace(d, Life{at, at}); };
    auto use = [&](Value u) {
      if (isSplatConstant(u))
        return;
      auto it = found.find(viewRoot(u));
      if (it != found.end())
        it->second.last = std::max(it->second.last, at);
    };
    if (g >= 0) {
      if (groups[g].maxIndex != at)
        continue;
      for (Value d : groups[g].outputs)
        define(d);
      for (Value u : groups[g].inputs)
        use(u);
      if (readBefore(groups[g]))
        disordered.insert(g);
      continue;
    }
    for (Value d : op->getResults())
      define(d);
    for (Value u : op->getOperands())
      use(u);
  }
  for (Value r : returnedValues)
    if (auto it = found.find(viewRoot(r)); it != found.end())
      it->second.last = end;
  peakLeaves = 1;
  while (peakLeaves < ops.size() + 2)
    peakLeaves *= 2;
  peakMax.assign(2 * peakLeaves, 0);
  peakAdd.assign(2 * peakLeaves, 0);
  for (auto &[v, life] : found)
    setLife(v, life);
  lifeUndo.clear();
}

void Fuser::peakMerged(const Group &a, const Group &b, const Group &m) {
  int at = m.maxIndex;
  // The two groups' outputs: each either an output of `m` (defined at its
  // position now, read as late as before or by `m`) or internal to it (no
  // bytes of its own any more).
  for (const Group *g : {&a, &b})
    for (Value v : g->outputs) {
      if (!m.outputs.contains(v)) {
        setLife(v, std::nullopt);
        continue;
      }
      auto it = lives.find(v);
      int last = it == lives.end() ? at : std::max(at, it->second.last);
      setLife(v, Life{at, last});
    }
  // Its inputs: now read at its position (the readers in `a` and `b` moved
  // there, never earlier).
  for (Value u : m.inputs) {
    Value r = viewRoot(u);
    auto it = lives.find(r);
    if (it != lives.end() && it->second.last < at)
      setLife(r, Life{it->second.first, at});
  }
  // Only `m` can now have a reader before it; the producers of its inputs
  // had readers move later, which can only put them back in order.
  setDisordered(a.id, false);
  setDisordered(b.id, false);
  if (readBefore(m))
    setDisordered(m.id, true);
  if (!disordered.empty())
    for (Value u : m.inputs)
      if (Operation *def = viewRoot(u).getDefiningOp()) {
        int p = groupOfOp(def);
        if (p >= 0 && p != a.id && p != b.id && disordered.contains(p) && !readBefore(groups[p]))
          setDisordered(p, false);
      }
}

void Fuser::peakRevert(size_t lifeMark, size_t disorderMark) {
  while (lifeUndo.size() > lifeMark) {
    LifeUndo u = lifeUndo.back();
    lifeUndo.pop_back();
    setLife(u.v, u.old, /*logged=*/false);
  }
  while (disorderUndo.size() > disorderMark) {
    auto [g, was] = disorderUndo.back();
    disorderUndo.pop_back();
    if (was)
      disordered.insert(g);
    else
      disordered.erase(g);
  }
}

int64_t Fuser::peakNow() {
  int64_t peak;
  ++peakTests;
  if (!disordered.empty()) {
    ++windowedTests;
    peak = peakWindowed();
  } else {
    __int128 best = std::max<__int128>(0, peakMax[1]);
    peak = static_cast<int64_t>(std::min<__int128>(best, INT64_MAX));
  }
  if (verifyPeak && peak != peakOf(/*fused=*/true)) {
    if (!peakMismatch)
      func.emitError() << "fusec-fuse: incremental peak " << peak << " bytes, a whole evaluation "
                       << peakOf(/*fused=*/true);
    peakMismatch = true;
  }
  return peak;
}

__int128 Fuser::peakRangeMax(size_t node, size_t lo, size_t hi, size_t l, size_t r) const {
  constexpr __int128 kNone = -(static_cast<__int128>(1) << 126);
  if (r < lo || hi < l)
    return kNone;
  if (l <= lo && hi <= r)
    return peakMax[node];
  size_t mid = lo + (hi - lo) / 2;
  __int128 best = std::max(peakRangeMax(2 * node, lo, mid, l, r),
                           peakRangeMax(2 * node + 1, mid + 1, hi, l, r));
  return best == kNone ? kNone : best + peakAdd[node];
}

void Fuser::readersOf(int at, SmallVectorImpl<int> &out) const {
  SmallVector<Value, 8> work;
  if (opGroup[at] >= 0) {
    const Group &g = groups[find(at)];
    work.append(g.outputs.begin(), g.outputs.end());
  } else {
    work.append(ops[at]->result_begin(), ops[at]->result_end());
  }
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      auto it = opIndex.find(user);
      if (it == opIndex.end())
        continue; // the terminator, or an op in a nested region
      if (isa<ReshapeOp>(user)) { // a view: its readers read v
        work.push_back(user->getResult(0));
        continue;
      }
      int p = nodeAt(it->second);
      if (p != at)
        out.push_back(p);
    }
  }
}

// Why windows suffice. Call a node (a group at its last op's position, or a
// lone op) delayed when a node it reads runs after its position, and let
// E(n) be the latest position among n and everything it waits on
// (E(n) = max(pos(n), E(p)) over its producers p). The whole evaluation
// emits, among the ready nodes, the one of the earliest position. For a
// position t inside no [pos(n), E(n)) of a delayed n, the nodes at or
// before t are closed under producers and all precede the rest, so that
// order emits them first, exactly as the positions do: at such a t the live
// set is the tree's. Only inside the windows (the union of those intervals)
// does the order differ; there the nodes are few and are ordered as the
// whole evaluation would order them. Only a disordered group has a reader
// placed before it, so the delayed nodes are found from those groups.
int64_t Fuser::peakWindowed() const {
  llvm::DenseMap<int, int> delayedTo; // position -> E
  SmallVector<int> work, readers;
  auto delay = [&](int r, int e) {
    if (r >= e)
      return;
    auto [it, inserted] = delayedTo.try_emplace(r, e);
    if (!inserted) {
      if (it->second >= e)
        return;
      it->second = e;
    }
    work.push_back(r);
  };
  for (int g : disordered) {
    int q = groups[g].maxIndex;
    readers.clear();
    readersOf(q, readers);
    for (int r : readers)
      delay(r, q);
  }
  while (!work.empty()) {
    int n = work.pop_back_val();
    int e = delayedTo.lookup(n);
    readers.clear();
    readersOf(n, readers);
    for (int r : readers)
      delay(r, e);
  }
  // The windows: the union of [pos(n), E(n)], sorted.
  std::vector<std::pair<int, int>> windows;
  for (auto [n, e] : delayedTo)
    windows.push_back({n, e});
  llvm::sort(windows);
  std::vector<std::pair<int, int>> merged;
  for (auto w : windows) {
    if (!merged.empty() && w.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, w.second);
    else
      merged.push_back(w);
  }
  constexpr __int128 kNone = -(static_cast<__int128>(1) << 126);
  __int128 best = 0;
  // The tree, outside the windows (leaf = position + 1).
  size_t from = 0;
  for (auto [lo, hi] : merged) {
    if (static_cast<size_t>(lo + 1) > from)
      best = std::max(best, peakRangeMax(1, 0, peakLeaves - 1, from, static_cast<size_t>(lo)));
    from = static_cast<size_t>(hi + 2);
  }
  best = std::max(best, peakRangeMax(1, 0, peakLeaves - 1, from, peakLeaves - 1));
  // Each window, ordered and swept locally.
  for (auto [lo, hi] : merged) {
    std::vector<PeakNode> nodes;
    for (int i = lo; i <= hi; ++i) {
      Operation *op = ops[i];
      if ((isa<ConstantOp>(op) && isSplatConstant(op->getResult(0))) || isa<ReshapeOp>(op))
        continue;
      PeakNode n{i, {}, {}};
      auto use = [&](Value u) {
        if (!isSplatConstant(u))
          n.uses.push_back(viewRoot(u));
      };
      if (opGroup[i] >= 0) {
        const Group &g = groups[find(i)];
        if (g.maxIndex != i)
          continue;
        n.defs.append(g.outputs.begin(), g.outputs.end());
        for (Value u : g.inputs)
          use(u);
      } else {
        n.defs.append(op->result_begin(), op->result_end());
        for (Value u : op->getOperands())
          use(u);
      }
      nodes.push_back(std::move(n));
    }
    // The earliest position first, as peakOf orders them.
    std::vector<int> order = earliestFirst(nodes);
    // Each value the window defines or reads: its first and last step in
    // the window (-1: live on entry; `steps`: live past the window).
    int steps = static_cast<int>(nodes.size());
    llvm::MapVector<Value, std::pair<int, int>> span;
    for (auto [step, i] : llvm::enumerate(order)) {
      int s = static_cast<int>(step);
      for (Value u : nodes[i].uses) {
        auto [it, inserted] = span.try_emplace(u, -1, s);
        if (!inserted)
          it->second.second = std::max(it->second.second, s);
      }
      for (Value d : nodes[i].defs) {
        auto [it, inserted] = span.try_emplace(d, s, s);
        if (!inserted)
          it->second.first = s;
      }
    }
    // What the tree holds at `lo` besides these values is live through the
    // whole window.
    __int128 across = peakRangeMax(1, 0, peakLeaves - 1, static_cast<size_t>(lo + 1),
                                   static_cast<size_t>(lo + 1));
    std::vector<__int128> delta(steps + 1, 0);
    for (auto &[v, sp] : span) {
      auto it = lives.find(v);
      if (it == lives.end())
        continue;
      __int128 bytes = tensorBytes(v.getType());
      if (it->second.first <= lo && lo <= it->second.last)
        across -= bytes;
      int first = std::max(sp.first, 0);
      int last = it->second.last > hi ? steps - 1 : std::max(sp.second, sp.first);
      delta[first] += bytes;
      delta[last + 1] -= bytes;
    }
    __int128 sum = across, top = kNone;
    for (int s = 0; s < steps; ++s) {
      sum += delta[s];
      top = std::max(top, sum);
    }
    best = std::max(best, top);
  }
  return static_cast<int64_t>(std::min<__int128>(best, INT64_MAX));
}

LogicalResult Fuser::materialize() {
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  // Units: each live group at its last op's position; ungrouped ops (free or
  // fixed) at their own. Groups are convex enough for this to be a valid
  // order: a group's inputs come from units ending before its last op.
  // Build units in the order of the positions, then topologically sort them
  // to be safe.
  struct Unit {
    int group = -1; // or -1 for a lone op
    Operation *op = nullptr;
    int position = 0;
  };
  std::vector<Unit> units;
  llvm::DenseMap<Value, int> producer; // value -> unit
  for (auto [i, op] : llvm::enumerate(ops)) {
    int g = opGroup[i] < 0 ? -1 : find(static_cast<int>(i));
    if (g < 0) {
      units.push_back({-1, op, static_cast<int>(i)});
      for (Value r : op->getResults())
        producer[r] = static_cast<int>(units.size() - 1);
    } else if (groups[g].maxIndex == static_cast<int>(i)) {
      units.push_back({g, nullptr, static_cast<int>(i)});
      for (int oi : groups[g].ops)
        for (Value r : ops[oi]->getResults())
          producer[r] = static_cast<int>(units.size() - 1);
    }
  }
  // Kahn's algorithm, ties broken by position.
  std::vector<SmallVector<int, 4>> succ(units.size());
  std::vector<int> indegree(units.size(), 0);
  for (auto [ui, u] : llvm::enumerate(units)) {
    llvm::SmallDenseSet<int, 8> preds;
    auto addUses = [&](Operation *op) {
      for (Value v : op->getOperands()) {
        auto it = producer.find(v);
        if (it != producer.end() && it->second != static_cast<int>(ui))
          preds.insert(it->second);
      }
    };
    if (u.op)
      addUses(u.op);
    else
      for (int oi : groups[u.group].ops)
        addUses(ops[oi]);
    for (int p : preds) {
      succ[p].push_back(static_cast<int>(ui));
      ++indegree[ui];
    }
  }
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>,
                      std::greater<>>
      ready;
  for (auto [ui, u] : llvm::enumerate(units))
    if (indegree[ui] == 0)
      ready.push({u.position, static_cast<int>(ui)});
  std::vector<int> order;
  while (!ready.empty()) {
    int ui = ready.top().second;
    ready.pop();
    order.push_back(ui);
    for (int s : succ[ui])
      if (--indegree[s] == 0)
        ready.push({units[s].position, s});
  }
  if (order.size() != units.size()) {
    LLVM_DEBUG({
      for (auto [ui, u] : llvm::enumerate(units)) {
        if (indegree[ui] == 0)
          continue;
        llvm::dbgs() << "stuck unit " << ui << " pos " << u.position;
        if (u.op) {
          llvm::dbgs() << " op " << u.op->getName() << "\n";
        } else {
          llvm::dbgs() << " group " << u.group << " ops:";
          for (int oi : groups[u.group].ops)
            llvm::dbgs() << " " << oi << ":" << ops[oi]->getName().stripDialect();
          llvm::dbgs() << "\n";
        }
      }
    });
    return func.emitError("fusec-fuse: internal error: the fused graph has a cycle");
  }

  OpBuilder builder(terminator);
  int kernelCount = 0;
  llvm::DenseMap<Value, Value> replacement;
  std::vector<Operation *> erase;
  for (int ui : order) {
    Unit &u = units[ui];
    if (u.op) {
      u.op->moveBefore(terminator);
      continue;
    }
    Group &g = groups[u.group];
    // Earlier kernels replaced some of these values (and the operands of
    // this group's ops) with their results: use the replacements.
    SmallVector<Value> inputs;
    for (Value v : g.inputs)
      inputs.push_back(replacement.lookup(v) ? replacement.lookup(v) : v);
    SmallVector<Value> outputs(g.outputs.begin(), g.outputs.end());
    SmallVector<Type> resultTypes;
    for (Value v : outputs)
      resultTypes.push_back(v.getType());
    // A name that says what the kernel does: its first and last ops.
    std::string name = "k" + std::to_string(kernelCount++);
    auto opName = [](Operation *op) {
      return op->getName().stripDialect().str();
    };
    name += "_" + opName(ops[g.ops.front()]);
    if (g.ops.size() > 1)
      name += "_" + opName(ops[g.ops.back()]);
    builder.setInsertionPoint(terminator);
    Location loc = ops[g.ops.back()]->getLoc();
    auto kernel = KernelOp::create(builder, loc, resultTypes, inputs,
                                   builder.getStringAttr(name));
    if (g.hasMatmul && g.ops.size() > 1)
      kernel->setAttr("fusec.matmul_epilogue", builder.getUnitAttr());
    Block *kb = new Block();
    kernel.getBody().push_back(kb);
    IRMapping map;
    for (auto [orig, in] : llvm::zip(g.inputs, inputs)) {
      BlockArgument arg = kb->addArgument(in.getType(), in.getLoc());
      map.map(orig, arg);
      map.map(in, arg);
    }
    OpBuilder inner = OpBuilder::atBlockEnd(kb);
    for (int oi : g.ops) {
      Operation *op = ops[oi];
      for (Value v : op->getOperands())
        if (!map.contains(v) && isSplatConstant(v))
          map.map(v, inner.clone(*v.getDefiningOp())->getResult(0));
      inner.clone(*op, map);
      erase.push_back(op);
    }
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(map.lookup(v));
    YieldOp::create(inner, loc, yielded);
    for (auto [orig, res] : llvm::zip(outputs, kernel.getResults())) {
      replacement[orig] = res;
      orig.replaceUsesWithIf(res, [&](OpOperand &use) {
        return !kernel->isAncestor(use.getOwner());
      });
    }
  }
  for (Operation *op : llvm::reverse(erase))
    op->erase();
  // Splat constants now used only inside kernels are dead.
  for (Operation &op : llvm::make_early_inc_range(body))
    if (isa<ConstantOp>(op) && op.use_empty())
      op.erase();
  return success();
}

class FusePass : public fusec::impl::FuseBase<FusePass> {
public:
  using FuseBase::FuseBase;

  void runOnOperation() override {
    auto loaded = loadTargetFor(getOperation(), "fusec-fuse", target);
    if (!loaded)
      return signalPassFailure();
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(lowerWindowOps(func)))
        return signalPassFailure();
      Fuser fuser(func, *loaded, remarks, verifyPeak);
      if (failed(fuser.run()))
        return signalPassFailure();
      foldMovementIntoMatmuls(func);
      foldMovementIntoConsumers(func);
    }
  }
};

} // namespace
