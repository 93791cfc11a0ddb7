// Matmuls whose tiles leave SMs idle in their last wave: under
// FUSEC_WGMMA_STREAM_K=1 or FUSEC_WGMMA_TAIL_SPLIT=1 their plans take the
// stream-K and tail-split schedules (a seed for fuzz_mlir campaigns with
// those switches; CI replays it under the default plans).
func.func @ragged_bias_gelu(%a: tensor<1000x1000xbf16>, %b: tensor<1000x200xbf16>, %c: tensor<200xf32>) -> tensor<1000x200xf32> {
  %0 = fusec.matmul %a, %b : (tensor<1000x1000xbf16>, tensor<1000x200xbf16>) -> tensor<1000x200xf32>
  %cb = fusec.broadcast %c dims [1] : tensor<200xf32> -> tensor<1000x200xf32>
  %1 = fusec.add %0, %cb : tensor<1000x200xf32>
  %2 = fusec.gelu %1 {approximate = "tanh"} : tensor<1000x200xf32>
  return %2 : tensor<1000x200xf32>
}
func.func @tail(%a: tensor<17152x1024xbf16>, %b: tensor<1024x64xbf16>) -> tensor<17152x64xbf16> {
  %0 = fusec.matmul %a, %b : (tensor<17152x1024xbf16>, tensor<1024x64xbf16>) -> tensor<17152x64xbf16>
  return %0 : tensor<17152x64xbf16>
}
func.func @swiglu(%x: tensor<256x2048xbf16>, %wg: tensor<1024x2048xbf16>, %wu: tensor<1024x2048xbf16>) -> tensor<256x1024xbf16> {
  %g = fusec.matmul %x, %wg {transpose_rhs} : (tensor<256x2048xbf16>, tensor<1024x2048xbf16>) -> tensor<256x1024xbf16>
  %u = fusec.matmul %x, %wu {transpose_rhs} : (tensor<256x2048xbf16>, tensor<1024x2048xbf16>) -> tensor<256x1024xbf16>
  %s = fusec.silu %g : tensor<256x1024xbf16>
  %y = fusec.mul %s, %u : tensor<256x1024xbf16>
  return %y : tensor<256x1024xbf16>
}
