// RUN: fusec-opt %s -split-input-file --fusec-fuse --fusec-tile | FileCheck %s
// Tiling only annotates: the results do not change.
// RUN: fusec-run --verify-pipeline=fusec-fuse,fusec-tile --function=rows %s | FileCheck %s --check-prefix=SAME
// SAME: PASS

// bf16 elementwise: 16-byte accesses are 8 elements.
// CHECK-LABEL: func.func @elementwise_bf16
// CHECK: fusec.launch = {block = 256 : i64, elements_per_thread = 8 : i64, grid = 512 : i64, regs_estimate = {{[0-9]+}} : i64, smem_bytes = 0 : i64, strategy = "elementwise", vector = 8 : i64}
func.func @elementwise_bf16(%x: tensor<1048576xbf16>) -> tensor<1048576xbf16> {
  %0 = fusec.exp %x : tensor<1048576xbf16>
  return %0 : tensor<1048576xbf16>
}

// -----

// f32: 4 elements per access.
// CHECK-LABEL: func.func @elementwise_f32
// CHECK: vector = 4 : i64
func.func @elementwise_f32(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %0 = fusec.exp %x : tensor<4096xf32>
  return %0 : tensor<4096xf32>
}

// -----

// Short rows: a warp per row, 8 rows per 256-thread CTA.
// CHECK-LABEL: func.func @rows
// CHECK: block = 256 : i64, elements_per_thread = 16 : i64, grid = 8 : i64{{.*}}row_length = 512 : i64, rows_per_cta = 8 : i64, smem_bytes = 0 : i64, strategy = "row_warp", vector = 4 : i64
func.func @rows(%x: tensor<64x512xf32>) -> tensor<64xf32> {
  %0 = fusec.reduce sum %x dims [1] : tensor<64x512xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// 8192-element rows: a CTA of 256 threads per row, the row in registers
// (4 chunks of 8 bf16 a thread), partials of the 8 warps in shared memory.
// CHECK-LABEL: func.func @long_rows
// CHECK: block = 256 : i64, elements_per_thread = 32 : i64, grid = 16384 : i64{{.*}}row_length = 8192 : i64, rows_per_cta = 1 : i64, smem_bytes = 256 : i64, strategy = "row_cta", vector = 8 : i64
func.func @long_rows(%x: tensor<16384x8192xbf16>) -> tensor<16384xbf16> {
  %0 = fusec.reduce max %x dims [1] : tensor<16384x8192xbf16> -> tensor<16384xbf16>
  return %0 : tensor<16384xbf16>
}

// -----

// An f32 row of 50304 does not fit in registers (52 words a thread at 1024
// threads): a warp streams each row.
// CHECK-LABEL: func.func @lm_head_row
// CHECK: row_length = 50304 : i64, rows_per_cta = 8 : i64, smem_bytes = 0 : i64, strategy = "row_stream"
func.func @lm_head_row(%x: tensor<8x50304xf32>) -> tensor<8xf32> {
  %0 = fusec.reduce sum %x dims [1] : tensor<8x50304xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Reducing an outer dimension: columns.
// CHECK-LABEL: func.func @columns
// CHECK: block = 256 : i64, elements_per_thread = 4 : i64, grid = 1 : i64{{.*}}smem_bytes = 16384 : i64, strategy = "column", vector = 4 : i64
func.func @columns(%x: tensor<512x64xf32>) -> tensor<64xf32> {
  %0 = fusec.reduce sum %x dims [0] : tensor<512x64xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// A matmul: a tensor-core tile and as many stages as shared memory holds.
// CHECK-LABEL: func.func @matmul
// CHECK: block = 384 : i64, elements_per_thread = 1 : i64, grid = 1024 : i64, regs_estimate = 168 : i64, smem_bytes = 196608 : i64, stages = 4 : i64, strategy = "matmul", tile = array<i64: 128, 256, 64>
func.func @matmul(%a: tensor<4096x4096xbf16>) -> tensor<4096x8192xbf16> {
  %w = fusec.constant dense<1.0> : tensor<4096x8192xbf16>
  %0 = fusec.matmul %a, %w : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %0 : tensor<4096x8192xbf16>
}
