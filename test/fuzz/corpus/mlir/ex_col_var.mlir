func.func @col_var(%x: tensor<777x40xf32>) -> tensor<40xf32> {
  %m = fusec.reduce mean %x dims [0] : tensor<777x40xf32> -> tensor<40xf32>
  %b = fusec.broadcast %m dims [1] : tensor<40xf32> -> tensor<777x40xf32>
  %d = fusec.sub %x, %b : tensor<777x40xf32>
  %s = fusec.mul %d, %d : tensor<777x40xf32>
  %v = fusec.reduce mean %s dims [0] : tensor<777x40xf32> -> tensor<40xf32>
  return %v : tensor<40xf32>
}
