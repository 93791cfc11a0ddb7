// A small convolutional network in the shapes of ResNet and MobileNet
// blocks (NCHW, f16): a strided 7x7 stem, a 3x3 max pool, a bottleneck
// (1x1, 3x3, 1x1 convolutions with bias and ReLU, a residual add), a
// depthwise 3x3 and a grouped 3x3 convolution, an average pool in ceil mode
// and a global average pool. `scripts/demo` and the pass tests run it.
func.func @convnet(%x: tensor<2x3x32x32xf16>, %w0: tensor<16x3x7x7xf16>,
                   %w1: tensor<8x16x1x1xf16>, %w2: tensor<8x8x3x3xf16>,
                   %w3: tensor<16x8x1x1xf16>, %b: tensor<16xf16>,
                   %dw: tensor<16x1x3x3xf16>, %gw: tensor<16x4x3x3xf16>)
    -> (tensor<2x16x3x3xf16>, tensor<2x16xf16>) {
  %zero = fusec.constant dense<0.0> : tensor<2x16x8x8xf16>
  %zero8 = fusec.constant dense<0.0> : tensor<2x8x8x8xf16>
  %s = fusec.conv %x, %w0 {strides = array<i64: 2, 2>, pad_low = array<i64: 3, 3>, pad_high = array<i64: 3, 3>}
         : (tensor<2x3x32x32xf16>, tensor<16x3x7x7xf16>) -> tensor<2x16x16x16xf16>
  %p = fusec.pool max %s {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>}
         : tensor<2x16x16x16xf16> -> tensor<2x16x8x8xf16>
  %a = fusec.conv %p, %w1 : (tensor<2x16x8x8xf16>, tensor<8x16x1x1xf16>) -> tensor<2x8x8x8xf16>
  %ar = fusec.max %a, %zero8 : tensor<2x8x8x8xf16>
  %c = fusec.conv %ar, %w2 {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>}
         : (tensor<2x8x8x8xf16>, tensor<8x8x3x3xf16>) -> tensor<2x8x8x8xf16>
  %cr = fusec.max %c, %zero8 : tensor<2x8x8x8xf16>
  %e = fusec.conv %cr, %w3 : (tensor<2x8x8x8xf16>, tensor<16x8x1x1xf16>) -> tensor<2x16x8x8xf16>
  %bb = fusec.broadcast %b dims [1] : tensor<16xf16> -> tensor<2x16x8x8xf16>
  %eb = fusec.add %e, %bb : tensor<2x16x8x8xf16>
  %res = fusec.add %eb, %p : tensor<2x16x8x8xf16>
  %r = fusec.max %res, %zero : tensor<2x16x8x8xf16>
  %d = fusec.conv %r, %dw {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>, groups = 16 : i64}
         : (tensor<2x16x8x8xf16>, tensor<16x1x3x3xf16>) -> tensor<2x16x8x8xf16>
  %g = fusec.conv %d, %gw {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>, groups = 4 : i64}
         : (tensor<2x16x8x8xf16>, tensor<16x4x3x3xf16>) -> tensor<2x16x4x4xf16>
  %avg = fusec.pool mean %g {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>}
         : tensor<2x16x4x4xf16> -> tensor<2x16x3x3xf16>
  %gap = fusec.reduce mean %g dims [2, 3] : tensor<2x16x4x4xf16> -> tensor<2x16xf16>
  return %avg, %gap : tensor<2x16x3x3xf16>, tensor<2x16xf16>
}
