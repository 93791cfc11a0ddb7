// A matmul_wgmma plan whose shared memory is less than its tile needs (an
// odd N's staged epilogue included, as a plan written by an older fusec
// lacks) is an error, not a kernel that writes past its allocation.
// RUN: not fusec-opt %s --fusec-codegen 2>&1 | FileCheck %s
// CHECK: error: fusec-codegen: matmul_wgmma: the plan's shared memory (132176 bytes) is less than the 141392 this tile needs (re-run fusec-tile)
func.func @f(%x: tensor<256x768xf16>, %w: tensor<1001x768xf16>) -> tensor<256x1001xf16> {
  %0 = fusec.kernel "k"(%x, %w) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 8, block = 384, tile = [128, 128, 64], stages = 4, smem = 132176, regs = 232>} : (tensor<256x768xf16>, tensor<1001x768xf16>) -> tensor<256x1001xf16> {
  ^bb0(%a: tensor<256x768xf16>, %b: tensor<1001x768xf16>):
    %1 = fusec.matmul %a, %b {transpose_rhs} : (tensor<256x768xf16>, tensor<1001x768xf16>) -> tensor<256x1001xf16>
    fusec.yield %1 : tensor<256x1001xf16>
  }
  return %0 : tensor<256x1001xf16>
}
