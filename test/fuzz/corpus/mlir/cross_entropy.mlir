func.func @cross_entropy(%x: tensor<4x33xbf16>, %t: tensor<4xi32>, %iota: tensor<33xi32>) -> (tensor<4xf32>) {
  %xf = fusec.cast %x : tensor<4x33xbf16> to tensor<4x33xf32>
  %m = fusec.reduce max %xf dims [1] : tensor<4x33xf32> -> tensor<4xf32>
  %mb = fusec.broadcast %m dims [0] : tensor<4xf32> -> tensor<4x33xf32>
  %d = fusec.sub %xf, %mb : tensor<4x33xf32>
  %e = fusec.exp %d : tensor<4x33xf32>
  %s = fusec.reduce sum %e dims [1] : tensor<4x33xf32> -> tensor<4xf32>
  %l = fusec.log %s : tensor<4xf32>
  %lse = fusec.add %l, %m : tensor<4xf32>
  %tb = fusec.broadcast %t dims [0] : tensor<4xi32> -> tensor<4x33xi32>
  %ib = fusec.broadcast %iota dims [1] : tensor<33xi32> -> tensor<4x33xi32>
  %eq = fusec.compare eq, %ib, %tb : tensor<4x33xi32>
  %z = fusec.constant dense<0.0> : tensor<4x33xf32>
  %sel = fusec.select %eq, %xf, %z : tensor<4x33xf32>
  %xt = fusec.reduce sum %sel dims [1] : tensor<4x33xf32> -> tensor<4xf32>
  %loss = fusec.sub %lse, %xt : tensor<4xf32>
  return %loss : tensor<4xf32>
}
