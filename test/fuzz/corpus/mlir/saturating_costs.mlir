func.func @decode_chain(%x: tensor<65535x65535x65535x8x256xbf16>, %w1: tensor<256x256xbf16>, %w2: tensor<256x256xbf16>) -> tensor<65535x65535x65535x8x256xbf16> {
  %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<65535x65535x65535x8x256xbf16>, tensor<256x256xbf16>) -> tensor<65535x65535x65535x8x256xbf16>
  %b = fusec.matmul %a, %w2 {transpose_rhs} : (tensor<65535x65535x65535x8x256xbf16>, tensor<256x256xbf16>) -> tensor<65535x65535x65535x8x256xbf16>
  %c = fusec.add %b, %x : tensor<65535x65535x65535x8x256xbf16>
  %mut351232 = fusec.sigmoid %c : tensor<65535x65535x65535x8x256xbf16>
  %mut188979 = fusec.tanh %mut351232 : tensor<65535x65535x65535x8x256xbf16>
  %mut242355 = fusec.mul %mut188979, %mut188979 : tensor<65535x65535x65535x8x256xbf16>
  return %mut242355 : tensor<65535x65535x65535x8x256xbf16>
}
