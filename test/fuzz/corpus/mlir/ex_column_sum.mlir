func.func @column_sum(%x: tensor<64x256xf32>) -> tensor<256xf32> {
  %0 = fusec.reduce sum %x dims [0] : tensor<64x256xf32> -> tensor<256xf32>
  return %0 : tensor<256xf32>
}
