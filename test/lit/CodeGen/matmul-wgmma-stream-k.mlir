// matmul_wgmma's stream-K schedule (FUSEC_WGMMA_STREAM_K=1, for
// measurement; #fusec.launch's `streamk`): where whole 128-row tiles would
// leave over a tenth of the SMs idle in their last wave, the grid's CTAs
// share the I = tiles x k-blocks iterations evenly (at least 4 k-blocks a
// CTA), CTA c taking [c I / G, (c + 1) I / G) in tile order
// (include/fusec/Support/StreamK.h, checked by fusec-support-tests). A tile
// one CTA covers is whole: its accumulators go straight to the epilogue. A
// tile CTAs first .. last share is computed in parts: each writes its
// partial to workspace slot 2c (the tile its range starts inside) or 2c + 1
// (the one it ends inside), bumps the tile's counter, and the one that
// finds it at last - first sums the parts in order (the most parts a tile
// has, unrolled; those past its last add nothing) and runs the epilogue.
// RUN: env FUSEC_WGMMA_STREAM_K=1 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=PLAN
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=OFF
// RUN: env FUSEC_WGMMA_STREAM_K=1 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FUSEC_WGMMA_STREAM_K=1 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=ATTRS < %t/out.mlir
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/l4.k0_matmul.ptx %t/ragged_bias_gelu.k0_matmul_mul.ptx %t/swiglu.k0_matmul_mul.ptx %t/odd_transposed.k0_matmul.ptx %t/batched.k0_matmul.ptx
// The model counts each CTA's share: ResNet-50's last 3x3 as a GEMM,
// 20.5 us by 104 units of 128 x 64 (79% of the SMs), 18.2 with stream-K.
// RUN: env FUSEC_WGMMA_STREAM_K=1 fusec-opt %s --fusec-pipeline="target=h200" --fusec-roofline-report="target=h200" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODEL
// RUN: fusec-opt %s --fusec-pipeline="target=h200" --fusec-roofline-report="target=h200" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODEL-OFF
// sm_100a (tcgen05) never streams.
// RUN: env FUSEC_WGMMA_STREAM_K=1 fusec-opt %s --fusec-pipeline="target=b200" | FileCheck %s --check-prefix=B200
// A hand-written stream-K plan with a grid larger than its iterations is
// an error.
// RUN: not fusec-opt %S/Inputs/stream-k-bad.mlir --fusec-codegen 2>&1 | FileCheck %s --check-prefix=BAD
// REQUIRES: ptxas

// ResNet-50's 7 x 7 3x3 at batch 32 as a GEMM: 52 tiles of 128 x 128 (the
// 64-column rule's 104 tiles by default), 72 k-blocks: 3,744 iterations,
// 28 or 29 a CTA on 132; a tile meets at most four CTAs.
// PLAN-LABEL: func.func @l4
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 128, 64], stages = 6, smem = {{[0-9]+}}, regs = 232, streamk = 1>
// OFF-LABEL: func.func @l4
// OFF: tile = [128, 64, 64], stages = 8, smem = {{[0-9]+}}, regs = 232>
// Two slots a CTA of 128 x 128 f32 (264 x 64 KB) and a counter a tile.
// ATTRS-LABEL: func.func @l4
// ATTRS: fusec.scratch = array<i64: 17301504, 208>
// CHECK-LABEL: llvm.func @k0_matmul(
// The producer's tiles: from ctaid * 3744 / 132 / 72 to
// ((ctaid + 1) * 3744 / 132 - 1) / 72.
// CHECK: %[[I:.*]] = llvm.mlir.constant(3744 : i64) : i64
// CHECK: llvm.mul %{{.*}}, %[[I]] : i64
// CHECK: llvm.udiv %{{.*}}, %{{.*}} : i64
// The consumers: whole where the CTA's k-blocks are 0 .. 72.
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.cond_br %{{.*}}, ^[[EPI:bb[0-9]+]](%{{.*}} : !llvm.struct
// CHECK: llvm.atomicrmw add
// The sum of four parts' 16-byte loads, those past the tile's last CTA
// masked.
// CHECK-COUNT-4: llvm.load volatile %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: llvm.select
// CHECK: ^[[EPI]](%{{.*}}: !llvm.struct
// CHECK: llvm.return
func.func @l4(%a: tensor<1568x4608xbf16>, %b: tensor<4608x512xbf16>) -> tensor<1568x512xbf16> {
  %0 = fusec.matmul %a, %b : (tensor<1568x4608xbf16>, tensor<4608x512xbf16>) -> tensor<1568x512xbf16>
  return %0 : tensor<1568x512xbf16>
}

// Ragged M, N and K, a bias and tanh-GELU, f32 out: 16 tiles x 16 k-blocks
// on 64 CTAs (4 k-blocks each).
// PLAN-LABEL: func.func @ragged_bias_gelu
// PLAN: grid = 64, block = 384, tile = [128, 128, 64], {{.*}}streamk = 1>
func.func @ragged_bias_gelu(%a: tensor<1000x1000xbf16>, %b: tensor<1000x200xbf16>, %c: tensor<200xf32>) -> tensor<1000x200xf32> {
  %0 = fusec.matmul %a, %b : (tensor<1000x1000xbf16>, tensor<1000x200xbf16>) -> tensor<1000x200xf32>
  %cb = fusec.broadcast %c dims [1] : tensor<200xf32> -> tensor<1000x200xf32>
  %1 = fusec.add %0, %cb : tensor<1000x200xf32>
  %2 = fusec.gelu %1 {approximate = "tanh"} : tensor<1000x200xf32>
  return %2 : tensor<1000x200xf32>
}

// A dual GEMM (SwiGLU's gate and up, two accumulators a part).
// PLAN-LABEL: func.func @swiglu
// PLAN: grid = 128, block = 384, tile = [128, 128, 64], {{.*}}streamk = 1>
func.func @swiglu(%x: tensor<256x2048xbf16>, %wg: tensor<1024x2048xbf16>, %wu: tensor<1024x2048xbf16>) -> tensor<256x1024xbf16> {
  %g = fusec.matmul %x, %wg {transpose_rhs} : (tensor<256x2048xbf16>, tensor<1024x2048xbf16>) -> tensor<256x1024xbf16>
  %u = fusec.matmul %x, %wu {transpose_rhs} : (tensor<256x2048xbf16>, tensor<1024x2048xbf16>) -> tensor<256x1024xbf16>
  %s = fusec.silu %g : tensor<256x1024xbf16>
  %y = fusec.mul %s, %u : tensor<256x1024xbf16>
  return %y : tensor<256x1024xbf16>
}

// An odd N (127) read through a transposed rhs: the epilogue stages its
// rows.
// PLAN-LABEL: func.func @odd_transposed
// PLAN: grid = 78, block = 384, tile = [128, 128, 64], {{.*}}streamk = 1>
func.func @odd_transposed(%a: tensor<3000x832xbf16>, %w: tensor<127x832xbf16>) -> tensor<3000x127xbf16> {
  %0 = fusec.matmul %a, %w {transpose_rhs} : (tensor<3000x832xbf16>, tensor<127x832xbf16>) -> tensor<3000x127xbf16>
  return %0 : tensor<3000x127xbf16>
}

// A batch of three: 6 x 2 tiles an image.
// PLAN-LABEL: func.func @batched
// PLAN: grid = 132, block = 384, tile = [128, 128, 64], {{.*}}streamk = 1>
func.func @batched(%a: tensor<3x700x1024xbf16>, %b: tensor<3x1024x192xbf16>) -> tensor<3x700x192xbf16> {
  %0 = fusec.matmul %a, %b : (tensor<3x700x1024xbf16>, tensor<3x1024x192xbf16>) -> tensor<3x700x192xbf16>
  return %0 : tensor<3x700x192xbf16>
}

// MODEL-LABEL: @l4
// MODEL: k0_matmul {{.*}} tensor    18.157 us
// MODEL-OFF-LABEL: @l4
// MODEL-OFF: k0_matmul {{.*}} tensor    20.465 us

// B200-NOT: streamk

// BAD: error: fusec-codegen: matmul_wgmma: stream-K over 128 iterations on a grid of 132
