func.func @perms(%q: tensor<24x1x2x64xf16>, %k: tensor<1x40x2x64xf16>, %v: tensor<2x40x1x64xf16>) -> tensor<24x2x1x64xf16> {
  %o = fusec.attention %q, %k, %v {scale = 0.125 : f64, query_perm = array<i64: 1, 2, 0, 3>, key_perm = array<i64: 0, 2, 1, 3>, value_perm = array<i64: 2, 0, 1, 3>, result_perm = array<i64: 2, 1, 0, 3>} : (tensor<24x1x2x64xf16>, tensor<1x40x2x64xf16>, tensor<2x40x1x64xf16>) -> tensor<24x2x1x64xf16>
  return %o : tensor<24x2x1x64xf16>
}
