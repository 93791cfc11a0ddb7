// RUN: fusec-opt %s -split-input-file -verify-diagnostics

// Elementwise: unsupported element type.
func.func @unsupported_element(%a: tensor<4xf64>) {
  // expected-error @+1 {{'fusec.add' op operand #0 ('lhs') has element type 'f64', expected one of f32, f16, bf16, f8E4M3FN, f8E5M2, i32, i64, i1}}
  %0 = fusec.add %a, %a : tensor<4xf64>
  return
}

// -----

// Elementwise: a float-only op on integers.
func.func @exp_of_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{'fusec.exp' op operand #0 ('input') has element type 'i32', expected a float type}}
  %0 = fusec.exp %a : tensor<4xi32>
  return
}

// -----

// Elementwise: a numeric op on i1.
func.func @add_of_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'fusec.add' op operand #0 ('lhs') has element type i1, expected a float or i32/i64 type}}
  %0 = fusec.add %a, %a : tensor<4xi1>
  return
}

// -----

// Elementwise: a logical op on floats.
func.func @and_of_float(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.and' op operand #0 ('lhs') has element type 'f32', expected i1}}
  %0 = fusec.and %a, %a : tensor<4xf32>
  return
}

// -----

// Elementwise: operand shapes differ (no implicit broadcast).
func.func @shape_mismatch(%a: tensor<4x8xf32>, %b: tensor<4x9xf32>) {
  // expected-error @+1 {{'fusec.add' op operand #1 ('rhs') has type 'tensor<4x9xf32>', expected 'tensor<4x8xf32>' (from operand #0 ('lhs'); broadcast explicitly with fusec.broadcast)}}
  %0 = fusec.add %a, %b : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Elementwise: operand element types differ.
func.func @dtype_mismatch(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'fusec.mul' op operand #1 ('rhs') has type 'tensor<4xbf16>', expected 'tensor<4xf32>'}}
  %0 = fusec.mul %a, %b : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

// Elementwise: wrong result type.
func.func @result_mismatch(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.neg' op result has type 'tensor<4xf16>', expected 'tensor<4xf32>'}}
  %0 = fusec.neg %a : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// compare: result must be i1.
func.func @compare_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.compare' op result has type 'tensor<4xf32>', expected 'tensor<4xi1>'}}
  %0 = fusec.compare lt, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @compare_predicate(%a: tensor<4xf32>) {
  // expected-error @+1 {{unknown comparison predicate 'less', expected one of eq, ne, lt, le, gt, ge}}
  %0 = fusec.compare less, %a, %a : tensor<4xf32>
  return
}

// -----

// select: the condition must be i1 of the values' shape.
func.func @select_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.select' op operand #0 ('condition') has type 'tensor<4xf32>', expected 'tensor<4xi1>'}}
  %0 = fusec.select %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.cast' op result has shape [8], expected [4]}}
  %0 = fusec.cast %a : tensor<4xf32> to tensor<8xbf16>
  return
}

// -----

func.func @cast_element(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.cast' op result has element type 'f64', expected one of}}
  %0 = fusec.cast %a : tensor<4xf32> to tensor<4xf64>
  return
}

// -----

func.func @constant_element() {
  // expected-error @+1 {{'fusec.constant' op operand #0 ('value') has element type 'f64'}}
  %0 = fusec.constant dense<1.0> : tensor<4xf64>
  return
}

// -----

func.func @broadcast_rank(%a: tensor<8xf32>) {
  // expected-error @+1 {{'fusec.broadcast' op 'dims' has 2 entries, expected 1 (the rank of operand #0 ('input'))}}
  %0 = fusec.broadcast %a dims [0, 1] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_order(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.broadcast' op 'dims' must be strictly increasing, got [2, 1]}}
  %0 = fusec.broadcast %a dims [2, 1] : tensor<4x8xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @broadcast_size(%a: tensor<3xf32>) {
  // expected-error @+1 {{'fusec.broadcast' op operand #0 ('input') dimension 0 has size 3, expected 1 or 8 (result dimension 1)}}
  %0 = fusec.broadcast %a dims [1] : tensor<3xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_dim_range(%a: tensor<8xf32>) {
  // expected-error @+1 {{'fusec.broadcast' op 'dims' has dimension 2, expected a value in [0, 2)}}
  %0 = fusec.broadcast %a dims [2] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_element(%a: tensor<8xf32>) {
  // expected-error @+1 {{'fusec.broadcast' op result has element type 'bf16', expected 'f32' (the element type of operand #0 ('input'))}}
  %0 = fusec.broadcast %a dims [1] : tensor<8xf32> -> tensor<4x8xbf16>
  return
}

// -----

func.func @reshape_count(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.reshape' op result has 30 elements, expected 32 (the elements of operand #0 ('input'))}}
  %0 = fusec.reshape %a : tensor<4x8xf32> -> tensor<5x6xf32>
  return
}

// -----

func.func @transpose_rank(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.transpose' op 'permutation' has 3 entries, expected 2}}
  %0 = fusec.transpose %a perm [0, 1, 2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @transpose_repeat(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.transpose' op 'permutation' [1, 1] names dimension 1 twice}}
  %0 = fusec.transpose %a perm [1, 1] : tensor<4x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @transpose_shape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.transpose' op result has shape [4, 8], expected [8, 4]}}
  %0 = fusec.transpose %a perm [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_bounds(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.slice' op dimension 1 reads index 9, expected an index below 8 (the size of operand #0 ('input'))}}
  %0 = fusec.slice %a offsets [0, 6] strides [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

// A stride near 2^63 wrapped the last index below the input's size: the
// op was accepted and then read before its input (issue #19's audit).
func.func @slice_stride_wraps(%a: tensor<2x2xf32>) {
  // expected-error @+1 {{'fusec.slice' op dimension 0 reads index 0 + 2 * 9223372036854775807 (past 2^63), expected an index below 2 (the size of operand #0 ('input'))}}
  %0 = fusec.slice %a offsets [0, 0] strides [9223372036854775807, 1] : tensor<2x2xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @slice_stride_wraps_to_zero(%a: tensor<8xf32>) {
  // expected-error @+1 {{'fusec.slice' op dimension 0 reads index 0 + 4 * 4611686018427387904 (past 2^63)}}
  %0 = fusec.slice %a offsets [0] strides [4611686018427387904] : tensor<8xf32> -> tensor<5xf32>
  return
}

// -----

func.func @slice_stride(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.slice' op dimension 0 has offset 0 and stride 0, expected offset >= 0 and stride >= 1}}
  %0 = fusec.slice %a offsets [0, 0] strides [0, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_entries(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.slice' op 'offsets' and 'strides' need 2 entries each, got 1 and 2}}
  %0 = fusec.slice %a offsets [0] strides [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_rank(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.slice' op result has rank 1, expected 2}}
  %0 = fusec.slice %a offsets [0, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Sizes that fit one by one but add up past 2^63 (i1: a byte an element).
func.func @concat_size_wraps(%a: tensor<9223372036854775807xi1>, %b: tensor<3xi1>) {
  // expected-error @+1 {{'fusec.concat' op the inputs' sizes in dimension 0 add up past 2^63}}
  %0 = fusec.concat %a, %a, %b dim 0 : (tensor<9223372036854775807xi1>, tensor<9223372036854775807xi1>, tensor<3xi1>) -> tensor<1xi1>
  return
}

// -----

func.func @concat_shape(%a: tensor<4x8xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+1 {{'fusec.concat' op operand #1 ('inputs') has shape [3, 2], expected size 4 in dimension 0}}
  %0 = fusec.concat %a, %b dim 1 : (tensor<4x8xf32>, tensor<3x2xf32>) -> tensor<4x10xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<4x8xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{'fusec.concat' op result has shape [4, 11], expected [4, 10]}}
  %0 = fusec.concat %a, %b dim 1 : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x11xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.concat' op 'dim' has dimension 2, expected a value in [0, 2)}}
  %0 = fusec.concat %a, %a dim 2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_element(%a: tensor<4x8xf32>, %b: tensor<4x8xbf16>) {
  // expected-error @+1 {{'fusec.concat' op operand #1 ('inputs') has element type 'bf16', expected 'f32'}}
  %0 = fusec.concat %a, %b dim 1 : (tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @gather_indices(%t: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'fusec.gather' op operand #1 ('indices') has element type 'f32', expected i32 or i64}}
  %0 = fusec.gather %t[%i] axis 0 : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_shape(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'fusec.gather' op result has shape [3, 10], expected [3, 4]}}
  %0 = fusec.gather %t[%i] axis 0 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x10xf32>
  return
}

// -----

func.func @gather_axis(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'fusec.gather' op 'axis' has dimension 2, expected a value in [0, 2)}}
  %0 = fusec.gather %t[%i] axis 2 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @reduce_shape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.reduce' op result has shape [8], expected [4]}}
  %0 = fusec.reduce sum %a dims [1] : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @reduce_repeat(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.reduce' op 'dims' [1, 1] names dimension 1 twice}}
  %0 = fusec.reduce max %a dims [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_empty(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.reduce' op 'dims' is empty, expected at least one dimension}}
  %0 = fusec.reduce max %a dims [] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_mean_int(%a: tensor<4x8xi32>) {
  // expected-error @+1 {{'fusec.reduce' op 'mean' needs a float operand, got element type 'i32'}}
  %0 = fusec.reduce mean %a dims [1] : tensor<4x8xi32> -> tensor<4xi32>
  return
}

// -----

func.func @reduce_i1(%a: tensor<4x8xi1>) {
  // expected-error @+1 {{'fusec.reduce' op operand #0 ('input') has element type i1, expected a float or i32/i64 type}}
  %0 = fusec.reduce sum %a dims [1] : tensor<4x8xi1> -> tensor<4xi1>
  return
}

// -----

func.func @matmul_k(%a: tensor<4x8xbf16>, %b: tensor<9x16xbf16>) {
  // expected-error @+1 {{'fusec.matmul' op operand #1 ('rhs') has contraction size 9, expected 8 (the contraction size of operand #0 ('lhs'))}}
  %0 = fusec.matmul %a, %b : (tensor<4x8xbf16>, tensor<9x16xbf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<4x8xbf16>, %b: tensor<16x8xbf16>) {
  // expected-error @+1 {{'fusec.matmul' op result has shape [4, 8], expected [4, 16]}}
  %0 = fusec.matmul %a, %b {transpose_rhs} : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_dtype(%a: tensor<4x8xbf16>, %b: tensor<8x16xf16>) {
  // expected-error @+1 {{'fusec.matmul' op operand #1 ('rhs') has element type 'f16', expected 'bf16' (that of operand #0 ('lhs'))}}
  %0 = fusec.matmul %a, %b : (tensor<4x8xbf16>, tensor<8x16xf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<8xbf16>, %b: tensor<8x16xbf16>) {
  // expected-error @+1 {{'fusec.matmul' op operand #0 ('lhs') has rank 1, expected at least 2}}
  %0 = fusec.matmul %a, %b : (tensor<8xbf16>, tensor<8x16xbf16>) -> tensor<16xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xbf16>, %b: tensor<3x8x16xbf16>) {
  // expected-error @+1 {{'fusec.matmul' op operand #1 ('rhs') has batch dimension 0 of size 3, expected 2}}
  %0 = fusec.matmul %a, %b : (tensor<2x4x8xbf16>, tensor<3x8x16xbf16>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @matmul_int(%a: tensor<4x8xi32>, %b: tensor<8x16xi32>) {
  // expected-error @+1 {{'fusec.matmul' op operand #0 ('lhs') has element type 'i32', expected a float type}}
  %0 = fusec.matmul %a, %b : (tensor<4x8xi32>, tensor<8x16xi32>) -> tensor<4x16xi32>
  return
}

// -----

func.func @attention_rank(%q: tensor<8x32x64xbf16>, %k: tensor<1x8x32x64xbf16>) {
  // expected-error @+1 {{'fusec.attention' op operand #0 ('query') has rank 3, expected 4 ([batch, heads, seq, head_dim])}}
  %0 = fusec.attention %q, %k, %k {scale = 0.125 : f64} : (tensor<8x32x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @attention_heads(%q: tensor<1x8x32x64xbf16>, %k: tensor<1x3x32x64xbf16>) {
  // expected-error @+1 {{'fusec.attention' op operand #1 ('key') has 3 heads, expected a divisor of 8 (the heads of operand #0 ('query'))}}
  %0 = fusec.attention %q, %k, %k {scale = 0.125 : f64} : (tensor<1x8x32x64xbf16>, tensor<1x3x32x64xbf16>, tensor<1x3x32x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<1x8x32x64xbf16>, %k: tensor<1x8x32x128xbf16>) {
  // expected-error @+1 {{'fusec.attention' op operand #1 ('key') has head_dim 128, expected 64}}
  %0 = fusec.attention %q, %k, %k {scale = 0.125 : f64} : (tensor<1x8x32x64xbf16>, tensor<1x8x32x128xbf16>, tensor<1x8x32x128xbf16>) -> tensor<1x8x32x128xbf16>
  return
}

// -----

func.func @attention_kv_len(%q: tensor<1x8x32x64xbf16>, %k: tensor<1x8x32x64xbf16>, %v: tensor<1x8x16x64xbf16>) {
  // expected-error @+1 {{'fusec.attention' op operand #2 ('value') has sequence length 16, expected 32}}
  %0 = fusec.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x16x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @attention_batch(%q: tensor<1x8x32x64xbf16>, %k: tensor<2x8x32x64xbf16>) {
  // expected-error @+1 {{'fusec.attention' op operand #1 ('key') has batch 2, expected 1}}
  %0 = fusec.attention %q, %k, %k {scale = 0.125 : f64} : (tensor<1x8x32x64xbf16>, tensor<2x8x32x64xbf16>, tensor<2x8x32x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @attention_perm_moves_head_dim(%q: tensor<1x32x8x64xbf16>, %k: tensor<1x8x32x64xbf16>) {
  // expected-error @+1 {{'fusec.attention' op 'query_perm' (query) must permute [0, 1, 2] and keep 3 last}}
  %0 = fusec.attention %q, %k, %k {scale = 0.125 : f64, query_perm = array<i64: 0, 3, 1, 2>} : (tensor<1x32x8x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @attention_perm_not_a_permutation(%q: tensor<1x8x32x64xbf16>) {
  // expected-error @+1 {{'fusec.attention' op 'result_perm' (result) must permute [0, 1, 2] and keep 3 last}}
  %0 = fusec.attention %q, %q, %q {scale = 0.125 : f64, result_perm = array<i64: 0, 0, 1, 3>} : (tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @attention_perm_shapes(%q: tensor<1x32x8x64xbf16>, %k: tensor<1x8x32x64xbf16>) {
  // Q read through [0, 2, 1, 3] is [1, 8, 32, 64]; the result stored
  // through it is [1, 32, 8, 64].
  // expected-error @+1 {{'fusec.attention' op result has shape [1, 8, 32, 64], expected [1, 32, 8, 64]}}
  %0 = fusec.attention %q, %k, %k {scale = 0.125 : f64, query_perm = array<i64: 0, 2, 1, 3>, result_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x8x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @attention_scale(%q: tensor<1x8x32x64xbf16>) {
  // expected-error @+1 {{'fusec.attention' op 'scale' is 0.000000e+00, expected a finite non-zero value}}
  %0 = fusec.attention %q, %q, %q {scale = 0.0 : f64} : (tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @attention_result(%q: tensor<1x8x32x64xbf16>) {
  // expected-error @+1 {{'fusec.attention' op result has shape [1, 8, 64, 64], expected [1, 8, 32, 64]}}
  %0 = fusec.attention %q, %q, %q {scale = 0.125 : f64} : (tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>) -> tensor<1x8x64x64xbf16>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.layer_norm' op operand #1 ('scale') has shape [4], expected [8] (the last dimension of operand #0 ('input'))}}
  %0 = fusec.layer_norm %x, %g, %g : (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'fusec.layer_norm' op 'epsilon' is -1.000000e+00, expected a value >= 0}}
  %0 = fusec.layer_norm %x, %g, %g {epsilon = -1.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_int(%x: tensor<4x8xi32>, %g: tensor<8xi32>) {
  // expected-error @+1 {{'fusec.rms_norm' op operand #0 ('input') has element type 'i32', expected a float type}}
  %0 = fusec.rms_norm %x, %g : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
  return
}

// -----

func.func @rms_norm_result(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'fusec.rms_norm' op result has type 'tensor<4x8xbf16>', expected 'tensor<4x8xf32>'}}
  %0 = fusec.rms_norm %x, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'fusec.softmax' op 'dim' has dimension 2, expected a value in [0, 2)}}
  %0 = fusec.softmax %x dim 2 : tensor<4x8xf32>
  return
}

// -----

func.func @gelu_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{'fusec.gelu' op operand #0 ('input') has element type 'i64', expected a float type}}
  %0 = fusec.gelu %x : tensor<4xi64>
  return
}

// -----

func.func @silu_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.silu' op result has type 'tensor<8xf32>', expected 'tensor<4xf32>'}}
  %0 = fusec.silu %x : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @kernel_args(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.kernel' op body argument #0 has type 'tensor<8xf32>', expected 'tensor<4xf32>' (the type of operand #0)}}
  %0 = fusec.kernel (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<8xf32>):
    fusec.yield %x : tensor<8xf32>
  }
  return
}

// -----

func.func @kernel_arg_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.kernel' op body has 0 arguments, expected 1 (one per operand)}}
  %0 = fusec.kernel (%a) : (tensor<4xf32>) -> tensor<4xf32> {
    %c = fusec.constant dense<1.0> : tensor<4xf32>
    fusec.yield %c : tensor<4xf32>
  }
  return
}

// -----

func.func @kernel_yield(%a: tensor<4xf32>) {
  %0 = fusec.kernel (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %c = fusec.cast %x : tensor<4xf32> to tensor<4xbf16>
    // expected-error @+1 {{'fusec.yield' op operand #0 has type 'tensor<4xbf16>', expected 'tensor<4xf32>' (result #0 of the enclosing fusec.kernel)}}
    fusec.yield %c : tensor<4xbf16>
  }
  return
}

// -----

func.func @kernel_yield_count(%a: tensor<4xf32>) {
  %0 = fusec.kernel (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    // expected-error @+1 {{'fusec.yield' op yields 2 values, expected 1 (the results of the enclosing fusec.kernel)}}
    fusec.yield %x, %x : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

// A kernel is isolated: it cannot capture values from outside.
func.func @kernel_isolated(%a: tensor<4xf32>) {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = fusec.kernel () : () -> tensor<4xf32> {
    // expected-error @+1 {{using value defined outside the region}}
    %s = fusec.add %a, %a : tensor<4xf32>
    fusec.yield %s : tensor<4xf32>
  }
  return
}

// -----

func.func @yield_outside(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusec.yield' op expects parent op 'fusec.kernel'}}
  fusec.yield %a : tensor<4xf32>
}

// -----

// The fusec.* attributes the JIT and code generation read are verified.
func.func @launch_not_typed(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.launch' must be a #fusec.launch<...>}}
  %0 = fusec.kernel (%a) {fusec.launch = {strategy = "elementwise"}} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @launch_block(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{block 2048 is not in [1, 1024]}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = elementwise, grid = 1, block = 2048>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @launch_strategy(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{expected ::fusec::Strategy to be one of: elementwise, movement, row_warp, row_cta, row_stream, column, matmul_simt, matmul_wgmma, matmul_tcgen05}}
  // expected-error @+1 {{failed to parse Fusec_LaunchAttr parameter 'strategy'}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = rows, grid = 1, block = 256>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @matmul_plan_without_tile(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{strategy matmul_wgmma needs a tile and at least one stage}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 1, block = 384>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @resident_on_a_split_plan(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{resident k-blocks are for an unsplit matmul_wgmma plan}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 1, block = 384, tile = [64, 256, 64], stages = 4, split = 2, resident = 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @resident_on_a_row_plan(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{resident k-blocks are for an unsplit matmul_wgmma plan}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = elementwise, grid = 1, block = 128, resident = 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @resident_too_many(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{resident 65 is not in [0, 64] k-blocks}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 1, block = 384, tile = [64, 256, 64], stages = 4, resident = 65>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @unsplit_without_a_split(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unsplit tiles are for a matmul_wgmma plan that splits K}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 1, block = 384, tile = [128, 128, 64], stages = 4, unsplit = 132>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @unsplit_on_tcgen05(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unsplit tiles are for a matmul_wgmma plan that splits K}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = matmul_tcgen05, grid = 1, block = 256, tile = [128, 128, 64], stages = 4, split = 2, unsplit = 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @unsplit_negative(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unsplit -1 is not in [0, 2^31 - 1] tiles}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 1, block = 384, tile = [128, 128, 64], stages = 4, split = 2, unsplit = -1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @streamk_with_a_split(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{stream-K is for a matmul_wgmma plan without split or resident tiles}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 1, block = 384, tile = [128, 128, 64], stages = 4, split = 2, streamk = 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @streamk_two(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{streamk 2 is not 0 or 1}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 1, block = 384, tile = [128, 128, 64], stages = 4, streamk = 2>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @streamk_on_a_row_plan(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{stream-K is for a matmul_wgmma plan without split or resident tiles}}
  %0 = fusec.kernel (%a) {fusec.launch = #fusec.launch<strategy = row_warp, grid = 1, block = 128, streamk = 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @cache_hints_strings(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.cache_hints' must be an array of #fusec<cache_hint ...>}}
  %0 = fusec.kernel (%a) {fusec.cache_hints = ["stream"]} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @cache_hints_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.cache_hints' has 2 entries for 1 operands}}
  %0 = fusec.kernel (%a) {fusec.cache_hints = [#fusec<cache_hint stream>, #fusec<cache_hint keep>]} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @grid_zero(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.grid' has size 0, not in [1, 2^31 - 1]}}
  %0 = fusec.kernel (%a) {fusec.grid = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @ptx_not_string(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.ptx' must be a non-empty string}}
  %0 = fusec.kernel (%a) {fusec.ptx = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @strategy_string(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.strategy' must be a #fusec<strategy ...>}}
  %0 = fusec.kernel (%a) {fusec.strategy = "elementwise"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @launch_on_an_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.launch' belongs on a fusec.kernel}}
  %0 = fusec.exp %a {fusec.launch = #fusec.launch<strategy = elementwise, grid = 1, block = 256>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @misspelt(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown attribute 'fusec.gird'}}
  %0 = fusec.kernel (%a) {fusec.gird = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @tensor_map_box(%a: tensor<16x64xbf16>) -> tensor<16x64xbf16> {
  // expected-error @+1 {{the box's inner extent (256 bytes) exceeds the swizzle span of 128}}
  %0 = fusec.kernel (%a) {fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 16], strides = [128], box = [128, 8], swizzle = 128>]} : (tensor<16x64xbf16>) -> tensor<16x64xbf16> {
  ^bb0(%x: tensor<16x64xbf16>):
    fusec.yield %x : tensor<16x64xbf16>
  }
  return %0 : tensor<16x64xbf16>
}

// -----

func.func @tensor_map_im2col_corners(%a: tensor<2x7x7x64xf16>) -> tensor<2x7x7x64xf16> {
  // expected-error @+1 {{an im2col tensor map of 4 dims needs 2 lower and upper corners, not 1 and 2}}
  %0 = fusec.kernel (%a) {fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 7, 7, 2], strides = [128, 896, 6272], box = [64, 64, 1, 1], swizzle = 128, lower = [-1], upper = [-1, -1]>]} : (tensor<2x7x7x64xf16>) -> tensor<2x7x7x64xf16> {
  ^bb0(%x: tensor<2x7x7x64xf16>):
    fusec.yield %x : tensor<2x7x7x64xf16>
  }
  return %0 : tensor<2x7x7x64xf16>
}

// -----

func.func @tensor_map_im2col_range(%a: tensor<2x7x7x64xf16>) -> tensor<2x7x7x64xf16> {
  // expected-error @+1 {{im2col corner -129 is not in [-128, 127]}}
  %0 = fusec.kernel (%a) {fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 7, 7, 2], strides = [128, 896, 6272], box = [64, 64, 1, 1], swizzle = 128, lower = [-129, -1], upper = [-1, -1]>]} : (tensor<2x7x7x64xf16>) -> tensor<2x7x7x64xf16> {
  ^bb0(%x: tensor<2x7x7x64xf16>):
    fusec.yield %x : tensor<2x7x7x64xf16>
  }
  return %0 : tensor<2x7x7x64xf16>
}

// -----

func.func @tensor_map_element_strides(%a: tensor<2x7x7x64xf16>) -> tensor<2x7x7x64xf16> {
  // expected-error @+1 {{element stride 9 is not in [1, 8]}}
  %0 = fusec.kernel (%a) {fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 7, 7, 2], strides = [128, 896, 6272], box = [64, 64, 1, 1], swizzle = 128, lower = [-1, -1], upper = [-1, -1], element_strides = [1, 9, 1, 1]>]} : (tensor<2x7x7x64xf16>) -> tensor<2x7x7x64xf16> {
  ^bb0(%x: tensor<2x7x7x64xf16>):
    fusec.yield %x : tensor<2x7x7x64xf16>
  }
  return %0 : tensor<2x7x7x64xf16>
}

// -----

func.func @tensor_map_slot(%a: tensor<16x64xbf16>) -> tensor<16x64xbf16> {
  // expected-error @+1 {{a tensor map names slot 5 of a kernel with 2 operands and results}}
  %0 = fusec.kernel (%a) {fusec.tensor_maps = [#fusec.tensor_map<slot = 5, element_bytes = 2, dims = [64, 16], strides = [128], box = [64, 8], swizzle = 128>]} : (tensor<16x64xbf16>) -> tensor<16x64xbf16> {
  ^bb0(%x: tensor<16x64xbf16>):
    fusec.yield %x : tensor<16x64xbf16>
  }
  return %0 : tensor<16x64xbf16>
}

// -----

func.func @attention_mask(%q: tensor<1x8x32x64xbf16>, %k: tensor<1x8x32x64xbf16>, %m: tensor<1x16xi1>) {
  // expected-error @+1 {{'fusec.attention' op operand #3 ('mask') has type 'tensor<1x16xi1>', expected tensor<1x32xi1> ([batch, key sequence length])}}
  %0 = fusec.attention %q, %k, %k mask %m : tensor<1x16xi1> {scale = 0.125 : f64} : (tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>, tensor<1x8x32x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

func.func @pdl_inputs_past_operands(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.pdl_inputs' must be array<i64: operand, ...> of the kernel's operand indices (0 to 0)}}
  %0 = fusec.kernel (%a) {fusec.pdl_inputs = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @pdl_not_unit(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.pdl' is a unit attribute}}
  %0 = fusec.kernel (%a) {fusec.pdl = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @zero_init_past_results(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusec.zero_init' must be array<i64: result, ...> of the kernel's result indices (0 to 0)}}
  %0 = fusec.kernel (%a) {fusec.zero_init = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    fusec.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'fusec.abs_error_bound' must be a dictionary of `bounds` (an array of floats, one per result) and `input_magnitude` (a float)}}
func.func @abs_error_bound_without_magnitude(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {fusec.abs_error_bound = {bounds = [0.5]}} {
  return %a : tensor<4xf32>
}
