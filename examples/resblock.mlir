// Convolutions whose channels fill the tensor cores' k-blocks (64 and 128
// channels, NCHW, f16), on odd spatial sizes: a 3x3 convolution with bias
// and ReLU, a dilated 3x3, a strided 3x3 and a strided 1x1 projection of
// the residual (a ResNet stage's first bottleneck), and a 1-D convolution.
// The GPU runs each as implicit GEMM over shifted windows of the padded,
// channels-last input; the pass tests run it.
func.func @resblock(%x: tensor<2x64x9x11xf16>, %w0: tensor<64x64x3x3xf16>,
                    %b0: tensor<64xf16>, %wd: tensor<64x64x3x3xf16>,
                    %ws: tensor<128x64x3x3xf16>, %wp: tensor<128x64x1x1xf16>,
                    %s: tensor<2x64x13xf16>, %w1: tensor<64x64x5xf16>)
    -> (tensor<2x128x5x6xf16>, tensor<2x64x9xf16>) {
  %zero = fusec.constant dense<0.0> : tensor<2x64x9x11xf16>
  %zero2 = fusec.constant dense<0.0> : tensor<2x128x5x6xf16>
  %a = fusec.conv %x, %w0 {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>}
         : (tensor<2x64x9x11xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x9x11xf16>
  %bb = fusec.broadcast %b0 dims [1] : tensor<64xf16> -> tensor<2x64x9x11xf16>
  %ab = fusec.add %a, %bb : tensor<2x64x9x11xf16>
  %ar = fusec.max %ab, %zero : tensor<2x64x9x11xf16>
  %d = fusec.conv %ar, %wd {dilations = array<i64: 2, 2>, pad_low = array<i64: 2, 2>, pad_high = array<i64: 2, 2>}
         : (tensor<2x64x9x11xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x9x11xf16>
  %dr = fusec.max %d, %zero : tensor<2x64x9x11xf16>
  %c = fusec.conv %dr, %ws {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>}
         : (tensor<2x64x9x11xf16>, tensor<128x64x3x3xf16>) -> tensor<2x128x5x6xf16>
  %p = fusec.conv %x, %wp {strides = array<i64: 2, 2>}
         : (tensor<2x64x9x11xf16>, tensor<128x64x1x1xf16>) -> tensor<2x128x5x6xf16>
  %sum = fusec.add %c, %p : tensor<2x128x5x6xf16>
  %y = fusec.max %sum, %zero2 : tensor<2x128x5x6xf16>
  %t = fusec.conv %s, %w1 {strides = array<i64: 1>, pad_low = array<i64: 0>, pad_high = array<i64: 0>}
         : (tensor<2x64x13xf16>, tensor<64x64x5xf16>) -> tensor<2x64x9xf16>
  return %y, %t : tensor<2x128x5x6xf16>, tensor<2x64x9xf16>
}
