//===- Kernels.cpp - PTX micro-kernels that measure a GPU's roofs -*- C++ -*-===//

#include "Kernels.h"

#include "absl/strings/str_cat.h"

namespace fusec::calibrate {

namespace {
/// Every measuring kernel ends by storing its thread's sum %s to out[tid].
const char *kStoreSum = R"(  mov.u32 %bid, %ctaid.x;
  mov.u32 %nt, %ntid.x;
  mad.lo.u32 %bid, %bid, %nt, %ti;
  mul.wide.u32 %off, %bid, 4;
  cvta.to.global.u64 %out, %out;
  add.u64 %out, %out, %off;
  st.global.f32 [%out], %s;
  ret;
}
)";
const char *kHeader80 = ".version 8.0\n.target sm_80\n.address_size 64\n";
const char *kHeader90a = ".version 8.0\n.target sm_90a\n.address_size 64\n";
} // namespace

namespace {
/// The 16-byte load each variant of the stream load uses (as the code
/// generator writes it: lib/CodeGen/Ptx.cpp).
std::string streamLoad(StreamVariant v, const char *regs, const char *addr) {
  switch (v) {
  case StreamVariant::Plain:
    return absl::StrCat("ld.global.v4.u32 ", regs, ", [", addr, "];");
  case StreamVariant::NoAllocate:
    return absl::StrCat("ld.global.nc.L1::no_allocate.v4.u32 ", regs, ", [", addr, "];");
  case StreamVariant::L2_256B:
    return absl::StrCat("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 ", regs, ", [", addr, "];");
  case StreamVariant::EvictFirst:
    return absl::StrCat("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 ", regs, ", [",
                        addr, "], %pol;");
  }
  return "";
}
} // namespace

const char *streamVariantName(StreamVariant v) {
  switch (v) {
  case StreamVariant::Plain:
    return "plain";
  case StreamVariant::NoAllocate:
    return "no_allocate";
  case StreamVariant::L2_256B:
    return "l2_256b";
  case StreamVariant::EvictFirst:
    return "evict_first";
  }
  return "";
}

const char *keepVariantName(KeepVariant v) {
  switch (v) {
  case KeepVariant::Plain:
    return "plain";
  case KeepVariant::EvictLast:
    return "evict_last";
  case KeepVariant::NC:
    return "nc";
  }
  return "";
}

std::string copyPtx(StreamVariant load) {
  // Four independent 16-byte loads in flight per thread and iteration (at
  // i, i + stride, i + 2 stride, i + 3 stride: each coalesced), then the
  // stores; a one-at-a-time loop finishes the rest.
  std::string text = absl::StrCat(kHeader80, R"(
.visible .entry copy(.param .u64 psrc, .param .u64 pdst, .param .u64 pn)
{
  .reg .pred %p;
  .reg .b32 %a<4>, %b<4>, %c<4>, %d<4>, %t<4>;
  .reg .b64 %i, %n, %stride, %src, %dst, %off, %x, %y, %last, %pol;
  createpolicy.fractional.L2::evict_first.b64 %pol, 1.0;
  ld.param.u64 %src, [psrc];
  ld.param.u64 %dst, [pdst];
  ld.param.u64 %n, [pn];
  cvta.to.global.u64 %src, %src;
  cvta.to.global.u64 %dst, %dst;
  mov.u32 %t1, %ctaid.x;
  mov.u32 %t2, %ntid.x;
  mov.u32 %t3, %tid.x;
  mad.wide.u32 %i, %t1, %t2, 0;
  cvt.u64.u32 %off, %t3;
  add.u64 %i, %i, %off;
  mov.u32 %t1, %nctaid.x;
  mul.wide.u32 %stride, %t1, %t2;
FOUR:
  mad.lo.u64 %last, %stride, 3, %i;
  setp.ge.u64 %p, %last, %n;
  @%p bra ONE;
  shl.b64 %off, %i, 4;
  add.u64 %x, %src, %off;
  shl.b64 %off, %stride, 4;
  LOAD_A
  add.u64 %x, %x, %off;
  LOAD_B
  add.u64 %x, %x, %off;
  LOAD_C
  add.u64 %x, %x, %off;
  LOAD_D
  shl.b64 %y, %i, 4;
  add.u64 %y, %dst, %y;
  st.global.v4.u32 [%y], {%a0, %a1, %a2, %a3};
  add.u64 %y, %y, %off;
  st.global.v4.u32 [%y], {%b0, %b1, %b2, %b3};
  add.u64 %y, %y, %off;
  st.global.v4.u32 [%y], {%c0, %c1, %c2, %c3};
  add.u64 %y, %y, %off;
  st.global.v4.u32 [%y], {%d0, %d1, %d2, %d3};
  mad.lo.u64 %i, %stride, 4, %i;
  bra FOUR;
ONE:
  setp.ge.u64 %p, %i, %n;
  @%p bra DONE;
  shl.b64 %off, %i, 4;
  add.u64 %x, %src, %off;
  add.u64 %y, %dst, %off;
  ld.global.v4.u32 {%a0, %a1, %a2, %a3}, [%x];
  st.global.v4.u32 [%y], {%a0, %a1, %a2, %a3};
  add.u64 %i, %i, %stride;
  bra ONE;
DONE:
  ret;
}
)");
  const char *regs[] = {"{%a0, %a1, %a2, %a3}", "{%b0, %b1, %b2, %b3}",
                        "{%c0, %c1, %c2, %c3}", "{%d0, %d1, %d2, %d3}"};
  const char *marks[] = {"LOAD_A", "LOAD_B", "LOAD_C", "LOAD_D"};
  for (int i = 0; i < 4; ++i)
    text.replace(text.find(marks[i]), 6, streamLoad(load, regs[i], "%x"));
  return text;
}

std::string keepPtx(KeepVariant load) {
  // dst[i] = src[i] + g[i & mask] (as u32 words): src streams with plain
  // loads; g, a small table every CTA re-reads (as layer_norm's gamma), with
  // the keep-load variant.
  const char *g = load == KeepVariant::EvictLast ? "ld.global.nc.L1::evict_last.v4.u32"
                  : load == KeepVariant::NC      ? "ld.global.nc.v4.u32"
                                                 : "ld.global.v4.u32";
  return absl::StrCat(kHeader80, R"(
.visible .entry keep(.param .u64 psrc, .param .u64 pg, .param .u64 pdst, .param .u64 pn,
                     .param .u64 pmask)
{
  .reg .pred %p;
  .reg .b32 %a<4>, %b<4>, %t<4>;
  .reg .b64 %i, %n, %mask, %stride, %src, %g, %dst, %off, %x;
  ld.param.u64 %src, [psrc];
  ld.param.u64 %g, [pg];
  ld.param.u64 %dst, [pdst];
  ld.param.u64 %n, [pn];
  ld.param.u64 %mask, [pmask];
  cvta.to.global.u64 %src, %src;
  cvta.to.global.u64 %g, %g;
  cvta.to.global.u64 %dst, %dst;
  mov.u32 %t1, %ctaid.x;
  mov.u32 %t2, %ntid.x;
  mov.u32 %t3, %tid.x;
  mad.wide.u32 %i, %t1, %t2, 0;
  cvt.u64.u32 %off, %t3;
  add.u64 %i, %i, %off;
  mov.u32 %t1, %nctaid.x;
  mul.wide.u32 %stride, %t1, %t2;
LOOP:
  setp.ge.u64 %p, %i, %n;
  @%p bra DONE;
  shl.b64 %off, %i, 4;
  add.u64 %x, %src, %off;
  ld.global.v4.u32 {%a0, %a1, %a2, %a3}, [%x];
  and.b64 %x, %i, %mask;
  shl.b64 %x, %x, 4;
  add.u64 %x, %g, %x;
  )", g, R"( {%b0, %b1, %b2, %b3}, [%x];
  add.u32 %a0, %a0, %b0;
  add.u32 %a1, %a1, %b1;
  add.u32 %a2, %a2, %b2;
  add.u32 %a3, %a3, %b3;
  add.u64 %x, %dst, %off;
  st.global.v4.u32 [%x], {%a0, %a1, %a2, %a3};
  add.u64 %i, %i, %stride;
  bra LOOP;
DONE:
  ret;
}
)");
}

/// A loop of `chains` independent register chains, each step `step(k)`.
static std::string chainKernel(const char *name, int chains,
                               std::string (*step)(int)) {
  std::string body;
  for (int k = 0; k < chains; ++k)
    absl::StrAppend(&body, "  ", step(k), "\n");
  std::string init, sum;
  for (int k = 0; k < chains; ++k) {
    absl::StrAppend(&init, "  cvt.rn.f32.u32 %x", k, ", %ti;\n  mul.f32 %x", k,
                    ", %x", k, ", 0f3A800000;\n  add.f32 %x", k, ", %x", k,
                    ", 0f3F00", k, "000;\n");
    absl::StrAppend(&sum, "  add.f32 %s, %s, %x", k, ";\n");
  }
  return absl::StrCat(kHeader80, ".visible .entry ", name,
                      R"((.param .u64 pout, .param .u32 piters)
{
  .reg .pred %p;
  .reg .b32 %ti, %iters, %j, %bid, %nt;
  .reg .f32 %s, %a, %c, %x<)", chains, R"(>;
  .reg .b64 %out, %off;
  ld.param.u64 %out, [pout];
  ld.param.u32 %iters, [piters];
  mov.u32 %ti, %tid.x;
  mov.f32 %a, 0f3F7FF000;
  mov.f32 %c, 0f3C000000;
)", init, R"(  mov.u32 %j, 0;
LOOP:
)", body, R"(  add.u32 %j, %j, 1;
  setp.lt.u32 %p, %j, %iters;
  @%p bra LOOP;
  mov.f32 %s, 0f00000000;
)", sum, kStoreSum);
}

std::string fmaPtx() {
  return chainKernel("fma", kFmaChains, [](int k) {
    return absl::StrCat("fma.rn.f32 %x", k, ", %x", k, ", %a, %c;");
  });
}

std::string ex2Ptx() {
  return chainKernel("ex2", kEx2Chains, [](int k) {
    return absl::StrCat("ex2.approx.ftz.f32 %x", k, ", %x", k, ";");
  });
}

std::string wgmmaPtx() {
  std::string acc;
  for (int i = 0; i < 128; ++i)
    absl::StrAppend(&acc, i ? ", " : "", "%d", i);
  std::string zero, sum;
  for (int i = 0; i < 128; ++i) {
    absl::StrAppend(&zero, "  mov.f32 %d", i, ", 0f00000000;\n");
    absl::StrAppend(&sum, "  add.f32 %s, %s, %d", i, ";\n");
  }
  std::string mma;
  for (int u = 0; u < kWgmmaUnroll; ++u)
    absl::StrAppend(&mma,
                    "  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {",
                    acc, "}, %da, %db, %pd, 1, 1, 0, 0;\n");
  // Shared memory: A (m64 x k16, 2 KiB) at 0, B (n256 x k16, 8 KiB) at 8 KiB,
  // no swizzle, core matrices 128 B apart along K and 256 B along M/N.
  return absl::StrCat(kHeader90a, R"(
.visible .entry wgmma(.param .u64 pout, .param .u32 piters)
{
  .reg .pred %p, %pd;
  .reg .b32 %ti, %iters, %j, %w, %addr, %base, %bid, %nt;
  .reg .f32 %s, %d<128>;
  .reg .b64 %da, %db, %t64, %out, %off;
  .shared .align 1024 .b8 smem[16384];
  ld.param.u64 %out, [pout];
  ld.param.u32 %iters, [piters];
  mov.u32 %ti, %tid.x;
  mov.u32 %base, smem;
  // Fill shared memory with non-zero bf16 pairs (a hash of the index).
  mov.u32 %j, %ti;
FILL:
  mul.lo.u32 %w, %j, 0x9E3779B1;
  and.b32 %w, %w, 0x3F7F3F7F;
  or.b32 %w, %w, 0x3C003C00;
  shl.b32 %addr, %j, 2;
  add.u32 %addr, %addr, %base;
  st.shared.u32 [%addr], %w;
  add.u32 %j, %j, 128;
  setp.lt.u32 %p, %j, 4096;
  @%p bra FILL;
  bar.sync 0;
  fence.proxy.async.shared::cta;
  // Descriptors: start >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45.
  shr.u32 %w, %base, 4;
  and.b32 %w, %w, 0x3FFF;
  cvt.u64.u32 %da, %w;
  or.b64 %da, %da, 0x0000001000080000;
  add.u32 %w, %base, 8192;
  shr.u32 %w, %w, 4;
  and.b32 %w, %w, 0x3FFF;
  cvt.u64.u32 %db, %w;
  or.b64 %db, %db, 0x0000001000080000;
)", zero, R"(  setp.ne.u32 %pd, 1, 0;
  mov.u32 %j, 0;
  wgmma.fence.sync.aligned;
LOOP:
)", mma, R"(  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 1;
  add.u32 %j, %j, 1;
  setp.lt.u32 %p, %j, %iters;
  @%p bra LOOP;
  wgmma.wait_group.sync.aligned 0;
  mov.f32 %s, 0f00000000;
)", sum, kStoreSum);
}

std::string emptyPtx() {
  return absl::StrCat(kHeader80, ".visible .entry empty()\n{\n  ret;\n}\n");
}

} // namespace fusec::calibrate
