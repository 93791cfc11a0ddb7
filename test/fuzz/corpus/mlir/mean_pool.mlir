func.func @mean_pool(%x: tensor<2x50x24xbf16>) -> (tensor<2x24xbf16>) {
  %y = fusec.reduce mean %x dims [1] : tensor<2x50x24xbf16> -> tensor<2x24xbf16>
  return %y : tensor<2x24xbf16>
}
