// x w - x w2, two K = 8 matmuls whose products nearly cancel (w2 = w + 0.01).
func.func @cancel(%x: tensor<64x8xf32>, %w: tensor<8x16xf32>) -> tensor<64x16xf32> {
  %d = fusec.constant dense<0.01> : tensor<8x16xf32>
  %w2 = fusec.add %w, %d : tensor<8x16xf32>
  %y = fusec.matmul %x, %w : (tensor<64x8xf32>, tensor<8x16xf32>) -> tensor<64x16xf32>
  %y2 = fusec.matmul %x, %w2 : (tensor<64x8xf32>, tensor<8x16xf32>) -> tensor<64x16xf32>
  %r = fusec.sub %y, %y2 : tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// A softmax-free normalization: rsqrt of a sum of squares that may be as
// small as 0, whose slope no range bounds.
func.func @norm(%x: tensor<32x128xf32>) -> tensor<32x128xf32> {
  %sq = fusec.mul %x, %x : tensor<32x128xf32>
  %s = fusec.reduce sum %sq dims [1] : tensor<32x128xf32> -> tensor<32xf32>
  %r = fusec.rsqrt %s : tensor<32xf32>
  %rb = fusec.broadcast %r dims [0] : tensor<32xf32> -> tensor<32x128xf32>
  %y = fusec.mul %x, %rb : tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}

// Softmax, decomposed: exp(x - max(x)) / sum(exp(x - max(x))). Each term's
// error is relative (e^E - 1 of itself), and so is the sum's; the
// denominator is at least 1.
func.func @softmax(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %p = fusec.softmax %x dim 1 : tensor<16x64xf32>
  return %p : tensor<16x64xf32>
}

// A value the graph already rounds to f8E5M2: stored in bf16 first, its
// E5M2 rounding may land one E5M2 step away (double rounding), which the
// bound must count (it counted E5M2's rounding as none).
func.func @e5m2(%x: tensor<256xf32>, %y: tensor<256xf32>) -> tensor<256xf8E5M2> {
  %a = fusec.mul %x, %y : tensor<256xf32>
  %b = fusec.tanh %a : tensor<256xf32>
  %c = fusec.cast %b : tensor<256xf32> to tensor<256xf8E5M2>
  return %c : tensor<256xf8E5M2>
}
