// RUN: fusec-opt %s --fusec-lower-precision="policy=bf16 max-rel-error=0.05" 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// A tight budget is refused op by op, saying which and why:
// RUN: fusec-opt %s --fusec-lower-precision="policy=bf16 max-rel-error=0.01" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIGHT
// RUN: fusec-opt %s --fusec-lower-precision="policy=fp8e4m3 max-rel-error=0.5 input-magnitude=0.5" 2>/dev/null | FileCheck %s --check-prefix=FP8
// An op computing in the narrow type rounds its f32 operands on the way in:
// they must fit it too (a 256-term matmul of inputs up to 8 reaches 16384,
// past fp8e4m3's 448):
// RUN: fusec-opt %s --fusec-lower-precision="policy=fp8e4m3 max-rel-error=0.5" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FP8WIDE
// FP8WIDE: remark: kept f32: computing the result of fusec.tanh in fp8e4m3 would round its operand, the result of fusec.add, which may reach |x| <= 1.64e+04 (inputs up to 8), beyond half of fp8e4m3's largest finite value 448
// RUN: not fusec-opt %s --fusec-lower-precision=policy=fp4 2>&1 | FileCheck %s --check-prefix=BAD
// Range: fp16 is refused where a value may overflow it.
// RUN: fusec-opt %s --fusec-lower-precision="policy=fp16 input-magnitude=32" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: remark: kept f32: the result of fusec.reduce may reach |x| <= 1.31e+05 (inputs up to 32), beyond half of fp16's largest finite value 65504
// The interpreter confirms each estimated bound on random inputs:
// RUN: fusec-run --verify-pipeline="fusec-lower-precision{policy=bf16 max-rel-error=0.05}" --function=mlp %s 2>/dev/null | FileCheck %s --check-prefix=BOUND
// RUN: fusec-run --verify-pipeline="fusec-lower-precision{policy=fp16 max-rel-error=0.01}" --function=mlp %s 2>/dev/null | FileCheck %s --check-prefix=BOUND
// RUN: fusec-run --verify-pipeline="fusec-lower-precision{policy=fp8e4m3 max-rel-error=0.5}" --function=mlp %s 2>/dev/null | FileCheck %s --check-prefix=BOUND
// RUN: fusec-run --verify-pipeline="fusec-lower-precision{policy=bf16 max-rel-error=0.05}" --function=norm %s 2>/dev/null | FileCheck %s --check-prefix=BOUND
// RUN: fusec-run --verify-pipeline="fusec-decompose,fusec-lower-precision{policy=bf16 max-rel-error=0.05},fusec-fuse" %fusec_src/test/lit/Passes/Inputs/composites.mlir 2>/dev/null | FileCheck %s --check-prefix=BOUND
// RUN: fusec-run --verify-pipeline="fusec-lower-precision{policy=fp16 input-magnitude=32}" --function=softmax_shift %s 2>/dev/null | FileCheck %s --check-prefix=BOUND
// Softmax's shift x - max(x) is never above 0: its exponential is at most
// 1 (not e^64 for inputs up to 32) and fits fp16, and so does the quotient
// by the sum of those exponentials, which is at least 1.
// RUN: fusec-opt %s --fusec-lower-precision="policy=fp16 input-magnitude=32" 2>/dev/null | FileCheck %s --check-prefix=SHIFT
// SHIFT-LABEL: func.func @softmax_shift
// SHIFT: fusec.exp {{.*}} : tensor<4x64xf16>
// SHIFT: fusec.div {{.*}} : tensor<4x64xf16>
// BOUND-NOT: MISMATCH
// BOUND: PASS

// Intermediates move to bf16; the signature stays (an f32 argument is
// rounded where a bf16 op reads it, a returned value keeps its type); the
// matmul accumulates in f32 whatever it stores; the bound is recorded for
// the tests above.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%{{.*}}: tensor<64x256xf32>, %{{.*}}: tensor<256x256xf32>, %{{.*}}: tensor<256xf32>) -> tensor<64x256xf32>
// CHECK-SAME: fusec.error_bound = [{{[0-9.e+-]+}}]
// CHECK: fusec.matmul {{.*}} : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xbf16>
// CHECK: fusec.cast {{.*}} to tensor<64x256xbf16>
// CHECK: fusec.add {{.*}} : tensor<64x256xbf16>
// CHECK: fusec.add {{.*}} : tensor<64x256xf32>
// CHECK: return {{.*}} : tensor<64x256xf32>
// REMARK: remark: lowered storage to bf16: {{[0-9]+}} -> {{[0-9]+}} bytes of tensors ({{[1-9][0-9]*}} saved)
// TIGHT: remark: kept f32: storing {{.*}} in bf16 would raise the error bound of result #0 to {{[0-9.]+}}, over the budget of 0.01
// FP8-LABEL: func.func @mlp
// FP8: fusec.tanh {{.*}} : tensor<64x256xf8E4M3FN>
// BAD: policy 'fp4' is not bf16, fp16 or fp8e4m3
func.func @mlp(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>, %b: tensor<256xf32>) -> tensor<64x256xf32> {
  %0 = fusec.matmul %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %bb = fusec.broadcast %b dims [1] : tensor<256xf32> -> tensor<64x256xf32>
  %1 = fusec.add %0, %bb : tensor<64x256xf32>
  %2 = fusec.tanh %1 : tensor<64x256xf32>
  %3 = fusec.add %2, %x : tensor<64x256xf32>
  return %3 : tensor<64x256xf32>
}

// A reduction keeps accumulating in f32: its input is cast up where it is
// not lowered, and mixed operands meet in one type.
// CHECK-LABEL: func.func @norm
// CHECK: fusec.reduce sum
func.func @norm(%x: tensor<32x128xf32>) -> tensor<32x128xf32> {
  %sq = fusec.mul %x, %x : tensor<32x128xf32>
  %s = fusec.reduce sum %sq dims [1] : tensor<32x128xf32> -> tensor<32xf32>
  %r = fusec.rsqrt %s : tensor<32xf32>
  %rb = fusec.broadcast %r dims [0] : tensor<32xf32> -> tensor<32x128xf32>
  %y = fusec.mul %x, %rb : tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}

func.func @softmax_shift(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %m = fusec.reduce max %x dims [1] : tensor<4x64xf32> -> tensor<4xf32>
  %mb = fusec.broadcast %m dims [0] : tensor<4xf32> -> tensor<4x64xf32>
  %d = fusec.sub %x, %mb : tensor<4x64xf32>
  %e = fusec.exp %d : tensor<4x64xf32>
  %s = fusec.reduce sum %e dims [1] : tensor<4x64xf32> -> tensor<4xf32>
  %sb = fusec.broadcast %s dims [0] : tensor<4xf32> -> tensor<4x64xf32>
  %p = fusec.div %e, %sb : tensor<4x64xf32>
  %t = fusec.tanh %p : tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}
