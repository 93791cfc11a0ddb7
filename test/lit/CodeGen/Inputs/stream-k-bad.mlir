// A stream-K plan of 128 iterations (8 tiles of 16 k-blocks) on 132 CTAs:
// four would have none. matmul-wgmma-stream-k.mlir checks the error.
func.func @f(%x: tensor<512x1024xbf16>, %w: tensor<1024x256xbf16>) -> tensor<512x256xbf16> {
  %0 = fusec.kernel "k"(%x, %w) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 128, 64], stages = 6, smem = 230512, regs = 232, streamk = 1>} : (tensor<512x1024xbf16>, tensor<1024x256xbf16>) -> tensor<512x256xbf16> {
  ^bb0(%a: tensor<512x1024xbf16>, %b: tensor<1024x256xbf16>):
    %1 = fusec.matmul %a, %b : (tensor<512x1024xbf16>, tensor<1024x256xbf16>) -> tensor<512x256xbf16>
    fusec.yield %1 : tensor<512x256xbf16>
  }
  return %0 : tensor<512x256xbf16>
}
