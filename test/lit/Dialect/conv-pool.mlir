// fusec.conv and fusec.pool: syntax, verifier, cost and reference semantics.
// RUN: fusec-opt %s -split-input-file | fusec-opt -split-input-file | FileCheck %s --check-prefix=ROUND
// RUN: fusec-opt %s -split-input-file --fusec-cost-annotate | FileCheck %s --check-prefix=COST
// RUN: fusec-opt %S/Inputs/conv-pool-invalid.mlir -split-input-file -verify-diagnostics
// The values below are small enough to check by hand (constants in, exact out).
// RUN: fusec-run --reference %s --function=conv_exact | FileCheck %s --check-prefix=CONV
// RUN: fusec-run --reference %s --function=conv_transposed_exact | FileCheck %s --check-prefix=CONVT
// RUN: fusec-run --reference %s --function=pool_exact | FileCheck %s --check-prefix=POOL

// ROUND-LABEL: func.func @resnet_stem
// ROUND: fusec.conv %{{.*}}, %{{.*}} {pad_high = array<i64: 3, 3>, pad_low = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<2x3x32x32xf16>, tensor<8x3x7x7xf16>) -> tensor<2x8x16x16xf16>
// ROUND: fusec.pool max %{{.*}} {kernel = array<i64: 3, 3>, pad_high = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, strides = array<i64: 2, 2>} : tensor<2x8x16x16xf16> -> tensor<2x8x8x8xf16>
// 2·N·K·OH·OW·C·KH·KW = 2·2·8·16·16·3·7·7 FLOPs; the pool one per tap.
// COST-LABEL: func.func @resnet_stem
// COST: fusec.conv {{.*}}fusec.cost = {bytes_read = 14640 : i64, bytes_written = 8192 : i64, flops = 1204224 : i64, intensity = {{.*}}, sfu_ops = 0 : i64}
// COST: fusec.pool {{.*}}fusec.cost = {bytes_read = 8192 : i64, bytes_written = 2048 : i64, flops = 9216 : i64, intensity = {{.*}}, sfu_ops = 0 : i64}
func.func @resnet_stem(%x: tensor<2x3x32x32xf16>, %w: tensor<8x3x7x7xf16>) -> tensor<2x8x8x8xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, pad_low = array<i64: 3, 3>, pad_high = array<i64: 3, 3>}
         : (tensor<2x3x32x32xf16>, tensor<8x3x7x7xf16>) -> tensor<2x8x16x16xf16>
  %p = fusec.pool max %y {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>}
         : tensor<2x8x16x16xf16> -> tensor<2x8x8x8xf16>
  return %p : tensor<2x8x8x8xf16>
}

// -----

// Depthwise, dilated, 1-D and 3-D, and a transposed one with output padding.
// ROUND-LABEL: func.func @forms
// ROUND: groups = 4 : i64
// ROUND: dilations = array<i64: 2>
// ROUND: transposed
// COST-LABEL: func.func @forms
// 2·1·4·8·8·1·3·3 (a depthwise conv: one input channel a group)
// COST: fusec.conv {{.*}}flops = 4608 : i64
// 2·N·C·prod(in)·(K/groups)·prod(k) = 2·1·4·(4·4)·2·(3·3)
// COST: fusec.conv {{.*}}flops = 2304 : i64
func.func @forms(%x: tensor<1x4x8x8xf32>, %dw: tensor<4x1x3x3xf32>, %x1: tensor<2x3x20xf32>,
                 %w1: tensor<5x3x3xf32>, %x3: tensor<1x2x4x5x6xf32>, %w3: tensor<3x2x2x2x2xf32>,
                 %xt: tensor<1x4x4x4xf32>, %wt: tensor<4x2x3x3xf32>)
    -> (tensor<1x4x8x8xf32>, tensor<2x5x16xf32>, tensor<1x3x3x4x5xf32>, tensor<1x2x8x8xf32>) {
  %a = fusec.conv %x, %dw {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>, groups = 4 : i64}
         : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  %b = fusec.conv %x1, %w1 {dilations = array<i64: 2>} : (tensor<2x3x20xf32>, tensor<5x3x3xf32>) -> tensor<2x5x16xf32>
  %c = fusec.conv %x3, %w3 : (tensor<1x2x4x5x6xf32>, tensor<3x2x2x2x2xf32>) -> tensor<1x3x3x4x5xf32>
  // (4 - 1)·2 - 1 - 1 + 3 = 7, plus 1 of output padding.
  %d = fusec.conv %xt, %wt {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>, transposed}
         : (tensor<1x4x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x8x8xf32>
  return %a, %b, %c, %d : tensor<1x4x8x8xf32>, tensor<2x5x16xf32>, tensor<1x3x3x4x5xf32>, tensor<1x2x8x8xf32>
}

// -----

// A 1x1x3x3 input [[1,2,3],[4,5,6],[7,8,9]] and a 2x2 filter of ones, pad 1
// low: each output the sum of a window whose out-of-range taps read zero.
// [[1, 3, 5], [5, 12, 16], [11, 24, 28]] (the first four, and the sum 105).
// CONV: result #0: tensor<1x1x3x3xf32> sum=105 min=1 max=28 nans=0 first=[1, 3, 5, 5]
func.func @conv_exact() -> tensor<1x1x3x3xf32> {
  %x = fusec.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %w = fusec.constant dense<1.0> : tensor<1x1x2x2xf32>
  %y = fusec.conv %x, %w {pad_low = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x3x3xf32>
  return %y : tensor<1x1x3x3xf32>
}

// A transposed 1-D conv, stride 2, filter [1, 10]: each input x_i adds x_i
// at 2i and 10·x_i at 2i + 1; inputs 1, 2, 3 give 1 10 2 20 3 30.
// CONVT: result #0: tensor<1x1x6xf32> sum=66 min=1 max=30 nans=0 first=[1, 10, 2, 20]
func.func @conv_transposed_exact() -> tensor<1x1x6xf32> {
  %x = fusec.constant dense<[[[1.0, 2.0, 3.0]]]> : tensor<1x1x3xf32>
  %w = fusec.constant dense<[[[1.0, 10.0]]]> : tensor<1x1x2xf32>
  %y = fusec.conv %x, %w {strides = array<i64: 2>, transposed} : (tensor<1x1x3xf32>, tensor<1x1x2xf32>) -> tensor<1x1x6xf32>
  return %y : tensor<1x1x6xf32>
}

// Average pooling of 1..4 (1-D, window 2, stride 2, pad 1 on each side,
// ceil mode by the result size): windows {pad, 1}, {2, 3}, {4, pad}. Without
// count_include_pad the padding is not counted: 1, 2.5, 4; with it: 0.5, 2.5, 2.
// POOL: result #0: tensor<1x1x3xf32> sum=7.5 min=1 max=4 nans=0 first=[1, 2.5, 4]
// POOL: result #1: tensor<1x1x3xf32> sum=5 min=0.5 max=2.5 nans=0 first=[0.5, 2.5, 2]
// POOL: result #2: tensor<1x1x3xf32> sum=8 min=1 max=4 nans=0 first=[1, 3, 4]
func.func @pool_exact() -> (tensor<1x1x3xf32>, tensor<1x1x3xf32>, tensor<1x1x3xf32>) {
  %x = fusec.constant dense<[[[1.0, 2.0, 3.0, 4.0]]]> : tensor<1x1x4xf32>
  %a = fusec.pool mean %x {kernel = array<i64: 2>, strides = array<i64: 2>, pad_low = array<i64: 1>, pad_high = array<i64: 1>}
         : tensor<1x1x4xf32> -> tensor<1x1x3xf32>
  %b = fusec.pool mean %x {kernel = array<i64: 2>, strides = array<i64: 2>, pad_low = array<i64: 1>, pad_high = array<i64: 1>, count_include_pad}
         : tensor<1x1x4xf32> -> tensor<1x1x3xf32>
  %c = fusec.pool max %x {kernel = array<i64: 2>, strides = array<i64: 2>, pad_low = array<i64: 1>, pad_high = array<i64: 1>}
         : tensor<1x1x4xf32> -> tensor<1x1x3xf32>
  return %a, %b, %c : tensor<1x1x3xf32>, tensor<1x1x3xf32>, tensor<1x1x3xf32>
}
