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

def RecognizeAttention : Pass<"fusec-recognize-attention"> {
  let summary = "Rewrite matmul -> scale -> (causal mask) -> softmax -> matmul "
                "into fusec.attention";
  let description = [{
    Finds scaled dot-product attention written out, as frameworks export it:

      s = matmul(Q, K) with K transposed (`transpose_rhs`, or a
          `fusec.transpose` swapping the last two dims of K)
      s = s * c or s / c (a splat constant: the scale), optional
      s = s + M (a constant causal mask: 0 where key j <= query i + Skv - Sq,
          -inf or below -1e4 elsewhere), or select(causal, s, -inf), optional
      p = softmax(s) over the last dim
      o = matmul(p, V)

    with Q `[B, H, Sq, D]`, K `[B, H, Skv, D]`, V `[B, H, Skv, Dv]`, and each
    intermediate used once; it becomes `fusec.attention %q, %k, %v {scale,
    causal}`, which the runtime's attention kernel runs. The rewrite keeps
    the graph's meaning (tested by running it before and after); it runs
    first in `--fusec-pipeline`, before `softmax` is decomposed.

    With `intrinsic-only` (as `--fusec-pipeline` runs it) only attention the
    runtime's kernel runs is rewritten: bf16 or f16, head dim 64, 128 or 256,
    V's head dim equal to Q's, kv heads dividing query heads. Other attention
    stays written out, so the generated kernels run it.

    Then, for every `fusec.attention`, transposes that keep the head dim last
    fold into its layout attributes: a transpose feeding Q, K or V (`(B, S,
    H, D)` as a projection's reshape leaves it) into `query_perm`,
    `key_perm` or `value_perm`, and a transpose that is the result's one use
    into `result_perm`. The attention intrinsic reads and writes those
    layouts in place, so no transpose kernel runs beside it.
  }];
  let options = [
    Option<"intrinsicOnly", "intrinsic-only", "bool", "false",
           "Only rewrite attention the runtime's attention kernel runs">,
  ];
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

def RooflineReport : Pass<"fusec-roofline-report", "::mlir::ModuleOp"> {
  let summary = "Report each kernel's roofline on a target (FLOPs, bytes, SFU "
                "ops, intensity, binding roof, predicted time), fused and "
                "unfused, as text or JSON, with an optional SVG plot";
  let description = [{
    Analyzes every function: each `fusec.kernel` (and each other op, as a
    kernel of its own) gets its FLOPs, bytes and SFU ops, its arithmetic
    intensity, the time on each roof (HBM, tensor, FP32, SFU), the binding
    roof, the predicted time (the largest roof plus a launch) and the
    headroom to each other roof; the totals come for the graph as it is and
    for the same graph unfused, with the peak live memory of each. The IR is
    left unchanged. docs/Roofline.md documents the formula and the JSON.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"h200\"",
           "Target: b200, h200, h100, h200-measured, or a target file">,
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "Report format: text or json">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the report ('-': standard output)">,
    Option<"svg", "svg", "std::string", /*default=*/"\"\"",
           "Also write a roofline plot as SVG to this path">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark at each kernel with its roofline numbers">,
    Option<"measured", "measured", "std::string", /*default=*/"\"\"",
           "Measured kernel times to report beside the predictions: a JSON "
           "file as `fusec-run --json` prints (or an array of those, or of "
           "{function, kernel, median_ms})">,
  ];
}

def Fuse : Pass<"fusec-fuse", "::mlir::ModuleOp"> {
  let summary = "Cost-guided fusion of ops into fusec.kernel regions "
                "(vertical, horizontal, matmul epilogues), memory-aware";
  let description = [{
    Greedy by priority, where a merge's priority is the predicted time it
    saves on the target: the two kernels' roofline times (launch included)
    minus the merged kernel's. Candidates are producer/consumer pairs
    (vertical) and kernels that read the same tensor (horizontal).

    Legality, checked for every merge:
    - no cycle: no path between the two kernels through a third;
    - one iteration domain: every op of a kernel iterates over the same
      shape D, or, with reductions, over D or D without its reduced
      dimensions; all reductions in a kernel reduce the same dimensions of
      the same shape (so layer_norm, rms_norm and softmax each become one
      kernel);
    - a matmul is only ever the root of a kernel whose other ops are its
      elementwise epilogue on its result's shape (bias, activation,
      residual); such kernels carry `fusec.matmul_epilogue` for the
      tensor-core code generator; two matmuls share a kernel only when they
      read the same lhs by rhs of one shape (SwiGLU's gate and up: one GEMM
      with two accumulators);
    - attention (the runtime's library kernel) stays a top-level op; the
      data-movement ops transpose, slice, concat and gather are never fused
      with others; reshapes and constants are free and stay outside (splat
      constants are copied into the kernels that use them).

    Last, movement next to matmuls: a slice or transpose kernel that reads
    a matmul kernel's output (through free reshapes) becomes another output
    of it, written through the movement (a QKV projection writes Q, K and V
    head-major), and a transpose kernel that feeds a matmul's operand
    (through reshapes) is read through the operand's tensor map (attention
    heads as rows); each fold is kept only where the tensor-core strategy
    takes the resulting kernel. Into elementwise consumers: a concat,
    slice or last-dim-keeping transpose kernel read by one elementwise
    kernel (which does not broadcast it) is read through its index map
    there (rotary embedding's rotate_half); a lone transpose of the last
    dim folds only where the consumer then runs as `transpose_tiled`.

    Memory-aware: a merge that would raise the fused graph's peak live
    memory above the unfused graph's is left out (with a remark) and the
    other merges still apply. The peak is taken over the kernels (or, for
    the unfused graph, the ops) in topological order; arguments are live
    for the whole call (the caller holds them), results from their
    definition on, other values until their last reader, and a reshape is
    a view that holds no bytes of its own. Every op that costs something
    ends up in a kernel (a kernel of one op if nothing fuses with it).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"h200\"",
           "Target whose roofline prices each merge">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark for each merge, with the time it saves">,
    Option<"verifyPeak", "verify-peak", "bool", /*default=*/"false",
           "Check the memory replay's incrementally kept peak against a "
           "whole evaluation of the graph at every test, failing the pass "
           "on a difference (slow; for testing)">,
  ];
  let dependentDialects = ["::fusec::FusecDialect"];
}

def LowerPrecision : Pass<"fusec-lower-precision", "::mlir::ModuleOp"> {
  let summary = "Lower the storage precision of f32 tensors (bf16, fp16 or "
                "fp8e4m3) within an analytic error budget";
  let description = [{
    Candidates are the f32 tensors each function computes: every op's
    result but the returned values. The signature never changes: an f32
    argument is rounded where an op computing in the policy type reads it,
    and a returned movement of a lowered value is cast back to the result's
    type. Largest first, each is lowered to the
    policy's type if the estimated error bound of every function result stays
    within `max-rel-error`; otherwise it stays f32 and a remark names the op
    and the bound it would have caused. Reductions, matmuls and attention
    keep accumulating in f32 (that is their semantics whatever the storage
    type); casts are inserted where an op's operands must share a type.

    The bound is first-order and normwise (relative L2 error of each
    result): storing a value in the policy type adds its unit roundoff u
    (bf16 2^-8, fp16 2^-11, fp8e4m3 2^-4); add, sub, mul, div, matmul and
    attention add up their operands' errors (sums and differences assume no
    worse than half cancellation); exp, exp2, log and pow multiply their
    operand's error by 4 (|x| up to 4); floor, ceil, sign and compare are
    discontinuous, so any error reaching them makes the bound unbounded
    (nothing that feeds them is lowered); every other op (max, min, select,
    abs, neg, tanh, sigmoid, erf, rsqrt, sqrt, reductions, movement) passes
    on the largest of its operands' errors. Each function gets `fusec.error_bound` (one
    bound per result), which the differential tests check against the
    interpreter, and a remark reports the bytes saved. That estimate holds
    for data where no sum cancels.

    Beside it, `fusec.abs_error_bound = {bounds = [...], input_magnitude =
    M}` bounds each element's absolute error whatever the data cancel, for
    arguments with |x| <= `input-magnitude`: absolute errors propagated with
    the values' magnitudes (products by `Ma Eb + Mb Ea + Ea Eb`, sums of K
    terms by their count, with f32 accumulation), each op's error through
    its Lipschitz constant on its operands' ranges widened by their errors,
    each stored value adding the rounding of its type in both functions.
    Beside it a mixed bound R |x| + A composes relative errors where
    values keep a sign (exponentials, their sums, products and quotients:
    a softmax), and each value's bound is the lesser of the two.
    A normalization (`a * rsqrt(mean(a * a) + eps)`, or a division by
    the sqrt; a sum for the mean) is at most sqrt(n) (1) whatever `a` is,
    which caps its magnitude and error where the rsqrt's slope has no bound.
    It is infinite (vacuous) where no range bounds a slope: a log, a
    division or an rsqrt whose operand may reach 0 (outside those
    normalizations), a comparison or rounding of an inexact value, pow.

    The range check also covers what an op computing in the narrow type
    reads: its f32 operands are rounded on the way in, so each must fit.
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"bf16\"",
           "Storage type: bf16, fp16 or fp8e4m3">,
    Option<"maxRelError", "max-rel-error", "double", /*default=*/"0.05",
           "Largest estimated relative (L2) error allowed on any result">,
    Option<"inputMagnitude", "input-magnitude", "double", /*default=*/"8.0",
           "Assumed bound on |input| for the range check of fp16 and fp8 and "
           "for the absolute error bound">,
  ];
}

def Recompute : Pass<"fusec-recompute", "::mlir::ModuleOp"> {
  let summary = "Recompute cheap values inside their consumer kernels rather "
                "than store and reload them, when the roofline or peak memory "
                "says so";
  let description = [{
    Runs after fusion. For each kernel result that other kernels read, the
    ops of its kernel that compute it from the kernel's operands (its slice)
    are found; if the slice is short (at most `max-slice-ops`) and
    elementwise, duplicating it into each consumer is considered:

    - store vs. recompute: the consumers read the slice's inputs instead of
      the stored value, the producer no longer writes it (or disappears), and
      the consumers do the slice's FLOPs again. Taken when the predicted time
      of the kernels involved goes down;
    - checkpointing: otherwise still taken when it lowers the graph's peak
      live memory and adds at most `max-extra-flops` (a fraction of the
      graph's FLOPs).

    Every decision, taken or not, can be a remark quoting the numbers.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"h200\"",
           "Target whose roofline prices each choice">,
    Option<"maxSliceOps", "max-slice-ops", "unsigned", /*default=*/"16",
           "Longest slice of ops that may be recomputed">,
    Option<"maxExtraFlops", "max-extra-flops", "double", /*default=*/"0.1",
           "FLOPs that recomputation for memory may add, as a fraction of the graph's">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark for each decision">,
  ];
}

def Tile : Pass<"fusec-tile", "::mlir::ModuleOp"> {
  let summary = "Derive each kernel's launch and tile parameters from the "
                "target (fusec.launch on every fusec.kernel)";
  let description = [{
    Attaches `fusec.launch = #fusec.launch<...>` to every `fusec.kernel`: the
    one decision of how it runs, which code generation obeys
    (`planLaunch`, include/fusec/CodeGen/LaunchPlan.h). The rules:

    - elementwise and movement: 256 threads, `vector` elements per 16-byte
      access of the widest boundary type, a grid-stride loop over at most
      32 CTAs per SM;
    - reductions over the innermost dimensions: the row held in registers,
      by a warp (`row_warp`) or a CTA of up to 1024 threads (`row_cta`),
      `chunks` 16-byte chunks a thread (`row-chunks` is the aim); rows too
      long for registers are streamed by a warp (`row_stream`, online
      softmax / Welford), as are reductions over dims apart;
    - reductions over leading or middle dimensions: `column` (8 warps split
      the reduced rows, f64 partials in `smem` bytes of shared memory);
    - matmuls: `matmul_simt` (a thread per output element) until a
      tensor-core strategy takes them;
    - `regs` estimates the 32-bit registers a thread needs.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"h200\"",
           "Target whose SMs, shared memory and registers size the tiles">,
    Option<"rowChunks", "row-chunks", "int64_t", /*default=*/"4",
           "Rows held in registers: the 16-byte chunks a thread aims to hold "
           "per operand (1-16; FUSEC_ROW_CHUNKS overrides it in the tools)">,
  ];
}

def AssignCacheHints : Pass<"fusec-assign-cache-hints", "::mlir::ModuleOp"> {
  let summary = "Choose a cache policy for each kernel operand: stream data "
                "read once (L1::no_allocate, evict_first), keep reused data "
                "(evict_last)";
  let description = [{
    Sets `fusec.cache_hints` on every `fusec.kernel`, one entry per operand:
    `stream` for a tensor that the whole graph reads exactly once, element
    by element (load with `ld.global.nc.L1::no_allocate` and an evict-first
    policy), `keep` for one that is read again (by another kernel, or within
    the kernel through a broadcast: per-feature vectors, bias) and should
    stay in L2 (evict-last). With `aggressive=false`, or with
    `FUSEC_DISABLE_AGGRESSIVE_PTX=1` in the environment, every entry is
    `default` and code generation emits plain loads: the escape switch.
  }];
  let options = [
    Option<"aggressive", "aggressive", "bool", /*default=*/"true",
           "Emit cache-hinted loads (false: plain loads everywhere)">,
  ];
}

#endif // FUSEC_PASSES_PASSES_TD
