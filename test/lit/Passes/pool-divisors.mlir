// An average pool whose divisors differ (pads without count_include_pad:
// the border windows hold fewer inputs) takes one [out] vector of
// reciprocals a window dim whose counts differ, broadcast along that dim in
// the kernel, not a constant plane of every output position (issue #19:
// fuzz_onnx timed out building a plane of 63M divisors, one window walk
// each). The graph's meaning is checked before and after.
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline --function=avg %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline --function=big_uniform %s | FileCheck %s --check-prefix=SAME
// Divisors that differ along a dim of more than 2^24 positions: no vector
// is built (it would be 128 MB or more); the pool stays as it is and code
// generation refuses it cleanly.
// RUN: not fusec-compile %S/Inputs/pool-wide-varying.mlir --emit=ptx -o /dev/null 2>&1 | FileCheck %s --check-prefix=WIDE
// WIDE: no code generation yet for kernel(s) k0_pool

// CHECK-LABEL: func.func @avg
// CHECK-DAG: %[[H:.*]] = fusec.constant dense<"0x{{[0-9A-F]+}}"> : tensor<300xf32>
// CHECK-DAG: %[[W:.*]] = fusec.constant dense<"0x{{[0-9A-F]+}}"> : tensor<200xf32>
// CHECK: fusec.kernel "avg_pool"(%arg0, %[[H]], %[[W]])
// CHECK: fusec.broadcast {{.*}} dims [2] : tensor<300xf32> -> tensor<2x3x300x200xf32>
// CHECK: fusec.broadcast {{.*}} dims [3] : tensor<200xf32> -> tensor<2x3x300x200xf32>
// CHECK-NOT: tensor<300x200xf32>
func.func @avg(%x: tensor<2x3x300x200xf32>) -> tensor<2x3x300x200xf32> {
  %0 = fusec.pool mean %x {dilations = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pad_high = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<2x3x300x200xf32> -> tensor<2x3x300x200xf32>
  return %0 : tensor<2x3x300x200xf32>
}

// No padding: every window is whole, one splat divisor.
// CHECK-LABEL: func.func @big_uniform
// CHECK: fusec.kernel "avg_pool"(%arg0) {
// CHECK: fusec.constant dense<2.500000e-01> : tensor<1x2x50x60xf32>
func.func @big_uniform(%x: tensor<1x2x100x120xf32>) -> tensor<1x2x50x60xf32> {
  %0 = fusec.pool mean %x {dilations = array<i64: 1, 1>, kernel = array<i64: 2, 2>, pad_high = array<i64: 0, 0>, pad_low = array<i64: 0, 0>, strides = array<i64: 2, 2>} : tensor<1x2x100x120xf32> -> tensor<1x2x50x60xf32>
  return %0 : tensor<1x2x50x60xf32>
}

// SAME: PASS
