func.func @col_center(%x: tensor<1000x24xbf16>) -> tensor<1000x24xbf16> {
  %m = fusec.reduce mean %x dims [0] : tensor<1000x24xbf16> -> tensor<24xbf16>
  %b = fusec.broadcast %m dims [1] : tensor<24xbf16> -> tensor<1000x24xbf16>
  %0 = fusec.sub %x, %b : tensor<1000x24xbf16>
  return %0 : tensor<1000x24xbf16>
}
