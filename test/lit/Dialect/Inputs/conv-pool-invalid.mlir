// The verifier's errors for fusec.conv and fusec.pool (run by conv-pool.mlir).

func.func @rank(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.conv' op operand #0 ('input') has rank 2, expected at least 3 ([N, C, spatial...])}}
  %0 = fusec.conv %x, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @channels(%x: tensor<1x4x8x8xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+1 {{'fusec.conv' op operand #1 ('filter') has 3 channels a group, expected 4 (4 input channels in 1 groups)}}
  %0 = fusec.conv %x, %w : (tensor<1x4x8x8xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

func.func @groups(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+1 {{'fusec.conv' op 'groups' is 3, expected a divisor of the 4 input channels}}
  %0 = fusec.conv %x, %w {groups = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @result_shape(%x: tensor<1x4x8x8xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+1 {{'fusec.conv' op result has shape [1, 2, 8, 8], expected [1, 2, 3, 3]}}
  %0 = fusec.conv %x, %w {strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<2x4x3x3xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @attr_size(%x: tensor<1x4x8x8xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+1 {{'fusec.conv' op 'strides' has 1 values, expected 2 (one per spatial dim) or none}}
  %0 = fusec.conv %x, %w {strides = array<i64: 2>} : (tensor<1x4x8x8xf32>, tensor<2x4x3x3xf32>) -> tensor<1x2x3x3xf32>
  return
}

// -----

func.func @zero_stride(%x: tensor<1x4x8x8xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+1 {{'fusec.conv' op 'strides' holds 0, expected a value in [1, 2^32]}}
  %0 = fusec.conv %x, %w {strides = array<i64: 0, 1>} : (tensor<1x4x8x8xf32>, tensor<2x4x3x3xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

func.func @window(%x: tensor<1x4x2x2xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+1 {{'fusec.conv' op spatial dim 0 of the padded input (2) is smaller than the window (3)}}
  %0 = fusec.conv %x, %w : (tensor<1x4x2x2xf32>, tensor<2x4x3x3xf32>) -> tensor<1x2x1x1xf32>
  return
}

// -----

func.func @transposed_padding(%x: tensor<1x4x4x4xf32>, %w: tensor<4x2x3x3xf32>) {
  // Output padding must stay below the stride: 7 + 2 is too far.
  // expected-error @+1 {{'fusec.conv' op result has shape [1, 2, 9, 9], expected [1, 2, 7, 7]}}
  %0 = fusec.conv %x, %w {strides = array<i64: 2, 2>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>, transposed}
         : (tensor<1x4x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x9x9xf32>
  return
}

// -----

func.func @int_conv(%x: tensor<1x4x8x8xi32>, %w: tensor<2x4x3x3xi32>) {
  // expected-error @+1 {{'fusec.conv' op operand #0 ('input') has element type 'i32', expected a float type}}
  %0 = fusec.conv %x, %w : (tensor<1x4x8x8xi32>, tensor<2x4x3x3xi32>) -> tensor<1x2x6x6xi32>
  return
}

// -----

func.func @pool_kind(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'fusec.pool' op kind 'sum', expected 'max' or 'mean'}}
  %0 = fusec.pool sum %x {kernel = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x7x7xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'fusec.pool' op 'kernel' has 1 values, expected 2}}
  %0 = fusec.pool max %x {kernel = array<i64: 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x7x7xf32>
  return
}

// -----

func.func @pool_shape(%x: tensor<1x4x8x8xf32>) {
  // Floor gives 3, ceil 4 (the last window starts at 6, inside): 5 is neither.
  // expected-error @+1 {{'fusec.pool' op result has shape [1, 4, 5, 5], expected [1, 4, 3, 3]}}
  %0 = fusec.pool max %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x5x5xf32>
  return
}

// -----

func.func @pool_pad(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'fusec.pool' op spatial dim 0 has a pad of at least the window (2): a window would see only padding}}
  %0 = fusec.pool max %x {kernel = array<i64: 2, 2>, pad_low = array<i64: 2, 0>} : tensor<1x4x8x8xf32> -> tensor<1x4x9x7xf32>
  return
}

// -----

// Four kernel dims of 2^16 over pads one short of them: each window fits,
// but 2^64 taps wrapped to none (max gave -inf, mean NaN).
func.func @pool_taps(%x: tensor<1x1x1x1x1x1xf32>) {
  // expected-error @+1 {{'fusec.pool' op 'kernel' spans more than 2^63 taps, expected at most 2^31}}
  %0 = fusec.pool max %x {kernel = array<i64: 65536, 65536, 65536, 65536>, pad_high = array<i64: 65535, 65535, 65535, 65535>} : tensor<1x1x1x1x1x1xf32> -> tensor<1x1x1x1x1x1xf32>
  return
}

// -----

func.func @pool_taps_many(%x: tensor<1x1x1x1xf32>) {
  // expected-error @+1 {{'fusec.pool' op 'kernel' spans 4294967296 taps, expected at most 2^31}}
  %0 = fusec.pool mean %x {kernel = array<i64: 65536, 65536>, pad_high = array<i64: 65535, 65535>} : tensor<1x1x1x1xf32> -> tensor<1x1x1x1xf32>
  return
}

// -----

// A dilation of 2^32 over a filter dim of 2^32 + 1: the window's extent
// wrapped to 1 and fit an input of 8.
func.func @conv_extent_wraps(%x: tensor<1x1x8xf32>, %w: tensor<1x1x4294967297xf32>) {
  // expected-error @+1 {{'fusec.conv' op spatial dim 0 of the padded input (8) is smaller than the window (9223372036854775807)}}
  %0 = fusec.conv %x, %w {dilations = array<i64: 4294967296>} : (tensor<1x1x8xf32>, tensor<1x1x4294967297xf32>) -> tensor<1x1x8xf32>
  return
}
