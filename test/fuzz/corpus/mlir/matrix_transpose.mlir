func.func @matrix_transpose(%x: tensor<33x70xbf16>) -> (tensor<70x33xbf16>) {
  %y = fusec.transpose %x perm [1, 0] : tensor<33x70xbf16> -> tensor<70x33xbf16>
  return %y : tensor<70x33xbf16>
}
