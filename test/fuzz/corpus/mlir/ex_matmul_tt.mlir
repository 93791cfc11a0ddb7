func.func @matmul_tt(%a: tensor<40x9xbf16>, %b: tensor<11x40xbf16>) -> tensor<9x11xf32> {
  %0 = fusec.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<40x9xbf16>, tensor<11x40xbf16>) -> tensor<9x11xf32>
  return %0 : tensor<9x11xf32>
}
