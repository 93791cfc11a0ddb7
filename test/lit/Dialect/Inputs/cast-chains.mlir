// Casts through an exact intermediate fold; lossy ones stay.
func.func @cast_chains(%h: tensor<4x8xbf16>, %f: tensor<4x8xf32>) -> (tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xi32>) {
  %0 = fusec.cast %h : tensor<4x8xbf16> to tensor<4x8xf32>
  %1 = fusec.cast %0 : tensor<4x8xf32> to tensor<4x8xf16>
  %2 = fusec.cast %h : tensor<4x8xbf16> to tensor<4x8xf32>
  %3 = fusec.cast %2 : tensor<4x8xf32> to tensor<4x8xbf16>
  %4 = fusec.cast %f : tensor<4x8xf32> to tensor<4x8xbf16>
  %5 = fusec.cast %4 : tensor<4x8xbf16> to tensor<4x8xf32>
  %6 = fusec.cast %f : tensor<4x8xf32> to tensor<4x8xf16>
  %7 = fusec.cast %6 : tensor<4x8xf16> to tensor<4x8xbf16>
  %8 = fusec.cast %h : tensor<4x8xbf16> to tensor<4x8xf32>
  %9 = fusec.cast %8 : tensor<4x8xf32> to tensor<4x8xi32>
  return %1, %3, %5, %7, %9 : tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xi32>
}
