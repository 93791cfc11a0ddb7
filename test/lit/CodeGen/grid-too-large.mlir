// fuzz_mlir (2026-12-06, seed 5301, the convolution mutation): a grouped
// convolution of 51 groups over tensors of 2^57 elements becomes 156
// kernels whose grids no launch takes. Each was generated (8 s; 37 s under
// the sanitizers, a libFuzzer timeout) before the module's verifier
// rejected the first grid. Code generation now refuses such a grid before
// generating anything, at the op the kernel came from.
// RUN: not fusec-compile %s --emit=ptx -o /dev/null 2>&1 | FileCheck %s
// CHECK: grid-too-large.mlir:[[@LINE+10]]:16: error: fusec-codegen: the kernel's grid of {{[0-9]+}} CTAs is not in [1, 2^31 - 1], what a launch takes (its tensors are too large to run)
// CHECK-NOT: error:
func.func @grouped_conv_huge(%x: tensor<65535x65535x65535x8x256xf16>, %w1: tensor<256x256xf16>, %w2: tensor<256x256xf16>) -> (tensor<65535x65535x65535x8x256xf16>, tensor<65535x51x65536x4x128xf16>) {
  %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<65535x65535x65535x8x256xf16>, tensor<256x256xf16>) -> tensor<65535x65535x65535x8x256xf16>
  %b = fusec.matmul %a, %w2 {transpose_rhs} : (tensor<65535x65535x65535x8x256xf16>, tensor<256x256xf16>) -> tensor<65535x65535x65535x8x256xf16>
  %c = fusec.add %b, %x : tensor<65535x65535x65535x8x256xf16>
  %mut351232 = fusec.sigmoid %c : tensor<65535x65535x65535x8x256xf16>
  %mut188979 = fusec.tanh %mut351232 : tensor<65535x65535x65535x8x256xf16>
  %mut242355 = fusec.mul %mut188979, %mut188979 : tensor<65535x65535x65535x8x256xf16>
  %mut194806 = fusec.constant dense<0.25> : tensor<51x1285x2x1x1xf16>
  %mut380943 = fusec.conv %mut242355, %mut194806 {strides = array<i64: 1, 2, 2>, dilations = array<i64: 1, 2, 2>, pad_low = array<i64: 1, 0, 0>, pad_high = array<i64: 1, 0, 0>, groups = 51 : i64} : (tensor<65535x65535x65535x8x256xf16>, tensor<51x1285x2x1x1xf16>) -> tensor<65535x51x65536x4x128xf16>
  return %mut242355, %mut380943 : tensor<65535x65535x65535x8x256xf16>, tensor<65535x51x65536x4x128xf16>
}
