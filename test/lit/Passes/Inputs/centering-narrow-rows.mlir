// Layer norms whose rows cancel (random_graphs.py's finds, minimized): over
// a last dim of 1 every x - mean(x) is exactly 0 (the result is the bias),
// and over 2 values the difference can be as small as their rounding.
func.func @one(%x: tensor<8x1xf32>, %g: tensor<1xf32>, %b: tensor<1xf32>) -> tensor<8x1xf32> {
  %y = fusec.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<8x1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x1xf32>
  return %y : tensor<8x1xf32>
}
func.func @two(%x: tensor<2x2xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2x2xf32>) {
  %s = fusec.reduce sum %x dims [0] : tensor<2x2xf32> -> tensor<2xf32>
  %y = fusec.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %s, %y : tensor<2xf32>, tensor<2x2xf32>
}
