// Reductions over a dim of extent 0 (fuzz_mlir's structure-aware mutator
// found the column case: planning divided by its zero column tiles, a
// SIGFPE in fusec-tile). Each result is the reduction's identity for every
// kept element, and the column and row plans cover those elements (a row
// plan had a grid for 0 rows, which would have left the 40 results
// unwritten).
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=PLAN
// RUN: fusec-compile %s --target=h200 --emit=ptx -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=col_split | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=inner | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --reference %s --function=inner | FileCheck %s --check-prefix=REF
// PLAN-LABEL: func.func @col_split
// PLAN: strategy = column, grid = 2
// PLAN-LABEL: func.func @inner
// PLAN: strategy = column, grid = 2
// PLAN-LABEL: func.func @rows
// PLAN: strategy = row_stream, grid = 5
// PTX-DAG: .visible .entry {{.*}}reduce
// SAME: PASS: fusec-pipeline{target=h200} keeps the graph's meaning
// REF: result #0: tensor<3x16xf32> sum=-inf min=-inf max=-inf nans=0
func.func @col_split(%x: tensor<0x40xf32>, %y: tensor<3x2000x16xi32>) -> (tensor<40xf32>, tensor<40xf32>, tensor<3x16xi32>) {
  %0 = fusec.reduce sum %x dims [0] : tensor<0x40xf32> -> tensor<40xf32>
  %1 = fusec.reduce max %x dims [0] : tensor<0x40xf32> -> tensor<40xf32>
  %2 = fusec.reduce sum %y dims [1] : tensor<3x2000x16xi32> -> tensor<3x16xi32>
  return %0, %1, %2 : tensor<40xf32>, tensor<40xf32>, tensor<3x16xi32>
}
func.func @inner(%x: tensor<3x0x16xf32>) -> tensor<3x16xf32> {
  %0 = fusec.reduce max %x dims [1] : tensor<3x0x16xf32> -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}
func.func @rows(%x: tensor<40x0xf32>) -> tensor<40xf32> {
  %0 = fusec.reduce sum %x dims [1] : tensor<40x0xf32> -> tensor<40xf32>
  return %0 : tensor<40xf32>
}
