// RUN: fusec-opt %s -split-input-file --fusec-fuse --fusec-tile | FileCheck %s
// Tiling only annotates: the results do not change.
// RUN: fusec-run --verify-pipeline=fusec-fuse,fusec-tile --function=rows %s | FileCheck %s --check-prefix=SAME
// SAME: PASS

// bf16 elementwise: 16-byte accesses are 8 elements.
// CHECK-LABEL: func.func @elementwise_bf16
// CHECK: fusec.launch = #fusec.launch<strategy = elementwise, grid = 512, block = 128, vector = 8, chunks = 2, regs = {{[0-9]+}}>
func.func @elementwise_bf16(%x: tensor<1048576xbf16>) -> tensor<1048576xbf16> {
  %0 = fusec.exp %x : tensor<1048576xbf16>
  return %0 : tensor<1048576xbf16>
}

// -----

// f32: 4 elements per access.
// CHECK-LABEL: func.func @elementwise_f32
// CHECK: #fusec.launch<strategy = elementwise, grid = 4, block = 128, vector = 4, chunks = 2,
func.func @elementwise_f32(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %0 = fusec.exp %x : tensor<4096xf32>
  return %0 : tensor<4096xf32>
}

// -----

// Short rows: a warp per row, 8 rows per 256-thread CTA.
// CHECK-LABEL: func.func @rows
// CHECK: #fusec.launch<strategy = row_warp, grid = 8, block = 256, vector = 4, chunks = 4, rows = 8,
func.func @rows(%x: tensor<64x512xf32>) -> tensor<64xf32> {
  %0 = fusec.reduce sum %x dims [1] : tensor<64x512xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// 8192-element rows: a CTA of 256 threads per row, the row in registers
// (4 chunks of 8 bf16 a thread), partials of the 8 warps in shared memory;
// the grid strides over the rows with 4 waves of 8 CTAs per SM (132 SMs).
// CHECK-LABEL: func.func @long_rows
// CHECK: #fusec.launch<strategy = row_cta, grid = 4224, block = 256, vector = 8, chunks = 4, rows = 1, smem = 256,
func.func @long_rows(%x: tensor<16384x8192xbf16>) -> tensor<16384xbf16> {
  %0 = fusec.reduce max %x dims [1] : tensor<16384x8192xbf16> -> tensor<16384xbf16>
  return %0 : tensor<16384xbf16>
}

// -----

// An f32 row of 50304 does not fit in registers (52 words a thread at 1024
// threads): a warp streams each row, a lane 4 adjacent columns (16 bytes)
// at a time.
// CHECK-LABEL: func.func @lm_head_row
// CHECK: #fusec.launch<strategy = row_stream, grid = 1, block = 256, vector = 4, rows = 8,
func.func @lm_head_row(%x: tensor<8x50304xf32>) -> tensor<8xf32> {
  %0 = fusec.reduce sum %x dims [1] : tensor<8x50304xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Reducing an outer dimension: columns.
// CHECK-LABEL: func.func @columns
// CHECK: #fusec.launch<strategy = column, grid = 2, block = 256, vector = 4, chunks = 4, rows = 32, smem = 4096,
func.func @columns(%x: tensor<512x64xf32>) -> tensor<64xf32> {
  %0 = fusec.reduce sum %x dims [0] : tensor<512x64xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// A matmul: the SIMT fallback, a thread per output element.
// CHECK-LABEL: func.func @matmul
// CHECK: #fusec.launch<strategy = matmul_simt, grid = 4224, block = 256,
func.func @matmul(%a: tensor<4096x4096xbf16>) -> tensor<4096x8192xbf16> {
  %w = fusec.constant dense<1.0> : tensor<4096x8192xbf16>
  %0 = fusec.matmul %a, %w : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %0 : tensor<4096x8192xbf16>
}

// -----

// The row chunks a thread aims to hold are an option (and FUSEC_ROW_CHUNKS in
// the tools): 1 chunk takes a CTA of 1024 threads for an 8192-element row.
// RUN: fusec-opt %s -split-input-file --fusec-fuse --fusec-tile=row-chunks=1 | FileCheck %s --check-prefix=CHUNKS
// RUN: env FUSEC_ROW_CHUNKS=1 fusec-opt %s -split-input-file --fusec-fuse --fusec-tile | FileCheck %s --check-prefix=CHUNKS
// CHUNKS-LABEL: func.func @long_rows
// CHUNKS: #fusec.launch<strategy = row_cta, grid = 1056, block = 1024, vector = 8, rows = 1,
