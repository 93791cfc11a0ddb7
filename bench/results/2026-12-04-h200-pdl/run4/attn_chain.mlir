func.func @f(%q: tensor<2x8x200x64xbf16>, %k: tensor<2x4x200x64xbf16>, %v: tensor<2x4x200x64xbf16>) -> tensor<2x8x200x64xbf16> {
  %e = fusec.tanh %q : tensor<2x8x200x64xbf16>
  %0 = fusec.attention %e, %k, %v {scale = 0.125 : f64, causal} : (tensor<2x8x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) -> tensor<2x8x200x64xbf16>
  %1 = fusec.tanh %0 : tensor<2x8x200x64xbf16>
  return %1 : tensor<2x8x200x64xbf16>
}
