func.func @decode_chain(%x: tensor<0x0x65536x65536x65536x8x65535xbf16>, %w1: tensor<65535x65535xbf16>, %w2: tensor<65535x65535xbf16>) -> (tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0xbf16>) {
  %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<65535x65535xbf16>) -> tensor<0x0x65536x65536x65536x8x65535xbf16>
  %b = fusec.matmul %a, %w2 {transpose_rhs} : (tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<65535x65535xbf16>) -> tensor<0x0x65536x65536x65536x8x65535xbf16>
  %c = fusec.add %b, %x : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut375715 = fusec.sigmoid %c : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut351232 = fusec.sigmoid %mut375715 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut840925 = fusec.reshape %mut351232 : tensor<0x0x65536x65536x65536x8x65535xbf16> -> tensor<0xbf16>
  %mut188979 = fusec.neg %mut351232 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut852094 = fusec.softmax %mut188979 dim 3 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut667452 = fusec.softmax %mut188979 dim 4 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  %mut242355 = fusec.max %mut188979, %mut188979 : tensor<0x0x65536x65536x65536x8x65535xbf16>
  return %mut242355, %mut667452, %mut852094, %mut840925 : tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0x0x65536x65536x65536x8x65535xbf16>, tensor<0xbf16>
}
