// layer_norm, rms_norm and softmax each become ONE kernel after decompose;
// the seeds' chain moves 36 bytes an element unfused and 12 fused; peak
// memory never goes above the unfused graph's.
// RUN: fusec-opt %s --fusec-decompose --fusec-fuse | FileCheck %s
// RUN: fusec-opt %s --fusec-decompose --fusec-fuse --fusec-roofline-report="format=json output=%t.json" -o /dev/null
// RUN: %python %S/Inputs/check_fusion.py %t.json | FileCheck %s --check-prefix=REPORT
// RUN: fusec-run --verify-pipeline=fusec-decompose,fusec-fuse --function=layer_norm %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-decompose,fusec-fuse --function=rms_norm %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-decompose,fusec-fuse --function=softmax %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-decompose,fusec-fuse --function=softmax_outer %s | FileCheck %s --check-prefix=SAME
// SAME: PASS

// REPORT: layer_norm: 1 kernel
// REPORT: rms_norm: 1 kernel
// REPORT: softmax: 1 kernel
// REPORT: softmax_outer: 1 kernel
// REPORT: chain: 36 -> 12 bytes per element
// REPORT: peak memory: fused <= unfused in every function

// CHECK-LABEL: func.func @layer_norm
// CHECK: fusec.kernel
// CHECK-NOT: fusec.kernel
// CHECK-LABEL: func.func @rms_norm
// CHECK: fusec.kernel
// CHECK-NOT: fusec.kernel
// CHECK-LABEL: func.func @softmax
// CHECK: fusec.kernel
// CHECK-NOT: fusec.kernel
// CHECK-LABEL: func.func @softmax_outer
// CHECK: fusec.kernel
// CHECK-NOT: fusec.kernel
// CHECK-LABEL: func.func @chain

func.func @layer_norm(%x: tensor<64x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
  %0 = fusec.layer_norm %x, %g, %b : (tensor<64x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>) -> tensor<64x1024xbf16>
  return %0 : tensor<64x1024xbf16>
}

func.func @rms_norm(%x: tensor<64x1024xbf16>, %g: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
  %0 = fusec.rms_norm %x, %g : (tensor<64x1024xbf16>, tensor<1024xbf16>) -> tensor<64x1024xbf16>
  return %0 : tensor<64x1024xbf16>
}

func.func @softmax(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %0 = fusec.softmax %x dim 1 : tensor<64x1024xf32>
  return %0 : tensor<64x1024xf32>
}

func.func @softmax_outer(%x: tensor<33x70xf16>) -> tensor<33x70xf16> {
  %0 = fusec.softmax %x dim 0 : tensor<33x70xf16>
  return %0 : tensor<33x70xf16>
}

func.func @chain(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %0 = fusec.add %a, %b : tensor<1048576xf32>
  %1 = fusec.neg %0 : tensor<1048576xf32>
  %2 = fusec.abs %1 : tensor<1048576xf32>
  %3 = fusec.floor %2 : tensor<1048576xf32>
  return %3 : tensor<1048576xf32>
}
