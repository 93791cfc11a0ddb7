// The whole pipeline on the transformer block: the report compares the
// kernels and HBM bytes with the unfused graph.
// RUN: fusec-opt %fusec_src/examples/transformer_block.mlir --fusec-pipeline="target=h200" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: fusec-opt %t.mlir --fusec-roofline-report="target=h200" -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: fusec-opt %t.mlir --fusec-roofline-report="target=h200 format=json output=%t.json" -o /dev/null
// RUN: %python -c "import json,sys; r=json.load(open(sys.argv[1])); t,u=r['totals'],r['unfused']; assert t['kernels']<u['kernels']/2 and t['bytes']<u['bytes']/2 and t['peak_bytes']<=u['peak_bytes'], (t,u); print('fused', t['kernels'], 'kernels', t['bytes'], 'bytes; unfused', u['kernels'], 'kernels', u['bytes'], 'bytes')" %t.json | FileCheck %s --check-prefix=JSON
// With remarks, each decision is explained:
// RUN: fusec-opt %fusec_src/examples/transformer_block.mlir --fusec-pipeline="target=b200 remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARKS
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=b200 precision=bf16}" %fusec_src/examples/transformer_block.mlir | FileCheck %s --check-prefix=SAME
// SAME: PASS
// The pipeline run again on its own output changes no kernel (a kernel is
// never wrapped in another):
// RUN: fusec-opt %t.mlir --fusec-pipeline="target=h200" -o %t2.mlir
// RUN: %python -c "import sys; a,b=(open(p).read() for p in sys.argv[1:]); n=a.count('fusec.kernel \"'); assert n == b.count('fusec.kernel \"') and n > 0, n; print('kernels', n)" %t.mlir %t2.mlir | FileCheck %s --check-prefix=AGAIN
// RUN: fusec-opt %t2.mlir --fusec-codegen -o /dev/null
// AGAIN: kernels {{[1-9]}}

// CHECK: func.func @transformer_block
// CHECK-SAME: fusec.total_cost
// CHECK: fusec.kernel "k0_{{.*}}fusec.cache_hints = {{.*}}fusec.launch = #fusec.launch<strategy = row_warp
// CHECK: fusec.kernel "k1_matmul"
// CHECK: fusec.attention
// CHECK: fusec.matmul_epilogue
// The gate and up projections share x: one dual-GEMM kernel.
// CHECK: fusec.kernel "k{{[0-9]+}}_matmul_mul"
// CHECK-COUNT-2: fusec.matmul
// REPORT: as is: 7 kernels, 177 M FLOPs, 2.75 MB moved
// REPORT: unfused: 38 kernels, 177 M FLOPs, 9.78 MB moved
// JSON: fused 7 kernels {{[0-9]+}} bytes; unfused 38 kernels {{[0-9]+}} bytes
// REMARKS: remark: fused with
