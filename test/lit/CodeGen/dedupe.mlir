// Kernels that differ only in their name (a model's repeated layers) are
// generated once: the second takes the first one's PTX and entry, so the
// kernel cache compiles that PTX once too.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="remarks=true" 2>&1 | FileCheck %s
// CHECK: remark: generated 'k0_exp_mul'
// CHECK: remark: same as 'k0_exp_mul': its PTX reused
// CHECK: fusec.kernel "k0_exp_mul"{{.*}}fusec.entry = "k0_exp_mul"
// CHECK: fusec.kernel "k1_exp_mul"{{.*}}fusec.entry = "k0_exp_mul"
// A kernel of another shape is generated for itself.
// CHECK: fusec.kernel "k2_exp_mul"{{.*}}fusec.entry = "k2_exp_mul"
func.func @layers(%a: tensor<1024xf32>, %b: tensor<1024xf32>, %c: tensor<2048xf32>) -> (tensor<1024xf32>, tensor<1024xf32>, tensor<2048xf32>) {
  %0 = fusec.exp %a : tensor<1024xf32>
  %1 = fusec.mul %0, %a : tensor<1024xf32>
  %2 = fusec.exp %b : tensor<1024xf32>
  %3 = fusec.mul %2, %b : tensor<1024xf32>
  %4 = fusec.exp %c : tensor<2048xf32>
  %5 = fusec.mul %4, %c : tensor<2048xf32>
  return %1, %3, %5 : tensor<1024xf32>, tensor<1024xf32>, tensor<2048xf32>
}
