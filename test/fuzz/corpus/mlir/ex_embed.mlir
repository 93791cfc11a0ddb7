func.func @embed(%t: tensor<100x16xbf16>, %ids: tensor<4x9xi32>) -> tensor<4x9x16xbf16> {
  %e = fusec.gather %t[%ids] axis 0 : (tensor<100x16xbf16>, tensor<4x9xi32>) -> tensor<4x9x16xbf16>
  return %e : tensor<4x9x16xbf16>
}
