func.func @embedding_gather(%w: tensor<50x16xbf16>, %ids: tensor<2x7xi32>) -> (tensor<2x7x16xbf16>) {
  %y = fusec.gather %w[%ids] axis 0 : (tensor<50x16xbf16>, tensor<2x7xi32>) -> tensor<2x7x16xbf16>
  return %y : tensor<2x7x16xbf16>
}
