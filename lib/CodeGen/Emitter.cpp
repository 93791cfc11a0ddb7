//===- Emitter.cpp - Typed IR building and the shared kernel emitter -*- C++ -*-===//
//
// Emitter: typed shortcuts over OpBuilder for LLVM and NVVM dialect ops.
// KernelEmitter: parameters, loads and stores, and `eval`, the per-element
// evaluation of a kernel's body that every strategy shares.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace fusec::codegen {

bool picksPartByBranches(ConcatOp op) {
  int64_t d = op.getDim();
  if (llvm::count_if(op.getInputs(), [&](Value in) {
        return cast<RankedTensorType>(in.getType()).getShape()[d] != 0;
      }) <= 8)
    return false;
  // Parts that are slices of one value (a convolution's taps) are read
  // through that value once, by evalOp.
  llvm::SmallPtrSet<void *, 8> sliced;
  for (Value in : op.getInputs())
    if (auto sl = in.getDefiningOp<SliceOp>())
      if (!sliced.insert(sl.getInput().getAsOpaquePointer()).second)
        return false;
  return true;
}

std::optional<ElemTypes> elemTypes(Type type) {
  Type e = getElementTypeOrSelf(type);
  MLIRContext *ctx = e.getContext();
  Type f32 = Float32Type::get(ctx);
  if (e.isF32())
    return ElemTypes{f32, f32, 4, true};
  if (e.isBF16())
    return ElemTypes{e, f32, 2, true};
  if (e.isF16())
    return ElemTypes{e, f32, 2, true};
  if (e.isSignlessInteger(32) || e.isSignlessInteger(64))
    return ElemTypes{e, e, static_cast<int>(e.getIntOrFloatBitWidth() / 8), false};
  if (e.isSignlessInteger(1))
    return ElemTypes{IntegerType::get(ctx, 8), e, 1, false};
  if (isa<Float8E4M3FNType, Float8E5M2Type>(e))
    return ElemTypes{IntegerType::get(ctx, 8), f32, 1, true, e};
  return std::nullopt;
}

absl::Status unimplemented(Operation *op, const std::string &why) {
  std::string where;
  if (auto fl = op->getLoc()->findInstanceOf<FileLineColLoc>())
    where = absl::StrCat(fl.getFilename().getValue().str(), ":", fl.getLine(), ":",
                         fl.getColumn(), ": ");
  return absl::UnimplementedError(
      absl::StrCat(where, "'", op->getName().getStringRef().str(), "': ", why));
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    // Wrapping (unsigned): a tensor with an empty dim may have others whose
    // product passes int64; it has no element to index.
    s[i] = static_cast<int64_t>(static_cast<uint64_t>(s[i + 1]) *
                                static_cast<uint64_t>(shape[i + 1]));
  return s;
}

//===----------------------------------------------------------------------===//
// Emitter
//===----------------------------------------------------------------------===//

Emitter::Emitter(ImplicitLocOpBuilder &b) : b(b), ctx(b.getContext()) {
  i1 = b.getI1Type();
  i8 = b.getI8Type();
  i16 = b.getI16Type();
  i32 = b.getI32Type();
  i64 = b.getI64Type();
  f16 = b.getF16Type();
  bf16 = b.getBF16Type();
  f32 = b.getF32Type();
  f64 = b.getF64Type();
  globalPtr = LLVM::LLVMPointerType::get(ctx, 1);
  sharedPtr = LLVM::LLVMPointerType::get(ctx, 3);
}

Value Emitter::i64c(int64_t v) { return LLVM::ConstantOp::create(b, i64, b.getI64IntegerAttr(v)); }
Value Emitter::i32c(int32_t v) { return LLVM::ConstantOp::create(b, i32, b.getI32IntegerAttr(v)); }
Value Emitter::boolc(bool v) { return LLVM::ConstantOp::create(b, i1, b.getBoolAttr(v)); }
Value Emitter::intc(Type type, int64_t v) {
  return LLVM::ConstantOp::create(b, type, b.getIntegerAttr(type, v));
}
Value Emitter::f32c(double v) {
  return LLVM::ConstantOp::create(b, f32, b.getF32FloatAttr(static_cast<float>(v)));
}
Value Emitter::f64c(double v) { return LLVM::ConstantOp::create(b, f64, b.getF64FloatAttr(v)); }
Value Emitter::f32Inf(bool negative) {
  return LLVM::ConstantOp::create(
      b, f32, b.getFloatAttr(f32, APFloat::getInf(APFloat::IEEEsingle(), negative)));
}

Value Emitter::add(Value a, Value c) { return LLVM::AddOp::create(b, a, c); }
Value Emitter::sub(Value a, Value c) { return LLVM::SubOp::create(b, a, c); }
Value Emitter::mul(Value a, Value c) { return LLVM::MulOp::create(b, a, c); }
Value Emitter::sdiv(Value a, Value c) { return LLVM::SDivOp::create(b, a, c); }
Value Emitter::udiv(Value a, Value c) { return LLVM::UDivOp::create(b, a, c); }
Value Emitter::urem(Value a, Value c) { return LLVM::URemOp::create(b, a, c); }
Value Emitter::band(Value a, Value c) { return LLVM::AndOp::create(b, a, c); }
Value Emitter::bor(Value a, Value c) { return LLVM::OrOp::create(b, a, c); }
Value Emitter::bxor(Value a, Value c) { return LLVM::XOrOp::create(b, a, c); }
Value Emitter::lshr(Value a, Value c) { return LLVM::LShrOp::create(b, a, c); }
Value Emitter::shl(Value a, Value c) { return LLVM::ShlOp::create(b, a, c); }
Value Emitter::smax(Value a, Value c) { return LLVM::SMaxOp::create(b, a, c); }
Value Emitter::smin(Value a, Value c) { return LLVM::SMinOp::create(b, a, c); }
Value Emitter::umin(Value a, Value c) { return LLVM::UMinOp::create(b, a, c); }
Value Emitter::iabs(Value a) { return LLVM::AbsOp::create(b, a.getType(), a, false); }
Value Emitter::icmp(LLVM::ICmpPredicate p, Value a, Value c) {
  return LLVM::ICmpOp::create(b, p, a, c);
}

Value Emitter::fadd(Value a, Value c) { return LLVM::FAddOp::create(b, a, c); }
Value Emitter::fsub(Value a, Value c) { return LLVM::FSubOp::create(b, a, c); }
Value Emitter::fmul(Value a, Value c) { return LLVM::FMulOp::create(b, a, c); }
Value Emitter::fdiv(Value a, Value c) { return LLVM::FDivOp::create(b, a, c); }
Value Emitter::fneg(Value a) { return LLVM::FNegOp::create(b, a); }
Value Emitter::fma(Value a, Value c, Value d) { return LLVM::FMAOp::create(b, a, c, d); }
Value Emitter::fmaximum(Value a, Value c) { return LLVM::MaximumOp::create(b, a, c); }
Value Emitter::fminimum(Value a, Value c) { return LLVM::MinimumOp::create(b, a, c); }
Value Emitter::fabs(Value a) { return LLVM::FAbsOp::create(b, a); }
Value Emitter::floor(Value a) { return LLVM::FFloorOp::create(b, a); }
Value Emitter::roundEven(Value a) { return LLVM::RoundEvenOp::create(b, a); }
Value Emitter::ceil(Value a) { return LLVM::FCeilOp::create(b, a); }
Value Emitter::sqrt(Value a) { return LLVM::SqrtOp::create(b, a); }
Value Emitter::fcmp(LLVM::FCmpPredicate p, Value a, Value c) {
  return LLVM::FCmpOp::create(b, p, a, c);
}
Value Emitter::select(Value c, Value x, Value y) { return LLVM::SelectOp::create(b, c, x, y); }

Value Emitter::zext(Type to, Value v) { return LLVM::ZExtOp::create(b, to, v); }
Value Emitter::sext(Type to, Value v) { return LLVM::SExtOp::create(b, to, v); }
Value Emitter::trunc(Type to, Value v) { return LLVM::TruncOp::create(b, to, v); }
Value Emitter::fpext(Type to, Value v) { return LLVM::FPExtOp::create(b, to, v); }
Value Emitter::fptrunc(Type to, Value v) { return LLVM::FPTruncOp::create(b, to, v); }
Value Emitter::bitcast(Type to, Value v) { return LLVM::BitcastOp::create(b, to, v); }
Value Emitter::sitofp(Type to, Value v) { return LLVM::SIToFPOp::create(b, to, v); }
Value Emitter::uitofp(Type to, Value v) { return LLVM::UIToFPOp::create(b, to, v); }
Value Emitter::fptosiSat(Type to, Value v) {
  // LLVM's saturating conversion (NVPTX: cvt.rzi.sat), which the LLVM
  // dialect has no op for: called by its intrinsic name.
  std::string name = absl::StrCat("llvm.fptosi.sat.i", to.getIntOrFloatBitWidth(), ".f32");
  return LLVM::CallIntrinsicOp::create(b, to, b.getStringAttr(name), ValueRange{v})
      .getResult(0);
}
Value Emitter::ptrtoint(Value p) { return LLVM::PtrToIntOp::create(b, i64, p); }

Value Emitter::gep(Value base, Type element, Value index) {
  return LLVM::GEPOp::create(b, base.getType(), element, base, ValueRange{index});
}
Value Emitter::load(Type type, Value ptr, unsigned align) {
  return LLVM::LoadOp::create(b, type, ptr, align);
}
void Emitter::store(Value value, Value ptr, unsigned align) {
  LLVM::StoreOp::create(b, value, ptr, align);
}
Value Emitter::sharedArray(ModuleOp module, StringRef name, Type element, int64_t count) {
  if (!module.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(b, LLVM::LLVMArrayType::get(element, count), /*isConstant=*/false,
                           LLVM::Linkage::Internal, name, Attribute(), /*alignment=*/16,
                           /*addrSpace=*/3);
  }
  return LLVM::AddressOfOp::create(b, sharedPtr, name);
}

Value Emitter::poison(Type type) { return LLVM::PoisonOp::create(b, type); }
Value Emitter::insert(Value vec, Value element, int64_t lane) {
  return LLVM::InsertElementOp::create(b, vec, element, i32c(static_cast<int32_t>(lane)));
}
Value Emitter::extract(Value vec, int64_t lane) {
  return LLVM::ExtractElementOp::create(b, vec, i32c(static_cast<int32_t>(lane)));
}
Value Emitter::extractValue(Value aggregate, int64_t position) {
  return LLVM::ExtractValueOp::create(b, aggregate, ArrayRef<int64_t>{position});
}
Value Emitter::pack(ArrayRef<Value> elements) {
  Value vec = poison(VectorType::get({static_cast<int64_t>(elements.size())},
                                     elements.front().getType()));
  for (auto [i, v] : llvm::enumerate(elements))
    vec = insert(vec, v, static_cast<int64_t>(i));
  return vec;
}

Value Emitter::tidX() { return NVVM::ThreadIdXOp::create(b, i32); }
Value Emitter::ctaidX() { return NVVM::BlockIdXOp::create(b, i32); }
Value Emitter::ntidX() { return NVVM::BlockDimXOp::create(b, i32); }
Value Emitter::nctaidX() { return NVVM::GridDimXOp::create(b, i32); }
Value Emitter::shflBfly(Value v, int offset) {
  if (v.getType() == i64) {
    // shfl.sync moves 32 bits: the halves apart.
    Value lo = shflBfly(trunc(i32, v), offset);
    Value hi = shflBfly(trunc(i32, lshr(v, i64c(32))), offset);
    return bor(zext64(lo), shl(zext64(hi), i64c(32)));
  }
  return NVVM::ShflOp::create(b, v.getType(), i32c(-1), v, i32c(offset), i32c(31),
                              NVVM::ShflKind::bfly, UnitAttr());
}
void Emitter::barrier() { NVVM::Barrier0Op::create(b); }

Block *Emitter::newBlock(TypeRange args) {
  Block *block = new Block();
  b.getInsertionBlock()->getParent()->push_back(block);
  for (Type t : args)
    block->addArgument(t, b.getLoc());
  return block;
}
void Emitter::moveToEnd(Block *block) {
  Region *region = block->getParent();
  block->moveBefore(region, region->end());
}
void Emitter::setBlock(Block *block) { b.setInsertionPointToEnd(block); }
void Emitter::br(Block *dest, ValueRange args) { LLVM::BrOp::create(b, args, dest); }
void Emitter::condBr(Value cond, Block *then, Block *otherwise, ValueRange thenArgs,
                     ValueRange otherwiseArgs) {
  LLVM::CondBrOp::create(b, cond, then, thenArgs, otherwise, otherwiseArgs);
}

SmallVector<Value> Emitter::loop(Value lb, Value ub, Value step, ValueRange inits,
                                 function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  SmallVector<Type> types{lb.getType()};
  for (Value v : inits)
    types.push_back(v.getType());
  SmallVector<Value> entryArgs{lb};
  entryArgs.append(inits.begin(), inits.end());
  // Blocks in program order: head, body (and the blocks it adds), exit.
  Block *head = newBlock(types);
  br(head, entryArgs);
  setBlock(head);
  Block *bodyBlock = newBlock();
  Block *exit = newBlock();
  condBr(icmp(LLVM::ICmpPredicate::ult, head->getArgument(0), ub), bodyBlock, exit);
  setBlock(bodyBlock);
  SmallVector<Value> carried(head->getArguments().drop_front());
  SmallVector<Value> next = body(head->getArgument(0), carried);
  SmallVector<Value> backArgs{add(head->getArgument(0), step)};
  backArgs.append(next.begin(), next.end());
  br(head, backArgs);
  moveToEnd(exit);
  setBlock(exit);
  return carried;
}

void Emitter::ifThen(Value cond, function_ref<void()> then) {
  Block *thenBlock = newBlock();
  Block *after = newBlock();
  condBr(cond, thenBlock, after);
  setBlock(thenBlock);
  then();
  br(after);
  moveToEnd(after);
  setBlock(after);
}

//===----------------------------------------------------------------------===//
// KernelEmitter
//===----------------------------------------------------------------------===//

KernelEmitter::KernelEmitter(KernelOp kernel, LaunchAttr launch, const PtxOptions &options,
                             ModuleOp module)
    : kernel(kernel), launch(launch), options(options), module(module),
      body(kernel.getBody().front()), builder(kernel.getLoc(), kernel.getContext()),
      e(builder) {
  entry = kernel.getName() ? kernel.getName()->str() : "fusec_kernel";
  builder.setInsertionPointToEnd(module.getBody());
}

KernelEmitter::~KernelEmitter() = default;

void KernelEmitter::beginFunction(ArrayRef<NamedAttribute> attrs, unsigned extra) {
  unsigned io = body.getNumArguments() + body.getTerminator()->getNumOperands();
  unsigned n = io + extra;
  SmallVector<Type> params(n, e.globalPtr);
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(e.ctx), params);
  SmallVector<NamedAttribute> all(attrs.begin(), attrs.end());
  all.push_back(builder.getNamedAttr(NVVM::NVVMDialect::getKernelFuncAttrName(),
                                     builder.getUnitAttr()));
  func = LLVM::LLVMFuncOp::create(builder, entry, type, LLVM::Linkage::External, false,
                                  LLVM::CConv::C, SymbolRefAttr(), all);
  for (unsigned i = 0; i < n; ++i)
    func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), builder.getUnitAttr());
  Block *entryBlock = func.addEntryBlock(builder);
  builder.setInsertionPointToStart(entryBlock);
  for (unsigned i = 0; i < n; ++i)
    (i < body.getNumArguments() ? argPtrs : i < io ? outPtrs : extraPtrs)
        .push_back(func.getArgument(i));
  // Programmatic dependent launch: the next kernel may launch now (its CTAs
  // take SMs as ours leave, and run up to their own wait); ours runs once
  // the previous kernel is done and its writes are visible.
  if (pdl()) {
    NVVM::GriddepcontrolOp::create(builder, NVVM::GridDepActionKind::launch_dependents);
    if (!deferGridWait)
      gridWait();
  }
}

bool KernelEmitter::pdl() const { return options.pdl && options.arch != "sm_80"; }

void KernelEmitter::gridWait() {
  if (pdl())
    NVVM::GriddepcontrolOp::create(builder, NVVM::GridDepActionKind::wait);
}

bool KernelEmitter::readableBeforeWait(unsigned argNumber) const {
  auto inputs = kernel->getAttrOfType<DenseI64ArrayAttr>("fusec.pdl_inputs");
  return pdl() && inputs && llvm::is_contained(inputs.asArrayRef(), argNumber);
}

Value KernelEmitter::toCompute(Value raw, const ElemTypes &t) {
  if (t.fp8) {
    // e5m2 is the top byte of an f16; e4m3 converts by cvt (an f16 pair
    // from a byte pair, the low half ours).
    Value wide = e.zext(e.i16, raw);
    Value half;
    if (isa<Float8E5M2Type>(t.fp8)) {
      half = e.shl(wide, e.intc(e.i16, 8));
    } else {
      Value pair = ptxAsm(e, e.i32, "cvt.rn.f16x2.e4m3x2 $0, $1;", "=r,h", {wide},
                          /*sideEffects=*/false);
      half = e.trunc(e.i16, pair);
    }
    return e.fpext(e.f32, e.bitcast(e.f16, half));
  }
  if (t.isNarrowFloat())
    return e.fpext(e.f32, raw);
  if (t.isBool())
    return e.trunc(e.i1, raw);
  return raw;
}

Value KernelEmitter::toStorage(Value value, const ElemTypes &t) {
  if (t.fp8) {
    // Round to nearest even, saturating to the largest finite value (NaN
    // stays NaN), as the interpreter does; both halves of the pair alike.
    const char *text = isa<Float8E5M2Type>(t.fp8) ? "cvt.rn.satfinite.e5m2x2.f32 $0, $1, $1;"
                                                  : "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $1;";
    return e.trunc(e.i8, ptxAsm(e, e.i16, text, "=h,f", {value}, /*sideEffects=*/false));
  }
  if (t.isNarrowFloat())
    return e.fptrunc(t.storage, value);
  if (t.isBool())
    return e.zext(e.i8, value);
  return value;
}

Value KernelEmitter::roundTo(Value value, Type type) {
  auto t = elemTypes(type);
  if (!t || !t->isNarrowFloat())
    return value;
  return toCompute(toStorage(value, *t), *t);
}

Value KernelEmitter::load(BlockArgument arg, Value index) {
  ElemTypes t = *elemTypes(arg.getType());
  Value ptr = e.gep(argPtrs[arg.getArgNumber()], t.storage, index);
  return toCompute(e.load(t.storage, ptr), t);
}

void KernelEmitter::storeResult(unsigned i, Value value, Value index) {
  ElemTypes t = *elemTypes(body.getTerminator()->getOperand(i).getType());
  Value stored = toStorage(value, t);
  e.store(stored, e.gep(outPtrs[i], t.storage, index));
}

CacheHint KernelEmitter::hintOf(unsigned argNumber) const {
  auto hints = kernel->getAttrOfType<ArrayAttr>("fusec.cache_hints");
  if (hints && argNumber < hints.size())
    if (auto h = dyn_cast<CacheHintAttr>(hints[argNumber]))
      return h.getValue();
  return CacheHint::Default;
}

KernelEmitter::RawChunk KernelEmitter::loadRaw(BlockArgument arg, Value base, int64_t count) {
  ElemTypes t = *elemTypes(arg.getType());
  Value ptr = e.gep(argPtrs[arg.getArgNumber()], t.storage, base);
  RawChunk raw;
  raw.count = count;
  raw.type = t;
  if (count * t.bytes == 16) {
    // One 16-byte load as PTX: the LLVM optimizer would split a vector load
    // whose lanes are used one by one.
    raw.words = ptxLoad16(e, hintOf(arg.getArgNumber()), options, e.ptrtoint(ptr));
  } else {
    raw.vec = e.load(VectorType::get({count}, t.storage), ptr,
                     static_cast<unsigned>(count * t.bytes));
  }
  return raw;
}

SmallVector<Value> KernelEmitter::unpack(const RawChunk &raw, bool launder) {
  auto vecType = VectorType::get({raw.count}, raw.type.storage);
  Value vec = raw.vec;
  if (!raw.words.empty()) {
    Value packed = e.poison(VectorType::get({4}, e.i32));
    for (int i = 0; i < 4; ++i)
      packed = e.insert(packed, launder ? ptxLaunder(e, raw.words[i]) : raw.words[i], i);
    vec = e.bitcast(vecType, packed);
  }
  SmallVector<Value> out;
  for (int64_t i = 0; i < raw.count; ++i)
    out.push_back(toCompute(e.extract(vec, i), raw.type));
  return out;
}

void KernelEmitter::storeVector(unsigned i, ArrayRef<Value> lanes, Value base) {
  ElemTypes t = *elemTypes(body.getTerminator()->getOperand(i).getType());
  SmallVector<Value> stored;
  for (Value v : lanes)
    stored.push_back(toStorage(v, t));
  Value vec = e.pack(stored);
  e.store(vec, e.gep(outPtrs[i], t.storage, base),
          static_cast<unsigned>(lanes.size() * t.bytes));
}

void KernelEmitter::storeMapped(unsigned i, const StoreMap &map, ArrayRef<Value> lanes,
                                ArrayRef<Value> coords) {
  auto [index, inside] = storeIndex(e, map, coords);
  auto store = [&] {
    if (lanes.size() == 1)
      storeResult(i, lanes[0], index);
    else
      storeVector(i, lanes, index);
  };
  if (inside)
    e.ifThen(inside, store);
  else
    store();
}

bool KernelEmitter::isFull(Value v) const {
  return cast<RankedTensorType>(v.getType()).getShape() == ArrayRef<int64_t>(domain);
}

int64_t KernelEmitter::widestBytes(bool fullOnly) const {
  int64_t w = 1;
  for (Value v : llvm::concat<Value>(body.getArguments(), body.getTerminator()->getOperands()))
    if (!fullOnly || isFull(v))
      w = std::max<int64_t>(w, elemTypes(v.getType())->bytes);
  return w;
}

void KernelEmitter::remember(Value v, Value index, Value result) {
  memo[{v, index}] = result;
  if (!scopes.empty())
    scopes.back().push_back({v, index});
}

void KernelEmitter::closeScope() {
  for (auto &k : scopes.back())
    memo.erase(k);
  scopes.pop_back();
  for (Value v : coordScopes.back())
    coordMemo.erase(v);
  coordScopes.pop_back();
}

void KernelEmitter::rememberCoordinates(Value flat, ArrayRef<int64_t> shape,
                                        ArrayRef<Value> coords) {
  auto &known = coordMemo[flat];
  if (known.size() >= 4)
    return;
  known.push_back({SmallVector<int64_t, 6>(shape), SmallVector<Value, 6>(coords)});
  if (!coordScopes.empty())
    coordScopes.back().push_back(flat);
}

SmallVector<Value> KernelEmitter::coordinates(Value flat, ArrayRef<int64_t> shape) {
  if (auto it = coordMemo.find(flat); it != coordMemo.end()) {
    for (auto &k : it->second)
      if (ArrayRef<int64_t>(k.shape) == shape)
        return SmallVector<Value>(k.coords);
    // Through a reshape (the same flat index in another shape).
    for (auto &k : it->second) {
      auto c = reshapeCoordinates(e, k.coords, k.shape, shape);
      if (!c.empty()) {
        rememberCoordinates(flat, shape, c);
        return c;
      }
    }
  }
  auto c = codegen::coordinates(e, flat, shape);
  rememberCoordinates(flat, shape, c);
  return c;
}

Value KernelEmitter::linearize(ArrayRef<Value> coords, ArrayRef<int64_t> shape) {
  Value flat = codegen::linearize(e, coords, shape);
  rememberCoordinates(flat, shape, coords);
  return flat;
}

Value KernelEmitter::transposeIndex(TransposeOp op, Value index) {
  // Result dim i is input dim perm[i].
  auto shape = cast<RankedTensorType>(op.getType()).getShape();
  auto src = cast<RankedTensorType>(op.getInput().getType()).getShape();
  auto c = coordinates(index, shape);
  SmallVector<Value> in(src.size());
  for (auto [i, p] : llvm::enumerate(op.getPermutation()))
    in[p] = c[i];
  return linearize(in, src);
}

Value KernelEmitter::sliceIndex(SliceOp op, Value index) {
  auto shape = cast<RankedTensorType>(op.getType()).getShape();
  auto src = cast<RankedTensorType>(op.getInput().getType()).getShape();
  auto c = coordinates(index, shape);
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = e.add(e.i64c(op.getOffsets()[i]), e.mul(c[i], e.i64c(op.getStrides()[i])));
  return linearize(c, src);
}

void KernelEmitter::startRuns(int64_t width, ArrayRef<Value> laneIndices) {
  endRuns();
  runWidth = width;
  for (auto [l, v] : llvm::enumerate(laneIndices))
    runs[v] = {laneIndices.front(), static_cast<int>(l)};
}

void KernelEmitter::endRuns() {
  runWidth = 0;
  runs.clear();
  runSources.clear();
  runLoads.clear();
}

Value KernelEmitter::runLane(BlockArgument arg, const LaneRun &run) {
  auto key = std::make_pair(Value(arg), run.base);
  auto it = runLoads.find(key);
  if (it == runLoads.end() && run.lane == 0)
    it = runLoads.try_emplace(key, unpack(loadRaw(arg, run.base, runWidth), false)).first;
  return it != runLoads.end() ? it->second[run.lane] : Value();
}

std::optional<KernelEmitter::LaneRun> KernelEmitter::runOf(Value index) const {
  if (!runWidth)
    return std::nullopt;
  auto it = runs.find(index);
  if (it == runs.end())
    return std::nullopt;
  return it->second;
}

bool KernelEmitter::runsAcross(Type result, Type source) const {
  auto lastOf = [](Type t) {
    auto s = cast<RankedTensorType>(t).getShape();
    return s.empty() ? int64_t{1} : s.back();
  };
  return runWidth > 1 && lastOf(result) % runWidth == 0 && lastOf(source) % runWidth == 0;
}

Value KernelEmitter::runSource(OpOperand &operand, Value index, bool through,
                               function_ref<Value(Value)> map) {
  auto run = through ? runOf(index) : std::nullopt;
  if (!run)
    return map(index);
  auto key = std::make_pair(static_cast<const void *>(&operand), run->base);
  Value s0;
  if (auto it = runSources.find(key); it != runSources.end()) {
    s0 = it->second;
  } else {
    if (run->lane != 0)
      return map(index); // lane 0 took another path: no run
    s0 = map(index);
    runSources[key] = s0;
  }
  Value s = run->lane == 0 ? s0 : e.add(s0, e.i64c(run->lane));
  runs[s] = {s0, run->lane};
  return s;
}

// Default hooks.
Value KernelEmitter::argument(BlockArgument arg, Value index, int) { return load(arg, index); }
absl::StatusOr<Value> KernelEmitter::reduction(ReduceOp op, Value, int) {
  return unimplemented(op, "a reduction in a kernel whose strategy has none");
}
std::optional<Value> KernelEmitter::broadcastSource(BroadcastOp, Value) { return std::nullopt; }
bool KernelEmitter::quotientRounded(DivOp op) {
  for (Operation *user : op->getUsers()) {
    if (isa<RoundOp, FloorOp, CeilOp>(user))
      return true;
    if (auto c = dyn_cast<CastOp>(user))
      if (isa<IntegerType>(getElementTypeOrSelf(c.getType())))
        return true;
  }
  return false;
}
Value KernelEmitter::divide(DivOp op, Value a, Value b, Value) {
  if (quotientRounded(op))
    return e.fdiv(a, b);
  // By a splat constant (GELU's x / sqrt(2) as exporters write it): a
  // multiply by its reciprocal, at most 1.5 ulp of f32 from the quotient
  // (exact for a power of two); an IEEE division costs ~10 instructions
  // and a branch, which a matmul's epilogue feels.
  Value rhs = op.getRhs();
  if (auto bc = rhs.getDefiningOp<BroadcastOp>())
    rhs = bc.getInput();
  if (auto c = rhs.getDefiningOp<ConstantOp>())
    if (auto splat = dyn_cast<SplatElementsAttr>(c.getValue()))
      if (isa<FloatType>(splat.getElementType())) {
        double d = splat.getSplatValue<APFloat>().convertToDouble();
        if (std::isfinite(d) && d != 0 && std::isnormal(static_cast<float>(1.0 / d)))
          return e.fmul(a, e.f32c(1.0 / d));
      }
  return e.fdiv(a, b);
}
absl::StatusOr<Value> KernelEmitter::matmul(MatmulOp op, Value, int) {
  return unimplemented(op, "a matmul in a kernel whose strategy has none");
}

absl::StatusOr<Value> KernelEmitter::eval(Value v, Value index, int lane) {
  // Keyed by the index value itself: two different index expressions are
  // two different values, whatever they print as.
  if (auto it = memo.find({v, index}); it != memo.end())
    return it->second;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Value result = argument(arg, index, lane);
    remember(v, index, result);
    return result;
  }
  Operation *op = v.getDefiningOp();
  if (auto r = dyn_cast<ReduceOp>(op))
    return reduction(r, index, lane);
  // The ops an element of `op` becomes carry its location.
  Location outer = builder.getLoc();
  builder.setLoc(op->getLoc());
  auto result = evalOp(op, v, index, lane);
  builder.setLoc(outer);
  if (!result.ok())
    return result;
  Value out = *result;
  if (!out)
    return unimplemented(op, "no value generated for this op");
  if (elemTypes(v.getType())->isFloat)
    out = roundTo(out, v.getType());
  remember(v, index, out);
  return out;
}

absl::StatusOr<Value> KernelEmitter::branchConcat(ConcatOp cc, Type compute,
                                                  ArrayRef<Value> c, int lane) {
  // A balanced tree of branches on the concatenated coordinate reaches the
  // group of at most kConcatGroup parts an element lies in; the leaf reads
  // each part of its group at a clamped coordinate and selects the one
  // (as evalOp does for a few parts), and the leaves meet in a block
  // argument. Code is linear in the parts, and an element reads at most
  // kConcatGroup of them. Reading every part through one select chain
  // compiled in time quadratic in the parts (2000 parts: 35 s, in LLVM's
  // optimizer); a leaf a part, in about cubic time (CodeGenPrepare on 2000
  // blocks meeting in one phi: 77 s). Values a leaf computes stay in its
  // scope: they do not dominate what follows.
  constexpr size_t kConcatGroup = 8;
  int64_t d = cc.getDim();
  struct Part {
    Value input;
    int64_t start;
  };
  SmallVector<Part> parts;
  int64_t start = 0;
  for (Value input : cc.getInputs()) {
    int64_t size = cast<RankedTensorType>(input.getType()).getShape()[d];
    if (size != 0)
      parts.push_back({input, start});
    start += size;
  }
  auto leaf = [&](size_t lo, size_t hi) -> absl::StatusOr<Value> {
    Value chosen;
    for (size_t k = lo; k < hi; ++k) {
      auto src = cast<RankedTensorType>(parts[k].input.getType()).getShape();
      Value local = e.sub(c[d], e.i64c(parts[k].start));
      Value inside = e.icmp(LLVM::ICmpPredicate::sge, local, e.i64c(0));
      SmallVector<Value> ic(c.begin(), c.end());
      ic[d] = e.umin(e.select(inside, local, e.i64c(0)), e.i64c(src[d] - 1));
      auto x = eval(parts[k].input, linearize(ic, src), lane);
      if (!x.ok())
        return x;
      chosen = !chosen ? *x : e.select(inside, *x, chosen);
    }
    return chosen;
  };
  Block *merge = e.newBlock({compute});
  std::function<absl::Status(size_t, size_t)> emit = [&](size_t lo,
                                                         size_t hi) -> absl::Status {
    if (hi - lo <= kConcatGroup) {
      openScope();
      auto x = leaf(lo, hi);
      closeScope();
      if (!x.ok())
        return x.status();
      e.br(merge, {*x});
      return absl::OkStatus();
    }
    // Split at a group boundary, so that every leaf but the last is whole.
    size_t groups = (hi - lo + kConcatGroup - 1) / kConcatGroup;
    size_t mid = lo + groups / 2 * kConcatGroup;
    Block *left = e.newBlock(), *right = e.newBlock();
    e.condBr(e.icmp(LLVM::ICmpPredicate::slt, c[d], e.i64c(parts[mid].start)), left, right);
    e.setBlock(left);
    if (absl::Status st = emit(lo, mid); !st.ok())
      return st;
    e.setBlock(right);
    return emit(mid, hi);
  };
  if (absl::Status st = emit(0, parts.size()); !st.ok())
    return st;
  e.moveToEnd(merge);
  e.setBlock(merge);
  return merge->getArgument(0);
}

absl::StatusOr<Value> KernelEmitter::evalOp(Operation *op, Value v, Value index, int lane) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  ElemTypes rt = *elemTypes(v.getType());
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto splat = dyn_cast<SplatElementsAttr>(c.getValue());
    if (!splat)
      return unimplemented(op, "only splat constants are generated yet");
    if (rt.isFloat)
      return e.f32c(splat.getSplatValue<APFloat>().convertToDouble());
    if (rt.isBool())
      return e.boolc(splat.getSplatValue<APInt>().getBoolValue());
    return e.intc(rt.compute, splat.getSplatValue<APInt>().getSExtValue());
  }
  if (auto mm = dyn_cast<MatmulOp>(op))
    return matmul(mm, index, lane);
  if (isa<ReshapeOp>(op)) // row-major: the same flat index
    return eval(op->getOperand(0), index, lane);
  if (auto t = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = t.getPermutation();
    bool keepsLast = !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1;
    Value src = runSource(op->getOpOperand(0), index,
                          keepsLast && runsAcross(v.getType(), t.getInput().getType()),
                          [&](Value i) { return transposeIndex(t, i); });
    return eval(t.getInput(), src, lane);
  }
  if (auto sl = dyn_cast<SliceOp>(op)) {
    bool aligned = !sl.getStrides().empty() && sl.getStrides().back() == 1 && runWidth > 1 &&
                   sl.getOffsets().back() % runWidth == 0;
    Value src = runSource(op->getOpOperand(0), index,
                          aligned && runsAcross(v.getType(), sl.getInput().getType()),
                          [&](Value i) { return sliceIndex(sl, i); });
    return eval(sl.getInput(), src, lane);
  }
  if (auto cc = dyn_cast<ConcatOp>(op)) {
    // Every input is read at its clamped coordinate; a select keeps the one
    // the coordinate falls in. In a run along the concatenated last dim
    // (every part a multiple of the run), the chunk lies in one part: lane
    // 0's coordinate is clamped to a whole run inside each part, and the
    // other lanes follow it.
    int64_t d = cc.getDim();
    int64_t rank = static_cast<int64_t>(shape.size());
    bool throughRuns = runWidth > 1 && llvm::all_of(cc.getInputs(), [&](Value in) {
      return runsAcross(v.getType(), in.getType());
    });
    auto c = coordinates(index, shape);
    // Parts that are slices of one value (a window's taps side by side):
    // the index into that value is chosen and it is read once, not every
    // part read and one kept.
    Value shared;
    {
      llvm::DenseMap<Value, int> count;
      for (Value input : cc.getInputs())
        if (auto sl = input.getDefiningOp<SliceOp>())
          if (++count[sl.getInput()] >= 2)
            shared = sl.getInput();
    }
    auto sharedSlice = [&](Value input) {
      auto sl = input.getDefiningOp<SliceOp>();
      return sl && sl.getInput() == shared ? sl : SliceOp();
    };
    if (shared)
      throughRuns = false;
    if (!throughRuns && launch.getVector() == 1 && launch.getChunks() == 1 &&
        (launch.getStrategy() == Strategy::elementwise ||
         launch.getStrategy() == Strategy::movement) &&
        picksPartByBranches(cc))
      return branchConcat(cc, rt.compute, c, lane);
    Value sharedIndex, inShared;
    int64_t start = 0;
    Value chosen;
    for (auto [k, input] : llvm::enumerate(cc.getInputs())) {
      auto src = cast<RankedTensorType>(input.getType()).getShape();
      if (src[d] == 0)
        continue;
      Value local = e.sub(c[d], e.i64c(start));
      Value below = e.icmp(LLVM::ICmpPredicate::slt, local, e.i64c(0));
      if (SliceOp sl = shared ? sharedSlice(input) : SliceOp()) {
        SmallVector<Value> ic = c;
        ic[d] = e.umin(e.select(below, e.i64c(0), local), e.i64c(src[d] - 1));
        Value at = sliceIndex(sl, linearize(ic, src));
        Value here = e.icmp(LLVM::ICmpPredicate::sge, local, e.i64c(0));
        sharedIndex = !sharedIndex ? at : e.select(here, at, sharedIndex);
        inShared = !inShared ? e.boolc(true) : e.select(here, e.boolc(true), inShared);
        start += src[d];
        continue;
      }
      if (shared && !inShared)
        inShared = e.boolc(false);
      else if (shared)
        inShared = e.select(e.icmp(LLVM::ICmpPredicate::sge, local, e.i64c(0)), e.boolc(false),
                            inShared);
      int64_t top = throughRuns && d == rank - 1 ? src[d] - runWidth : src[d] - 1;
      Value srcIndex = runSource(cc->getOpOperand(k), index, throughRuns, [&](Value) {
        SmallVector<Value> ic = c;
        ic[d] = e.umin(e.select(below, e.i64c(0), local), e.i64c(top));
        return linearize(ic, src);
      });
      auto x = eval(input, srcIndex, lane);
      if (!x.ok())
        return x;
      chosen = !chosen ? *x
                       : e.select(e.icmp(LLVM::ICmpPredicate::sge, local, e.i64c(0)), *x, chosen);
      start += src[d];
    }
    if (shared) {
      auto x = eval(shared, sharedIndex, lane);
      if (!x.ok())
        return x;
      chosen = chosen ? e.select(inShared, *x, chosen) : *x;
    }
    // Every part is empty along the dim: the concat has no elements, and
    // no element reaches this code.
    return chosen ? chosen : e.poison(rt.compute);
  }
  if (auto ga = dyn_cast<GatherOp>(op)) {
    // result = table[:axis] ++ indices ++ table[axis+1:]; a negative index
    // counts from the end; out-of-range indices are clamped (the
    // interpreter reports them as errors).
    auto table = cast<RankedTensorType>(ga.getTable().getType()).getShape();
    auto ids = cast<RankedTensorType>(ga.getIndices().getType()).getShape();
    int64_t axis = ga.getAxis();
    // The table's last dim the result's (an embedding's row): a run's lanes
    // share one index and read consecutive elements of one table row, so
    // only lane 0 reads the index.
    bool rowOfTable = axis + 1 < static_cast<int64_t>(table.size()) &&
                      runsAcross(v.getType(), ga.getTable().getType());
    absl::Status status = absl::OkStatus();
    auto clamped = [&](Value id) {
      Value id64 = elemTypes(ga.getIndices().getType())->bytes == 8 ? id : e.sext(e.i64, id);
      Value neg = e.icmp(LLVM::ICmpPredicate::slt, id64, e.i64c(0));
      id64 = e.select(neg, e.add(id64, e.i64c(table[axis])), id64);
      return e.smin(e.smax(id64, e.i64c(0)), e.i64c(table[axis] - 1));
    };
    // The table's axis its last and the indices' last dim the result's (a
    // table of positions, as a traced movement chain's): a run's lanes read
    // consecutive indices (one vector load) and share lane 0's coordinates.
    bool idsInRun = axis + 1 == static_cast<int64_t>(table.size()) && !ids.empty() &&
                    runsAcross(v.getType(), ga.getIndices().getType());
    if (auto run = idsInRun ? runOf(index) : std::nullopt) {
      auto c = coordinates(run->base, shape);
      Value at = runSource(ga.getIndicesMutable(), index, true, [&](Value) {
        return linearize(SmallVector<Value>(c.begin() + axis, c.end()), ids);
      });
      auto id = eval(ga.getIndices(), at, lane);
      if (!id.ok())
        return id;
      SmallVector<Value> tc(c.begin(), c.begin() + axis);
      tc.push_back(clamped(*id));
      return eval(ga.getTable(), linearize(tc, table), lane);
    }
    Value src = runSource(ga.getTableMutable(), index, rowOfTable, [&](Value i) -> Value {
      auto c = coordinates(i, shape);
      SmallVector<Value> idc(c.begin() + axis, c.begin() + axis + ids.size());
      auto id = eval(ga.getIndices(), linearize(idc, ids), lane);
      if (!id.ok()) {
        status = id.status();
        return i;
      }
      SmallVector<Value> tc(c.begin(), c.begin() + axis);
      tc.push_back(clamped(*id));
      tc.append(c.begin() + axis + ids.size(), c.end());
      return linearize(tc, table);
    });
    if (!status.ok())
      return status;
    return eval(ga.getTable(), src, lane);
  }
  if (auto b = dyn_cast<BroadcastOp>(op)) {
    if (auto src = broadcastSource(b, index))
      return eval(b.getInput(), *src, lane);
    // The source's last dim the result's, of the same extent: runs pass.
    auto in = cast<RankedTensorType>(b.getInput().getType());
    ArrayRef<int64_t> dims = b.getDims();
    bool keepsLast = in.getRank() > 0 && !dims.empty() &&
                     dims.back() == static_cast<int64_t>(shape.size()) - 1 &&
                     in.getShape().back() == shape.back();
    Value src = runSource(op->getOpOperand(0), index,
                          keepsLast && runsAcross(v.getType(), b.getInput().getType()),
                          [&](Value i) { return broadcastIndex(e, b, i); });
    return eval(b.getInput(), src, lane);
  }
  SmallVector<Value> in;
  for (Value operand : op->getOperands()) {
    auto x = eval(operand, index, lane);
    if (!x.ok())
      return x;
    in.push_back(*x);
  }
  auto div = dyn_cast<DivOp>(op);
  return emitScalarOp(e, op, in, rt, [&](Value a, Value b) {
    return div ? divide(div, a, b, index) : e.fdiv(a, b);
  });
}

} // namespace fusec::codegen
