// matmul_wgmma's ping-pong schedule: over a short K (at most 12 k-blocks:
// ViT's MLP up projection, K = 768, with a bias and an erf GELU as the ONNX
// exporter writes it), two consumer warpgroups own whole 64-row tiles and
// take the CTA's units in turn; their mainloops alternate on named
// barriers 4 and 5, so one's epilogue runs beside the other's wgmmas. A
// long K keeps the cooperative 128-row tile; the escape switch
// FUSEC_WGMMA_PINGPONG=0 keeps it everywhere.
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: env FUSEC_WGMMA_PINGPONG=0 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=COOP
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/vit_fc1.k0_matmul_mul.ptx %t/residual.k0_matmul_add.ptx
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=small | FileCheck %s --check-prefix=SAME
// REQUIRES: ptxas

// PLAN-LABEL: func.func @vit_fc1
// PLAN: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [64, 256, 64], stages = 4
// COOP-LABEL: func.func @vit_fc1
// COOP: #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 256, 64], stages = 4
// CHECK-LABEL: llvm.func @k0_matmul_mul(
// Each stage's "empty" barrier waits for one warpgroup (128 threads), not
// both: a stage belongs to one consumer's unit.
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %[[ONE]]
// CHECK: %[[WG:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %[[WG]]
// CHECK: nvvm.setmaxregister  increase 232
// Warpgroup w starts at unit ctaid + w nctaid, k-block w numK (12), and
// steps two units (DAG: the host compiler decides which operand is built
// first).
// CHECK-DAG: %[[NCTA:.*]] = nvvm.read.ptx.sreg.nctaid.x
// CHECK-DAG: %[[CTA:.*]] = nvvm.read.ptx.sreg.ctaid.x
// CHECK-DAG: %[[SHIFT:.*]] = llvm.mul %[[W:[^,]*]], %[[NCTA]]
// CHECK-DAG: %[[FIRST:.*]] = llvm.add %[[CTA]], %[[SHIFT]]
// CHECK-DAG: %[[NUMK:.*]] = llvm.mlir.constant(12 : i32)
// CHECK-DAG: %[[IT:.*]] = llvm.mul %[[W]], %[[NUMK]]
// CHECK: llvm.br ^bb{{[0-9]+}}(%[[FIRST]], %[[IT]] : i32, i32)
// Before a unit's mainloop (all but the CTA's first): its turn, barrier
// 4 + w, 256 threads (the other warpgroup arrives there).
// CHECK: llvm.icmp "uge"
// CHECK: %[[B4:.*]] = llvm.add %[[W]], %{{.*}}
// CHECK: nvvm.barrier id = %[[B4]] number_of_threads =
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// After its last wait on a "full" barrier: the other's turn (5 - w), if
// the sequence goes on.
// CHECK: %[[B5:.*]] = llvm.sub %{{.*}}, %[[W]]
// CHECK: nvvm.barrier.arrive id = %[[B5]] number_of_threads =
// The division by a constant is a multiply (no IEEE division's code).
// CHECK-NOT: llvm.fdiv
// CHECK: llvm.return
func.func @vit_fc1(%x: tensor<6304x768xf16>, %w: tensor<768x3072xf16>, %b: tensor<3072xf16>) -> tensor<6304x3072xf16> {
  %mm = fusec.matmul %x, %w : (tensor<6304x768xf16>, tensor<768x3072xf16>) -> tensor<6304x3072xf16>
  %bb = fusec.broadcast %b dims [1] : tensor<3072xf16> -> tensor<6304x3072xf16>
  %e0 = fusec.add %mm, %bb : tensor<6304x3072xf16>
  %c1 = fusec.constant dense<1.4142135> : tensor<6304x3072xf16>
  %e1 = fusec.div %e0, %c1 : tensor<6304x3072xf16>
  %e2 = fusec.erf %e1 : tensor<6304x3072xf16>
  %c2 = fusec.constant dense<1.0> : tensor<6304x3072xf16>
  %e3 = fusec.add %e2, %c2 : tensor<6304x3072xf16>
  %e4 = fusec.mul %e0, %e3 : tensor<6304x3072xf16>
  %c3 = fusec.constant dense<0.5> : tensor<6304x3072xf16>
  %e5 = fusec.mul %e4, %c3 : tensor<6304x3072xf16>
  return %e5 : tensor<6304x3072xf16>
}

// A residual with K = 768: ping-pong too.
// PLAN-LABEL: func.func @residual
// PLAN: block = 384, tile = [64, {{[0-9]+}}, 64]
func.func @residual(%x: tensor<4096x768xbf16>, %w: tensor<768x768xbf16>, %r: tensor<4096x768xbf16>) -> tensor<4096x768xbf16> {
  %mm = fusec.matmul %x, %w : (tensor<4096x768xbf16>, tensor<768x768xbf16>) -> tensor<4096x768xbf16>
  %y = fusec.add %mm, %r : tensor<4096x768xbf16>
  return %y : tensor<4096x768xbf16>
}

// A bare matmul over a long K: the tensor cores bind, cooperative 128 rows.
// PLAN-LABEL: func.func @long_k
// PLAN: block = 384, tile = [128, 256, 64]
func.func @long_k(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %mm = fusec.matmul %x, %w : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  return %mm : tensor<4096x4096xbf16>
}

// (The model's price of either schedule: test/unit/Target/RooflineTest.cpp.)

// A small case whose meaning the pipeline keeps.
// SAME: PASS
func.func @small(%x: tensor<300x72xf16>, %w: tensor<72x264xf16>, %b: tensor<264xf16>) -> tensor<300x264xf16> {
  %mm = fusec.matmul %x, %w : (tensor<300x72xf16>, tensor<72x264xf16>) -> tensor<300x264xf16>
  %bb = fusec.broadcast %b dims [1] : tensor<264xf16> -> tensor<300x264xf16>
  %e0 = fusec.add %mm, %bb : tensor<300x264xf16>
  %e1 = fusec.gelu %e0 : tensor<300x264xf16>
  return %e1 : tensor<300x264xf16>
}
