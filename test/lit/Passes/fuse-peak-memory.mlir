// Fusion never raises peak memory above the unfused graph's, and a merge
// that would is left out alone: the merges after it still apply. In this
// Llama layer (as the ONNX export writes it: an f32 RMSNorm, silu as
// x * sigmoid(x)), squaring the residual inside the output projection's
// epilogue would keep an extra f32 tensor live at the peak. Fusion stopped
// there before, leaving the SwiGLU MLP as three kernels; now the gate and
// up projections still become one dual GEMM and the down projection takes
// the residual add.
// RUN: fusec-opt %s --fusec-cost-annotate="totals-only=true" --fusec-fuse="remarks=true" 2>&1 | FileCheck %s
// RUN: fusec-opt %s --fusec-fuse --fusec-roofline-report="format=json output=%t.json" -o /dev/null
// RUN: %python %S/Inputs/check_fusion.py %t.json | FileCheck %s --check-prefix=REPORT
// RUN: fusec-run --verify-pipeline=fusec-fuse %s | FileCheck %s --check-prefix=SAME

// CHECK: remark: not fused with fusec.matmul: peak memory would be {{[0-9]+}} bytes, above the unfused graph's [[PEAK:[0-9]+]]
// CHECK: remark: fusion left out 1 of {{[0-9]+}} merges: each would raise peak memory above the unfused graph's [[PEAK]] bytes
// CHECK-LABEL: func.func @layer
// CHECK: fusec.kernel "k{{[0-9]+}}_matmul_add"(%arg1, %arg2,
// CHECK: fusec.kernel "k{{[0-9]+}}_reduce_mul"
// CHECK: fusec.kernel "k{{[0-9]+}}_matmul_mul"(%{{[0-9]+}}, %arg{{[34]}}, %arg{{[34]}})
// CHECK: fusec.kernel "k{{[0-9]+}}_matmul_add"(%{{[0-9]+}}, %arg5,
// CHECK-NOT: fusec.kernel
// CHECK: return
// REPORT: peak memory: fused <= unfused in every function
// SAME: PASS

func.func @layer(%h: tensor<2x8x32xf16>, %attn: tensor<16x32xf16>, %wo: tensor<32x32xf16>,
                 %wg: tensor<32x88xf16>, %wu: tensor<32x88xf16>, %wd: tensor<88x32xf16>,
                 %g: tensor<32xf16>) -> tensor<16x32xf16> {
  %one = fusec.constant dense<1.0> : tensor<2x8xf32>
  %eps = fusec.constant dense<1.0e-6> : tensor<2x8xf32>
  %o = fusec.matmul %attn, %wo : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  %hr = fusec.reshape %h : tensor<2x8x32xf16> -> tensor<16x32xf16>
  %r = fusec.add %hr, %o : tensor<16x32xf16>
  %rf = fusec.cast %r : tensor<16x32xf16> to tensor<16x32xf32>
  %rf3 = fusec.reshape %rf : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %sq = fusec.mul %rf, %rf : tensor<16x32xf32>
  %sq3 = fusec.reshape %sq : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %ms = fusec.reduce mean %sq3 dims [2] : tensor<2x8x32xf32> -> tensor<2x8xf32>
  %mse = fusec.add %ms, %eps : tensor<2x8xf32>
  %rt = fusec.sqrt %mse : tensor<2x8xf32>
  %inv = fusec.div %one, %rt : tensor<2x8xf32>
  %invb = fusec.broadcast %inv dims [0, 1] : tensor<2x8xf32> -> tensor<2x8x32xf32>
  %n = fusec.mul %rf3, %invb : tensor<2x8x32xf32>
  %nh = fusec.cast %n : tensor<2x8x32xf32> to tensor<2x8x32xf16>
  %gb = fusec.broadcast %g dims [2] : tensor<32xf16> -> tensor<2x8x32xf16>
  %x3 = fusec.mul %gb, %nh : tensor<2x8x32xf16>
  %x = fusec.reshape %x3 : tensor<2x8x32xf16> -> tensor<16x32xf16>
  %gate = fusec.matmul %x, %wg : (tensor<16x32xf16>, tensor<32x88xf16>) -> tensor<16x88xf16>
  %sg = fusec.sigmoid %gate : tensor<16x88xf16>
  %act = fusec.mul %gate, %sg : tensor<16x88xf16>
  %up = fusec.matmul %x, %wu : (tensor<16x32xf16>, tensor<32x88xf16>) -> tensor<16x88xf16>
  %glu = fusec.mul %act, %up : tensor<16x88xf16>
  %down = fusec.matmul %glu, %wd : (tensor<16x88xf16>, tensor<88x32xf16>) -> tensor<16x32xf16>
  %out = fusec.add %r, %down : tensor<16x32xf16>
  return %out : tensor<16x32xf16>
}
