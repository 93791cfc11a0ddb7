func.func @column_sum(%dy: tensor<300x20xbf16>) -> (tensor<20xbf16>) {
  %y = fusec.reduce sum %dy dims [0] : tensor<300x20xbf16> -> tensor<20xbf16>
  return %y : tensor<20xbf16>
}
