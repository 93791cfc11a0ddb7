func.func @slice_concat(%a: tensor<10x20xf32>, %b: tensor<10x7xf32>) -> tensor<10x17xf32> {
  %s = fusec.slice %a offsets [0, 3] strides [1, 2] : tensor<10x20xf32> -> tensor<10x8xf32>
  %e = fusec.exp %s : tensor<10x8xf32>
  %c = fusec.concat %e, %b, %s dim 1 : (tensor<10x8xf32>, tensor<10x7xf32>, tensor<10x8xf32>) -> tensor<10x23xf32>
  %r = fusec.slice %c offsets [0, 2] strides [1, 1] : tensor<10x23xf32> -> tensor<10x17xf32>
  return %r : tensor<10x17xf32>
}
