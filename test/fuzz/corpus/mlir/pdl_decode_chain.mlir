func.func @decode_chain(%x: tensor<8x256xbf16>, %w1: tensor<256x256xbf16>, %w2: tensor<256x256xbf16>) -> tensor<8x256xbf16> {
  %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<8x256xbf16>, tensor<256x256xbf16>) -> tensor<8x256xbf16>
  %b = fusec.matmul %a, %w2 {transpose_rhs} : (tensor<8x256xbf16>, tensor<256x256xbf16>) -> tensor<8x256xbf16>
  %c = fusec.add %b, %x : tensor<8x256xbf16>
  return %c : tensor<8x256xbf16>
}
