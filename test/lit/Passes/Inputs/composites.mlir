// Every composite, in several dtypes and shapes, in one graph: used to check
// that decomposition keeps the results (fusec-run --verify-pipeline).
func.func @composites(%x: tensor<8x96xf32>, %g: tensor<96xf32>, %b: tensor<96xf32>,
                      %h: tensor<4x6x128xbf16>, %hg: tensor<128xbf16>,
                      %s: tensor<5x33x9xf16>, %a: tensor<1000xf32>)
    -> (tensor<8x96xf32>, tensor<4x6x128xbf16>, tensor<5x33x9xf16>, tensor<8x96xf32>,
        tensor<1000xf32>, tensor<1000xf32>, tensor<4x6x128xbf16>, tensor<4x6x128xbf16>) {
  %ln = fusec.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<8x96xf32>, tensor<96xf32>, tensor<96xf32>) -> tensor<8x96xf32>
  %rms = fusec.rms_norm %h, %hg {epsilon = 1.0e-6 : f64} : (tensor<4x6x128xbf16>, tensor<128xbf16>) -> tensor<4x6x128xbf16>
  %sm = fusec.softmax %s dim 1 : tensor<5x33x9xf16>
  %sm2 = fusec.softmax %ln dim 1 : tensor<8x96xf32>
  %ge = fusec.gelu %a : tensor<1000xf32>
  %gt = fusec.gelu %a {tanh} : tensor<1000xf32>
  %si = fusec.silu %h : tensor<4x6x128xbf16>
  %gb = fusec.gelu %rms {tanh} : tensor<4x6x128xbf16>
  return %ln, %rms, %sm, %sm2, %ge, %gt, %si, %gb : tensor<8x96xf32>, tensor<4x6x128xbf16>, tensor<5x33x9xf16>, tensor<8x96xf32>, tensor<1000xf32>, tensor<1000xf32>, tensor<4x6x128xbf16>, tensor<4x6x128xbf16>
}
