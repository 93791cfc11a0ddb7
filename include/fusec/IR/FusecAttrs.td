//===- FusecAttrs.td - fusec attributes --------------------*- tablegen -*-===//
//
// The attributes that passes write on a fusec.kernel and that code
// generation and the JIT read: the launch plan (`#fusec.launch`), the
// strategy, per-operand cache hints and the tensor maps of TMA kernels.
// Each is declared here and verified by the dialect
// (FusecDialect::verifyOperationAttribute), so a misspelt or ill-typed
// `fusec.*` attribute is an error at its location, not a silent default.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_IR_FUSECATTRS_TD
#define FUSEC_IR_FUSECATTRS_TD

include "fusec/IR/FusecDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Fusec_Strategy : I32EnumAttr<"Strategy",
    "how a generated kernel iterates", [
      I32EnumAttrCase<"elementwise", 0>,
      I32EnumAttrCase<"movement", 1>,
      I32EnumAttrCase<"row_warp", 2>,
      I32EnumAttrCase<"row_cta", 3>,
      I32EnumAttrCase<"row_stream", 4>,
      I32EnumAttrCase<"column", 5>,
      I32EnumAttrCase<"matmul_simt", 6>,
      I32EnumAttrCase<"matmul_wgmma", 7>,
      I32EnumAttrCase<"matmul_tcgen05", 8>,
      I32EnumAttrCase<"transpose_tiled", 9>]> {
  let cppNamespace = "::fusec";
  let genSpecializedAttr = 0;
}

def Fusec_StrategyAttr : EnumAttr<Fusec_Dialect, Fusec_Strategy, "strategy"> {
  let summary = "the code-generation strategy of a kernel";
}

def Fusec_CacheHint : I32EnumAttr<"CacheHint",
    "the cache policy of a kernel operand's loads", [
      I32EnumAttrCase<"Default", 0, "default">,
      I32EnumAttrCase<"Stream", 1, "stream">,
      I32EnumAttrCase<"Keep", 2, "keep">]> {
  let cppNamespace = "::fusec";
  let genSpecializedAttr = 0;
}

def Fusec_CacheHintAttr : EnumAttr<Fusec_Dialect, Fusec_CacheHint, "cache_hint"> {
  let summary = "the cache policy of one kernel operand";
  let description = [{
    `stream`: read once (the target's stream load); `keep`: re-read by many
    CTAs (the target's keep load); `default`: a plain load.
  }];
}

//===----------------------------------------------------------------------===//
// The launch plan
//===----------------------------------------------------------------------===//

/// A list of integers written in brackets: `[128, 256, 64]`.
defvar Fusec_I64ListParser = [{ [&]() -> ::mlir::FailureOr<::llvm::SmallVector<int64_t>> {
    ::llvm::SmallVector<int64_t> values;
    if ($_parser.parseCommaSeparatedList(::mlir::AsmParser::Delimiter::Square,
            [&] { return $_parser.parseInteger(values.emplace_back()); }))
      return ::mlir::failure();
    return values;
  }() }];
defvar Fusec_I64ListPrinter = [{ $_printer << '['; ::llvm::interleaveComma($_self, $_printer);
                                 $_printer << ']'; }];
class Fusec_I64List<string desc = ""> : ArrayRefParameter<"int64_t", desc> {
  let parser = Fusec_I64ListParser;
  let printer = Fusec_I64ListPrinter;
}
class Fusec_OptionalI64List<string desc = ""> : OptionalArrayRefParameter<"int64_t", desc> {
  let parser = Fusec_I64ListParser;
  let printer = Fusec_I64ListPrinter;
}

class Fusec_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Fusec_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Fusec_LaunchAttr : Fusec_Attr<"Launch", "launch"> {
  let summary = "how a fusec.kernel runs: its strategy and launch shape";
  let description = [{
    Written by `fusec-tile` on every kernel, the only place that chooses a
    strategy; code generation builds exactly what it says. `grid` and
    `block` are CTAs and threads per CTA (one dimension). The other fields
    belong to some strategies and default otherwise:

    - `vector`: elements a thread moves with one 16-byte access;
    - `chunks`: vectors a thread holds per operand (rows held in registers;
      column: rows whose loads a thread has in flight together);
    - `rows`: rows a CTA works on at once (row strategies; column: its
      slices, the block being slices x threads side by side on a row);
    - `tile`: M, N, K of a matmul tile; `stages`: its pipeline depth;
      `cluster`: CTAs per cluster; `split`: the parts K is split into
      (split-K: each CTA reduces one part, the last to finish a tile sums
      them in order and runs the epilogue);
    - `smem`: shared memory in bytes (static and dynamic);
    - `regs`: the 32-bit registers a thread is planned to need;
    - `resident` (matmul_wgmma): the rhs's k-blocks a CTA loads once into
      shared memory and reads for every tile it computes, in place of a
      share of each stage (0: streamed with the lhs). Either 0 or all of
      K's k-blocks, for a plan of one column of tiles and no split.
    - `unsplit` (matmul_wgmma, with `split` over 1): the tiles, the first
      in the grid's order of work units, that run whole; only the rest
      (the last, partial wave over the SMs) are split into `split` parts
      of K. 0: every tile is split.
    - `streamk` (matmul_wgmma, 1 or 0): stream-K. The grid's G CTAs share
      the I = tiles x k-blocks mainloop iterations evenly, CTA c taking
      [c I / G, (c + 1) I / G) in tile order; a tile that several CTAs share
      is summed by the one that finishes last. No `split` then.

    ```mlir
    fusec.launch = #fusec.launch<strategy = row_cta, grid = 16384, block = 1024,
                                 vector = 8, chunks = 1, rows = 1, smem = 256, regs = 34>
    ```
  }];
  let parameters = (ins
    EnumParameter<Fusec_Strategy>:$strategy,
    "int64_t":$grid,
    "int64_t":$block,
    DefaultValuedParameter<"int64_t", "1">:$vector,
    DefaultValuedParameter<"int64_t", "1">:$chunks,
    DefaultValuedParameter<"int64_t", "0">:$rows,
    Fusec_OptionalI64List<>:$tile,
    DefaultValuedParameter<"int64_t", "0">:$stages,
    DefaultValuedParameter<"int64_t", "1">:$cluster,
    DefaultValuedParameter<"int64_t", "1">:$split,
    DefaultValuedParameter<"int64_t", "0">:$smem,
    DefaultValuedParameter<"int64_t", "0">:$regs,
    DefaultValuedParameter<"int64_t", "0">:$resident,
    DefaultValuedParameter<"int64_t", "0">:$unsplit,
    DefaultValuedParameter<"int64_t", "0">:$streamk
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Tensor maps (TMA descriptors)
//===----------------------------------------------------------------------===//

def Fusec_TensorMapAttr : Fusec_Attr<"TensorMap", "tensor_map"> {
  let summary = "a TMA descriptor the JIT encodes for a kernel parameter";
  let description = [{
    The JIT encodes one `CUtensorMap` per entry of a kernel's
    `fusec.tensor_maps` (cuTensorMapEncodeTiled) over the device address of
    its `slot` (operands, then results, as the kernel's pointer parameters)
    and passes the table of descriptors as the kernel's last parameter. All
    lists run innermost dimension first, as the driver takes them: `dims` in
    elements, `strides` in bytes for dims 1 and up, `box` in elements.
    `swizzle` is 0, 32, 64 or 128 (bytes).

    ```mlir
    #fusec.tensor_map<slot = 0, element_bytes = 2, dims = [4096, 8192],
                      strides = [8192], box = [64, 128], swizzle = 128>
    ```

    With `lower` and `upper` the map is an im2col one
    (cuTensorMapEncodeIm2col) over a channels-last tensor of 3 to 5 dims
    (`[C, W, H, D, N]`, innermost first): `lower` and `upper` are the
    pixel bounding box's corners, one per spatial dim (innermost first),
    relative to the tensor's first and last positions; `box` is
    `[channels per pixel, pixels per column, 1...]`; `element_strides`
    (one per dim, 1 to 8; absent: all 1) is the traversal stride, a
    convolution's.

    ```mlir
    #fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 56, 56, 32],
                      strides = [128, 7168, 401408], box = [64, 128, 1, 1],
                      swizzle = 128, lower = [-1, -1], upper = [-1, -1]>
    ```
  }];
  let parameters = (ins
    "int64_t":$slot,
    "int64_t":$element_bytes,
    Fusec_I64List<>:$dims,
    Fusec_OptionalI64List<>:$strides,
    Fusec_I64List<>:$box,
    DefaultValuedParameter<"int64_t", "0">:$swizzle,
    Fusec_OptionalI64List<>:$lower,
    Fusec_OptionalI64List<>:$upper,
    Fusec_OptionalI64List<>:$element_strides
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // FUSEC_IR_FUSECATTRS_TD
