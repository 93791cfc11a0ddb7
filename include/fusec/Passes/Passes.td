//===- Passes.td - fusec passes ----------------------------*- tablegen -*-===//
//
// Every fusec pass; `fusec-opt --help` lists them with their summaries.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_PASSES_PASSES_TD
#define FUSEC_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def Decompose : Pass<"fusec-decompose"> {
  let summary = "Rewrite composite ops (layer_norm, rms_norm, softmax, gelu, "
                "silu) into fusec primitives";
  let description = [{
    Each composite becomes the primitives that compute it, so that fusion sees
    every elementwise op and reduction:

    - `layer_norm`: mean, centre, mean of squares, `rsqrt(var + eps)`, scale
      and shift;
    - `rms_norm`: `x * rsqrt(mean(x²) + eps) * scale`;
    - `softmax`: max subtraction, `exp`, sum, division;
    - `gelu`: `0.5·x·(1 + erf(x/√2))`, or the tanh form for `{tanh}`;
    - `silu`: `x * sigmoid(x)`.

    Math on bf16, f16 or fp8 inputs is done in f32 (casts in and out), so the
    decomposed graph rounds no more often than the composite did.
  }];
  let dependentDialects = ["::fusec::FusecDialect"];
}

def CostAnnotate : Pass<"fusec-cost-annotate"> {
  let summary = "Attach each op's roofline cost (FLOPs, bytes, SFU ops, "
                "intensity) as a `fusec.cost` attribute";
  let description = [{
    For every op that implements `CostOpInterface`, adds
    `fusec.cost = {flops, bytes_read, bytes_written, sfu_ops, intensity}`,
    and to each function `fusec.total_cost` with the sums. The attributes are
    what later passes and the report read, and what a person reads to see
    where the bytes go.
  }];
  let options = [
    Option<"totalsOnly", "totals-only", "bool", /*default=*/"false",
           "Annotate only the functions' totals, not each op">,
  ];
}

#endif // FUSEC_PASSES_PASSES_TD
