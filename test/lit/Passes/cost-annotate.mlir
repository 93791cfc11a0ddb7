// RUN: fusec-opt %s -split-input-file --fusec-cost-annotate | FileCheck %s
// RUN: fusec-opt %s -split-input-file --fusec-cost-annotate=totals-only | FileCheck %s --check-prefix=TOTALS

// The seeds' figure: an f32 add of 1,048,576 elements is 1,048,576 FLOPs and
// 12,582,912 bytes (8 MiB read, 4 MiB written), 0.083 FLOP/byte.
// CHECK-LABEL: func.func @vector_add
// CHECK-SAME: fusec.total_cost = {bytes_read = 8388608 : i64, bytes_written = 4194304 : i64, flops = 1048576 : i64, intensity = 0.08333
// CHECK: fusec.add {{.*}}fusec.cost = {bytes_read = 8388608 : i64, bytes_written = 4194304 : i64, flops = 1048576 : i64, intensity = 0.08333{{[0-9]*}} : f64, sfu_ops = 0 : i64}
// TOTALS-LABEL: func.func @vector_add
// TOTALS-SAME: fusec.total_cost
// TOTALS-NOT: fusec.cost =
func.func @vector_add(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %0 = fusec.add %a, %b : tensor<1048576xf32>
  return %0 : tensor<1048576xf32>
}

// -----

// A chain of four elementwise FLOPs moves 36 bytes an element unfused
// (12 + 8 + 8 + 8)...
// CHECK-LABEL: func.func @chain_unfused
// CHECK-SAME: fusec.total_cost = {bytes_read = 20971520 : i64, bytes_written = 16777216 : i64, flops = 4194304 : i64, intensity = 0.1111
func.func @chain_unfused(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %0 = fusec.add %a, %b : tensor<1048576xf32>
  %1 = fusec.neg %0 : tensor<1048576xf32>
  %2 = fusec.abs %1 : tensor<1048576xf32>
  %3 = fusec.floor %2 : tensor<1048576xf32>
  return %3 : tensor<1048576xf32>
}

// -----

// ...and 12 fused: the kernel counts only the bytes crossing its boundary,
// three times the intensity.
// CHECK-LABEL: func.func @chain_fused
// CHECK-SAME: fusec.total_cost = {bytes_read = 8388608 : i64, bytes_written = 4194304 : i64, flops = 4194304 : i64, intensity = 0.3333
// CHECK: fusec.kernel {{.*}}fusec.cost = {bytes_read = 8388608 : i64, bytes_written = 4194304 : i64, flops = 4194304 : i64
// CHECK: fusec.neg {{.*}}fusec.cost = {bytes_read = 4194304 : i64, bytes_written = 4194304 : i64, flops = 1048576 : i64
func.func @chain_fused(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %r = fusec.kernel "chain" (%a, %b) : (tensor<1048576xf32>, tensor<1048576xf32>) -> tensor<1048576xf32> {
  ^bb0(%x: tensor<1048576xf32>, %y: tensor<1048576xf32>):
    %0 = fusec.add %x, %y : tensor<1048576xf32>
    %1 = fusec.neg %0 : tensor<1048576xf32>
    %2 = fusec.abs %1 : tensor<1048576xf32>
    %3 = fusec.floor %2 : tensor<1048576xf32>
    fusec.yield %3 : tensor<1048576xf32>
  }
  return %r : tensor<1048576xf32>
}

// -----

// Matmul: 2·M·N·K FLOPs; bf16 operands, f32 result.
// CHECK-LABEL: func.func @matmul
// CHECK: fusec.matmul {{.*}}fusec.cost = {bytes_read = 327680 : i64, bytes_written = 262144 : i64, flops = 33554432 : i64
func.func @matmul(%a: tensor<128x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<128x512xf32> {
  %0 = fusec.matmul %a, %b : (tensor<128x256xbf16>, tensor<256x512xbf16>) -> tensor<128x512xf32>
  return %0 : tensor<128x512xf32>
}

// -----

// Attention: 4·B·H·S²·D FLOPs (4·1·4·256²·64) and one exp per score; causal
// counts the S·(S+1)/2 visible pairs.
// CHECK-LABEL: func.func @attention
// CHECK: fusec.attention {{.*}}fusec.cost = {bytes_read = 393216 : i64, bytes_written = 131072 : i64, flops = 67108864 : i64, intensity = {{.*}}, sfu_ops = 262144 : i64}
// CHECK: fusec.attention {{.*}}fusec.cost = {bytes_read = 393216 : i64, bytes_written = 131072 : i64, flops = 33685504 : i64, intensity = {{.*}}, sfu_ops = 131584 : i64}
func.func @attention(%q: tensor<1x4x256x64xbf16>) -> (tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>) {
  %0 = fusec.attention %q, %q, %q {scale = 0.125 : f64} : (tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16>
  %1 = fusec.attention %q, %q, %q {scale = 0.125 : f64, causal} : (tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16>
  return %0, %1 : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>
}

// -----

// Transcendentals go to the SFU count; reshape moves nothing.
// CHECK-LABEL: func.func @sfu
// CHECK: fusec.exp {{.*}}flops = 1024 : i64{{.*}}sfu_ops = 1024 : i64
// CHECK: fusec.rsqrt {{.*}}flops = 0 : i64{{.*}}sfu_ops = 1024 : i64
// CHECK: fusec.reshape {{.*}}fusec.cost = {bytes_read = 0 : i64, bytes_written = 0 : i64, flops = 0 : i64
// CHECK: fusec.softmax {{.*}}flops = 5120 : i64{{.*}}sfu_ops = 1056 : i64
// tanh and erf as generated: ex2 and rcp on the SFU (two a element), and
// GELU in both forms through them.
// CHECK: fusec.tanh {{.*}}flops = 4096 : i64{{.*}}sfu_ops = 2048 : i64
// CHECK: fusec.erf {{.*}}flops = 14336 : i64{{.*}}sfu_ops = 2048 : i64
// CHECK: fusec.gelu {{.*}}flops = 18432 : i64{{.*}}sfu_ops = 2048 : i64
// CHECK: fusec.gelu {{.*}}flops = 12288 : i64{{.*}}sfu_ops = 2048 : i64
func.func @sfu(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %0 = fusec.exp %x : tensor<32x32xf32>
  %1 = fusec.rsqrt %0 : tensor<32x32xf32>
  %2 = fusec.reshape %1 : tensor<32x32xf32> -> tensor<1024xf32>
  %3 = fusec.softmax %x dim 1 : tensor<32x32xf32>
  %4 = fusec.tanh %x : tensor<32x32xf32>
  %5 = fusec.erf %x : tensor<32x32xf32>
  %6 = fusec.gelu %x : tensor<32x32xf32>
  %7 = fusec.gelu %x {tanh} : tensor<32x32xf32>
  return %3 : tensor<32x32xf32>
}
