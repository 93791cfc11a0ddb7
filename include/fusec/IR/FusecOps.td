//===- FusecOps.td - fusec ops -----------------------------*- tablegen -*-===//
//
// Primitive ops, composite ops and the kernel region of the fusec dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_IR_FUSECOPS_TD
#define FUSEC_IR_FUSECOPS_TD

include "fusec/IR/FusecDialect.td"
include "fusec/IR/FusecAttrs.td"
include "fusec/IR/FusecInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Fusec_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "comparison predicate", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::fusec";
}

def Fusec_ReduceKind : I32EnumAttr<"ReduceKind", "reduction kind", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"mean", 3>]> {
  let cppNamespace = "::fusec";
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

// Element-type classes an elementwise op accepts; checked by the C++ verifier
// so that the diagnostic can name the operand and the types involved.
defvar FloatOnly = "::fusec::ElementClass::Float";
defvar Numeric = "::fusec::ElementClass::Numeric";
defvar Logical = "::fusec::ElementClass::Logical";

// An elementwise op of `arity` operands, all of one tensor type. `flops` and
// `sfu` are the FLOPs and SFU ops it costs per result element.
class Fusec_ElementwiseOp<string mnemonic, int arity, string elementClass,
                          int flops, int sfu, list<Trait> traits = []>
    : Fusec_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Fusec_CostOpInterface>])> {
  let results = (outs AnyRankedTensor:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  code kindExpr = "::fusec::ElementwiseKind::Plain";
  let extraClassDefinition = [{
    ::fusec::OpCost $cppClass::getCost() {
      return ::fusec::detail::elementwiseCost(getOperation(), }]
        # !cast<string>(flops) # ", " # !cast<string>(sfu) # [{);
    }
    ::mlir::LogicalResult $cppClass::verify() {
      return ::fusec::detail::verifyElementwise(getOperation(), }]
        # elementClass # [{, }] # kindExpr # [{);
    }
    ::mlir::ParseResult $cppClass::parse(::mlir::OpAsmParser &parser,
                                         ::mlir::OperationState &result) {
      return ::fusec::detail::parseElementwise(parser, result, }]
        # !cast<string>(arity) # ", " # kindExpr # [{);
    }
    void $cppClass::print(::mlir::OpAsmPrinter &p) {
      ::fusec::detail::printElementwise(p, getOperation(), }] # kindExpr # [{);
    }
  }];
}

class Fusec_UnaryOp<string mnemonic, string elementClass, int flops, int sfu,
                    list<Trait> traits = []>
    : Fusec_ElementwiseOp<mnemonic, 1, elementClass, flops, sfu, traits> {
  let arguments = (ins AnyRankedTensor:$input);
}

class Fusec_BinaryOp<string mnemonic, string elementClass, int flops, int sfu,
                     list<Trait> traits = []>
    : Fusec_ElementwiseOp<mnemonic, 2, elementClass, flops, sfu, traits> {
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
}


def Fusec_ExpOp : Fusec_UnaryOp<"exp", FloatOnly, 1, 1> {
  let summary = "elementwise e^x";
  let description = [{
    Costs one FLOP (the log2(e) prescale) and one SFU `ex2` per element.

    ```mlir
    %y = fusec.exp %x : tensor<128x64xf32>
    ```
  }];
}
def Fusec_Exp2Op : Fusec_UnaryOp<"exp2", FloatOnly, 0, 1> {
  let summary = "elementwise 2^x";
  let description = [{
    One SFU `ex2` per element.

    ```mlir
    %y = fusec.exp2 %x : tensor<64xf32>
    ```
  }];
}
def Fusec_LogOp : Fusec_UnaryOp<"log", FloatOnly, 1, 1> {
  let summary = "elementwise natural logarithm";
  let description = [{
    One SFU `lg2` and one FLOP (the ln(2) scale) per element.

    ```mlir
    %y = fusec.log %x : tensor<64xf32>
    ```
  }];
}
def Fusec_TanhOp : Fusec_UnaryOp<"tanh", FloatOnly, 4, 2> {
  let summary = "elementwise hyperbolic tangent";
  let description = [{
    Generated as 1 - 2 / (e^(2x) + 1), exact at both limits: one SFU `ex2`,
    one SFU `rcp` and four FLOPs per element.

    ```mlir
    %y = fusec.tanh %x : tensor<64xf32>
    ```
  }];
}
def Fusec_SinOp : Fusec_UnaryOp<"sin", FloatOnly, 4, 1> {
  let summary = "elementwise sine";
  let description = [{
    The argument is reduced to [-pi, pi] (x - k·2pi, with 2pi split in two
    constants so that k·2pi is exact for |k| < 2^16), then one SFU `sin`
    (absolute error about 2^-20.9 there). Rotary position embeddings
    compute it.

    ```mlir
    %y = fusec.sin %x : tensor<64xf32>
    ```
  }];
}
def Fusec_CosOp : Fusec_UnaryOp<"cos", FloatOnly, 4, 1> {
  let summary = "elementwise cosine";
  let description = [{
    Reduced like `fusec.sin`, then one SFU `cos`.

    ```mlir
    %y = fusec.cos %x : tensor<64xf32>
    ```
  }];
}
def Fusec_ErfOp : Fusec_UnaryOp<"erf", FloatOnly, 14, 2> {
  let summary = "elementwise error function";
  let description = [{
    Generated as Abramowitz and Stegun's 7.1.26 (absolute error 1.5e-7): a
    degree-5 polynomial in t = 1 / (1 + p |x|) times e^(-x^2): one SFU
    `rcp`, one SFU `ex2` and fourteen FLOPs per element.

    ```mlir
    %y = fusec.erf %x : tensor<64xf32>
    ```
  }];
}
def Fusec_SigmoidOp : Fusec_UnaryOp<"sigmoid", FloatOnly, 3, 2> {
  let summary = "elementwise logistic function 1 / (1 + e^-x)";
  let description = [{
    Three FLOPs, one SFU `ex2` and one SFU `rcp` per element.

    ```mlir
    %y = fusec.sigmoid %x : tensor<64xbf16>
    ```
  }];
}
def Fusec_RsqrtOp : Fusec_UnaryOp<"rsqrt", FloatOnly, 0, 1> {
  let summary = "elementwise 1 / sqrt(x)";
  let description = [{
    One SFU `rsqrt` per element.

    ```mlir
    %y = fusec.rsqrt %x : tensor<64xf32>
    ```
  }];
}
def Fusec_SqrtOp : Fusec_UnaryOp<"sqrt", FloatOnly, 0, 1> {
  let summary = "elementwise square root";
  let description = [{
    One SFU `sqrt` per element.

    ```mlir
    %y = fusec.sqrt %x : tensor<64xf32>
    ```
  }];
}
def Fusec_NegOp : Fusec_UnaryOp<"neg", Numeric, 1, 0> {
  let summary = "elementwise negation";
  let description = [{
    ```mlir
    %y = fusec.neg %x : tensor<64xf32>
    ```
  }];
  let hasFolder = 1;
}
def Fusec_AbsOp : Fusec_UnaryOp<"abs", Numeric, 1, 0> {
  let summary = "elementwise absolute value";
  let description = [{
    ```mlir
    %y = fusec.abs %x : tensor<64xi32>
    ```
  }];
}
def Fusec_FloorOp : Fusec_UnaryOp<"floor", FloatOnly, 1, 0> {
  let summary = "elementwise round toward negative infinity";
  let description = [{
    ```mlir
    %y = fusec.floor %x : tensor<64xf32>
    ```
  }];
}
def Fusec_CeilOp : Fusec_UnaryOp<"ceil", FloatOnly, 1, 0> {
  let summary = "elementwise round toward positive infinity";
  let description = [{
    ```mlir
    %y = fusec.ceil %x : tensor<64xf32>
    ```
  }];
}
def Fusec_RoundOp : Fusec_UnaryOp<"round", FloatOnly, 1, 0> {
  let summary = "elementwise round to the nearest integer, halves to even";
  let description = [{
    ONNX's `Round` and the rounding step of `QuantizeLinear` (IEEE
    roundTiesToEven: 2.5 -> 2, 3.5 -> 4, -0.5 -> -0).

    ```mlir
    %y = fusec.round %x : tensor<64xf32>
    ```
  }];
}
def Fusec_SignOp : Fusec_UnaryOp<"sign", Numeric, 1, 0> {
  let summary = "elementwise sign: -1, 0 or 1";
  let description = [{
    ```mlir
    %y = fusec.sign %x : tensor<64xf32>
    ```
  }];
}
def Fusec_NotOp : Fusec_UnaryOp<"not", Logical, 0, 0> {
  let summary = "elementwise logical not";
  let description = [{
    ```mlir
    %y = fusec.not %m : tensor<64xi1>
    ```
  }];
  let hasFolder = 1;
}

def Fusec_AddOp : Fusec_BinaryOp<"add", Numeric, 1, 0, [Commutative]> {
  let summary = "elementwise addition";
  let description = [{
    One FLOP per element: an f32 add of N elements is N FLOPs and 12·N bytes.

    ```mlir
    %c = fusec.add %a, %b : tensor<1024xf32>
    ```
  }];
  let hasFolder = 1;
}
def Fusec_SubOp : Fusec_BinaryOp<"sub", Numeric, 1, 0> {
  let summary = "elementwise subtraction";
  let description = [{
    ```mlir
    %c = fusec.sub %a, %b : tensor<1024xf32>
    ```
  }];
  let hasFolder = 1;
}
def Fusec_MulOp : Fusec_BinaryOp<"mul", Numeric, 1, 0, [Commutative]> {
  let summary = "elementwise multiplication";
  let description = [{
    ```mlir
    %c = fusec.mul %a, %b : tensor<1024xf32>
    ```
  }];
  let hasFolder = 1;
}
def Fusec_DivOp : Fusec_BinaryOp<"div", Numeric, 1, 1> {
  let summary = "elementwise division";
  let description = [{
    One FLOP and one SFU `rcp` per element. Integer division truncates toward
    zero.

    ```mlir
    %c = fusec.div %a, %b : tensor<1024xf32>
    ```
  }];
  let hasFolder = 1;
}
def Fusec_MaxOp : Fusec_BinaryOp<"max", Numeric, 1, 0, [Commutative]> {
  let summary = "elementwise maximum";
  let description = [{
    ```mlir
    %c = fusec.max %a, %b : tensor<1024xf32>
    ```
  }];
}
def Fusec_MinOp : Fusec_BinaryOp<"min", Numeric, 1, 0, [Commutative]> {
  let summary = "elementwise minimum";
  let description = [{
    ```mlir
    %c = fusec.min %a, %b : tensor<1024xf32>
    ```
  }];
}
def Fusec_PowOp : Fusec_BinaryOp<"pow", Numeric, 1, 2> {
  let summary = "elementwise power x^y";
  let description = [{
    Floats: computed as 2^(y·log2 x), one FLOP, one SFU `lg2` and one `ex2`
    (a negative base gives NaN, as `powf` does for a non-integer y).
    Integers: exact, by square-and-multiply over every bit of y, wrapping on
    overflow; a negative y gives 1/x^-y truncated toward zero (0 unless
    |x| = 1).

    ```mlir
    %c = fusec.pow %x, %y : tensor<1024xf32>
    ```
  }];
}
def Fusec_AndOp : Fusec_BinaryOp<"and", Logical, 0, 0, [Commutative]> {
  let summary = "elementwise logical and";
  let description = [{
    ```mlir
    %c = fusec.and %a, %b : tensor<64xi1>
    ```
  }];
}
def Fusec_OrOp : Fusec_BinaryOp<"or", Logical, 0, 0, [Commutative]> {
  let summary = "elementwise logical or";
  let description = [{
    ```mlir
    %c = fusec.or %a, %b : tensor<64xi1>
    ```
  }];
}

def Fusec_CompareOp : Fusec_BinaryOp<"compare", Numeric, 1, 0> {
  let summary = "elementwise comparison producing i1";
  let description = [{
    Compares two tensors of one type element by element with the predicate
    `eq`, `ne`, `lt`, `le`, `gt` or `ge`; the result has the operands' shape
    and element type `i1`. Comparisons with NaN are false except `ne`.

    ```mlir
    %m = fusec.compare lt, %a, %b : tensor<64xf32>
    ```
  }];
  let arguments = (ins Fusec_ComparePredicate:$predicate,
                       AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let kindExpr = "::fusec::ElementwiseKind::Compare";
}

def Fusec_SelectOp : Fusec_ElementwiseOp<"select", 3, Numeric, 1, 0> {
  let summary = "elementwise choice: cond ? on_true : on_false";
  let description = [{
    The condition is an `i1` tensor of the values' shape; the short form
    writes only the values' type.

    ```mlir
    %r = fusec.select %m, %a, %b : tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$condition, AnyRankedTensor:$on_true,
                       AnyRankedTensor:$on_false);
  let kindExpr = "::fusec::ElementwiseKind::Select";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

class Fusec_CostedOp<string mnemonic, list<Trait> traits = []>
    : Fusec_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Fusec_CostOpInterface>])> {
  let hasVerifier = 1;
}

def Fusec_CastOp : Fusec_CostedOp<"cast"> {
  let summary = "convert the element type";
  let description = [{
    Converts each element to the result's element type. Float narrowing rounds
    to nearest even; to fp8 it saturates to the largest finite value (PTX
    `cvt.rn.satfinite`). Float to integer truncates toward zero. The shape does
    not change.

    ```mlir
    %h = fusec.cast %x : tensor<64xf32> to tensor<64xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def Fusec_ConstantOp : Fusec_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>,
    DeclareOpInterfaceMethods<Fusec_CostOpInterface>]> {
  let summary = "a constant tensor";
  let description = [{
    A splat constant costs nothing; a dense one is read by its consumers.

    ```mlir
    %half = fusec.constant dense<0.5> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Fusec_BroadcastOp : Fusec_CostedOp<"broadcast"> {
  let summary = "broadcast a tensor to a larger shape";
  let description = [{
    Operand dimension `i` becomes result dimension `dims[i]`; `dims` is
    strictly increasing, and each operand dimension either equals its result
    dimension or is 1. Result dimensions not named in `dims` are new.

    ```mlir
    %b = fusec.broadcast %bias dims [1] : tensor<8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$input `dims` $dims attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Fusec_ReshapeOp : Fusec_CostedOp<"reshape"> {
  let summary = "reinterpret a tensor with a new shape";
  let description = [{
    Row-major reinterpretation; the element count must not change. A reshape
    moves no data and costs nothing.

    ```mlir
    %r = fusec.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Fusec_TransposeOp : Fusec_CostedOp<"transpose"> {
  let summary = "permute the dimensions of a tensor";
  let description = [{
    Result dimension `i` is operand dimension `permutation[i]`.

    ```mlir
    %t = fusec.transpose %x perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `perm` $permutation attr-dict `:` type($input) "
                       "`->` type($result)";
  let hasFolder = 1;
}

def Fusec_SliceOp : Fusec_CostedOp<"slice"> {
  let summary = "a strided window of a tensor";
  let description = [{
    Result element `i` is operand element `offsets + i * strides`; the result
    type gives the sizes. Every index read must be in bounds.

    ```mlir
    %s = fusec.slice %x offsets [0, 4] strides [1, 1]
           : tensor<4x8xf32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$strides);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `offsets` $offsets `strides` $strides attr-dict "
                       "`:` type($input) `->` type($result)";
}

def Fusec_ConcatOp : Fusec_CostedOp<"concat"> {
  let summary = "join tensors along one dimension";
  let description = [{
    ```mlir
    %c = fusec.concat %a, %b dim 1
           : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$inputs `dim` $dim attr-dict `:` "
                       "functional-type($inputs, $result)";
}

def Fusec_GatherOp : Fusec_CostedOp<"gather"> {
  let summary = "take slices of a table at integer indices (embeddings)";
  let description = [{
    As ONNX Gather: the result shape is `table.shape[:axis] ++ indices.shape
    ++ table.shape[axis+1:]`. Indices are i32 or i64 and may be negative
    (counted from the end); an index out of range is an error at run time.
    Only the gathered slices are counted as read.

    ```mlir
    %e = fusec.gather %table[%ids] axis 0
           : (tensor<50304x1024xbf16>, tensor<8x128xi32>) -> tensor<8x128x1024xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$table, AnyRankedTensor:$indices,
                       I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$table `[` $indices `]` `axis` $axis attr-dict `:` "
                       "`(` type($table) `,` type($indices) `)` `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Reductions, matmul, attention
//===----------------------------------------------------------------------===//

def Fusec_ReduceOp : Fusec_CostedOp<"reduce"> {
  let summary = "reduce over some dimensions with sum, max, min or mean";
  let description = [{
    The reduced dimensions are removed from the result. Accumulation is in at
    least f32 whatever the storage type.

    ```mlir
    %s = fusec.reduce sum %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Fusec_ReduceKind:$kind, AnyRankedTensor:$input,
                       DenseI64ArrayAttr:$dims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$kind $input `dims` $dims attr-dict `:` type($input) "
                       "`->` type($result)";
}

def Fusec_MatmulOp : Fusec_CostedOp<"matmul"> {
  let summary = "batched matrix product";
  let description = [{
    `lhs` is `[batch..., M, K]` (`[batch..., K, M]` with `transpose_lhs`),
    `rhs` is `[batch..., K, N]` (`[batch..., N, K]` with `transpose_rhs`) or a
    rank-2 matrix shared by every batch. Both operands have one element type;
    the result may be wider (bf16 operands, f32 result). Costs 2·M·N·K FLOPs
    per batch.

    ```mlir
    %y = fusec.matmul %x, %w {transpose_rhs}
           : (tensor<8x128x1024xbf16>, tensor<3072x1024xbf16>) -> tensor<8x128x3072xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` "
                       "`(` type($lhs) `,` type($rhs) `)` `->` type($result)";
}

def Fusec_AttentionOp : Fusec_CostedOp<"attention"> {
  let summary = "scaled dot-product attention softmax(Q·Kᵀ·scale)·V";
  let description = [{
    `query` is `[B, Hq, Sq, D]`, `key` `[B, Hkv, Skv, D]`, `value`
    `[B, Hkv, Skv, Dv]`; `Hkv` divides `Hq` (grouped-query attention). With
    `causal`, query row `i` sees key columns `j <= i + Skv - Sq`. An
    optional `mask` `[B, Skv]` of `i1` (a key padding mask) hides the keys
    where it is false from every query of that batch. A query row that sees
    no key is zero. Costs 4·B·Hq·Sq·Skv·D FLOPs (half when causal) and one
    `exp` per score.

    Any operand may be held in another layout whose head dim is last
    (`(B, S, H, D)` as a model's projections write it): `query_perm`,
    `key_perm` and `value_perm` say that the operand is read as
    `fusec.transpose` of it by that permutation, and `result_perm` that the
    result is stored as `fusec.transpose` of `[B, Hq, Sq, D]` by it. Each
    permutes `[0, 1, 2]` and keeps `3` last. The attention intrinsic reads and
    writes such operands in place (`fusec-fuse` folds the transposes around
    an attention into these attributes), so no transpose kernel runs.

    ```mlir
    %o = fusec.attention %q, %k, %v {scale = 0.088388 : f64, causal}
           : (tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16>,
              tensor<1x8x128x128xbf16>) -> tensor<1x8x128x128xbf16>
    %p = fusec.attention %q, %k, %v mask %m : tensor<1x128xi1> {scale = 0.088388 : f64}
           : (tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16>,
              tensor<1x8x128x128xbf16>) -> tensor<1x8x128x128xbf16>
    // Q, K, V and O as [B, S, H, D]:
    %r = fusec.attention %qs, %ks, %vs {scale = 0.088388 : f64,
           query_perm = array<i64: 0, 2, 1, 3>, key_perm = array<i64: 0, 2, 1, 3>,
           value_perm = array<i64: 0, 2, 1, 3>, result_perm = array<i64: 0, 2, 1, 3>}
           : (tensor<1x128x8x128xbf16>, tensor<1x128x8x128xbf16>,
              tensor<1x128x8x128xbf16>) -> tensor<1x128x8x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                       AnyRankedTensor:$value, Optional<AnyRankedTensor>:$key_mask,
                       F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<DenseI64ArrayAttr>:$query_perm,
                       OptionalAttr<DenseI64ArrayAttr>:$key_perm,
                       OptionalAttr<DenseI64ArrayAttr>:$value_perm,
                       OptionalAttr<DenseI64ArrayAttr>:$result_perm);
  let extraClassDeclaration = [{
    /// Operand `i`'s (0 query, 1 key, 2 value, 3 the result) permutation:
    /// its attribute, or the identity.
    ::llvm::SmallVector<int64_t, 4> layoutPerm(unsigned i);
    /// Operand `i`'s [B, H, S, D] shape, its type's dims read through its
    /// permutation.
    ::llvm::SmallVector<int64_t, 4> logicalShape(unsigned i);
    /// Operand `i`'s element strides in [B, H, S, D] order, as its
    /// contiguous type lays it out.
    ::llvm::SmallVector<int64_t, 4> logicalStrides(unsigned i);
  }];
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value "
                       "(`mask` $key_mask^ `:` type($key_mask))? attr-dict `:` "
                       "`(` type($query) `,` type($key) `,` type($value) `)` "
                       "`->` type($result)";
}

def Fusec_ConvOp : Fusec_CostedOp<"conv"> {
  let summary = "N-d convolution (or its transpose) over [N, C, spatial...]";
  let description = [{
    `input` is `[N, C, d1, ..., dn]`. Without `transposed`, `filter` is
    `[K, C/groups, k1, ..., kn]` and result element `[n, k, o...]` is the
    sum over the channels `c` of `k`'s group and the taps `t` of
    `input[n, c, o·stride - pad_low + t·dilation] · filter[k, c, t]`; taps
    that fall outside the input read zero. Each output size is
    `floor((d + pad_low + pad_high - dilation·(k - 1) - 1) / stride) + 1`.

    With `transposed` (ONNX ConvTranspose, the gradient of a convolution),
    `filter` is `[C, K/groups, k1, ..., kn]` and each input element is
    scattered: it adds `input[n, c, i] · filter[c, k, t]` to the result at
    `i·stride - pad_low + t·dilation`. Each output size is
    `(d - 1)·stride - pad_low - pad_high + dilation·(k - 1) + 1 + extra`,
    with the `extra` (ONNX's output_padding) in `[0, max(stride, dilation))`
    read from the result type.

    `strides`, `dilations`, `pad_low` and `pad_high` hold one value per
    spatial dim; empty means 1 (strides, dilations) or 0 (pads). `groups`
    divides C and K. The result may have a wider float type than the
    operands. Costs 2 FLOPs per multiply-add: `2·N·K·prod(out)·(C/groups)·
    prod(k)`, transposed `2·N·C·prod(in)·(K/groups)·prod(k)`.

    ```mlir
    %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>,
                            pad_high = array<i64: 1, 1>}
           : (tensor<32x64x56x56xf16>, tensor<128x64x3x3xf16>) -> tensor<32x128x28x28xf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$filter,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dilations,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$pad_low,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$pad_high,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       UnitAttr:$transposed);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $filter attr-dict `:` "
                       "`(` type($input) `,` type($filter) `)` `->` type($result)";
}

def Fusec_PoolOp : Fusec_CostedOp<"pool"> {
  let summary = "max or average pooling over [N, C, spatial...]";
  let description = [{
    Result element `[n, c, o...]` is the max (`max`) or the average
    (`mean`) of `input[n, c, o·stride - pad_low + t·dilation]` over the
    window's taps `t` (`kernel` per spatial dim). Taps outside the input
    are padding: `max` ignores them; `mean` divides the sum of the taps
    inside the input by their count, or with `count_include_pad` by the
    count of taps inside the padded extent `[-pad_low, d + pad_high)`. A
    window with no tap inside the input (dilation can leave such windows
    between the input's elements and the padding) has the mean 0 when the
    padding is not counted, and the max `-inf`.
    Each output size is `floor` or `ceil` (ONNX's `ceil_mode`) of
    `(d + pad_low + pad_high - dilation·(k - 1) - 1) / stride`, plus 1,
    read from the result type; in ceil mode a last window that would
    start in the high padding is dropped. `strides`, `dilations` and the
    pads are empty (1 and 0) or one value per spatial dim.

    ```mlir
    %p = fusec.pool max %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                            pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>}
           : tensor<32x64x112x112xf16> -> tensor<32x64x56x56xf16>
    ```
  }];
  let arguments = (ins Fusec_ReduceKind:$kind, AnyRankedTensor:$input,
                       DenseI64ArrayAttr:$kernel,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dilations,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$pad_low,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$pad_high,
                       UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Composite ops (decomposed by fusec-decompose)
//===----------------------------------------------------------------------===//

def Fusec_LayerNormOp : Fusec_CostedOp<"layer_norm"> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, with mean and (biased)
    variance over the last dimension; `scale` and `bias` are 1-D of that size.

    ```mlir
    %y = fusec.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64}
           : (tensor<16x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>) -> tensor<16x1024xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       AnyRankedTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $scale `,` $bias attr-dict `:` "
                       "`(` type($input) `,` type($scale) `,` type($bias) `)` "
                       "`->` type($result)";
}

def Fusec_RMSNormOp : Fusec_CostedOp<"rms_norm"> {
  let summary = "RMS normalization over the last dimension";
  let description = [{
    `x / sqrt(mean(x²) + epsilon) * scale`, `scale` 1-D of the last dimension.

    ```mlir
    %y = fusec.rms_norm %x, %g {epsilon = 1.0e-06 : f64}
           : (tensor<16x1024xbf16>, tensor<1024xbf16>) -> tensor<16x1024xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       DefaultValuedAttr<F64Attr, "1e-6">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $scale attr-dict `:` "
                       "`(` type($input) `,` type($scale) `)` `->` type($result)";
}

def Fusec_SoftmaxOp : Fusec_CostedOp<"softmax"> {
  let summary = "softmax along one dimension";
  let description = [{
    `exp(x - max(x)) / sum(exp(x - max(x)))` along `dim`.

    ```mlir
    %p = fusec.softmax %x dim 1 : tensor<16x1024xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict "
                       "custom<UnaryTypes>(type($input), type($result))";
}

def Fusec_GeluOp : Fusec_CostedOp<"gelu"> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `0.5·x·(1 + erf(x/√2))`, or with `tanh` the approximation
    `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.

    ```mlir
    %y = fusec.gelu %x {tanh} : tensor<1024xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, UnitAttr:$tanh);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict "
                       "custom<UnaryTypes>(type($input), type($result))";
}

def Fusec_SiluOp : Fusec_CostedOp<"silu"> {
  let summary = "sigmoid linear unit x·sigmoid(x)";
  let description = [{
    ```mlir
    %y = fusec.silu %x : tensor<1024xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict "
                       "custom<UnaryTypes>(type($input), type($result))";
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def Fusec_KernelOp : Fusec_Op<"kernel", [IsolatedFromAbove, SingleBlock,
    RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<Fusec_CostOpInterface>]> {
  let summary = "a region that runs as one GPU kernel";
  let description = [{
    The body's values stay on chip; only the operands (bound to the entry
    block's arguments) and the results (yielded by `fusec.yield`) touch device
    memory. Its cost is the FLOPs and SFU ops of its body, and only the bytes
    of its operands and results.

    ```mlir
    %r = fusec.kernel "add_mul" (%a, %b) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%x: tensor<64xf32>, %y: tensor<64xf32>):
      %s = fusec.add %x, %y : tensor<64xf32>
      %m = fusec.mul %s, %y : tensor<64xf32>
      fusec.yield %m : tensor<64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       OptionalAttr<StrAttr>:$name);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "($name^)? `(` $inputs `)` attr-dict `:` "
                       "functional-type($inputs, $results) $body";
  let hasVerifier = 1;
}

def Fusec_YieldOp : Fusec_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"KernelOp">]> {
  let summary = "the results of a fusec.kernel";
  let description = [{
    ```mlir
    fusec.yield %m : tensor<64xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // FUSEC_IR_FUSECOPS_TD
