// A valid graph whose costs pass int64 (fuzz_mlir's structure-aware
// mutator made its batch dims 65535^3: each tensor is 2^60 bytes, each
// matmul 2^68 FLOPs). Every cost saturates at INT64_MAX: the report's
// totals used to wrap (a signed overflow in the sums of kernels' FLOPs,
// bytes and peak memory). The fused view has 2 kernels; both views'
// FLOPs, and the unfused view's bytes, stop at INT64_MAX.
// RUN: fusec-opt %s --fusec-pipeline="target=h200" --fusec-roofline-report="target=h200 format=json output=%t.json" -o /dev/null
// RUN: FileCheck %s < %t.json
// CHECK: "totals": {"kernels": 2, "flops": 9223372036854775807, "bytes": {{[1-9][0-9]*}}, "sfu_ops": {{[1-9][0-9]*}}, "predicted_us": {{[0-9.e+]*}}, "peak_bytes": {{[1-9][0-9]*}}}
// CHECK-SAME: "unfused": {"kernels": 6, "flops": 9223372036854775807, "bytes": 9223372036854775807, "sfu_ops": {{[1-9][0-9]*}}, "predicted_us": {{[0-9.e+]*}}, "peak_bytes": {{[1-9][0-9]*}},
func.func @decode_chain(%x: tensor<65535x65535x65535x8x256xbf16>, %w1: tensor<256x256xbf16>, %w2: tensor<256x256xbf16>) -> tensor<65535x65535x65535x8x256xbf16> {
  %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<65535x65535x65535x8x256xbf16>, tensor<256x256xbf16>) -> tensor<65535x65535x65535x8x256xbf16>
  %b = fusec.matmul %a, %w2 {transpose_rhs} : (tensor<65535x65535x65535x8x256xbf16>, tensor<256x256xbf16>) -> tensor<65535x65535x65535x8x256xbf16>
  %c = fusec.add %b, %x : tensor<65535x65535x65535x8x256xbf16>
  %mut351232 = fusec.sigmoid %c : tensor<65535x65535x65535x8x256xbf16>
  %mut188979 = fusec.tanh %mut351232 : tensor<65535x65535x65535x8x256xbf16>
  %mut242355 = fusec.mul %mut188979, %mut188979 : tensor<65535x65535x65535x8x256xbf16>
  return %mut242355 : tensor<65535x65535x65535x8x256xbf16>
}
