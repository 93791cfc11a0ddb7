//===- Passes.td - Code-generation passes ------------------*- tablegen -*-===//
//
// The code-generation pass stands apart from the graph passes
// (include/fusec/Passes): it depends on them being done, never the reverse.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_CODEGEN_PASSES_TD
#define FUSEC_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def CodeGen : Pass<"fusec-codegen", "::mlir::ModuleOp"> {
  let summary = "Generate PTX for each fusec.kernel (through MLIR's LLVM and "
                "NVVM dialects and LLVM's NVPTX backend)";
  let description = [{
    For every `fusec.kernel` that does not carry PTX yet, builds the kernel
    its launch plan (`fusec.launch`, from `fusec-tile`; planned here with the
    same function when missing) describes, as an `llvm.func` of LLVM and NVVM
    dialect ops, and translates it through LLVM's NVPTX backend. It attaches
    `fusec.ptx`, `fusec.entry`, `fusec.grid`, `fusec.block` and
    `fusec.strategy`, the contract the JIT runs. With `emit=llvm` it stops
    before translation and appends each kernel's module of LLVM/NVVM ops to
    the input module instead, for reading and for tests.

    Kernels it cannot build are left as they are (a remark says why, with
    `remarks=true`). Loads of operands marked `stream` by
    `fusec-assign-cache-hints` use `stream-load`, those marked `keep` use
    `keep-load`; both default to the target's measured choice.
    `aggressive-ptx=false` makes every load plain (the escape switch). In the
    tools, FUSEC_DISABLE_AGGRESSIVE_PTX, FUSEC_STREAM_LOAD, FUSEC_KEEP_LOAD,
    FUSEC_ROW_CHUNKS and FUSEC_PDL override these options.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90a\"",
           "sm_90a, sm_100a or sm_80">,
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "Target (name or file) whose figures and load choices apply; "
           "default: b200 for sm_100a, else h200">,
    Option<"aggressivePtx", "aggressive-ptx", "bool", /*default=*/"true",
           "Cache-hinted loads (false: plain loads)">,
    Option<"streamLoad", "stream-load", "std::string", /*default=*/"\"\"",
           "The load of tensors read once: plain, no_allocate, l2_256b or "
           "evict_first (default: the target's choice)">,
    Option<"keepLoad", "keep-load", "std::string", /*default=*/"\"\"",
           "The load of tensors re-read by many CTAs: plain, evict_last or nc "
           "(default: the target's choice)">,
    Option<"rowChunks", "row-chunks", "int64_t", /*default=*/"4",
           "For kernels without a launch plan: the 16-byte chunks a thread of "
           "a row kernel aims to hold (1-16)">,
    Option<"pdl", "pdl", "bool", /*default=*/"true",
           "Programmatic dependent launch on sm_90a/sm_100a: each kernel "
           "lets the next launch early and waits for the previous one before "
           "it touches memory (false: neither)">,
    Option<"emit", "emit", "std::string", /*default=*/"\"ptx\"",
           "ptx (attach PTX to each kernel) or llvm (append each kernel's "
           "LLVM/NVVM dialect module instead)">,
    Option<"dumpDir", "dump-dir", "std::string", /*default=*/"\"\"",
           "Also write each kernel's PTX to DIR/<function>.<entry>.ptx">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Say what each kernel became, or why not">,
  ];
}

#endif // FUSEC_CODEGEN_PASSES_TD
