func.func @bshd(%q: tensor<1x24x2x64xbf16>, %k: tensor<1x40x1x64xbf16>, %v: tensor<1x40x1x64xbf16>) -> tensor<1x24x2x64xbf16> {
  %qt = fusec.transpose %q perm [0, 2, 1, 3] : tensor<1x24x2x64xbf16> -> tensor<1x2x24x64xbf16>
  %kt = fusec.transpose %k perm [0, 2, 1, 3] : tensor<1x40x1x64xbf16> -> tensor<1x1x40x64xbf16>
  %vt = fusec.transpose %v perm [0, 2, 1, 3] : tensor<1x40x1x64xbf16> -> tensor<1x1x40x64xbf16>
  %o = fusec.attention %qt, %kt, %vt {scale = 0.125 : f64, causal} : (tensor<1x2x24x64xbf16>, tensor<1x1x40x64xbf16>, tensor<1x1x40x64xbf16>) -> tensor<1x2x24x64xbf16>
  %ot = fusec.transpose %o perm [0, 2, 1, 3] : tensor<1x2x24x64xbf16> -> tensor<1x24x2x64xbf16>
  return %ot : tensor<1x24x2x64xbf16>
}
