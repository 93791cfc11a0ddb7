func.func @adam_step(%p: tensor<999xf32>, %g: tensor<999xf32>, %m: tensor<999xf32>, %v: tensor<999xf32>) -> (tensor<999xf32>, tensor<999xf32>, tensor<999xf32>) {
  %b1 = fusec.constant dense<9.000000000e-01> : tensor<999xf32>
  %b1c = fusec.constant dense<1.000000000e-01> : tensor<999xf32>
  %b2 = fusec.constant dense<9.990000000e-01> : tensor<999xf32>
  %b2c = fusec.constant dense<1.000000000e-03> : tensor<999xf32>
  %lr = fusec.constant dense<1.000000000e-03> : tensor<999xf32>
  %eps = fusec.constant dense<1.000000000e-08> : tensor<999xf32>
  %bc1 = fusec.constant dense<1.000000000e-01> : tensor<999xf32>
  %bc2 = fusec.constant dense<1.000000000e-03> : tensor<999xf32>
  %m1 = fusec.mul %b1, %m : tensor<999xf32>
  %g1 = fusec.mul %b1c, %g : tensor<999xf32>
  %m2 = fusec.add %m1, %g1 : tensor<999xf32>
  %va = fusec.abs %v : tensor<999xf32>
  %v1 = fusec.mul %b2, %va : tensor<999xf32>
  %gg = fusec.mul %g, %g : tensor<999xf32>
  %g2 = fusec.mul %b2c, %gg : tensor<999xf32>
  %v2 = fusec.add %v1, %g2 : tensor<999xf32>
  %mh = fusec.div %m2, %bc1 : tensor<999xf32>
  %vh = fusec.div %v2, %bc2 : tensor<999xf32>
  %sq = fusec.sqrt %vh : tensor<999xf32>
  %den = fusec.add %sq, %eps : tensor<999xf32>
  %st = fusec.div %mh, %den : tensor<999xf32>
  %up = fusec.mul %lr, %st : tensor<999xf32>
  %p2 = fusec.sub %p, %up : tensor<999xf32>
  return %p2, %m2, %v2 : tensor<999xf32>, tensor<999xf32>, tensor<999xf32>
}
