//===- Emitter.h - Typed IR building for fusec's code generator -*- C++ -*-===//
//
// The layers every strategy stands on (internal to lib/CodeGen):
//
//   Emitter        typed shortcuts over an ImplicitLocOpBuilder that build
//                  LLVM and NVVM dialect ops: constants, integer and float
//                  arithmetic, casts, pointers, loads and stores, special
//                  registers, shuffles, barriers, vectors and loops. The IR
//                  is built in the pass's own MLIRContext and verified before
//                  translation; its locations are the kernel's.
//   Ptx.cpp        the one place that writes PTX by hand (SFU math, 16-byte
//                  cache-hinted loads, a register move), and the NVPTX
//                  backend: translation to LLVM IR, O3 and PTX emission with
//                  a cached target machine.
//   KernelEmitter  what strategies share: the llvm.func with one pointer
//                  parameter per operand and result, typed loads with their
//                  cache policy, and `eval`, which computes one element of
//                  any value of the kernel's body at a flat index (index
//                  maps for movement ops, ScalarMath for the arithmetic),
//                  memoized per (value, index value). Strategies override
//                  its hooks: where an operand's element already sits in a
//                  register, what a reduction's value is, how a broadcast or
//                  a division by a row value is read.
//   Strategies/    one file per strategy (Strategies.h lists them).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CODEGEN_EMITTER_H
#define FUSEC_LIB_CODEGEN_EMITTER_H

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/IR/Fusec.h"

#include "absl/status/statusor.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fusec::codegen {

/// How a tensor element is stored in device memory and computed with.
struct ElemTypes {
  mlir::Type storage; ///< f32, bf16, f16, i32, i64, or i8 for i1 and fp8
  mlir::Type compute; ///< f32 for floats, else the integer type (i1 for bools)
  int bytes = 4;
  bool isFloat = false;
  /// fp8: the element type (f8E4M3FN or f8E5M2), stored as i8 and converted
  /// by cvt (sm_89 on); null otherwise.
  mlir::Type fp8;
  bool isNarrowFloat() const { return isFloat && bytes < 4; }
  bool isBool() const { return !isFloat && bytes == 1; }
};

/// The element types of a tensor or element type; nothing for the types
/// code generation does not handle.
std::optional<ElemTypes> elemTypes(mlir::Type type);

/// An error for a kernel fusec does not generate yet, naming the op and its
/// location (kUnimplemented: the JIT and --fusec-codegen report it, and the
/// kernel is left without PTX).
absl::Status unimplemented(mlir::Operation *op, const std::string &why);

/// Whether a concat picks an element's part by branches
/// (KernelEmitter::branchConcat): more than 8 non-empty parts, no two of
/// them slices of one value (those are read through it once). The plan
/// gives a kernel with one a thread an element (no lanes, so one branch
/// tree an element), and only elementwise and movement kernels take that
/// path.
bool picksPartByBranches(ConcatOp op);

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

//===----------------------------------------------------------------------===//
// Emitter
//===----------------------------------------------------------------------===//

/// Typed shortcuts for building LLVM and NVVM dialect ops.
class Emitter {
public:
  explicit Emitter(mlir::ImplicitLocOpBuilder &b);

  mlir::ImplicitLocOpBuilder &b;
  mlir::MLIRContext *ctx;
  mlir::Type i1, i8, i16, i32, i64, f16, bf16, f32, f64;
  mlir::Type globalPtr, sharedPtr;

  // Constants.
  mlir::Value i64c(int64_t v);
  mlir::Value i32c(int32_t v);
  mlir::Value boolc(bool v);
  mlir::Value intc(mlir::Type type, int64_t v);
  mlir::Value f32c(double v);
  mlir::Value f64c(double v);
  mlir::Value f32Inf(bool negative);

  // Integer arithmetic (operands of one type).
  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value sub(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);
  mlir::Value sdiv(mlir::Value a, mlir::Value b);
  mlir::Value udiv(mlir::Value a, mlir::Value b);
  mlir::Value urem(mlir::Value a, mlir::Value b);
  mlir::Value band(mlir::Value a, mlir::Value b);
  mlir::Value bor(mlir::Value a, mlir::Value b);
  mlir::Value bxor(mlir::Value a, mlir::Value b);
  mlir::Value lshr(mlir::Value a, mlir::Value b);
  mlir::Value shl(mlir::Value a, mlir::Value b);
  mlir::Value smax(mlir::Value a, mlir::Value b);
  mlir::Value smin(mlir::Value a, mlir::Value b);
  mlir::Value umin(mlir::Value a, mlir::Value b);
  mlir::Value iabs(mlir::Value a);
  mlir::Value icmp(mlir::LLVM::ICmpPredicate p, mlir::Value a, mlir::Value b);

  // Float arithmetic.
  mlir::Value fadd(mlir::Value a, mlir::Value b);
  mlir::Value fsub(mlir::Value a, mlir::Value b);
  mlir::Value fmul(mlir::Value a, mlir::Value b);
  mlir::Value fdiv(mlir::Value a, mlir::Value b);
  mlir::Value fneg(mlir::Value a);
  mlir::Value fma(mlir::Value a, mlir::Value b, mlir::Value c);
  mlir::Value fmaximum(mlir::Value a, mlir::Value b);
  mlir::Value fminimum(mlir::Value a, mlir::Value b);
  mlir::Value fabs(mlir::Value a);
  mlir::Value floor(mlir::Value a);
  /// Round to nearest, halves to even (PTX cvt.rni).
  mlir::Value roundEven(mlir::Value a);
  mlir::Value ceil(mlir::Value a);
  mlir::Value sqrt(mlir::Value a);
  mlir::Value fcmp(mlir::LLVM::FCmpPredicate p, mlir::Value a, mlir::Value b);
  mlir::Value select(mlir::Value c, mlir::Value a, mlir::Value b);

  // Casts.
  mlir::Value zext(mlir::Type to, mlir::Value v);
  mlir::Value sext(mlir::Type to, mlir::Value v);
  mlir::Value trunc(mlir::Type to, mlir::Value v);
  mlir::Value fpext(mlir::Type to, mlir::Value v);
  mlir::Value fptrunc(mlir::Type to, mlir::Value v);
  mlir::Value bitcast(mlir::Type to, mlir::Value v);
  mlir::Value sitofp(mlir::Type to, mlir::Value v);
  mlir::Value uitofp(mlir::Type to, mlir::Value v);
  /// Float to integer, saturating (NaN gives 0), as the interpreter does.
  mlir::Value fptosiSat(mlir::Type to, mlir::Value v);
  mlir::Value ptrtoint(mlir::Value p);
  /// i32 special register to i64.
  mlir::Value zext64(mlir::Value v) { return zext(i64, v); }

  // Memory.
  mlir::Value gep(mlir::Value base, mlir::Type element, mlir::Value index);
  mlir::Value load(mlir::Type type, mlir::Value ptr, unsigned align = 0);
  void store(mlir::Value value, mlir::Value ptr, unsigned align = 0);
  /// A module-level shared-memory array of `count` `element`s named `name`,
  /// and its address.
  mlir::Value sharedArray(mlir::ModuleOp module, llvm::StringRef name,
                          mlir::Type element, int64_t count);

  // Vectors and aggregates.
  mlir::Value poison(mlir::Type type);
  mlir::Value insert(mlir::Value vec, mlir::Value element, int64_t lane);
  mlir::Value extract(mlir::Value vec, int64_t lane);
  mlir::Value extractValue(mlir::Value aggregate, int64_t position);
  /// Builds a vector of `elements` (all of one type).
  mlir::Value pack(llvm::ArrayRef<mlir::Value> elements);

  // GPU.
  mlir::Value tidX();
  mlir::Value ctaidX();
  mlir::Value ntidX();
  mlir::Value nctaidX();
  mlir::Value shflBfly(mlir::Value v, int offset);
  void barrier();

  // Control flow, in the current region. A block is appended to the region;
  // `moveToEnd` keeps a join or exit block after the blocks built before
  // it; `setBlock` moves the insertion point to a block's end.
  mlir::Block *newBlock(mlir::TypeRange args = {});
  void moveToEnd(mlir::Block *block);
  void setBlock(mlir::Block *block);
  void br(mlir::Block *dest, mlir::ValueRange args = {});
  void condBr(mlir::Value cond, mlir::Block *then, mlir::Block *otherwise,
              mlir::ValueRange thenArgs = {}, mlir::ValueRange otherwiseArgs = {});
  /// `for (iv = lb; iv <u ub; iv += step)` carrying `inits`; `body` returns
  /// the next carried values. Afterwards the insertion point is the exit
  /// block, where the returned values (the header's block arguments) hold
  /// the carried values' last state.
  llvm::SmallVector<mlir::Value>
  loop(mlir::Value lb, mlir::Value ub, mlir::Value step, mlir::ValueRange inits,
       llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value iv, mlir::ValueRange carried)> body);
  /// Runs `then` only where `cond` holds; continues after it.
  void ifThen(mlir::Value cond, llvm::function_ref<void()> then);
};

/// Flat index <-> coordinates of a row-major `shape` (IndexMaps.cpp).
llvm::SmallVector<mlir::Value> coordinates(Emitter &e, mlir::Value flat,
                                           llvm::ArrayRef<int64_t> shape);
mlir::Value linearize(Emitter &e, llvm::ArrayRef<mlir::Value> coords,
                      llvm::ArrayRef<int64_t> shape);
/// The coordinates in `out` of the element at `c` in `in` (a reshape), dim
/// by dim where it splits or merges runs of dims; empty where the extents
/// do not match.
llvm::SmallVector<mlir::Value> reshapeCoordinates(Emitter &e, llvm::ArrayRef<mlir::Value> c,
                                                  llvm::ArrayRef<int64_t> in,
                                                  llvm::ArrayRef<int64_t> out);

/// An output written through movement ops (a matmul's result sliced into Q,
/// K and V, reshaped into heads and transposed head-major): the full-shape
/// value it is an image of, and the slices (unit strides), reshapes and
/// transposes from it, source first. `pairs`: for even c, the domain
/// elements (..., c) and (..., c + 1) land next to each other in the output
/// (the first at an even index), both inside or both outside its slices.
struct StoreMap {
  mlir::Value source;
  llvm::SmallVector<mlir::Operation *, 4> chain;
  bool pairs = false;
  /// The chain pads with zeros (a concat of the value between zero
  /// splats: a convolution's padded input): the kernel writes only the
  /// image, and the output's buffer must hold zeros from the start
  /// (fusec.zero_init).
  bool zeroFilled = false;
};
/// Where `operand` of `concat` starts along its dim.
int64_t concatOffset(ConcatOp concat, mlir::Value operand);
//===----------------------------------------------------------------------===//
// PTX (Ptx.cpp: the one place with inline PTX) and the NVPTX backend
//===----------------------------------------------------------------------===//

/// `instr $0, $1;` on one f32 (ex2.approx.ftz.f32, lg2.approx.ftz.f32,
/// rsqrt.approx.ftz.f32, tanh.approx.f32).
mlir::Value ptxUnaryF32(Emitter &e, llvm::StringRef instr, mlir::Value x);
/// One 16-byte load at `addr` (an i64 generic address of global memory) with
/// the cache policy `kind`; returns its four 32-bit words.
llvm::SmallVector<mlir::Value, 4> ptxLoad16(Emitter &e, CacheHint hint,
                                            const PtxOptions &options,
                                            mlir::Value addr);
/// An opaque register move: a later pass over a row held in registers
/// converts again from the packed words instead of keeping an earlier
/// pass's f32 values alive.
mlir::Value ptxLaunder(Emitter &e, mlir::Value word);
/// Any other instruction NVVM has no op for, as inline PTX with its
/// constraints (the matmul strategies' few).
mlir::Value ptxAsm(Emitter &e, mlir::Type result, llvm::StringRef text,
                   llvm::StringRef constraints, mlir::ValueRange args,
                   bool sideEffects = true);

/// Translates a module of LLVM/NVVM dialect ops to LLVM IR, runs O3 and
/// emits PTX for `arch`.
absl::StatusOr<std::string> translateToPtx(mlir::ModuleOp module,
                                           const std::string &arch);

//===----------------------------------------------------------------------===//
// KernelEmitter
//===----------------------------------------------------------------------===//

/// The state one kernel's generation shares across its strategy's code.
class KernelEmitter {
public:
  KernelEmitter(KernelOp kernel, LaunchAttr launch, const PtxOptions &options,
                mlir::ModuleOp module);
  virtual ~KernelEmitter();

  /// Builds the kernel's llvm.func into the module.
  virtual absl::Status build() = 0;

  /// The element of `v` at flat index `index` of `v`'s own shape; `lane` is
  /// the vector lane on a vector path. Memoized per (v, index).
  absl::StatusOr<mlir::Value> eval(mlir::Value v, mlir::Value index, int lane);

protected:
  // Hooks for the strategies.
  /// The element of kernel operand `arg` at `index`: by default a load.
  virtual mlir::Value argument(mlir::BlockArgument arg, mlir::Value index, int lane);
  /// The value of a reduction at `index` (of its result shape).
  virtual absl::StatusOr<mlir::Value> reduction(ReduceOp op, mlir::Value index, int lane);
  /// The index a broadcast's source is read at, when the strategy knows it
  /// better than the general remap (rows held in registers).
  virtual std::optional<mlir::Value> broadcastSource(BroadcastOp op, mlir::Value index);
  /// a / b for the f32 values of `op`; rows held in registers multiply by
  /// one reciprocal per row.
  virtual mlir::Value divide(DivOp op, mlir::Value a, mlir::Value b, mlir::Value index);
  /// Whether `op`'s quotient is rounded to an integer (round, floor, ceil,
  /// a cast to an integer type): then it is an IEEE division, never a
  /// multiply by a reciprocal, whose ulp can move a quotient across a
  /// rounding boundary (DynamicQuantizeLinear's -2.5 / (5 / 255) =
  /// -127.5 rounds to even).
  static bool quotientRounded(DivOp op);
  /// One element of a matmul (the SIMT strategy's loop over K).
  virtual absl::StatusOr<mlir::Value> matmul(MatmulOp op, mlir::Value index, int lane);

  // Building blocks.
  /// Creates the llvm.func (operands, then results, then `extra` more, as
  /// noalias global pointers) with `attrs` and sets the insertion point in
  /// its entry block; the extra parameters land in extraPtrs.
  /// Under programmatic dependent launch (pdl()) it starts with
  /// griddepcontrol.launch_dependents, then griddepcontrol.wait unless
  /// deferGridWait is set: then the strategy calls gridWait() on every
  /// thread's path before that thread touches global memory a kernel writes.
  void beginFunction(llvm::ArrayRef<mlir::NamedAttribute> attrs = {}, unsigned extra = 0);
  /// Whether the kernel takes part in programmatic dependent launch.
  bool pdl() const;
  /// griddepcontrol.wait (nothing without pdl()).
  void gridWait();
  /// Whether kernel operand `argNumber` is one no kernel writes (listed in
  /// fusec.pdl_inputs), readable before gridWait().
  bool readableBeforeWait(unsigned argNumber) const;
  bool deferGridWait = false;
  /// Scalar load of `arg` at a flat index, in the compute type.
  mlir::Value load(mlir::BlockArgument arg, mlir::Value index);
  /// Stores `value` (compute type) into result `i` at `index`.
  void storeResult(unsigned i, mlir::Value value, mlir::Value index);
  /// A vector of `count` lanes of `arg` at flat index `base`: one 16-byte
  /// load (PTX, with the operand's cache policy) when the access is 16
  /// bytes, else an LLVM vector load.
  struct RawChunk {
    llvm::SmallVector<mlir::Value, 4> words; // four i32 words of a 16-byte load
    mlir::Value vec;                         // or an LLVM vector
    int64_t count = 0;
    ElemTypes type;
  };
  RawChunk loadRaw(mlir::BlockArgument arg, mlir::Value base, int64_t count);
  /// The lanes of a loaded chunk in the compute type (`launder`: through
  /// ptxLaunder first).
  llvm::SmallVector<mlir::Value> unpack(const RawChunk &raw, bool launder);
  /// Stores `lanes` (compute type) of result `i` as one vector at `base`.
  void storeVector(unsigned i, llvm::ArrayRef<mlir::Value> lanes, mlir::Value base);
  /// Stores `lanes` (one, or a pair under map.pairs) of result `i`, written
  /// through `map`, for the domain element at `coords` (the first lane's),
  /// where the output holds them.
  void storeMapped(unsigned i, const StoreMap &map, llvm::ArrayRef<mlir::Value> lanes,
                   llvm::ArrayRef<mlir::Value> coords);
  mlir::Value toCompute(mlir::Value raw, const ElemTypes &t);
  mlir::Value toStorage(mlir::Value value, const ElemTypes &t);
  /// Rounds an f32 value to a narrow float type (and back), as every op
  /// with a bf16/f16 result does.
  mlir::Value roundTo(mlir::Value value, mlir::Type type);
  /// Flat index <-> coordinates of `shape` (row-major), remembered: an
  /// index that a movement op computed from coordinates gives them back to
  /// the next op, at no cost in the same shape and through a reshape's
  /// splits and merges for a few divisions of single coordinates (not the
  /// flat index's every dim). A chain of movement ops (a stem's folded
  /// taps) then divides once, not once an op.
  llvm::SmallVector<mlir::Value> coordinates(mlir::Value flat, llvm::ArrayRef<int64_t> shape);
  mlir::Value linearize(llvm::ArrayRef<mlir::Value> coords, llvm::ArrayRef<int64_t> shape);
  /// The movement ops' index maps, through the remembered coordinates.
  mlir::Value transposeIndex(TransposeOp op, mlir::Value index);
  mlir::Value sliceIndex(SliceOp op, mlir::Value index);
  CacheHint hintOf(unsigned argNumber) const;
  /// Whether `v`'s shape is the iteration domain.
  bool isFull(mlir::Value v) const;
  int64_t widestBytes(bool fullOnly) const;

  // Lane runs (a vector path's chunk): an index value that is lane `lane`
  // of `runWidth` consecutive elements from `base`, where base is a multiple
  // of runWidth and the run lies within one row of its tensor (the tensor's
  // last extent a multiple of runWidth). Movement ops that keep lanes along
  // the last dim (a broadcast or transpose that keeps it, a slice at an
  // aligned offset, a concat) pass a run on: lane l's source is lane 0's
  // plus l, so an operand read through them is one vector load, not a load
  // a lane. The strategy starts the runs of a chunk (startRuns) and ends
  // them (endRuns); lanes are evaluated in order, lane 0 first.
  struct LaneRun {
    mlir::Value base;
    int lane = 0;
  };
  void startRuns(int64_t width, llvm::ArrayRef<mlir::Value> laneIndices);
  void endRuns();
  /// The run `index` is a lane of, if any.
  std::optional<LaneRun> runOf(mlir::Value index) const;
  /// The index of the source through `operand`'s movement op for `index`:
  /// `map(index)` for lane 0 of a run (remembered), lane 0's plus the lane
  /// for the others, and `map(index)` outside runs or where `through` is
  /// false. The result is a lane of the source's run.
  mlir::Value runSource(mlir::OpOperand &operand, mlir::Value index, bool through,
                        llvm::function_ref<mlir::Value(mlir::Value)> map);
  /// Whether a run can pass from a value of `result` shape to one of
  /// `source` shape (both last extents multiples of the run width).
  bool runsAcross(mlir::Type result, mlir::Type source) const;
  /// Lane `run.lane` of the run's vector load of `arg` (made when lane 0
  /// asks; null for a later lane whose run had no lane-0 load).
  mlir::Value runLane(mlir::BlockArgument arg, const LaneRun &run);
  int64_t runWidth = 0;
  llvm::DenseMap<mlir::Value, LaneRun> runs;
  /// The vector loads of the current runs: (argument, run base) -> lanes.
  llvm::DenseMap<std::pair<mlir::Value, mlir::Value>, llvm::SmallVector<mlir::Value>> runLoads;
  llvm::DenseMap<std::pair<const void *, mlir::Value>, mlir::Value> runSources;

  // Memo scopes: values computed inside a loop body do not dominate what
  // follows the loop.
  void remember(mlir::Value v, mlir::Value index, mlir::Value result);
  void clearMemo() {
    memo.clear();
    coordMemo.clear();
  }
  void openScope() {
    scopes.emplace_back();
    coordScopes.emplace_back();
  }
  void closeScope();

  KernelOp kernel;
  LaunchAttr launch;
  const PtxOptions &options;
  mlir::ModuleOp module;
  mlir::Block &body;
  mlir::ImplicitLocOpBuilder builder;
  Emitter e;
  mlir::LLVM::LLVMFuncOp func;
  std::string entry;
  llvm::SmallVector<mlir::Value> argPtrs, outPtrs, extraPtrs;
  /// The iteration domain: the shape every full-shape value has.
  llvm::SmallVector<int64_t> domain;

private:
  absl::StatusOr<mlir::Value> evalOp(mlir::Operation *op, mlir::Value v,
                                     mlir::Value index, int lane);
  /// A concat of many parts: branches pick the part (see Emitter.cpp).
  absl::StatusOr<mlir::Value> branchConcat(ConcatOp op, mlir::Type compute,
                                           llvm::ArrayRef<mlir::Value> coords, int lane);
  llvm::DenseMap<std::pair<mlir::Value, mlir::Value>, mlir::Value> memo;
  std::vector<std::vector<std::pair<mlir::Value, mlir::Value>>> scopes;
  struct KnownCoordinates {
    llvm::SmallVector<int64_t, 6> shape;
    llvm::SmallVector<mlir::Value, 6> coords;
  };
  void rememberCoordinates(mlir::Value flat, llvm::ArrayRef<int64_t> shape,
                           llvm::ArrayRef<mlir::Value> coords);
  llvm::DenseMap<mlir::Value, llvm::SmallVector<KnownCoordinates, 2>> coordMemo;
  std::vector<std::vector<mlir::Value>> coordScopes;
};

//===----------------------------------------------------------------------===//
// ScalarMath.cpp and IndexMaps.cpp
//===----------------------------------------------------------------------===//

/// The elementwise op `op` (arithmetic, comparison, select, math, cast) on
/// operands already in their compute types; `rt` the result's types.
/// `divide` computes f32 divisions (a strategy may replace them).
absl::StatusOr<mlir::Value>
emitScalarOp(Emitter &e, mlir::Operation *op, llvm::ArrayRef<mlir::Value> in,
             const ElemTypes &rt,
             llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> divide);

/// Index maps: the flat index of a movement op's (single) source element for
/// the flat index `index` of its result. Reshape keeps it; transpose,
/// slice and broadcast remap coordinates. Concat and gather, which read
/// several sources or data, are in KernelEmitter::evalOp.
mlir::Value broadcastIndex(Emitter &e, BroadcastOp op, mlir::Value index);

/// The store map of `output` over `domain`, or nothing when `output` is
/// full-shape or not such an image.
std::optional<StoreMap> storeMapOf(mlir::Value output, llvm::ArrayRef<int64_t> domain);
/// Where the domain element at `coords` (i64) lands in the map's output: its
/// flat index, and whether the output holds it (an i1; null when always).
std::pair<mlir::Value, mlir::Value> storeIndex(Emitter &e, const StoreMap &map,
                                               llvm::ArrayRef<mlir::Value> coords);

//===----------------------------------------------------------------------===//
// Reductions.cpp
//===----------------------------------------------------------------------===//

/// The type a reduction accumulates in: f32 for floats, the integer type
/// for integers.
mlir::Type reductionAccType(Emitter &e, ReduceOp r);
/// The identity of a reduction kind in `type` (f32, f64 for wide sums, or
/// an integer type).
mlir::Value reductionIdentity(Emitter &e, ReduceKind kind, mlir::Type type);
/// Combines two partial values of a reduction (f32, f64 or integers).
mlir::Value reductionCombine(Emitter &e, ReduceKind kind, mlir::Value a, mlir::Value b);
/// A butterfly over the 32 lanes of a warp (offsets 16 down to `lowest`... 1).
mlir::Value warpReduce(Emitter &e, ReduceKind kind, mlir::Value v, int width = 32);

/// Two reductions that one pass computes together: softmax's max and sum of
/// exp(x - max) (online softmax), and layer_norm's mean and mean of squared
/// deviations (Welford, combined across lanes with Chan's formula).
enum class PairKind { None, OnlineSoftmax, Welford };
PairKind pairKind(ReduceOp a, ReduceOp b);
/// Calls `fn` on each reduction whose result `v` reads (through the ops of
/// the kernel body, not past a reduction).
void reductionsRead(mlir::Value v, llvm::function_ref<void(ReduceOp)> fn);
/// A unit of a streamed pass: reduction `first` alone, or with `first + 1`
/// as a pair.
struct PassUnit {
  unsigned first = 0;
  PairKind pair = PairKind::None;
};
/// row_stream's passes over a row, in order: a reduction (or pair) joins
/// the first pass after every reduction its input depends on, so
/// independent reductions (cross-entropy's logsumexp and its target
/// logit's masked sum) read the row once together.
llvm::SmallVector<llvm::SmallVector<PassUnit>> rowStreamPasses(llvm::ArrayRef<ReduceOp> reductions);
/// The state of a pair: (max, sum) or (n, mean, m2).
llvm::SmallVector<mlir::Value> pairInit(Emitter &e, PairKind kind);
llvm::SmallVector<mlir::Value> pairUpdate(Emitter &e, PairKind kind,
                                          llvm::ArrayRef<mlir::Value> state, mlir::Value x);
llvm::SmallVector<mlir::Value> pairCombine(Emitter &e, PairKind kind,
                                           llvm::ArrayRef<mlir::Value> p,
                                           llvm::ArrayRef<mlir::Value> q);

} // namespace fusec::codegen

#endif // FUSEC_LIB_CODEGEN_EMITTER_H
