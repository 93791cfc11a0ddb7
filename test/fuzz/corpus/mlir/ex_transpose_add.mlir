func.func @transpose_add(%x: tensor<64x48xf32>, %y: tensor<48x64xf32>) -> tensor<48x64xf32> {
  %t = fusec.transpose %x perm [1, 0] : tensor<64x48xf32> -> tensor<48x64xf32>
  %0 = fusec.add %t, %y : tensor<48x64xf32>
  return %0 : tensor<48x64xf32>
}
