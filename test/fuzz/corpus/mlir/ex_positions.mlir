func.func @positions(%ids: tensor<4x300xi64>, %tri: tensor<300x300xi1>) -> tensor<4x300xi64> {
  %one = fusec.constant dense<1> : tensor<4x300xi64>
  %pad = fusec.compare eq, %ids, %one : tensor<4x300xi64>
  %keep = fusec.not %pad : tensor<4x300xi1>
  %k = fusec.cast %keep : tensor<4x300xi1> to tensor<4x300xi64>
  %w = fusec.broadcast %k dims [0, 2] : tensor<4x300xi64> -> tensor<4x300x300xi64>
  %m = fusec.broadcast %tri dims [1, 2] : tensor<300x300xi1> -> tensor<4x300x300xi1>
  %zero = fusec.constant dense<0> : tensor<4x300x300xi64>
  %s = fusec.select %m, %w, %zero : tensor<4x300x300xi64>
  %c = fusec.reduce sum %s dims [2] : tensor<4x300x300xi64> -> tensor<4x300xi64>
  %p = fusec.mul %c, %k : tensor<4x300xi64>
  %q = fusec.add %p, %one : tensor<4x300xi64>
  return %q : tensor<4x300xi64>
}
