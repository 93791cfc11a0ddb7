// A division by a row value is one reciprocal per row times each element
// (1.5 ulp), except where the quotient is rounded to an integer: there one
// ulp can cross a rounding boundary (DynamicQuantizeLinear's -2.5 /
// (5 / 255) = -127.5 rounded to -127 on the GPU, to even -128 by the
// definition), so each element is an IEEE division. The pipeline keeps both
// graphs' meaning on the interpreter.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline %s --function=dynamic_quantize | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline %s --function=scaled | FileCheck %s --check-prefix=SAME
// SAME: PASS: fusec-pipeline keeps the graph's meaning
//
// CHECK-LABEL: llvm.func @k0_reduce_round(
// CHECK-COUNT-8: llvm.fdiv %{{[0-9]+}}, %[[S:[0-9]+]] : f32
// CHECK-NOT: llvm.fmul %{{.*}}, %[[S]]
// CHECK-LABEL: llvm.func @k0_reduce_div(
// CHECK: %[[R:[0-9]+]] = llvm.fdiv %{{[0-9]+}}, %{{[0-9]+}} : f32
// CHECK-NOT: llvm.fdiv
// CHECK-COUNT-8: llvm.fmul %{{.*}}, %[[R]]
func.func @dynamic_quantize(%x: tensor<4x256xf32>) -> tensor<4x256xf32> {
  %m = fusec.reduce max %x dims [1] : tensor<4x256xf32> -> tensor<4xf32>
  %b = fusec.broadcast %m dims [0] : tensor<4xf32> -> tensor<4x256xf32>
  %q = fusec.div %x, %b : tensor<4x256xf32>
  %r = fusec.round %q : tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}
func.func @scaled(%x: tensor<4x256xf32>) -> tensor<4x256xf32> {
  %m = fusec.reduce max %x dims [1] : tensor<4x256xf32> -> tensor<4xf32>
  %b = fusec.broadcast %m dims [0] : tensor<4xf32> -> tensor<4x256xf32>
  %q = fusec.div %x, %b : tensor<4x256xf32>
  return %q : tensor<4x256xf32>
}
