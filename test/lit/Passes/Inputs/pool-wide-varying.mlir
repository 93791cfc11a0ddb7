// pool-divisors.mlir: a mean pool whose divisors differ along a dim of 2^25
// positions (past the 2^24 a divisor vector may hold).
func.func @p(%x: tensor<1x1x4x33554432xf32>) -> tensor<1x1x4x33554432xf32> {
  %0 = fusec.pool mean %x {dilations = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pad_high = array<i64: 1, 1>, pad_low = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<1x1x4x33554432xf32> -> tensor<1x1x4x33554432xf32>
  return %0 : tensor<1x1x4x33554432xf32>
}
