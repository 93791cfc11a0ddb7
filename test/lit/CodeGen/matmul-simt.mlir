// matmul_simt: a thread per output element, an f32 fma loop over K, the
// epilogue after it.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/matmul_bias.matmul_bias.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// CHECK-LABEL: llvm.func @matmul_bias(
// No vector lanes: one element a chunk.
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// The K loop carries the f32 accumulator.
// CHECK: ^[[K:bb[0-9]+]](%[[KI:.*]]: i64, %[[ACC:.*]]: f32):
// CHECK: llvm.icmp "ult" %[[KI]], %{{.*}} : i64
// CHECK: llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK: llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK: %[[FMA:.*]] = llvm.intr.fma(%{{.*}}, %{{.*}}, %[[ACC]]) : (f32, f32, f32) -> f32
// CHECK: llvm.br ^[[K]](%{{.*}}, %[[FMA]] : i64, f32)
// The bias after the loop.
// CHECK: llvm.fadd %[[ACC]], %{{.*}} : f32
func.func @matmul_bias(%a: tensor<33x40xf32>, %b: tensor<40x17xf32>, %c: tensor<17xf32>) -> tensor<33x17xf32> {
  %r = fusec.kernel "matmul_bias" (%a, %b, %c) : (tensor<33x40xf32>, tensor<40x17xf32>, tensor<17xf32>) -> tensor<33x17xf32> {
  ^bb0(%x: tensor<33x40xf32>, %y: tensor<40x17xf32>, %z: tensor<17xf32>):
    %0 = fusec.matmul %x, %y : (tensor<33x40xf32>, tensor<40x17xf32>) -> tensor<33x17xf32>
    %zb = fusec.broadcast %z dims [1] : tensor<17xf32> -> tensor<33x17xf32>
    %1 = fusec.add %0, %zb : tensor<33x17xf32>
    fusec.yield %1 : tensor<33x17xf32>
  }
  return %r : tensor<33x17xf32>
}
