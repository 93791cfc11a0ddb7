func.func @softmax_backward(%y: tensor<3x50xbf16>, %dy: tensor<3x50xbf16>) -> (tensor<3x50xbf16>) {
  %yf = fusec.cast %y : tensor<3x50xbf16> to tensor<3x50xf32>
  %df = fusec.cast %dy : tensor<3x50xbf16> to tensor<3x50xf32>
  %p = fusec.mul %df, %yf : tensor<3x50xf32>
  %s = fusec.reduce sum %p dims [1] : tensor<3x50xf32> -> tensor<3xf32>
  %sb = fusec.broadcast %s dims [0] : tensor<3xf32> -> tensor<3x50xf32>
  %d = fusec.sub %df, %sb : tensor<3x50xf32>
  %g = fusec.mul %yf, %d : tensor<3x50xf32>
  %dx = fusec.cast %g : tensor<3x50xf32> to tensor<3x50xbf16>
  return %dx : tensor<3x50xbf16>
}
