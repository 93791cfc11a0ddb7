//===- FusecDialect.td - The fusec dialect -----------------*- tablegen -*-===//
//
// The fusec dialect: tensor ops for a kernel-fusion compiler, each carrying
// its roofline cost.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_IR_FUSECDIALECT_TD
#define FUSEC_IR_FUSECDIALECT_TD

include "mlir/IR/OpBase.td"

def Fusec_Dialect : Dialect {
  let name = "fusec";
  let cppNamespace = "::fusec";
  let summary = "Tensor ops for a roofline-driven kernel-fusion compiler";
  let description = [{
    The fusec dialect describes a tensor graph at the level a fusion compiler
    reasons about: elementwise, broadcast, data-movement, reduction, matmul and
    attention ops on statically shaped builtin tensors, plus composite ops
    (`layer_norm`, `rms_norm`, `softmax`, `gelu`, `silu`) that the
    `fusec-decompose` pass turns into primitives, and `fusec.kernel`, a region
    that is one GPU kernel. Every op reports its FLOPs, bytes and
    special-function-unit work through `CostOpInterface`.

    Graphs live in `func.func`. Operands of elementwise ops must have the same
    shape: broadcasting is explicit (`fusec.broadcast`).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
}

// Every operand and result of a fusec op has a byte size that fits in
// int64 (verifyTensorSizes).
def Fusec_SizedTensors : NativeOpTrait<"SizedTensors"> {
  let cppNamespace = "::fusec::trait";
}

class Fusec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fusec_Dialect, mnemonic, !listconcat(traits, [Fusec_SizedTensors])>;

#endif // FUSEC_IR_FUSECDIALECT_TD
