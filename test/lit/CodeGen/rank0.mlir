// A rank-0 elementwise kernel is generated (the outside campaign's
// codegen_rank0_gap: it used to report "no code generation yet"): one
// thread loads both scalars, takes the NaN-propagating min and stores it.
// RUN: fusec-compile %s --target=h200 --emit=ptx -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// CHECK: .visible .entry k0_min(
// CHECK: ld.global{{.*}}.b32
// CHECK: ld.global{{.*}}.b32
// CHECK: min.NaN.f32
// CHECK: st.global.b32
func.func @f(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = fusec.min %a, %b : tensor<f32>
  return %0 : tensor<f32>
}
