// The seeds' arithmetic, from the JSON report, parsed and checked:
// RUN: fusec-opt %S/Inputs/seeds.mlir --fusec-roofline-report="target=b200 format=json output=%t.b200.json" -o /dev/null
// RUN: fusec-opt %S/Inputs/seeds.mlir --fusec-roofline-report="target=h200 format=json output=%t.h200.json svg=%t.svg" -o /dev/null
// RUN: %python %S/Inputs/check_roofline.py %t.b200.json %t.h200.json | FileCheck %s --check-prefix=SEEDS
// RUN: %python %S/Inputs/check_svg.py %t.svg %t.h200.json | FileCheck %s --check-prefix=SVG
// The text form:
// RUN: fusec-opt %S/Inputs/seeds.mlir --fusec-roofline-report="target=b200" -o /dev/null | FileCheck %s --check-prefix=TEXT
// Remarks at each kernel:
// RUN: fusec-opt %s --fusec-roofline-report="target=b200 remarks=true output=%t.txt" -verify-diagnostics -o /dev/null
// Measured times beside the predictions (the form `fusec-run --json` prints,
// and the list form), in the text, the JSON (ratio = measured / predicted)
// and the plot (a hollow point per measured kernel):
// RUN: printf '[{"function": "chain_fused", "kernel": "chain", "median_ms": 0.01}, {"function": "vector_add", "kernels": [{"name": "fusec.add", "median_ms": 0.004}]}]' > %t.measured.json
// RUN: fusec-opt %S/Inputs/seeds.mlir --fusec-roofline-report="target=b200 measured=%t.measured.json" -o /dev/null | FileCheck %s --check-prefix=MEASURED
// RUN: fusec-opt %S/Inputs/seeds.mlir --fusec-roofline-report="target=b200 format=json output=%t.m.json svg=%t.m.svg measured=%t.measured.json" -o /dev/null
// RUN: %python -c "import json,sys; ks=[k for k in json.load(open(sys.argv[1]))['kernels'] if 'measured_us' in k]; assert [(k['function'], k['measured_us']) for k in ks] == [('vector_add', 4.0), ('chain_fused', 10.0)], ks; assert all(abs(k['measured_over_predicted'] - k['measured_us'] / k['predicted_us']) < 1e-9 for k in ks); print('measured ok')" %t.m.json | FileCheck %s --check-prefix=MJSON
// RUN: grep -c 'class="measured"' %t.m.svg | FileCheck %s --check-prefix=MSVG
// MEASURED-LABEL: @vector_add
// MEASURED: fusec.add {{.*}} measured 4.000 us (1.12x predicted)
// MEASURED-LABEL: @chain_fused
// MEASURED: chain {{.*}} measured 10.000 us (2.80x predicted)
// MJSON: measured ok
// MSVG: 2
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
