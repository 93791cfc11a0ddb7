// Folding opportunities mixed with real work, for --verify-pipeline.
func.func @foldable(%x: tensor<2x3x4xf32>, %y: tensor<4x2x3xf32>) -> (tensor<4x2x3xf32>, tensor<24xf32>) {
  %0 = fusec.transpose %x perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = fusec.transpose %0 perm [1, 2, 0] : tensor<3x4x2xf32> -> tensor<4x2x3xf32>
  %n = fusec.neg %1 : tensor<4x2x3xf32>
  %nn = fusec.neg %n : tensor<4x2x3xf32>
  %a = fusec.constant dense<2.0> : tensor<4x2x3xf32>
  %b = fusec.constant dense<0.5> : tensor<4x2x3xf32>
  %c = fusec.mul %a, %b : tensor<4x2x3xf32>
  %s = fusec.mul %nn, %c : tensor<4x2x3xf32>
  %t = fusec.add %s, %y : tensor<4x2x3xf32>
  %r0 = fusec.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %r1 = fusec.reshape %r0 : tensor<6x4xf32> -> tensor<24xf32>
  %e = fusec.exp %r1 : tensor<24xf32>
  return %t, %e : tensor<4x2x3xf32>, tensor<24xf32>
}
