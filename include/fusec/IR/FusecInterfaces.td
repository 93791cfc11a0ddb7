//===- FusecInterfaces.td - Cost interface -----------------*- tablegen -*-===//
//
// The roofline cost every fusec op reports.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_IR_FUSECINTERFACES_TD
#define FUSEC_IR_FUSECINTERFACES_TD

include "mlir/IR/OpBase.td"

def Fusec_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::fusec";
  let description = [{
    The work an op does when it runs: floating-point operations, bytes read
    from and written to device memory, and transcendental operations issued to
    the special-function units (ex2, lg2, rsqrt, rcp, tanh). Bytes assume each
    operand is read once and each result written once, as if the op ran as a
    kernel of its own; `fusec.kernel` overrides this and counts only the bytes
    that cross its boundary. docs/Costs.md tabulates the per-op figures.
  }];
  let methods = [
    InterfaceMethod<
      "Returns the FLOPs, bytes read, bytes written and SFU ops of this op.",
      "::fusec::OpCost", "getCost">,
  ];
}

#endif // FUSEC_IR_FUSECINTERFACES_TD
