func.func @f(%x: tensor<1x1x1x1x1x1xf32>) -> tensor<1x1x1x1x1x1xf32> {
  %0 = fusec.pool max %x {kernel = array<i64: 65536, 65536, 65536, 65536>, pad_high = array<i64: 65535, 65535, 65535, 65535>} : tensor<1x1x1x1x1x1xf32> -> tensor<1x1x1x1x1x1xf32>
  return %0 : tensor<1x1x1x1x1x1xf32>
}
