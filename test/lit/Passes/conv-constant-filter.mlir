// A convolution whose weights are a constant (an imported model's): the
// filter's relayout for the implicit GEMM ([K, C, kh, kw] -> [K, taps, C],
// channels padded with zeros to the 64 of a k-block) is computed at compile
// time, so no filter_im2col kernel runs. Three channels and stride 2: the
// stride phases move into the channels first (space to depth: a 2x2
// convolution of 12 channels, the filter [8, 12, 2, 2]), then the taps
// along the last dim (24 channels, the filter [8, 24, 2, 1] and then
// [8, 2 taps, 1, 64]), each step a constant relaid at compile time. The
// input's padding, phases and folded taps are traced at compile time into
// a table of the input element each position of an image copies (-1 a
// zero: [6 rows, 5 columns, 64 channels] of i32), and conv_pad reads the
// argument itself through it, one gather. Strided and padded; the fused
// graph still computes the same values, in a batch of one and of three
// (every image through the one table).
// RUN: fusec-opt %s --fusec-fuse | FileCheck %s
// RUN: fusec-run --verify-pipeline="fusec-fuse" %s --function=cst | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-fuse" %s --function=cst3 | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-fuse" %s --function=cst1 | FileCheck %s --check-prefix=SAME
// SAME: PASS: fusec-fuse keeps the graph's meaning

// CHECK-LABEL: func.func @cst
// CHECK-NOT: filter_im2col
// CHECK-NOT: fusec.kernel
// CHECK: %[[TABLE:.*]] = fusec.constant dense<"0x{{[0-9A-F]+}}"> : tensor<6x5x64xi32>
// CHECK-NOT: fusec.kernel
// CHECK: fusec.kernel "conv_pad"(%arg0, %[[TABLE]])
// CHECK: fusec.concat %{{.*}} : (tensor<1x243xf16>, tensor<1x1xf16>) -> tensor<1x244xf16>
// CHECK-NEXT: fusec.gather %{{.*}} axis 1 : (tensor<1x244xf16>, tensor<6x5x64xi32>) -> tensor<1x6x5x64xf16>
// CHECK-NOT: filter_im2col
// CHECK: fusec.constant dense<"0x{{[0-9A-F]+}}"> : tensor<8x2x1x64xf16>
// CHECK-NOT: filter_im2col
// CHECK: _matmul"
func.func @cst(%x: tensor<1x3x9x9xf16>) -> tensor<1x8x5x5xf16> {
  %w = fusec.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[0.25, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -0.5]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, 3.0]]]]> : tensor<8x3x3x3xf16>
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<1x3x9x9xf16>, tensor<8x3x3x3xf16>) -> tensor<1x8x5x5xf16>
  return %y : tensor<1x8x5x5xf16>
}

// A batch of three: the table is an image's, each image read at its own
// offset.
// CHECK-LABEL: func.func @cst3
// CHECK: fusec.constant dense<"0x{{[0-9A-F]+}}"> : tensor<6x5x64xi32>
// CHECK: fusec.kernel "conv_pad"(%arg0, %{{.*}}) : (tensor<3x3x9x9xf16>, tensor<6x5x64xi32>) -> tensor<1x95x64xf16>
// CHECK: fusec.gather %{{.*}} axis 1 : (tensor<3x244xf16>, tensor<6x5x64xi32>) -> tensor<3x6x5x64xf16>
func.func @cst3(%x: tensor<3x3x9x9xf16>) -> tensor<3x8x5x5xf16> {
  %w = fusec.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[0.25, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -0.5]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, 3.0]]]]> : tensor<8x3x3x3xf16>
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<3x3x9x9xf16>, tensor<8x3x3x3xf16>) -> tensor<3x8x5x5xf16>
  return %y : tensor<3x8x5x5xf16>
}

// A 1x1 convolution of 8 channels (a plain matmul on the channels-last
// input): its constant filter [3, 8, 1, 1] becomes [3, 8] at compile time.
// CHECK-LABEL: func.func @cst1
// CHECK-NOT: filter_im2col
// CHECK: fusec.constant dense<{{.*}}> : tensor<3x1x1x8xf16>
// CHECK-NOT: filter_im2col
// CHECK: _matmul"
func.func @cst1(%x: tensor<2x8x5x3xf16>) -> tensor<2x3x5x3xf16> {
  %w = fusec.constant dense<[[[[1.0]], [[2.0]], [[-3.0]], [[0.5]], [[1.0]], [[2.0]], [[-3.0]], [[0.5]]], [[[4.0]], [[-1.0]], [[0.25]], [[2.0]], [[4.0]], [[-1.0]], [[0.25]], [[-2.0]]], [[[-2.0]], [[1.5]], [[3.0]], [[-0.75]], [[-2.0]], [[1.5]], [[3.0]], [[0.75]]]]> : tensor<3x8x1x1xf16>
  %y = fusec.conv %x, %w : (tensor<2x8x5x3xf16>, tensor<3x8x1x1xf16>) -> tensor<2x3x5x3xf16>
  return %y : tensor<2x3x5x3xf16>
}
