func.func @f() -> tensor<2199023255552xf32> {
  %0 = fusec.constant dense<1.0> : tensor<2199023255552xf32>
  return %0 : tensor<2199023255552xf32>
}
