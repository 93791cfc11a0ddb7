// A plan that keeps every one of its 134 tiles whole yet names a split
// (unsplit = the tile count): code generation refuses it.
// matmul-wgmma-tail-split.mlir checks the error.
func.func @f(%x: tensor<17152x1024xbf16>, %w: tensor<1024x64xbf16>) -> tensor<17152x64xbf16> {
  %0 = fusec.kernel "k"(%x, %w) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 64, 64], stages = 8, split = 2, smem = 230544, regs = 232, unsplit = 134>} : (tensor<17152x1024xbf16>, tensor<1024x64xbf16>) -> tensor<17152x64xbf16> {
  ^bb0(%a: tensor<17152x1024xbf16>, %b: tensor<1024x64xbf16>):
    %1 = fusec.matmul %a, %b : (tensor<17152x1024xbf16>, tensor<1024x64xbf16>) -> tensor<17152x64xbf16>
    fusec.yield %1 : tensor<17152x64xbf16>
  }
  return %0 : tensor<17152x64xbf16>
}
