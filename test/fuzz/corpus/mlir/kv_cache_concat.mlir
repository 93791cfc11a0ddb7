func.func @kv_cache_concat(%cache: tensor<2x3x9x8xbf16>, %new: tensor<2x3x2x8xbf16>) -> (tensor<2x3x11x8xbf16>) {
  %y = fusec.concat %cache, %new dim 2 : (tensor<2x3x9x8xbf16>, tensor<2x3x2x8xbf16>) -> tensor<2x3x11x8xbf16>
  return %y : tensor<2x3x11x8xbf16>
}
