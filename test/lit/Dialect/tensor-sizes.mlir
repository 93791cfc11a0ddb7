// A tensor whose size in bytes overflows int64 is a verifier error at the
// op that has it (before: the cost model reported negative bytes, PTX was
// emitted for it, and the interpreter aborted).
// RUN: not fusec-opt %s 2>&1 | FileCheck %s
// RUN: not fusec-opt %s --fusec-pipeline=target=h200 2>&1 | FileCheck %s
// RUN: not fusec-run %s --reference 2>&1 | FileCheck %s

// CHECK: error: 'fusec.add' op has a tensor of type 'tensor<99999999999x99999999999xf32>' whose size in bytes overflows int64
func.func @f(%x: tensor<99999999999x99999999999xf32>) -> tensor<99999999999x99999999999xf32> {
  %0 = fusec.add %x, %x : tensor<99999999999x99999999999xf32>
  return %0 : tensor<99999999999x99999999999xf32>
}
