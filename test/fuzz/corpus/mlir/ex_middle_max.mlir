func.func @middle_max(%x: tensor<3x50x24xbf16>) -> (tensor<3x24xbf16>, tensor<3x50x24xbf16>) {
  %m = fusec.reduce max %x dims [1] : tensor<3x50x24xbf16> -> tensor<3x24xbf16>
  %b = fusec.broadcast %m dims [0, 2] : tensor<3x24xbf16> -> tensor<3x50x24xbf16>
  %d = fusec.sub %x, %b : tensor<3x50x24xbf16>
  return %m, %d : tensor<3x24xbf16>, tensor<3x50x24xbf16>
}
