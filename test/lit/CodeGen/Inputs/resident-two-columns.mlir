// A plan with resident rhs tiles over two columns of tiles (N = 512 by
// 256-column tiles): each column has its own rhs tile, so none can stay.
// matmul-wgmma-resident.mlir checks the error.
func.func @f(%x: tensor<4096x64xf16>, %w: tensor<64x512xf16>) -> tensor<4096x512xf16> {
  %0 = fusec.kernel "k"(%x, %w) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [64, 256, 64], stages = 8, smem = 132240, regs = 232, resident = 1>} : (tensor<4096x64xf16>, tensor<64x512xf16>) -> tensor<4096x512xf16> {
  ^bb0(%a: tensor<4096x64xf16>, %b: tensor<64x512xf16>):
    %1 = fusec.matmul %a, %b : (tensor<4096x64xf16>, tensor<64x512xf16>) -> tensor<4096x512xf16>
    fusec.yield %1 : tensor<4096x512xf16>
  }
  return %0 : tensor<4096x512xf16>
}
