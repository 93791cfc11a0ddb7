//===- VectorAddPtx.h - A hand-written PTX vector add for tests -*- C++ -*-===//

#ifndef FUSEC_TEST_VECTORADDPTX_H
#define FUSEC_TEST_VECTORADDPTX_H

/// c[i] = a[i] + b[i] for i < n; f32; parameters (a, b, c, n).
inline constexpr const char *kVectorAddPtx = R"ptx(
.version 8.0
.target sm_80
.address_size 64

.visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc,
                     .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<5>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r2, %r2, %r3, %r4;
  setp.ge.u32 %p, %r2, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}

.visible .entry empty()
{
  ret;
}
)ptx";

#endif // FUSEC_TEST_VECTORADDPTX_H
