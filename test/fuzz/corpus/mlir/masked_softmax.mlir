func.func @masked_softmax(%x: tensor<2x24x24xbf16>, %mask: tensor<24x24xbf16>) -> (tensor<2x24x24xbf16>) {
  %c = fusec.constant dense<0.08838834764831845> : tensor<2x24x24xbf16>
  %xs = fusec.mul %x, %c : tensor<2x24x24xbf16>
  %mb = fusec.broadcast %mask dims [1, 2] : tensor<24x24xbf16> -> tensor<2x24x24xbf16>
  %a = fusec.add %xs, %mb : tensor<2x24x24xbf16>
  %af = fusec.cast %a : tensor<2x24x24xbf16> to tensor<2x24x24xf32>
  %p = fusec.softmax %af dim 2 : tensor<2x24x24xf32>
  %y = fusec.cast %p : tensor<2x24x24xf32> to tensor<2x24x24xbf16>
  return %y : tensor<2x24x24xbf16>
}
