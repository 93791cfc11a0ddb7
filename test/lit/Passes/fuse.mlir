// RUN: fusec-opt %s -split-input-file --fusec-fuse | FileCheck %s
// Every case keeps its meaning (the file is one module to fusec-run):
// RUN: fusec-run --verify-pipeline=fusec-fuse --function=chain %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-fuse --function=siblings %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-fuse --function=epilogue %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-fuse --function=two_matmuls %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-fuse --function=different_reductions %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-fuse --function=no_cycle %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-fuse --function=attention %s | FileCheck %s --check-prefix=SAME
// SAME: PASS: fusec-fuse keeps the graph's meaning

// The seeds' chain: four elementwise ops become one kernel.
// CHECK-LABEL: func.func @chain
// CHECK: %[[K:.*]] = fusec.kernel "k0_add_floor"(%arg0, %arg1)
// CHECK-COUNT-4: fusec.{{add|neg|abs|floor}}
// CHECK: fusec.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
func.func @chain(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = fusec.add %a, %b : tensor<1024xf32>
  %1 = fusec.neg %0 : tensor<1024xf32>
  %2 = fusec.abs %1 : tensor<1024xf32>
  %3 = fusec.floor %2 : tensor<1024xf32>
  return %3 : tensor<1024xf32>
}

// -----

// Horizontal: two kernels reading the same input become one with two results.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[K:.*]]:2 = fusec.kernel "{{.*}}"(%arg0)
// CHECK-NOT: fusec.kernel
// CHECK: return %[[K]]#{{[01]}}, %[[K]]#{{[01]}}
func.func @siblings(%x: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %0 = fusec.exp %x : tensor<4096xf32>
  %1 = fusec.tanh %x : tensor<4096xf32>
  return %0, %1 : tensor<4096xf32>, tensor<4096xf32>
}

// -----

// A matmul takes its elementwise epilogue (bias, gelu, residual) and is
// marked for the tensor-core code generator; its operands are never fused in.
// CHECK-LABEL: func.func @epilogue
// CHECK: fusec.kernel "{{.*}}"(%arg0)
// CHECK: fusec.exp
// CHECK: %[[M:.*]] = fusec.kernel "{{.*}}matmul{{.*}}"({{.*}}) {fusec.matmul_epilogue}
// CHECK: fusec.matmul
// CHECK: fusec.broadcast
// CHECK: fusec.add
// CHECK: fusec.tanh
// CHECK: fusec.add
// CHECK: return %[[M]]
func.func @epilogue(%x: tensor<64x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>, %r: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %e = fusec.exp %x : tensor<64x128xf32>
  %0 = fusec.matmul %e, %w : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
  %bb = fusec.broadcast %b dims [1] : tensor<256xf32> -> tensor<64x256xf32>
  %1 = fusec.add %0, %bb : tensor<64x256xf32>
  %2 = fusec.tanh %1 : tensor<64x256xf32>
  %3 = fusec.add %2, %r : tensor<64x256xf32>
  return %3 : tensor<64x256xf32>
}

// -----

// Two matmuls never share a kernel.
// CHECK-LABEL: func.func @two_matmuls
// CHECK-COUNT-2: fusec.kernel "{{.*}}matmul
func.func @two_matmuls(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = fusec.matmul %x, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = fusec.matmul %0, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}

// -----

// Reductions over different dimensions do not share a kernel.
// CHECK-LABEL: func.func @different_reductions
// CHECK: fusec.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fusec.reduce
// CHECK-NEXT: fusec.yield
// CHECK: fusec.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fusec.reduce
// CHECK-NEXT: fusec.yield
func.func @different_reductions(%x: tensor<32x64xf32>) -> (tensor<32xf32>, tensor<64xf32>) {
  %0 = fusec.reduce sum %x dims [1] : tensor<32x64xf32> -> tensor<32xf32>
  %1 = fusec.reduce sum %x dims [0] : tensor<32x64xf32> -> tensor<64xf32>
  return %0, %1 : tensor<32xf32>, tensor<64xf32>
}

// -----

// No cycles: exp and add cannot share a kernel, since the transpose between
// them is a kernel of its own.
// CHECK-LABEL: func.func @no_cycle
// CHECK: %[[E:.*]] = fusec.kernel "{{.*}}exp"(%arg0)
// CHECK: %[[T:.*]] = fusec.kernel "{{.*}}transpose"(%[[E]])
// CHECK: fusec.kernel "{{.*}}add"(%[[E]], %[[T]])
func.func @no_cycle(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %0 = fusec.exp %x : tensor<32x32xf32>
  %1 = fusec.transpose %0 perm [1, 0] : tensor<32x32xf32> -> tensor<32x32xf32>
  %2 = fusec.add %0, %1 : tensor<32x32xf32>
  return %2 : tensor<32x32xf32>
}

// -----

// Attention stays a top-level op (the runtime's library kernel).
// CHECK-LABEL: func.func @attention
// CHECK: fusec.attention
// CHECK-NOT: fusec.kernel
// CHECK: return
func.func @attention(%q: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %0 = fusec.attention %q, %q, %q {scale = 0.35 : f64} : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return %0 : tensor<1x2x16x8xf32>
}
