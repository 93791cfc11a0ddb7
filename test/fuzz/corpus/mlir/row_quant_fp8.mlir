func.func @row_quant_fp8(%x: tensor<3x200xbf16>) -> (tensor<3x200xf8E4M3FN>, tensor<3xf32>) {
  %xf = fusec.cast %x : tensor<3x200xbf16> to tensor<3x200xf32>
  %a = fusec.abs %xf : tensor<3x200xf32>
  %amax = fusec.reduce max %a dims [1] : tensor<3x200xf32> -> tensor<3xf32>
  %k = fusec.constant dense<448.0> : tensor<3xf32>
  %sc = fusec.div %k, %amax : tensor<3xf32>
  %sb = fusec.broadcast %sc dims [0] : tensor<3xf32> -> tensor<3x200xf32>
  %q = fusec.mul %xf, %sb : tensor<3x200xf32>
  %y = fusec.cast %q : tensor<3x200xf32> to tensor<3x200xf8E4M3FN>
  %inv = fusec.div %amax, %k : tensor<3xf32>
  return %y, %inv : tensor<3x200xf8E4M3FN>, tensor<3xf32>
}
