// Graphs whose kernels carry hand-written PTX: what the JIT runs until
// fusec's own code generation lands. Each kernel's body states what it
// computes, so fusec-run can check the GPU's results with the interpreter.
//
//   fusec-run examples/ptx/vector_add.mlir --function=vadd
//   fusec-run examples/ptx/vector_add.mlir --function=chain
//
// vadd is c[i] = a[i] + b[i] over 16777216 f32 elements (one 64 MiB buffer per
// operand, more than the H200's 60 MiB L2): 12 bytes and 1 FLOP an element.

func.func @vadd(%a: tensor<16777216xf32>, %b: tensor<16777216xf32>) -> tensor<16777216xf32> {
  %c = fusec.kernel "vadd" (%a, %b) {fusec.ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc)\n{\n  .reg .pred %p;\n  .reg .b32 %r<5>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<8>;\n  ld.param.u64 %rd1, [pa];\n  ld.param.u64 %rd2, [pb];\n  ld.param.u64 %rd3, [pc];\n  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n  mad.lo.s32 %r2, %r2, %r3, %r4;\n  setp.ge.u32 %p, %r2, 16777216;\n  @%p bra DONE;\n  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n  cvta.to.global.u64 %rd3, %rd3;\n  mul.wide.u32 %rd4, %r2, 4;\n  add.s64 %rd5, %rd1, %rd4;\n  add.s64 %rd6, %rd2, %rd4;\n  add.s64 %rd7, %rd3, %rd4;\n  ld.global.f32 %f1, [%rd5];\n  ld.global.f32 %f2, [%rd6];\n  add.f32 %f3, %f1, %f2;\n  st.global.f32 [%rd7], %f3;\nDONE:\n  ret;\n}\n", fusec.grid = array<i64: 65536>, fusec.block = array<i64: 256>} : (tensor<16777216xf32>, tensor<16777216xf32>) -> tensor<16777216xf32> {
  ^bb0(%x: tensor<16777216xf32>, %y: tensor<16777216xf32>):
    %s = fusec.add %x, %y : tensor<16777216xf32>
    fusec.yield %s : tensor<16777216xf32>
  }
  return %c : tensor<16777216xf32>
}

// Two kernels through an intermediate buffer, a constant uploaded at compile
// time, and an input returned as is: (a + b) + 0.5, and a.
func.func @chain(%a: tensor<1000xf32>, %b: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>) {
  %half = fusec.constant dense<0.5> : tensor<1000xf32>
  %t = fusec.kernel "add_ab" (%a, %b) {fusec.ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc)\n{\n  .reg .pred %p;\n  .reg .b32 %r<5>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<8>;\n  ld.param.u64 %rd1, [pa];\n  ld.param.u64 %rd2, [pb];\n  ld.param.u64 %rd3, [pc];\n  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n  mad.lo.s32 %r2, %r2, %r3, %r4;\n  setp.ge.u32 %p, %r2, 1000;\n  @%p bra DONE;\n  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n  cvta.to.global.u64 %rd3, %rd3;\n  mul.wide.u32 %rd4, %r2, 4;\n  add.s64 %rd5, %rd1, %rd4;\n  add.s64 %rd6, %rd2, %rd4;\n  add.s64 %rd7, %rd3, %rd4;\n  ld.global.f32 %f1, [%rd5];\n  ld.global.f32 %f2, [%rd6];\n  add.f32 %f3, %f1, %f2;\n  st.global.f32 [%rd7], %f3;\nDONE:\n  ret;\n}\n", fusec.entry = "vadd", fusec.grid = array<i64: 4>, fusec.block = array<i64: 256>} : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32> {
  ^bb0(%x: tensor<1000xf32>, %y: tensor<1000xf32>):
    %s = fusec.add %x, %y : tensor<1000xf32>
    fusec.yield %s : tensor<1000xf32>
  }
  %u = fusec.kernel "add_half" (%t, %half) {fusec.ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc)\n{\n  .reg .pred %p;\n  .reg .b32 %r<5>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<8>;\n  ld.param.u64 %rd1, [pa];\n  ld.param.u64 %rd2, [pb];\n  ld.param.u64 %rd3, [pc];\n  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n  mad.lo.s32 %r2, %r2, %r3, %r4;\n  setp.ge.u32 %p, %r2, 1000;\n  @%p bra DONE;\n  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n  cvta.to.global.u64 %rd3, %rd3;\n  mul.wide.u32 %rd4, %r2, 4;\n  add.s64 %rd5, %rd1, %rd4;\n  add.s64 %rd6, %rd2, %rd4;\n  add.s64 %rd7, %rd3, %rd4;\n  ld.global.f32 %f1, [%rd5];\n  ld.global.f32 %f2, [%rd6];\n  add.f32 %f3, %f1, %f2;\n  st.global.f32 [%rd7], %f3;\nDONE:\n  ret;\n}\n", fusec.entry = "vadd", fusec.grid = array<i64: 4>, fusec.block = array<i64: 256>} : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32> {
  ^bb0(%x: tensor<1000xf32>, %y: tensor<1000xf32>):
    %s = fusec.add %x, %y : tensor<1000xf32>
    fusec.yield %s : tensor<1000xf32>
  }
  return %u, %a : tensor<1000xf32>, tensor<1000xf32>
}
