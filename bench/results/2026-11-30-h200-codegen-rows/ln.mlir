func.func @ln(%x: tensor<64x5000xbf16>, %g: tensor<5000xbf16>, %b: tensor<5000xbf16>) -> tensor<64x5000xbf16> {
  %0 = fusec.layer_norm %x, %g, %b : (tensor<64x5000xbf16>, tensor<5000xbf16>, tensor<5000xbf16>) -> tensor<64x5000xbf16>
  return %0 : tensor<64x5000xbf16>
}
