// fuzz_mlir under UBSan: tensors with an empty dim whose other dims' product
// passes int64 (valid: they have no elements). Code generation's strides
// overflowed; they wrap now (unsigned), as no element is indexed. The lit
// suite under the sanitizers (CI) runs it with UBSan. @column_block: with a
// leading 1 the middle-dim softmax becomes a column kernel whose rows x
// inner block passed int64 (fuzz_mlir in CI, 2026-12-05); it wraps too.
// @softmax_dim1: a softmax over dim 1 of such a tensor is a column kernel
// whose inner block (the dims after 1) passed int64 in the plan's analysis
// (fuzz_mlir, seed 5402, 2026-12-07); the plan's products saturate now.
// @empty_matmul: a matmul of such a tensor with itself (transposed lhs):
// the plan's view of an operand for TMA multiplied its dims into strides
// past int64 (seed 5403); an empty operand has no view now.
// RUN: fusec-compile %s --target=h200 --emit=ptx -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// CHECK: .visible .entry
func.func @decode_chain(%x: tensor<0x0x65536x65536x65536x8x65535xbf16>, %w1: tensor<65535x65535xbf16>, %w2: tensor<65535x65535xbf16>) -> (tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0xbf16>) {
  %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<65535x65535xbf16>) -> tensor<0x0x65536x65536x65536x8x65535xbf16>
  %b = fusec.matmul %a, %w2 {transpose_rhs} : (tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<65535x65535xbf16>) -> tensor<0x0x65536x65536x65536x8x65535xbf16>
  %c = fusec.add %b, %x : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut375715 = fusec.sigmoid %c : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut351232 = fusec.sigmoid %mut375715 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut840925 = fusec.reshape %mut351232 : tensor<0x0x65536x65536x65536x8x65535xbf16> -> tensor<0xbf16>
  %mut188979 = fusec.neg %mut351232 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut852094 = fusec.softmax %mut188979 dim 3 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut667452 = fusec.softmax %mut188979 dim 4 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut242355 = fusec.max %mut188979, %mut188979 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  return %mut242355, %mut667452, %mut852094, %mut840925 : tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0xbf16>
}
func.func @column_block(%x: tensor<1x0x0x65536x65536x65536x8x65535xbf16>) -> tensor<1x0x0x65536x65536x65536x8x65535xbf16> {
  %n = fusec.neg %x : tensor<1x0x0x65536x65536x65536x8x65535xbf16>
  %s = fusec.softmax %n dim 3 : tensor<1x0x0x65536x65536x65536x8x65535xbf16>
  return %s : tensor<1x0x0x65536x65536x65536x8x65535xbf16>
}
func.func @softmax_dim1(%x: tensor<0x0x65536x65536x65536x8x65535xbf16>) -> tensor<0x0x65536x65536x65536x8x65535xbf16> {
  %n = fusec.neg %x : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %s = fusec.softmax %n dim 1 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  return %s : tensor<0x0x65536x65536x65536x8x65535xbf16>
}
func.func @empty_matmul(%x: tensor<0x0x65535x65535x65535x8x65535xbf16>) -> tensor<0x0x65535x65535x65535x65535x65535xbf16> {
  %m = fusec.matmul %x, %x {transpose_lhs} : (tensor<0x0x65535x65535x65535x8x65535xbf16>, tensor<0x0x65535x65535x65535x8x65535xbf16>) -> tensor<0x0x65535x65535x65535x65535x65535xbf16>
  return %m : tensor<0x0x65535x65535x65535x65535x65535xbf16>
}
