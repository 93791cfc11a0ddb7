// An optimizer step reads four arguments and writes three results: one
// kernel. Fusion's peak-memory guard counts the arguments as live for the
// whole call (the caller holds them); when an argument counted only up to
// its last reader, the one kernel (all seven tensors at once) looked like
// it raised the peak over the op-by-op graph, and the step ran as two
// kernels, m' written and read back.
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s
// RUN: fusec-opt %s --fusec-fuse --fusec-roofline-report="format=json output=%t.json" -o /dev/null
// RUN: %python %S/Inputs/check_fusion.py %t.json | FileCheck %s --check-prefix=REPORT
// RUN: fusec-run --verify-pipeline=fusec-pipeline %s | FileCheck %s --check-prefix=SAME
// CHECK-LABEL: func.func @adam_step
// CHECK: fusec.kernel "{{.*}}"(%arg{{[0-3]}}, %arg{{[0-3]}}, %arg{{[0-3]}}, %arg{{[0-3]}})
// CHECK-SAME: -> (tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>)
// CHECK-NOT: fusec.kernel
// CHECK: return
// REPORT: peak memory: fused <= unfused in every function
// SAME: PASS

func.func @adam_step(%p: tensor<1000xf32>, %g: tensor<1000xf32>, %m: tensor<1000xf32>, %v: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>) {
  %b1 = fusec.constant dense<9.000000000e-01> : tensor<1000xf32>
  %b1c = fusec.constant dense<1.000000000e-01> : tensor<1000xf32>
  %b2 = fusec.constant dense<9.990000000e-01> : tensor<1000xf32>
  %b2c = fusec.constant dense<1.000000000e-03> : tensor<1000xf32>
  %lr = fusec.constant dense<1.000000000e-03> : tensor<1000xf32>
  %eps = fusec.constant dense<1.000000000e-08> : tensor<1000xf32>
  %bc1 = fusec.constant dense<1.000000000e-01> : tensor<1000xf32>
  %bc2 = fusec.constant dense<1.000000000e-03> : tensor<1000xf32>
  %m1 = fusec.mul %b1, %m : tensor<1000xf32>
  %g1 = fusec.mul %b1c, %g : tensor<1000xf32>
  %m2 = fusec.add %m1, %g1 : tensor<1000xf32>
  %va = fusec.abs %v : tensor<1000xf32>
  %v1 = fusec.mul %b2, %va : tensor<1000xf32>
  %gg = fusec.mul %g, %g : tensor<1000xf32>
  %g2 = fusec.mul %b2c, %gg : tensor<1000xf32>
  %v2 = fusec.add %v1, %g2 : tensor<1000xf32>
  %mh = fusec.div %m2, %bc1 : tensor<1000xf32>
  %vh = fusec.div %v2, %bc2 : tensor<1000xf32>
  %sq = fusec.sqrt %vh : tensor<1000xf32>
  %den = fusec.add %sq, %eps : tensor<1000xf32>
  %st = fusec.div %mh, %den : tensor<1000xf32>
  %up = fusec.mul %lr, %st : tensor<1000xf32>
  %p2 = fusec.sub %p, %up : tensor<1000xf32>
  return %p2, %m2, %v2 : tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>
}

