// matmul_wgmma's resident rhs tiles (FUSEC_WGMMA_RESIDENT_B=1, for
// measurement; off by default). A plan of one column of tiles reads the same
// rhs tile for every unit: a 1x1 convolution's GEMM (K = 64 channels by 256
// filters, here as the batch of images a channels-last convolution gives)
// reloaded its whole 32 KB filter with each 64-row tile of 8 KB of
// activations. Resident, the producer loads every k-block of the rhs once
// into its own region, on its own barrier, before its unit loop; a stage
// holds the lhs alone (8 KB), so 8 stages fit in 132 KB where 4 stages of
// 40 KB took 197 KB; the consumers wait for the rhs once and read it at
// their k-block. Two columns of tiles, a split K, a batch of rhs or a
// swapped (decode) tile stream their rhs as before.
// RUN: env FUSEC_WGMMA_RESIDENT_B=1 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=PLAN
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=DEFAULT
// RUN: env FUSEC_WGMMA_RESIDENT_B=0 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=DEFAULT
// RUN: env FUSEC_WGMMA_RESIDENT_B=1 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FUSEC_WGMMA_RESIDENT_B=1 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/pointwise.k0_matmul_max.ptx %t/reduce.k0_matmul.ptx %t/transposed.k0_matmul.ptx %t/dual.k0_matmul_mul.ptx
// The cooperative 128-row tile (two consumer warpgroups share each tile and
// the resident rhs).
// RUN: env FUSEC_WGMMA_RESIDENT_B=1 FUSEC_WGMMA_PINGPONG=0 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=COOP
// RUN: rm -rf %t.coop && mkdir -p %t.coop
// RUN: env FUSEC_WGMMA_RESIDENT_B=1 FUSEC_WGMMA_PINGPONG=0 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="dump-dir=%t.coop" -o %t.coop/out.mlir
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t.coop/reduce.k0_matmul.ptx %t.coop/dual.k0_matmul_mul.ptx
// The sm_100a plan (tcgen05) never keeps its rhs resident.
// RUN: env FUSEC_WGMMA_RESIDENT_B=1 fusec-opt %s --fusec-pipeline="target=b200" | FileCheck %s --check-prefix=B200
// A hand-written plan that asks for resident tiles where they cannot be is
// an error naming what they need.
// RUN: not fusec-opt %S/Inputs/resident-two-columns.mlir --fusec-codegen 2>&1 | FileCheck %s --check-prefix=BAD
// REQUIRES: ptxas

// PLAN-LABEL: func.func @pointwise
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 98, block = 384, tile = [64, 256, 64], stages = 8, smem = 132240, regs = 232, resident = 1>
// K = 256 by 64 filters: the rhs's four k-blocks (32 KB) stay.
// PLAN-LABEL: func.func @reduce
// PLAN: #fusec.launch<strategy = matmul_wgmma, {{.*}}tile = [64, 64, 64], stages = 8, {{.*}}resident = 4>
// A filter of [N, K] (transposed rhs: one box of 64 K by 256 a k-block),
// as a channels-last 1x1 convolution reads it.
// PLAN-LABEL: func.func @transposed
// PLAN: #fusec.launch<strategy = matmul_wgmma, {{.*}}tile = [64, 256, 64], stages = 8, {{.*}}resident = 1>
// Two rhs (a gate and an up projection sharing x): both stay, per k-block.
// PLAN-LABEL: func.func @dual
// PLAN: #fusec.launch<strategy = matmul_wgmma, {{.*}}tile = [64, 128, 64], stages = 8, smem = 165008, regs = 232, resident = 2>
// PLAN-LABEL: func.func @wide
// PLAN: #fusec.launch<strategy = matmul_wgmma, {{.*}}tile = [64, 256, 64], stages = 4, smem = 197712, regs = 232>
// PLAN-LABEL: func.func @batched_rhs
// PLAN-NOT: resident
// PLAN: return
// COOP-LABEL: func.func @reduce
// COOP: #fusec.launch<strategy = matmul_wgmma, {{.*}}tile = [128, 64, 64], stages = 8, {{.*}}resident = 4>
// COOP-LABEL: func.func @dual
// COOP: #fusec.launch<strategy = matmul_wgmma, {{.*}}tile = [128, 128, 64], stages = 8, {{.*}}resident = 2>
// DEFAULT-NOT: resident
// B200-NOT: resident

// The producer: the resident rhs's barrier armed once for its 32 KB, its
// four 64-column boxes at n = 0, 64, 128, 192 (k = 0) on that barrier, then
// the unit loop, whose stages arm 8 KB (the lhs) each.
// CHECK-LABEL: llvm.func @k0_matmul_max(
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: %[[RB_AT:.*]] = llvm.mlir.constant(131208 : i32) : i32
// CHECK: %[[RB:.*]] = llvm.getelementptr %{{.*}}[%[[RB_AT]]]
// CHECK: %[[ALL:.*]] = llvm.mlir.constant(32768 : i32) : i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[RB]], %[[ALL]]
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[RB]], box
// CHECK-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[RB]], box
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %[[STAGE:[0-9]+]]
// The consumers wait for the resident rhs (its one phase: parity 0) before
// their units.
// CHECK: nvvm.setmaxregister  increase 232
// CHECK: %[[WB_AT:.*]] = llvm.mlir.constant(131208 : i32) : i32
// CHECK-NEXT: %[[WB:.*]] = llvm.getelementptr %{{.*}}[%[[WB_AT]]]
// CHECK-NEXT: %[[PARITY:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: nvvm.mbarrier.try_wait.parity %[[WB]], %[[PARITY]]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>
// CHECK: llvm.return
func.func @pointwise(%x: tensor<8x784x64xf16>, %w: tensor<64x256xf16>, %b: tensor<256xf16>) -> tensor<8x784x256xf16> {
  %mm = fusec.matmul %x, %w : (tensor<8x784x64xf16>, tensor<64x256xf16>) -> tensor<8x784x256xf16>
  %bb = fusec.broadcast %b dims [2] : tensor<256xf16> -> tensor<8x784x256xf16>
  %y = fusec.add %mm, %bb : tensor<8x784x256xf16>
  %c0 = fusec.constant dense<0.0> : tensor<8x784x256xf16>
  %z = fusec.max %y, %c0 : tensor<8x784x256xf16>
  return %z : tensor<8x784x256xf16>
}

func.func @reduce(%x: tensor<12544x256xf16>, %w: tensor<256x64xf16>) -> tensor<12544x64xf16> {
  %mm = fusec.matmul %x, %w : (tensor<12544x256xf16>, tensor<256x64xf16>) -> tensor<12544x64xf16>
  return %mm : tensor<12544x64xf16>
}

func.func @transposed(%x: tensor<6272x64xf16>, %w: tensor<256x64xf16>) -> tensor<6272x256xf16> {
  %mm = fusec.matmul %x, %w {transpose_rhs} : (tensor<6272x64xf16>, tensor<256x64xf16>) -> tensor<6272x256xf16>
  return %mm : tensor<6272x256xf16>
}

func.func @dual(%x: tensor<4096x128xf16>, %wg: tensor<128x128xf16>, %wu: tensor<128x128xf16>) -> tensor<4096x128xf16> {
  %g = fusec.matmul %x, %wg : (tensor<4096x128xf16>, tensor<128x128xf16>) -> tensor<4096x128xf16>
  %u = fusec.matmul %x, %wu : (tensor<4096x128xf16>, tensor<128x128xf16>) -> tensor<4096x128xf16>
  %s = fusec.silu %g : tensor<4096x128xf16>
  %y = fusec.mul %s, %u : tensor<4096x128xf16>
  return %y : tensor<4096x128xf16>
}

func.func @wide(%x: tensor<4096x64xf16>, %w: tensor<64x512xf16>) -> tensor<4096x512xf16> {
  %mm = fusec.matmul %x, %w : (tensor<4096x64xf16>, tensor<64x512xf16>) -> tensor<4096x512xf16>
  return %mm : tensor<4096x512xf16>
}

func.func @batched_rhs(%x: tensor<8x784x64xf16>, %w: tensor<8x64x256xf16>) -> tensor<8x784x256xf16> {
  %mm = fusec.matmul %x, %w : (tensor<8x784x64xf16>, tensor<8x64x256xf16>) -> tensor<8x784x256xf16>
  return %mm : tensor<8x784x256xf16>
}

// BAD: error: {{.*}}matmul_wgmma: resident rhs tiles need one column of tiles (this plan has 2), no split, no swapped tile and no batch of rhs (re-run fusec-tile)
