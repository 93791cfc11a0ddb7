func.func @bshd(%q: tensor<4x4096x32x128xbf16>, %k: tensor<4x4096x32x128xbf16>, %v: tensor<4x4096x32x128xbf16>) -> tensor<4x4096x32x128xbf16> {
  %qt = fusec.transpose %q perm [0, 2, 1, 3] : tensor<4x4096x32x128xbf16> -> tensor<4x32x4096x128xbf16>
  %kt = fusec.transpose %k perm [0, 2, 1, 3] : tensor<4x4096x32x128xbf16> -> tensor<4x32x4096x128xbf16>
  %vt = fusec.transpose %v perm [0, 2, 1, 3] : tensor<4x4096x32x128xbf16> -> tensor<4x32x4096x128xbf16>
  %o = fusec.attention %qt, %kt, %vt {scale = 0.08838834764831845 : f64, causal} : (tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>) -> tensor<4x32x4096x128xbf16>
  %ot = fusec.transpose %o perm [0, 2, 1, 3] : tensor<4x32x4096x128xbf16> -> tensor<4x4096x32x128xbf16>
  return %ot : tensor<4x4096x32x128xbf16>
}
