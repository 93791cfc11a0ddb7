// An RMSNorm as PyTorch exports it, on a residual kept in the matmul's
// [B*S, N] rows: the square is taken on the rows, the mean over [B, S, N],
// the row statistic on [B, S]. Decompose moves the reduction, the
// statistic and its broadcast onto the rows (SinkReshapeIntoReduce,
// SinkReshape, SinkReshapeIntoBroadcast), so the whole norm is one kernel.
// RUN: fusec-opt %s --fusec-decompose --canonicalize --cse | FileCheck %s
// RUN: fusec-opt %s --fusec-decompose --canonicalize --cse --fusec-fuse | FileCheck %s --check-prefix=FUSED
// RUN: fusec-run --verify-pipeline=fusec-decompose,canonicalize,cse,fusec-fuse %s | FileCheck %s --check-prefix=SAME

// CHECK-LABEL: func.func @rms_norm_rows
// CHECK: %[[F:.*]] = fusec.cast %arg0 : tensor<16x32xf16> to tensor<16x32xf32>
// CHECK: %[[SQ:.*]] = fusec.mul %[[F]], %[[F]] : tensor<16x32xf32>
// CHECK: %[[MEAN:.*]] = fusec.reduce mean %[[SQ]] dims [1] : tensor<16x32xf32> -> tensor<16xf32>
// CHECK: fusec.broadcast %{{.*}} dims [0] : tensor<16xf32> -> tensor<16x32xf32>
// CHECK-NOT: tensor<2x8x32xf32>
// CHECK: return

// FUSED-LABEL: func.func @rms_norm_rows
// FUSED-COUNT-1: fusec.kernel
// FUSED-NOT: fusec.kernel
// FUSED: return

// SAME: PASS

func.func @rms_norm_rows(%r: tensor<16x32xf16>, %g: tensor<32xf16>) -> tensor<16x32xf16> {
  %one = fusec.constant dense<1.0> : tensor<2x8xf32>
  %eps = fusec.constant dense<1.0e-6> : tensor<2x8xf32>
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
  return %x : tensor<16x32xf16>
}
