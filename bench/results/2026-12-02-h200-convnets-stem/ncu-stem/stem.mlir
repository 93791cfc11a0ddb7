func.func @stem(%x: tensor<32x3x224x224xf16>, %w: tensor<64x3x7x7xf16>, %b: tensor<64xf16>) -> tensor<32x64x112x112xf16> {
  %zero = fusec.constant dense<0.0> : tensor<32x64x112x112xf16>
  %a = fusec.conv %x, %w {strides = array<i64: 2, 2>, pad_low = array<i64: 3, 3>, pad_high = array<i64: 3, 3>}
         : (tensor<32x3x224x224xf16>, tensor<64x3x7x7xf16>) -> tensor<32x64x112x112xf16>
  %bb = fusec.broadcast %b dims [1] : tensor<64xf16> -> tensor<32x64x112x112xf16>
  %ab = fusec.add %a, %bb : tensor<32x64x112x112xf16>
  %ar = fusec.max %ab, %zero : tensor<32x64x112x112xf16>
  return %ar : tensor<32x64x112x112xf16>
}
