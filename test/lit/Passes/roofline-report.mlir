// The seeds' arithmetic, from the JSON report, parsed and checked:
// RUN: fusec-opt %S/Inputs/seeds.mlir --fusec-roofline-report="target=b200 format=json output=%t.b200.json" -o /dev/null
// RUN: fusec-opt %S/Inputs/seeds.mlir --fusec-roofline-report="target=h200 format=json output=%t.h200.json svg=%t.svg" -o /dev/null
// RUN: %python %S/Inputs/check_roofline.py %t.b200.json %t.h200.json | FileCheck %s --check-prefix=SEEDS
// RUN: %python %S/Inputs/check_svg.py %t.svg %t.h200.json | FileCheck %s --check-prefix=SVG
// The text form:
// RUN: fusec-opt %S/Inputs/seeds.mlir --fusec-roofline-report="target=b200" -o /dev/null | FileCheck %s --check-prefix=TEXT
// Remarks at each kernel:
// RUN: fusec-opt %s --fusec-roofline-report="target=b200 remarks=true output=%t.txt" -verify-diagnostics -o /dev/null
// The IR is unchanged:
// RUN: fusec-opt %s --fusec-roofline-report="output=%t.txt" | FileCheck %s --check-prefix=IR

// SEEDS: seeds' roofline facts: OK
// SVG: svg: OK (9 kernel points, 12 unfused points)

// TEXT: roofline report for b200: HBM 8 TB/s, FP32 80 TFLOP/s (ridge 10.0 FLOP/B), bf16 tensor 2.25 PFLOP/s (ridge 281 FLOP/B)
// TEXT-LABEL: @vector_add
// TEXT: fusec.add 1 1.05 M 12.6 MB 0 0.083 hbm {{.*}} 1/-/120/-
// TEXT-LABEL: @chain_fused
// TEXT: chain 4 4.19 M 12.6 MB 0 0.333 hbm
// TEXT: as is: 1 kernels, 4.19 M FLOPs, 12.6 MB moved
// TEXT: unfused: 4 kernels, 4.19 M FLOPs, 37.7 MB moved
// TEXT-LABEL: @attention_d128
// TEXT: fusec.attention {{.*}} tensor
// TEXT-LABEL: @matmul_8192
// TEXT: fusec.matmul {{.*}} tensor
// TEXT-LABEL: @layer_norm
// TEXT: fusec.layer_norm {{.*}} hbm

// IR: func.func @remarks
// IR-NEXT: fusec.add

func.func @remarks(%a: tensor<1048576xf32>) -> tensor<1048576xf32> {
  // expected-remark @+1 {{roofline: hbm-bound on b200: 1.05 MFLOPs, 12.6 MB, 0 SFU ops, 0.0833 FLOP/B; predicted 3.573 us (hbm 1.573 us, tensor 0.000 us, fp32 0.013 us, sfu 0.000 us, launch 2.000 us)}}
  %0 = fusec.add %a, %a : tensor<1048576xf32>
  return %0 : tensor<1048576xf32>
}
