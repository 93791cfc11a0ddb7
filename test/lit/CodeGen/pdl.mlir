// Programmatic dependent launch (sm_90a, sm_100a). Every kernel starts with
// griddepcontrol.launch_dependents (the next kernel may launch as this one's
// CTAs leave) and waits (griddepcontrol.wait) for the kernel before it
// before touching memory. A TMA matmul's producer first issues its first
// stages' loads of the operands no kernel writes (the function's arguments
// and constants, listed in fusec.pdl_inputs), then waits; its consumers
// wait before their mainloop. `pdl=false` (FUSEC_PDL=0) and sm_80 emit
// neither.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen | FileCheck %s --check-prefix=IR
// RUN: rm -rf %t && mkdir -p %t/on %t/off %t/env %t/sm80 %t/sm100
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/on" -o /dev/null
// RUN: FileCheck %s --check-prefix=ELEM < %t/on/scale.k0_mul.ptx
// RUN: FileCheck %s --check-prefix=EARLY < %t/on/chain.k1_matmul_add.ptx
// RUN: FileCheck %s --check-prefix=LATE < %t/on/inner.k2_matmul.ptx
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="pdl=false dump-dir=%t/off" -o /dev/null
// RUN: cat %t/off/*.ptx | FileCheck %s --check-prefix=NONE
// RUN: env FUSEC_PDL=0 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/env" -o - | FileCheck %s --check-prefix=NOATTR
// RUN: cat %t/env/*.ptx | FileCheck %s --check-prefix=NONE
// RUN: fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="arch=sm_80 dump-dir=%t/sm80" -o /dev/null
// RUN: cat %t/sm80/*.ptx | FileCheck %s --check-prefix=NONE
// RUN: not env FUSEC_PDL=2 fusec-opt %s --fusec-pipeline --fusec-codegen 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/on/chain.k0_matmul.ptx %t/on/chain.k1_matmul_add.ptx %t/on/inner.k2_matmul.ptx
// REQUIRES: ptxas

// IR-LABEL: func.func @scale
// IR: fusec.kernel "k0_mul"
// IR-SAME: fusec.pdl, fusec.pdl_inputs = array<i64: 0>
func.func @scale(%a: tensor<4096xf32>) -> tensor<4096xf32> {
  %c = fusec.constant dense<2.0> : tensor<4096xf32>
  %0 = fusec.mul %a, %c : tensor<4096xf32>
  return %0 : tensor<4096xf32>
}
// ELEM: .entry k0_mul(
// ELEM-NOT: ld.global
// ELEM: griddepcontrol.launch_dependents;
// ELEM-NEXT: griddepcontrol.wait;

// Two decode matmuls: the second reads the first's result (after the wait)
// and its weights and the residual, arguments (readable before it).
// IR-LABEL: func.func @chain
// IR: fusec.kernel "k0_matmul"
// IR-SAME: fusec.pdl, fusec.pdl_inputs = array<i64: 0, 1>
// IR: fusec.kernel "k1_matmul_add"
// IR-SAME: fusec.pdl, fusec.pdl_inputs = array<i64: 1, 2>
// NOATTR-LABEL: func.func @chain
// NOATTR-NOT: fusec.pdl
// NOATTR: return
func.func @chain(%x: tensor<16x2048xbf16>, %w1: tensor<2048x2048xbf16>, %w2: tensor<2048x2048xbf16>) -> tensor<16x2048xbf16> {
  %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<16x2048xbf16>, tensor<2048x2048xbf16>) -> tensor<16x2048xbf16>
  %b = fusec.matmul %a, %w2 {transpose_rhs} : (tensor<16x2048xbf16>, tensor<2048x2048xbf16>) -> tensor<16x2048xbf16>
  %c = fusec.add %b, %x : tensor<16x2048xbf16>
  return %c : tensor<16x2048xbf16>
}
// The weights' loads of the first stages, then the wait, then the loop that
// loads the tokens; the consumers wait before their first wgmma.
// EARLY: griddepcontrol.launch_dependents;
// EARLY: mbarrier.arrive.expect_tx
// EARLY: cp.async.bulk.tensor.2d
// EARLY: griddepcontrol.wait;
// EARLY: cp.async.bulk.tensor.2d
// EARLY: griddepcontrol.wait;
// EARLY: wgmma.mma_async

// Both operands computed by earlier kernels: nothing loads before the wait.
// LATE: griddepcontrol.launch_dependents;
// LATE-NEXT: griddepcontrol.wait;
func.func @inner(%x: tensor<256x512xbf16>, %y: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  %e = fusec.exp %x : tensor<256x512xbf16>
  %f = fusec.exp %y : tensor<512x256xbf16>
  %m = fusec.matmul %e, %f : (tensor<256x512xbf16>, tensor<512x256xbf16>) -> tensor<256x256xbf16>
  return %m : tensor<256x256xbf16>
}

// NONE-NOT: griddepcontrol
// BAD: FUSEC_PDL='2' is not 0 or 1
