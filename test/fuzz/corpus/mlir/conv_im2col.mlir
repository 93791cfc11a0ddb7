func.func @c96(%x: tensor<2x96x6x5xf16>, %w: tensor<64x96x3x3xf16>) -> tensor<2x64x6x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x96x6x5xf16>, tensor<64x96x3x3xf16>) -> tensor<2x64x6x5xf16>
  return %y : tensor<2x64x6x5xf16>
}

func.func @s2_1x1(%x: tensor<2x64x9x10xf16>, %w: tensor<128x64x1x1xf16>) -> tensor<2x128x5x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 0, 0>, pad_high = array<i64: 0, 0>} : (tensor<2x64x9x10xf16>, tensor<128x64x1x1xf16>) -> tensor<2x128x5x5xf16>
  return %y : tensor<2x128x5x5xf16>
}

func.func @s3mixed(%x: tensor<2x64x13x11xf16>, %w: tensor<64x64x3x5xf16>) -> tensor<2x64x4x5xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 3, 2>, dilations = array<i64: 1, 1>, pad_low = array<i64: 0, 2>, pad_high = array<i64: 1, 1>} : (tensor<2x64x13x11xf16>, tensor<64x64x3x5xf16>) -> tensor<2x64x4x5xf16>
  return %y : tensor<2x64x4x5xf16>
}

func.func @threed(%x: tensor<2x64x4x5x6xf16>, %w: tensor<64x64x3x3x3xf16>) -> tensor<2x64x4x5x6xf16> {
  %y = fusec.conv %x, %w {strides = array<i64: 1, 1, 1>, dilations = array<i64: 1, 1, 1>, pad_low = array<i64: 1, 1, 1>, pad_high = array<i64: 1, 1, 1>} : (tensor<2x64x4x5x6xf16>, tensor<64x64x3x3x3xf16>) -> tensor<2x64x4x5x6xf16>
  return %y : tensor<2x64x4x5x6xf16>
}

func.func @bottleneck(%x: tensor<2x256x10x9xf16>, %w1: tensor<64x256x1x1xf16>, %b1: tensor<1x64x1x1xf16>, %w2: tensor<64x64x3x3xf16>, %b2: tensor<1x64x1x1xf16>, %w3: tensor<256x64x1x1xf16>) -> tensor<2x256x10x9xf16> {
  %z = fusec.constant dense<0.0> : tensor<2x64x10x9xf16>
  %a = fusec.conv %x, %w1 {} : (tensor<2x256x10x9xf16>, tensor<64x256x1x1xf16>) -> tensor<2x64x10x9xf16>
  %bb1 = fusec.broadcast %b1 dims [0, 1, 2, 3] : tensor<1x64x1x1xf16> -> tensor<2x64x10x9xf16>
  %a1 = fusec.add %a, %bb1 : tensor<2x64x10x9xf16>
  %a2 = fusec.max %a1, %z : tensor<2x64x10x9xf16>
  %c = fusec.conv %a2, %w2 {pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>} : (tensor<2x64x10x9xf16>, tensor<64x64x3x3xf16>) -> tensor<2x64x10x9xf16>
  %bb2 = fusec.broadcast %b2 dims [0, 1, 2, 3] : tensor<1x64x1x1xf16> -> tensor<2x64x10x9xf16>
  %c1 = fusec.add %c, %bb2 : tensor<2x64x10x9xf16>
  %c2 = fusec.max %c1, %z : tensor<2x64x10x9xf16>
  %d = fusec.conv %c2, %w3 {} : (tensor<2x64x10x9xf16>, tensor<256x64x1x1xf16>) -> tensor<2x256x10x9xf16>
  return %d : tensor<2x256x10x9xf16>
}
