//===- CodeGen.cpp - Legality, dispatch on the launch plan, PTX -*- C++ -*-===//
//
// generateKernel: checks that every op and type of the kernel has code
// generation, takes the kernel's #fusec.launch (or plans one with the same
// function fusec-tile calls), builds the llvm.func with the plan's strategy
// into a fresh module of the pass's own MLIRContext, verifies it and
// translates it to PTX.
//
//===----------------------------------------------------------------------===//

#include "Strategies/Strategies.h"
#include "fusec/CodeGen/LaunchPlan.h"
#include "fusec/Target/Target.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace fusec {

using namespace codegen;

namespace {

/// Every op and type the strategies can build, and the outputs' shapes each
/// kind of kernel can write.
absl::Status checkKernel(KernelOp kernel, const KernelShape &s, const std::string &arch) {
  Block &body = kernel.getBody().front();
  auto isFp8 = [](Value v) {
    auto t = elemTypes(v.getType());
    return t && t->fp8;
  };
  for (Operation &op : body) {
    if (isa<YieldOp>(op))
      continue;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      if (!isa<SplatElementsAttr>(c.getValue()))
        return unimplemented(&op, "only splat constants are generated yet");
    } else if (auto mm = dyn_cast<MatmulOp>(op)) {
      if (!s.reductions.empty())
        return unimplemented(&op, "a matmul fused with a reduction is not generated yet");
      if (!isa<FloatType>(getElementTypeOrSelf(mm.getLhs().getType())))
        return unimplemented(&op, "integer matmul is not generated yet");
      if (isFp8(mm.getLhs()) || isFp8(mm.getRhs()) || isFp8(mm.getResult()))
        return unimplemented(&op, "fp8 matmul is not generated yet");
    } else if (auto r = dyn_cast<ReduceOp>(op)) {
      Type t = getElementTypeOrSelf(r.getType());
      if (!isa<FloatType>(t) && (r.getKind() == ReduceKind::mean || t.isInteger(1)))
        return unimplemented(r, "integer means and boolean reductions are not generated yet");
    } else if (!isa<CastOp, BroadcastOp, ReshapeOp, TransposeOp, SliceOp, ConcatOp, GatherOp,
                    CompareOp, SelectOp, AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp,
                    AndOp, OrOp, NotOp, NegOp, AbsOp, SignOp, FloorOp, CeilOp, RoundOp, ExpOp, Exp2Op,
                    LogOp, TanhOp, ErfOp, SigmoidOp, RsqrtOp, SqrtOp, SinOp, CosOp>(op)) {
      return unimplemented(&op, "this op is not generated inside a kernel (composites are "
                                "decomposed by fusec-decompose first; attention runs as the "
                                "intrinsic outside kernels; code generation builds "
                                "elementwise, movement, reduction and matmul kernels)");
    }
    for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults())) {
      if (!elemTypes(v.getType()))
        return unimplemented(&op, "this element type is not generated");
      // fp8 converts by cvt ...e4m3x2 / ...e5m2x2, PTX for sm_89 on.
      if (isFp8(v) && arch == "sm_80")
        return unimplemented(&op, "fp8 element types need sm_89 or later (cvt to and from "
                                  "e4m3/e5m2); this kernel is built for sm_80");
    }
  }
  for (Value v : body.getArguments())
    if (!elemTypes(v.getType()))
      return unimplemented(kernel, "this element type is not generated");
  if (body.getTerminator()->getNumOperands() == 0)
    return unimplemented(kernel, "a kernel without outputs");
  // The shapes each kind writes: the domain, and the reduced shape.
  SmallVector<int64_t> reduced;
  ReduceOp first = s.reductions.empty() ? ReduceOp() : s.reductions[0];
  if (s.kind == KernelShape::Kind::Rows) {
    reduced.assign(s.domain.begin(), s.domain.end() - first.getDims().size());
  } else if (s.kind == KernelShape::Kind::RowsApart) {
    for (int64_t d : s.keptDims)
      reduced.push_back(s.domain[d]);
  } else if (s.kind == KernelShape::Kind::Columns) {
    for (int64_t d = 0; d < static_cast<int64_t>(s.domain.size()); ++d)
      if (!llvm::is_contained(first.getDims(), d))
        reduced.push_back(s.domain[d]);
  }
  bool reduces = !s.reductions.empty();
  for (Value r : body.getTerminator()->getOperands()) {
    auto t = cast<RankedTensorType>(r.getType()).getShape();
    if (t == ArrayRef<int64_t>(s.domain) || (reduces && t == ArrayRef<int64_t>(reduced)))
      continue;
    // A matmul's result written through slices, reshapes and transposes.
    if (s.kind == KernelShape::Kind::Matmul && storeMapOf(r, s.domain))
      continue;
    return unimplemented(kernel, reduces ? (s.kind == KernelShape::Kind::Columns
                                                ? "an output of neither the column nor the element shape"
                                                : "an output of neither the row nor the element shape")
                                         : "outputs of different shapes");
  }
  return absl::OkStatus();
}

absl::StatusOr<LaunchAttr> launchFor(KernelOp kernel, const PtxOptions &options) {
  if (auto launch = kernel->getAttrOfType<LaunchAttr>("fusec.launch"))
    return launch;
  auto target = Target::load(options.target);
  if (!target.ok())
    return target.status();
  PlanOptions plan;
  plan.rowChunks = options.rowChunks;
  plan.arch = options.arch;
  return planLaunch(kernel, *target, plan);
}

absl::Status build(KernelOp kernel, const PtxOptions &options, ModuleOp module) {
  if (options.arch != "sm_90a" && options.arch != "sm_100a" && options.arch != "sm_80")
    return absl::InvalidArgumentError("fusec codegen: arch '" + options.arch +
                                      "' is not sm_90a, sm_100a or sm_80");
  KernelShape shape = analyzeKernel(kernel);
  if (auto st = checkKernel(kernel, shape, options.arch); !st.ok())
    return st;
  auto launch = launchFor(kernel, options);
  if (!launch.ok())
    return launch.status();
  StrategyInput in{kernel, *launch, shape, options, module};
  // Every strategy begins its function alike (KernelEmitter::
  // beginFunction): under programmatic dependent launch the JIT may let
  // the kernel start before the previous one ends.
  if (options.pdl && options.arch != "sm_80")
    kernel->setAttr("fusec.pdl", UnitAttr::get(kernel.getContext()));
  else
    kernel->removeAttr("fusec.pdl");
  // Outputs the kernel writes only the image of, through zero padding: the
  // JIT gives them buffers zeroed once (every strategy stores through the
  // same maps).
  SmallVector<int64_t> zeroInit;
  if (shape.kind == KernelShape::Kind::Matmul)
    for (auto [i, r] : llvm::enumerate(kernel.getBody().front().getTerminator()->getOperands()))
      if (cast<RankedTensorType>(r.getType()).getShape() != ArrayRef<int64_t>(shape.domain))
        if (auto map = storeMapOf(r, shape.domain); map && map->zeroFilled)
          zeroInit.push_back(static_cast<int64_t>(i));
  if (!zeroInit.empty())
    kernel->setAttr("fusec.zero_init", DenseI64ArrayAttr::get(kernel.getContext(), zeroInit));
  else
    kernel->removeAttr("fusec.zero_init");
  // A plan may only build what the kernel's shape is.
  auto expect = [&](bool ok) -> absl::Status {
    if (ok)
      return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "fusec codegen: kernel '", kernel.getName() ? kernel.getName()->str() : "",
        "' has launch plan strategy ", stringifyStrategy(launch->getStrategy()).str(),
        ", which does not fit its body (re-run fusec-tile)"));
  };
  using Kind = KernelShape::Kind;
  switch (launch->getStrategy()) {
  case Strategy::elementwise:
  case Strategy::movement:
    if (auto st = expect(shape.kind == Kind::Elementwise); !st.ok())
      return st;
    return emitElementwise(in);
  case Strategy::transpose_tiled:
    if (auto st = expect(shape.kind == Kind::Elementwise); !st.ok())
      return st;
    return emitTransposeTiled(in);
  case Strategy::matmul_simt:
    if (auto st = expect(shape.kind == Kind::Matmul && launch->getVector() == 1); !st.ok())
      return st;
    return emitMatmulSimt(in);
  case Strategy::row_warp:
  case Strategy::row_cta:
    if (auto st = expect(shape.kind == Kind::Rows && launch->getRows() > 0); !st.ok())
      return st;
    return emitRowsInRegisters(in);
  case Strategy::row_stream:
    if (auto st = expect(shape.kind == Kind::Rows || shape.kind == Kind::RowsApart); !st.ok())
      return st;
    return emitRowStream(in);
  case Strategy::column:
    if (auto st = expect(shape.kind == Kind::Columns); !st.ok())
      return st;
    if (auto scratch = emitColumns(in); !scratch.ok()) {
      return scratch.status();
    } else if (!scratch->empty()) {
      kernel->setAttr("fusec.scratch", DenseI64ArrayAttr::get(kernel.getContext(), *scratch));
    } else {
      kernel->removeAttr("fusec.scratch");
    }
    return absl::OkStatus();
  case Strategy::matmul_wgmma:
  case Strategy::matmul_tcgen05: {
    bool hopper = launch->getStrategy() == Strategy::matmul_wgmma;
    if (options.arch != (hopper ? "sm_90a" : "sm_100a"))
      return absl::InvalidArgumentError(absl::StrCat(
          "fusec codegen: ", stringifyStrategy(launch->getStrategy()).str(), " needs ",
          hopper ? "sm_90a" : "sm_100a", " (re-plan the kernel for ", options.arch, ")"));
    auto tc = hopper ? emitMatmulWgmma(in) : emitMatmulTcgen05(in);
    if (!tc.ok())
      return tc.status();
    // The JIT encodes these descriptors and passes their table, then the
    // scratch buffers, last.
    kernel->setAttr("fusec.tensor_maps",
                    ArrayAttr::get(kernel.getContext(),
                                   SmallVector<Attribute>(tc->maps.begin(), tc->maps.end())));
    if (!tc->scratch.empty())
      kernel->setAttr("fusec.scratch", DenseI64ArrayAttr::get(kernel.getContext(), tc->scratch));
    else
      kernel->removeAttr("fusec.scratch");
    return absl::OkStatus();
  }
  }
  return absl::InternalError("unknown strategy");
}

} // namespace

absl::StatusOr<OwningOpRef<ModuleOp>> buildKernelModule(KernelOp kernel,
                                                        const PtxOptions &options) {
  OpBuilder b(kernel.getContext());
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  if (auto st = build(kernel, options, *module); !st.ok())
    return st;
  return module;
}

absl::StatusOr<GeneratedKernel> generateKernel(KernelOp kernel, const PtxOptions &options) {
  auto module = buildKernelModule(kernel, options);
  if (!module.ok())
    return module.status();
  auto ptx = translateToPtx(**module, options.arch);
  if (!ptx.ok())
    return ptx.status();
  GeneratedKernel g;
  g.entry = kernel.getName() ? kernel.getName()->str() : "fusec_kernel";
  g.ptx = std::move(*ptx);
  return g;
}

} // namespace fusec
