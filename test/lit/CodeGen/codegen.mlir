// RUN: rm -rf %t && mkdir -p %t/on %t/off %t/env %t/b
// RUN: env FUSEC_STREAM_LOAD=l2_256b fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/on remarks=true" -o %t/out.mlir 2>%t/remarks
// RUN: FileCheck %s --check-prefix=IR < %t/out.mlir
// RUN: FileCheck %s --check-prefix=REMARK < %t/remarks
// RUN: FileCheck %s --check-prefix=F32 < %t/on/gelu_bias_residual.k0_add_add.ptx
// RUN: FileCheck %s --check-prefix=BF16 < %t/on/silu_bias.k0_broadcast_cast.ptx
// The default stream load is plain (it measured fastest on the H200); the
// others are selectable.
// RUN: rm -rf %t/d %t/n %t/e && mkdir -p %t/d %t/n %t/e
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/d" -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAIN < %t/d/gelu_bias_residual.k0_add_add.ptx
// RUN: env FUSEC_STREAM_LOAD=no_allocate fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/n" -o /dev/null
// RUN: FileCheck %s --check-prefix=NOALLOC < %t/n/gelu_bias_residual.k0_add_add.ptx
// RUN: env FUSEC_STREAM_LOAD=evict_first fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/e" -o /dev/null
// RUN: FileCheck %s --check-prefix=EVICT < %t/e/gelu_bias_residual.k0_add_add.ptx
// RUN: env FUSEC_STREAM_LOAD=bogus not fusec-opt %s --fusec-pipeline --fusec-codegen -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOGUS
// NOALLOC: ld.global.nc.L1::no_allocate.v4.u32
// EVICT: createpolicy.fractional.L2::evict_first.b64
// EVICT: ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32
// BOGUS: FUSEC_STREAM_LOAD='bogus' is not plain, no_allocate, l2_256b or evict_first
// The escape switch: plain loads.
// RUN: env FUSEC_STREAM_LOAD=l2_256b fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/off aggressive-ptx=false" -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAIN < %t/off/gelu_bias_residual.k0_add_add.ptx
// RUN: env FUSEC_STREAM_LOAD=l2_256b FUSEC_DISABLE_AGGRESSIVE_PTX=1 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/env" -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAIN < %t/env/gelu_bias_residual.k0_add_add.ptx
// The same choices as pass options; a bad value names the option.
// RUN: rm -rf %t/o && mkdir -p %t/o
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/o stream-load=no_allocate" -o /dev/null
// RUN: FileCheck %s --check-prefix=NOALLOC < %t/o/gelu_bias_residual.k0_add_add.ptx
// RUN: not fusec-opt %s --fusec-pipeline --fusec-codegen="stream-load=fast" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: stream-load='fast' is not plain, no_allocate, l2_256b or evict_first
// Blackwell too: the b200 target (unmeasured) keeps the aggressive loads.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/b arch=sm_100a" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM100 < %t/b/gelu_bias_residual.k0_add_add.ptx

// IR: fusec.kernel "k0_add_add"{{.*}}fusec.block = array<i64: 128>, fusec.cache_hints = [#fusec<cache_hint stream>, #fusec<cache_hint stream>, #fusec<cache_hint stream>], fusec.entry = "k0_add_add", fusec.grid = array<i64: 1>
// IR-SAME: fusec.ptx = "
// IR-SAME: fusec.strategy = #fusec<strategy elementwise>
// REMARK: remark: generated 'k0_reduce' for sm_90a: column, grid 8 x block 256
// REMARK: remark: generated 'k0_reduce' for sm_90a: row_stream, grid 1 x block 256
// REMARK: remark: generated 'k0_cast' for sm_90a: elementwise
// fp8 converts by cvt (sm_89 on): both ways, e4m3 and e5m2, saturating to
// the largest finite value; it assembles; sm_80 refuses the kernel by name.
// RUN: FileCheck %s --check-prefix=FP8 < %t/on/to_fp8.k0_cast.ptx
// RUN: FileCheck %s --check-prefix=FP8IN < %t/on/from_fp8.k0_cast_add.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/on/to_fp8.k0_cast.ptx -o %t/fp8a.cubin %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/on/from_fp8.k0_cast_add.ptx -o %t/fp8b.cubin %}
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="arch=sm_80 remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FP8SM80
// FP8: cvt.rn.satfinite.e4m3x2.f32
// FP8: st.global
// FP8IN-DAG: cvt.rn.f16x2.e4m3x2
// FP8IN-DAG: cvt.rn.satfinite.e5m2x2.f32
// FP8SM80: no PTX generated: {{.*}}fp8 element types need sm_89 or later

// F32: .target sm_90a
// F32: .visible .entry k0_add_add(
// F32: ld.global.nc.L1::no_allocate.L2::256B.v4.u32
// F32: ex2.approx.ftz.f32
// F32: st.global.v4.b32
// F32-NOT: .local
// BF16: ld.global.nc.L1::no_allocate.L2::256B.v4.u32
// BF16: cvt.rn.bf16
// BF16: st.global.v4.b32
// PLAIN-NOT: L1::no_allocate
// PLAIN-NOT: evict_last
// PLAIN: ld.global.v4.u32
// SM100: .target sm_100a
// SM100: ld.global.nc.L1::no_allocate.L2::256B.v4.u32

// gelu(x + b) * 0.5 + r, as in the benchmarks; 1000 elements (a partial
// last vector).
func.func @gelu_bias_residual(%x: tensor<1000xf32>, %b: tensor<1000xf32>, %r: tensor<1000xf32>) -> tensor<1000xf32> {
  %0 = fusec.add %x, %b : tensor<1000xf32>
  %1 = fusec.gelu %0 : tensor<1000xf32>
  %half = fusec.constant dense<0.5> : tensor<1000xf32>
  %2 = fusec.mul %1, %half : tensor<1000xf32>
  %3 = fusec.add %2, %r : tensor<1000xf32>
  return %3 : tensor<1000xf32>
}

// bf16 silu with a broadcast bias: 8 elements per 16-byte access.
func.func @silu_bias(%x: tensor<64x256xbf16>, %b: tensor<256xbf16>) -> tensor<64x256xbf16> {
  %bb = fusec.broadcast %b dims [1] : tensor<256xbf16> -> tensor<64x256xbf16>
  %0 = fusec.add %x, %bb : tensor<64x256xbf16>
  %1 = fusec.silu %0 : tensor<64x256xbf16>
  return %1 : tensor<64x256xbf16>
}

// A column reduction: the columns are few, so a CTA is 8 groups of 4
// columns x 32 rows at once (two rows a thread here), 16-byte loads along
// the columns, a warp's 4 slices combined by shuffles, partials through
// shared memory.
// RUN: FileCheck %s --check-prefix=COL < %t/on/column_sum.k0_reduce.ptx
// RUN: FileCheck %s --check-prefix=COLBAR < %t/on/column_sum.k0_reduce.ptx
// COL: .shared .align 16 .b8 __fusec_partials
// COL: ld.global.nc.L1::no_allocate.L2::256B.v4.u32
// COL: shfl.sync.bfly.b32 {{.*}}, 8, 31, -1;
// COL: shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// COL: ld.shared
// COLBAR: bar.sync 0
// COL-NOT: .local
func.func @column_sum(%x: tensor<64x256xf32>) -> tensor<256xf32> {
  %0 = fusec.reduce sum %x dims [0] : tensor<64x256xf32> -> tensor<256xf32>
  return %0 : tensor<256xf32>
}

// Reductions over dims apart: a warp per kept position (row_stream), each
// element's address from its coordinates (the column's remainder by 16 for
// dim 2, its quotient for dim 0, at a stride of 512 bytes).
// RUN: FileCheck %s --check-prefix=SPLIT < %t/on/split_sum.k0_reduce.ptx
// SPLIT: .visible .entry k0_reduce(
// SPLIT: and.b32 {{.*}}, 15;
// SPLIT: and.b64 {{.*}}, 512;
// SPLIT: shfl.sync.bfly.b32
// SPLIT-NOT: .local
func.func @split_sum(%x: tensor<4x8x16xf32>) -> tensor<8xf32> {
  %0 = fusec.reduce sum %x dims [0, 2] : tensor<4x8x16xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// fp8 stores and loads.
func.func @to_fp8(%x: tensor<64xf32>) -> tensor<64xf8E4M3FN> {
  %0 = fusec.cast %x : tensor<64xf32> to tensor<64xf8E4M3FN>
  return %0 : tensor<64xf8E4M3FN>
}

func.func @from_fp8(%x: tensor<100xf8E4M3FN>, %y: tensor<100xf8E5M2>) -> tensor<100xf8E5M2> {
  %0 = fusec.cast %x : tensor<100xf8E4M3FN> to tensor<100xf8E5M2>
  %1 = fusec.add %0, %y : tensor<100xf8E5M2>
  return %1 : tensor<100xf8E5M2>
}

// A row reduction, rows of 1024 bf16: a warp per row, the row held in
// registers: each lane loads its 4 chunks of 16 bytes once (no other load of
// x), the reductions run over the registers through shuffles, and the
// outputs go out 16 bytes at a time. gamma and beta (re-read by every row,
// hinted "keep") are loaded plainly (cached in L1) unless FUSEC_KEEP_LOAD
// asks for the evict-last or non-coherent load.
// RUN: FileCheck %s --check-prefix=ROW < %t/on/layer_norm.k0_cast_cast.ptx
// RUN: rm -rf %t/k && mkdir -p %t/k
// RUN: env FUSEC_KEEP_LOAD=evict_last fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/k" -o /dev/null
// RUN: FileCheck %s --check-prefix=KEEP < %t/k/layer_norm.k0_cast_cast.ptx
// RUN: env FUSEC_KEEP_LOAD=evict_last FUSEC_DISABLE_AGGRESSIVE_PTX=1 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/k" -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAIN < %t/k/layer_norm.k0_cast_cast.ptx
// RUN: env FUSEC_KEEP_LOAD=bogus not fusec-opt %s --fusec-pipeline --fusec-codegen -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOGUS-KEEP
// KEEP: ld.global.nc.L1::evict_last.v4.u32
// BOGUS-KEEP: error: FUSEC_KEEP_LOAD='bogus' is not plain, evict_last or nc
// REMARK: remark: generated 'k0_cast_cast' for sm_90a: row_warp, grid 8 x block 256
// ROW: .visible .entry k0_cast_cast(
// ROW-COUNT-4: ld.global.nc.L1::no_allocate.L2::256B.v4.u32
// ROW-NOT: L2::256B
// ROW: shfl.sync.bfly.b32
// ROW: rsqrt.approx.ftz.f32
// ROW: ld.global.v4.u32
// ROW: st.global.v4.b32
// ROW-NOT: .local
// ROW-NOT: bar.sync
func.func @layer_norm(%x: tensor<64x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
  %0 = fusec.layer_norm %x, %g, %b : (tensor<64x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>) -> tensor<64x1024xbf16>
  return %0 : tensor<64x1024xbf16>
}

// Rows of 8192 bf16: a CTA of 256 threads per row, 4 chunks of 16 bytes a
// thread, loaded once; each reduction crosses the warps through shared
// memory with one barrier (two reductions: max, then the sum of exp).
// RUN: FileCheck %s --check-prefix=CTA < %t/on/softmax_cta.k0_cast_cast.ptx
// REMARK: remark: generated 'k0_cast_cast' for sm_90a: row_cta, grid 16 x block 256
// FUSEC_ROW_CHUNKS=2 asks for 2 chunks a thread: 512 threads a row.
// RUN: env FUSEC_ROW_CHUNKS=2 fusec-opt %s --fusec-pipeline --fusec-codegen="remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHUNKS2
// CHUNKS2: remark: generated 'k0_cast_cast' for sm_90a: row_cta, grid 16 x block 512
// RUN: env FUSEC_ROW_CHUNKS=0 not fusec-opt %s --fusec-pipeline --fusec-codegen -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOGUS-CHUNKS
// BOGUS-CHUNKS: error: FUSEC_ROW_CHUNKS='0' is not a number from 1 to 16
// CTA-NOT: .maxntid
// CTA: .shared .align 16 .b8 __fusec_partials
// CTA-COUNT-4: ld.global.nc.L1::no_allocate.L2::256B.v4.u32
// CTA-NOT: ld.global
// CTA: st.shared.b32
// CTA: bar.sync 0
// CTA: ld.shared.b32
// CTA: ex2.approx.ftz.f32
// CTA: st.shared.b32
// CTA: bar.sync 0
// CTA: ld.shared.b32
// CTA: st.global.v4.b32
// CTA-NOT: .local
func.func @softmax_cta(%x: tensor<16x8192xbf16>) -> tensor<16x8192xbf16> {
  %0 = fusec.softmax %x dim 1 : tensor<16x8192xbf16>
  return %0 : tensor<16x8192xbf16>
}

// Rows of 50304 f32 do not fit in registers: a warp streams each row. The
// max and the sum of exp(x - max) come from one pass (online softmax: two
// values a lane, combined across the warp), the outputs from a second: two
// reads of the row, not three.
// REMARK: remark: generated 'k0_reduce_div' for sm_90a: row_stream, grid 1 x block 256
// RUN: FileCheck %s --check-prefix=LONG < %t/on/softmax_long.k0_reduce_div.ptx
// LONG-COUNT-2: ld.global
// LONG-NOT: ld.global
// RUN: FileCheck %s --check-prefix=LONGSHFL < %t/on/softmax_long.k0_reduce_div.ptx
// LONGSHFL-COUNT-10: shfl.sync.bfly.b32
// LONGSHFL-NOT: shfl.sync
func.func @softmax_long(%x: tensor<2x50304xf32>) -> tensor<2x50304xf32> {
  %0 = fusec.softmax %x dim 1 : tensor<2x50304xf32>
  return %0 : tensor<2x50304xf32>
}
