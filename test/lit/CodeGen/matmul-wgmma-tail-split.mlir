// matmul_wgmma's tail split (FUSEC_WGMMA_TAIL_SPLIT): a plan whose last
// wave over the SMs holds at most half of them runs the full waves' tiles
// whole and splits only the last wave's tiles into parts of K
// (#fusec.launch's `unsplit`: the first 132 units are whole tiles, then
// each remaining tile's `split` parts). Without it, 134 tiles on 132 SMs
// take two tile times where two SMs work in the second; with it, those two
// tiles' parts fill the SMs. The consumers branch once a unit: a whole
// tile's accumulators go straight to the epilogue; a part writes the
// workspace, and the tile's last part sums the parts and runs the same
// epilogue (one copy of its code).
// RUN: env FUSEC_WGMMA_TAIL_SPLIT=1 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=PLAN
// RUN: env FUSEC_WGMMA_TAIL_SPLIT=0 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=OFF
// RUN: env FUSEC_WGMMA_TAIL_SPLIT=1 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FUSEC_WGMMA_TAIL_SPLIT=1 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=ATTRS < %t/out.mlir
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/tail.k0_matmul.ptx %t/ragged_bias_gelu.k0_matmul_mul.ptx %t/odd_transposed.k0_matmul.ptx %t/batched.k0_matmul.ptx
// The model counts the busiest SM's work: two tile times without the
// split, one and a quarter with it (@ragged_bias_gelu, bound by the tensor
// cores: 21.8 us -> 18.0).
// RUN: env FUSEC_WGMMA_TAIL_SPLIT=1 fusec-opt %s --fusec-pipeline="target=h200" --fusec-roofline-report="target=h200" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODEL
// RUN: env FUSEC_WGMMA_TAIL_SPLIT=0 fusec-opt %s --fusec-pipeline="target=h200" --fusec-roofline-report="target=h200" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODEL-OFF
// tcgen05 (sm_100a) splits every tile or none.
// RUN: env FUSEC_WGMMA_TAIL_SPLIT=1 fusec-opt %s --fusec-pipeline="target=b200" | FileCheck %s --check-prefix=B200
// A hand-written plan with as many unsplit tiles as there are is an error
// (unsplit tiles without a split: test/lit/Dialect/invalid.mlir).
// RUN: not fusec-opt %S/Inputs/tail-split-bad.mlir --fusec-codegen 2>&1 | FileCheck %s --check-prefix=BAD
// REQUIRES: ptxas

// 134 tiles of 128 x 64 (N = 64), K = 1024 (16 k-blocks): 132 whole, the
// last two in four parts of 4 k-blocks: 140 units on 132 CTAs.
// PLAN-LABEL: func.func @tail
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 64, 64], stages = 8, split = 4, smem = {{[0-9]+}}, regs = 232, unsplit = 132>
// OFF-LABEL: func.func @tail
// OFF-NOT: split
// OFF: return
// ATTRS-LABEL: func.func @tail
// Two split tiles: 4 parts of 128 x 64 f32 each, and two counters.
// ATTRS: fusec.scratch = array<i64: 262144, 8>
// The producer and the consumers walk 140 units; a unit below 132 is a
// whole tile (part 4: all 16 k-blocks).
// CHECK-LABEL: llvm.func @k0_matmul(
// CHECK: llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
// CHECK: %[[WHOLE:.*]] = llvm.icmp "ult" %[[UNIT:.*]], %{{.*}} : i32
// CHECK: llvm.select %[[WHOLE]]
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.cond_br %{{.*}}, ^[[EPI:bb[0-9]+]](%{{.*}} : !llvm.struct
// CHECK: llvm.atomicrmw add
// CHECK: ^[[EPI]](%{{.*}}: !llvm.struct
// CHECK: llvm.return
func.func @tail(%a: tensor<17152x1024xbf16>, %b: tensor<1024x64xbf16>) -> tensor<17152x64xbf16> {
  %0 = fusec.matmul %a, %b : (tensor<17152x1024xbf16>, tensor<1024x64xbf16>) -> tensor<17152x64xbf16>
  return %0 : tensor<17152x64xbf16>
}

// Ragged M, N and K with a bias and tanh-GELU fused, f32 out: 134 tiles of
// 128 x 128, K = 1000 (16 k-blocks, the last ragged) in four parts.
// PLAN-LABEL: func.func @ragged_bias_gelu
// PLAN: tile = [128, 128, 64], stages = 6, split = 4, smem = {{[0-9]+}}, regs = 232, unsplit = 132>
func.func @ragged_bias_gelu(%a: tensor<17100x1000xbf16>, %b: tensor<1000x120xbf16>, %c: tensor<120xf32>) -> tensor<17100x120xf32> {
  %0 = fusec.matmul %a, %b : (tensor<17100x1000xbf16>, tensor<1000x120xbf16>) -> tensor<17100x120xf32>
  %cb = fusec.broadcast %c dims [1] : tensor<120xf32> -> tensor<17100x120xf32>
  %1 = fusec.add %0, %cb : tensor<17100x120xf32>
  %2 = fusec.gelu %1 {approximate = "tanh"} : tensor<17100x120xf32>
  return %2 : tensor<17100x120xf32>
}

// A transposed rhs of an odd N (127: the epilogue stages its rows), K = 832
// (13 k-blocks) in three parts of 5, 5 and 3.
// PLAN-LABEL: func.func @odd_transposed
// PLAN: tile = [128, 128, 64], stages = 6, split = 3, smem = {{[0-9]+}}, regs = 232, unsplit = 132>
func.func @odd_transposed(%a: tensor<17152x832xbf16>, %w: tensor<127x832xbf16>) -> tensor<17152x127xbf16> {
  %0 = fusec.matmul %a, %w {transpose_rhs} : (tensor<17152x832xbf16>, tensor<127x832xbf16>) -> tensor<17152x127xbf16>
  return %0 : tensor<17152x127xbf16>
}

// A batch of two: 67 tiles an image, 134 in all.
// PLAN-LABEL: func.func @batched
// PLAN: tile = [128, 64, 64], stages = 8, split = 4, smem = {{[0-9]+}}, regs = 232, unsplit = 132>
func.func @batched(%a: tensor<2x8576x1024xbf16>, %b: tensor<2x1024x64xbf16>) -> tensor<2x8576x64xbf16> {
  %0 = fusec.matmul %a, %b : (tensor<2x8576x1024xbf16>, tensor<2x1024x64xbf16>) -> tensor<2x8576x64xbf16>
  return %0 : tensor<2x8576x64xbf16>
}

// MODEL-LABEL: @ragged_bias_gelu
// MODEL: k0_matmul_mul {{.*}} tensor    17.954 us
// MODEL-OFF-LABEL: @ragged_bias_gelu
// MODEL-OFF: k0_matmul_mul {{.*}} tensor    21.786 us

// B200-NOT: unsplit

// BAD: error: fusec-codegen: matmul_wgmma: 134 unsplit tiles of 134 with a split of 2 (re-run fusec-tile)
