// A variance over dims that are not trailing (BatchNorm's statistics)
// becomes group statistics and their combination (the law of total
// variance): the input is read once, by a kernel that holds a group, and
// the cross-group step works on the small statistics. Over several runs the
// groups are the innermost run; over one run of several dims whose innermost
// is at least 256, that dim; else groups of about 256 rows (a reshape).
// RUN: fusec-opt %s --fusec-decompose | FileCheck %s
// RUN: fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=KERNELS
// RUN: FUSEC_SPLIT_VARIANCE=0 fusec-opt %s --fusec-decompose | FileCheck %s --check-prefix=OFF
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=bn_nchw %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=bn_nhwc_sum %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=keepdims_pow_normalized %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=bn1d_long %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=run_inner %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=with_term %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=bn_nhwc_shifted %s | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline=fusec-pipeline --function=bn_nhwc_train %s | FileCheck %s --check-prefix=SAME
// RUN: FUSEC_COLUMN_SHIFTED=0 fusec-opt %s --fusec-decompose | FileCheck %s --check-prefix=UNSHIFTED
// SAME: PASS

// CHECK-LABEL: func.func @bn_nchw
// CHECK-DAG: %[[MG:.*]] = fusec.reduce mean %arg0 dims [2, 3] : tensor<16x6x96x128xf32> -> tensor<16x6xf32>
// CHECK-DAG: %[[VG:.*]] = fusec.reduce mean %{{.*}} dims [2, 3] : tensor<16x6x96x128xf32> -> tensor<16x6xf32>
// CHECK-DAG: %[[M:.*]] = fusec.reduce mean %[[MG]] dims [0] : tensor<16x6xf32> -> tensor<6xf32>
// CHECK-DAG: %[[MB:.*]] = fusec.broadcast %[[M]] dims [1] : tensor<6xf32> -> tensor<16x6xf32>
// CHECK-DAG: %[[E:.*]] = fusec.sub %[[MG]], %[[MB]] : tensor<16x6xf32>
// CHECK-DAG: %[[E2:.*]] = fusec.mul %[[E]], %[[E]] : tensor<16x6xf32>
// CHECK-DAG: %[[T:.*]] = fusec.add %[[VG]], %[[E2]] : tensor<16x6xf32>
// CHECK-DAG: %[[V:.*]] = fusec.reduce mean %[[T]] dims [0] : tensor<16x6xf32> -> tensor<6xf32>
// CHECK: return %[[M]], %[[V]]
// Two kernels: the groups (a row kernel over H*W), the combination.
// KERNELS-LABEL: func.func @bn_nchw
// KERNELS-COUNT-2: fusec.kernel
// KERNELS-NOT: fusec.kernel
// KERNELS: return
// OFF-LABEL: func.func @bn_nchw
// OFF-NOT: fusec.add
// OFF: return
func.func @bn_nchw(%x: tensor<16x6x96x128xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %m = fusec.reduce mean %x dims [0, 2, 3] : tensor<16x6x96x128xf32> -> tensor<6xf32>
  %mb = fusec.broadcast %m dims [1] : tensor<6xf32> -> tensor<16x6x96x128xf32>
  %d = fusec.sub %x, %mb : tensor<16x6x96x128xf32>
  %sq = fusec.mul %d, %d : tensor<16x6x96x128xf32>
  %v = fusec.reduce mean %sq dims [0, 2, 3] : tensor<16x6x96x128xf32> -> tensor<6xf32>
  return %m, %v : tensor<6xf32>, tensor<6xf32>
}

// Channels last, the sum of squares: the leading run [N, H, W] of 18432
// rows, whose innermost dim (48) is short, is cut into 128 groups of 144;
// a group's squares sum to M2_g, and the spread of the groups' means counts
// 144 times.
// CHECK-LABEL: func.func @bn_nhwc_sum
// CHECK-DAG: %[[X:.*]] = fusec.reshape %arg0 : tensor<8x48x48x64xf32> -> tensor<128x144x64xf32>
// CHECK-DAG: %[[MG:.*]] = fusec.reduce mean %[[X]] dims [1] : tensor<128x144x64xf32> -> tensor<128x64xf32>
// CHECK-DAG: %[[VG:.*]] = fusec.reduce sum %{{.*}} dims [1] : tensor<128x144x64xf32> -> tensor<128x64xf32>
// CHECK-DAG: %[[M:.*]] = fusec.reduce mean %[[MG]] dims [0] : tensor<128x64xf32> -> tensor<64xf32>
// CHECK-DAG: %[[K:.*]] = fusec.constant dense<1.440000e+02> : tensor<128x64xf32>
// CHECK-DAG: %[[V:.*]] = fusec.reduce sum %{{.*}} dims [0] : tensor<128x64xf32> -> tensor<64xf32>
// CHECK: return %[[M]], %[[V]]
// KERNELS-LABEL: func.func @bn_nhwc_sum
// KERNELS-COUNT-2: fusec.kernel
// KERNELS-NOT: fusec.kernel
// KERNELS: return
func.func @bn_nhwc_sum(%x: tensor<8x48x48x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %m = fusec.reduce mean %x dims [0, 1, 2] : tensor<8x48x48x64xf32> -> tensor<64xf32>
  %mb = fusec.broadcast %m dims [3] : tensor<64xf32> -> tensor<8x48x48x64xf32>
  %d = fusec.sub %x, %mb : tensor<8x48x48x64xf32>
  %sq = fusec.mul %d, %d : tensor<8x48x48x64xf32>
  %v = fusec.reduce sum %sq dims [0, 1, 2] : tensor<8x48x48x64xf32> -> tensor<64xf32>
  return %m, %v : tensor<64xf32>, tensor<64xf32>
}

// A leading run whose innermost dim is long (256 rows): the groups are that
// dim, no reshape; the 128 groups stay one reduction. (A sum of squares: a
// mean of them would be a shifted pair, below.)
// CHECK-LABEL: func.func @run_inner
// CHECK-NOT: fusec.reshape
// CHECK-DAG: %[[MG:.*]] = fusec.reduce mean %arg0 dims [2] : tensor<16x8x256x32xf32> -> tensor<16x8x32xf32>
// CHECK-DAG: fusec.reduce mean %[[MG]] dims [0, 1] : tensor<16x8x32xf32> -> tensor<32xf32>
// CHECK: return
func.func @run_inner(%x: tensor<16x8x256x32xf32>) -> tensor<32xf32> {
  %m = fusec.reduce mean %x dims [0, 1, 2] : tensor<16x8x256x32xf32> -> tensor<32xf32>
  %mb = fusec.broadcast %m dims [3] : tensor<32xf32> -> tensor<16x8x256x32xf32>
  %d = fusec.sub %x, %mb : tensor<16x8x256x32xf32>
  %sq = fusec.mul %d, %d : tensor<16x8x256x32xf32>
  %v = fusec.reduce sum %sq dims [0, 1, 2] : tensor<16x8x256x32xf32> -> tensor<32xf32>
  return %v : tensor<32xf32>
}

// One long leading dim (BatchNorm1d over 2^20 rows of 2 features): groups of
// 256 rows, and the 4096 groups cut into 64 x 64, so that they split again
// at their inner dim without another reshape: three kernels.
// CHECK-LABEL: func.func @bn1d_long
// CHECK: %[[X:.*]] = fusec.reshape %arg0 : tensor<1048576x2xf32> -> tensor<64x64x256x2xf32>
// CHECK-DAG: fusec.reduce mean %[[X]] dims [2] : tensor<64x64x256x2xf32> -> tensor<64x64x2xf32>
// CHECK-DAG: fusec.reduce mean %{{.*}} dims [1] : tensor<64x64x2xf32> -> tensor<64x2xf32>
// CHECK-DAG: fusec.reduce mean %{{.*}} dims [0] : tensor<64x2xf32> -> tensor<2xf32>
// CHECK: return
// KERNELS-LABEL: func.func @bn1d_long
// KERNELS-COUNT-3: fusec.kernel
// KERNELS-NOT: fusec.kernel
// KERNELS: return
func.func @bn1d_long(%x: tensor<1048576x2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %m = fusec.reduce mean %x dims [0] : tensor<1048576x2xf32> -> tensor<2xf32>
  %mb = fusec.broadcast %m dims [1] : tensor<2xf32> -> tensor<1048576x2xf32>
  %d = fusec.sub %x, %mb : tensor<1048576x2xf32>
  %sq = fusec.mul %d, %d : tensor<1048576x2xf32>
  %v = fusec.reduce mean %sq dims [0] : tensor<1048576x2xf32> -> tensor<2xf32>
  return %m, %v : tensor<2xf32>, tensor<2xf32>
}

// An exporter's form: a bf16 input in f32, the mean kept as [1, C, 1, 1],
// the square as a power, and the centred value also normalized (the mean's
// users precede the variance: the new mean is defined where the old was).
// CHECK-LABEL: func.func @keepdims_pow_normalized
// CHECK: fusec.reduce mean %{{.*}} dims [2, 3] : tensor<16x6x96x128xf32> -> tensor<16x6xf32>
// CHECK-NOT: fusec.pow
// CHECK: return
func.func @keepdims_pow_normalized(%x: tensor<16x6x96x128xbf16>) -> (tensor<16x6x96x128xbf16>, tensor<6xf32>) {
  %xf = fusec.cast %x : tensor<16x6x96x128xbf16> to tensor<16x6x96x128xf32>
  %m = fusec.reduce mean %xf dims [0, 2, 3] : tensor<16x6x96x128xf32> -> tensor<6xf32>
  %mk = fusec.reshape %m : tensor<6xf32> -> tensor<1x6x1x1xf32>
  %mb = fusec.broadcast %mk dims [0, 1, 2, 3] : tensor<1x6x1x1xf32> -> tensor<16x6x96x128xf32>
  %d = fusec.sub %xf, %mb : tensor<16x6x96x128xf32>
  %two = fusec.constant dense<2.0> : tensor<16x6x96x128xf32>
  %sq = fusec.pow %d, %two : tensor<16x6x96x128xf32>
  %v = fusec.reduce mean %sq dims [0, 2, 3] : tensor<16x6x96x128xf32> -> tensor<6xf32>
  %eps = fusec.constant dense<1.0e-5> : tensor<6xf32>
  %ve = fusec.add %v, %eps : tensor<6xf32>
  %r = fusec.rsqrt %ve : tensor<6xf32>
  %rb = fusec.broadcast %r dims [1] : tensor<6xf32> -> tensor<16x6x96x128xf32>
  %y = fusec.mul %d, %rb : tensor<16x6x96x128xf32>
  %yb = fusec.cast %y : tensor<16x6x96x128xf32> to tensor<16x6x96x128xbf16>
  return %yb, %v : tensor<16x6x96x128xbf16>, tensor<6xf32>
}

// Not rewritten: a variance over the trailing dims (a row kernel holds the
// row), and one whose centring mean is over other dims.
// CHECK-LABEL: func.func @rows
// CHECK-NOT: fusec.add
// CHECK: return
func.func @rows(%x: tensor<1024x2048xf32>) -> tensor<1024xf32> {
  %m = fusec.reduce mean %x dims [1] : tensor<1024x2048xf32> -> tensor<1024xf32>
  %mb = fusec.broadcast %m dims [0] : tensor<1024xf32> -> tensor<1024x2048xf32>
  %d = fusec.sub %x, %mb : tensor<1024x2048xf32>
  %sq = fusec.mul %d, %d : tensor<1024x2048xf32>
  %v = fusec.reduce mean %sq dims [1] : tensor<1024x2048xf32> -> tensor<1024xf32>
  return %v : tensor<1024xf32>
}

// CHECK-LABEL: func.func @other_dims
// CHECK-NOT: fusec.add
// CHECK: return
func.func @other_dims(%x: tensor<16x6x96x128xf32>) -> (tensor<16xf32>, tensor<6xf32>) {
  %m = fusec.reduce mean %x dims [1, 2, 3] : tensor<16x6x96x128xf32> -> tensor<16xf32>
  %mb = fusec.broadcast %m dims [0] : tensor<16xf32> -> tensor<16x6x96x128xf32>
  %d = fusec.sub %x, %mb : tensor<16x6x96x128xf32>
  %sq = fusec.mul %d, %d : tensor<16x6x96x128xf32>
  %v = fusec.reduce mean %sq dims [0, 2, 3] : tensor<16x6x96x128xf32> -> tensor<6xf32>
  return %m, %v : tensor<16xf32>, tensor<6xf32>
}

// The form this rewrite leaves across groups, written out: mean(w + (x -
// mean(x))^2) over 2048 rows, the mean also read before the variance (by an
// exp). The new mean is made where the old one was; what reads w, where the
// variance was.
// CHECK-LABEL: func.func @with_term
// CHECK: fusec.reshape %arg0 : tensor<2048x64xf32> -> tensor<32x64x64xf32>
// CHECK: %[[M:.*]] = fusec.reduce mean %{{.*}} dims [0] : tensor<32x64xf32> -> tensor<64xf32>
// CHECK-NEXT: fusec.exp %[[M]]
// CHECK: return
func.func @with_term(%x: tensor<2048x64xf32>, %w: tensor<2048x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %m = fusec.reduce mean %x dims [0] : tensor<2048x64xf32> -> tensor<64xf32>
  %u = fusec.exp %m : tensor<64xf32>
  %mb = fusec.broadcast %m dims [1] : tensor<64xf32> -> tensor<2048x64xf32>
  %d = fusec.sub %x, %mb : tensor<2048x64xf32>
  %sq = fusec.mul %d, %d : tensor<2048x64xf32>
  %t = fusec.add %w, %sq : tensor<2048x64xf32>
  %v = fusec.reduce mean %t dims [0] : tensor<2048x64xf32> -> tensor<64xf32>
  return %u, %v : tensor<64xf32>, tensor<64xf32>
}

// Channels last, f32 means, 64 columns: the mean and the variance stay as
// written. One column kernel takes both in one pass as sums shifted by each
// column's first element, its rows split across CTAs (Columns.cpp;
// test/lit/CodeGen/columns.mlir). FUSEC_COLUMN_SHIFTED=0: the groups.
// CHECK-LABEL: func.func @bn_nhwc_shifted
// CHECK-NOT: fusec.reshape
// CHECK: %[[M:.*]] = fusec.reduce mean %arg0 dims [0, 1, 2] : tensor<8x48x48x64xf32> -> tensor<64xf32>
// CHECK: %[[V:.*]] = fusec.reduce mean %{{.*}} dims [0, 1, 2] : tensor<8x48x48x64xf32> -> tensor<64xf32>
// CHECK: return %[[M]], %[[V]]
// KERNELS-LABEL: func.func @bn_nhwc_shifted
// KERNELS-COUNT-1: fusec.kernel
// KERNELS-NOT: fusec.kernel
// KERNELS: return
// UNSHIFTED-LABEL: func.func @bn_nhwc_shifted
// UNSHIFTED: fusec.reshape %arg0 : tensor<8x48x48x64xf32> -> tensor<128x144x64xf32>
func.func @bn_nhwc_shifted(%x: tensor<8x48x48x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %m = fusec.reduce mean %x dims [0, 1, 2] : tensor<8x48x48x64xf32> -> tensor<64xf32>
  %mb = fusec.broadcast %m dims [3] : tensor<64xf32> -> tensor<8x48x48x64xf32>
  %d = fusec.sub %x, %mb : tensor<8x48x48x64xf32>
  %sq = fusec.mul %d, %d : tensor<8x48x48x64xf32>
  %v = fusec.reduce mean %sq dims [0, 1, 2] : tensor<8x48x48x64xf32> -> tensor<64xf32>
  return %m, %v : tensor<64xf32>, tensor<64xf32>
}

// BatchNorm in training: the statistics also normalize x. The normalization
// would join a column kernel of the pair (which could then not split its
// rows), so the groups stay.
// CHECK-LABEL: func.func @bn_nhwc_train
// CHECK: fusec.reshape %{{.*}} : tensor<8x48x48x64xf32> -> tensor<128x144x64xf32>
// CHECK: return
func.func @bn_nhwc_train(%x: tensor<8x48x48x64xf32>) -> (tensor<8x48x48x64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %m = fusec.reduce mean %x dims [0, 1, 2] : tensor<8x48x48x64xf32> -> tensor<64xf32>
  %mb = fusec.broadcast %m dims [3] : tensor<64xf32> -> tensor<8x48x48x64xf32>
  %d = fusec.sub %x, %mb : tensor<8x48x48x64xf32>
  %sq = fusec.mul %d, %d : tensor<8x48x48x64xf32>
  %v = fusec.reduce mean %sq dims [0, 1, 2] : tensor<8x48x48x64xf32> -> tensor<64xf32>
  %eps = fusec.constant dense<1.0e-05> : tensor<64xf32>
  %ve = fusec.add %v, %eps : tensor<64xf32>
  %r = fusec.rsqrt %ve : tensor<64xf32>
  %rb = fusec.broadcast %r dims [3] : tensor<64xf32> -> tensor<8x48x48x64xf32>
  %m2 = fusec.broadcast %m dims [3] : tensor<64xf32> -> tensor<8x48x48x64xf32>
  %c = fusec.sub %x, %m2 : tensor<8x48x48x64xf32>
  %y = fusec.mul %c, %rb : tensor<8x48x48x64xf32>
  return %y, %m, %v : tensor<8x48x48x64xf32>, tensor<64xf32>, tensor<64xf32>
}
