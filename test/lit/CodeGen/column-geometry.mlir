// The column kernel's geometry, as fusec-tile chooses it (issue #15): a CTA
// of 256 threads is `groups` threads side by side on a row times `rows`
// (slices) rows at once. 32 groups while the column tiles fill four CTAs an
// SM; with fewer columns 16, then 8 (smaller tiles, more of them, so that
// the rows split into fewer parts); a split keeps to one wave (at most four
// CTAs an SM); a kernel of several reductions loads eight of a thread's
// rows at once (chunks), one of a single reduction four. Each graph's
// meaning is checked before and after the pipeline on the interpreter, and
// the kernels assemble without spills.
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline --function=wide %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline --function=medium %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline --function=few_columns %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline --function=variance %s | FileCheck %s --check-prefix=SAME
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=WIDE < %t/wide.k0_reduce.ptx
// RUN: FileCheck %s --check-prefix=MEDIUM < %t/medium.k0_reduce.ptx
// RUN: FileCheck %s --check-prefix=FEW < %t/few_columns.k0_reduce.ptx
// RUN: %ptxas -arch=sm_90a -v %t/medium.k0_reduce.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/few_columns.k0_reduce.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/variance.k0_reduce_reduce.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas
// SAME: PASS: fusec-pipeline keeps the graph's meaning
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// 200000 bf16 columns: 782 tiles of 32 groups of 8, more than four an SM:
// 32 groups, 8 rows at once, no split: a warp is one slice, no shuffles.
// WIDE-NOT: shfl.sync
// CHECK-LABEL: func.func @wide
// CHECK: #fusec.launch<strategy = column, grid = 782, block = 256, vector = 8, chunks = 4, rows = 8, smem = 32768
func.func @wide(%x: tensor<64x200000xbf16>) -> tensor<200000xbf16> {
  %0 = fusec.reduce sum %x dims [0] : tensor<64x200000xbf16> -> tensor<200000xbf16>
  return %0 : tensor<200000xbf16>
}

// 100000 columns: 391 tiles of 32 groups, 782 of 16: 16 groups, 16 rows at
// once; a warp's two slices combine by one butterfly 16 lanes apart (both
// halves of the f64), then its first 16 lanes write the partials.
// CHECK-LABEL: func.func @medium
// CHECK: #fusec.launch<strategy = column, grid = 782, block = 256, vector = 8, chunks = 4, rows = 16, smem = 16384
// MEDIUM-NOT: shfl.sync.bfly.b32 {{.*}}, 8, 31, -1;
// MEDIUM-COUNT-16: shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// MEDIUM-NOT: shfl.sync
// MEDIUM: st.shared.v2.b64
// MEDIUM: bar.sync
func.func @medium(%x: tensor<64x100000xbf16>) -> tensor<100000xbf16> {
  %0 = fusec.reduce sum %x dims [0] : tensor<64x100000xbf16> -> tensor<100000xbf16>
  return %0 : tensor<100000xbf16>
}

// A bias gradient, 4096 bf16 columns over 16384 rows: 8 groups (a 128-byte
// line of a row), 32 rows at once, 64 tiles; the rows split into 8 parts:
// 512 CTAs, at most four an SM (one wave). A warp's four slices combine by
// butterflies 8 then 16 lanes apart.
// FEW: shfl.sync.bfly.b32 {{.*}}, 8, 31, -1;
// FEW: shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// FEW: atom.global.add.u32
// CHECK-LABEL: func.func @few_columns
// CHECK: #fusec.launch<strategy = column, grid = 512, block = 256, vector = 8, chunks = 4, rows = 32, split = 8, smem = 8208
func.func @few_columns(%x: tensor<16384x4096xbf16>) -> tensor<4096xbf16> {
  %0 = fusec.reduce sum %x dims [0] : tensor<16384x4096xbf16> -> tensor<4096xbf16>
  return %0 : tensor<4096xbf16>
}

// A variance after its mean (two passes over the rows, no split): eight
// rows a thread in flight.
// CHECK-LABEL: func.func @variance
// CHECK: #fusec.launch<strategy = column, grid = 32, block = 256, vector = 4, chunks = 8, rows = 32
func.func @variance(%x: tensor<300x1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>) {
  %m = fusec.reduce mean %x dims [0] : tensor<300x1000xf32> -> tensor<1000xf32>
  %mb = fusec.broadcast %m dims [1] : tensor<1000xf32> -> tensor<300x1000xf32>
  %d = fusec.sub %x, %mb : tensor<300x1000xf32>
  %sq = fusec.mul %d, %d : tensor<300x1000xf32>
  %v = fusec.reduce mean %sq dims [0] : tensor<300x1000xf32> -> tensor<1000xf32>
  return %m, %v : tensor<1000xf32>, tensor<1000xf32>
}
