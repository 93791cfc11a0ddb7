// RUN: fusec-opt %s -split-input-file | FileCheck %s
// RUN: fusec-opt %s -split-input-file | fusec-opt -split-input-file | FileCheck %s
// RUN: fusec-opt %s -split-input-file -mlir-print-op-generic | fusec-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %i: tensor<4xi32>, %m: tensor<4xi1>) {
  // CHECK: fusec.exp %{{.*}} : tensor<4x8xf32>
  %0 = fusec.exp %x : tensor<4x8xf32>
  // CHECK: fusec.exp2 %{{.*}} : tensor<4x8xf32>
  %1 = fusec.exp2 %x : tensor<4x8xf32>
  // CHECK: fusec.log
  %2 = fusec.log %x : tensor<4x8xf32>
  // CHECK: fusec.tanh
  %3 = fusec.tanh %x : tensor<4x8xf32>
  // CHECK: fusec.erf
  %4 = fusec.erf %x : tensor<4x8xf32>
  // CHECK: fusec.sigmoid
  %5 = fusec.sigmoid %x : tensor<4x8xf32>
  // CHECK: fusec.rsqrt
  %6 = fusec.rsqrt %x : tensor<4x8xf32>
  // CHECK: fusec.sqrt
  %7 = fusec.sqrt %x : tensor<4x8xf32>
  // CHECK: fusec.neg
  %8 = fusec.neg %x : tensor<4x8xf32>
  // CHECK: fusec.abs %{{.*}} : tensor<4xi32>
  %9 = fusec.abs %i : tensor<4xi32>
  // CHECK: fusec.floor
  %10 = fusec.floor %x : tensor<4x8xf32>
  // CHECK: fusec.ceil
  %11 = fusec.ceil %x : tensor<4x8xf32>
  // CHECK: fusec.sign %{{.*}} : tensor<4xi32>
  %12 = fusec.sign %i : tensor<4xi32>
  // CHECK: fusec.not %{{.*}} : tensor<4xi1>
  %13 = fusec.not %m : tensor<4xi1>
  return
}

// -----

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.*]]: tensor<16xbf16>, %[[B:.*]]: tensor<16xbf16>
func.func @binary(%a: tensor<16xbf16>, %b: tensor<16xbf16>, %p: tensor<16xi1>, %q: tensor<16xi1>) {
  // CHECK: fusec.add %[[A]], %[[B]] : tensor<16xbf16>
  %0 = fusec.add %a, %b : tensor<16xbf16>
  // CHECK: fusec.sub
  %1 = fusec.sub %a, %b : tensor<16xbf16>
  // CHECK: fusec.mul
  %2 = fusec.mul %a, %b : tensor<16xbf16>
  // CHECK: fusec.div
  %3 = fusec.div %a, %b : tensor<16xbf16>
  // CHECK: fusec.max
  %4 = fusec.max %a, %b : tensor<16xbf16>
  // CHECK: fusec.min
  %5 = fusec.min %a, %b : tensor<16xbf16>
  // CHECK: fusec.pow
  %6 = fusec.pow %a, %b : tensor<16xbf16>
  // CHECK: fusec.and %{{.*}}, %{{.*}} : tensor<16xi1>
  %7 = fusec.and %p, %q : tensor<16xi1>
  // CHECK: fusec.or
  %8 = fusec.or %p, %q : tensor<16xi1>
  // CHECK: %[[C:.*]] = fusec.compare ge, %[[A]], %[[B]] : tensor<16xbf16>
  %9 = fusec.compare ge, %a, %b : tensor<16xbf16>
  // CHECK: fusec.select %[[C]], %[[A]], %[[B]] : tensor<16xbf16>
  %10 = fusec.select %9, %a, %b : tensor<16xbf16>
  return
}

// -----

// All the element types the dialect stores.
// CHECK-LABEL: func.func @element_types
func.func @element_types(%a: tensor<8xf16>, %b: tensor<8xf8E4M3FN>, %c: tensor<8xf8E5M2>, %d: tensor<8xi64>) {
  // CHECK: fusec.add %{{.*}} : tensor<8xf16>
  %0 = fusec.add %a, %a : tensor<8xf16>
  // CHECK: fusec.mul %{{.*}} : tensor<8xf8E4M3FN>
  %1 = fusec.mul %b, %b : tensor<8xf8E4M3FN>
  // CHECK: fusec.max %{{.*}} : tensor<8xf8E5M2>
  %2 = fusec.max %c, %c : tensor<8xf8E5M2>
  // CHECK: fusec.add %{{.*}} : tensor<8xi64>
  %3 = fusec.add %d, %d : tensor<8xi64>
  return
}

// -----

// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %t: tensor<100x16xbf16>, %ids: tensor<2x3xi32>) {
  // CHECK: fusec.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
  %0 = fusec.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK: fusec.constant dense<5.000000e-01> : tensor<4x8xf32>
  %1 = fusec.constant dense<0.5> : tensor<4x8xf32>
  // CHECK: fusec.broadcast %{{.*}} dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  %2 = fusec.broadcast %v dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: fusec.reshape %{{.*}} : tensor<4x8xf32> -> tensor<2x16xf32>
  %3 = fusec.reshape %x : tensor<4x8xf32> -> tensor<2x16xf32>
  // CHECK: fusec.transpose %{{.*}} perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %4 = fusec.transpose %x perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK: fusec.slice %{{.*}} offsets [1, 0] strides [1, 2] : tensor<4x8xf32> -> tensor<3x4xf32>
  %5 = fusec.slice %x offsets [1, 0] strides [1, 2] : tensor<4x8xf32> -> tensor<3x4xf32>
  // CHECK: fusec.concat %{{.*}}, %{{.*}} dim 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %6 = fusec.concat %x, %x dim 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // CHECK: fusec.gather %{{.*}}[%{{.*}}] axis 0 : (tensor<100x16xbf16>, tensor<2x3xi32>) -> tensor<2x3x16xbf16>
  %7 = fusec.gather %t[%ids] axis 0 : (tensor<100x16xbf16>, tensor<2x3xi32>) -> tensor<2x3x16xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @compute
func.func @compute(%x: tensor<2x64x128xbf16>, %w: tensor<256x128xbf16>,
                   %q: tensor<1x8x32x64xbf16>, %kv: tensor<1x2x48x64xbf16>,
                   %pad: tensor<1x48xi1>) {
  // CHECK: fusec.reduce sum %{{.*}} dims [2] : tensor<2x64x128xbf16> -> tensor<2x64xbf16>
  %0 = fusec.reduce sum %x dims [2] : tensor<2x64x128xbf16> -> tensor<2x64xbf16>
  // CHECK: fusec.reduce max %{{.*}} dims [0, 2]
  %1 = fusec.reduce max %x dims [0, 2] : tensor<2x64x128xbf16> -> tensor<64xbf16>
  // CHECK: fusec.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x64x128xbf16>, tensor<256x128xbf16>) -> tensor<2x64x256xf32>
  %2 = fusec.matmul %x, %w {transpose_rhs} : (tensor<2x64x128xbf16>, tensor<256x128xbf16>) -> tensor<2x64x256xf32>
  // CHECK: fusec.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 1.250000e-01 : f64}
  %3 = fusec.attention %q, %kv, %kv {scale = 0.125 : f64, causal} : (tensor<1x8x32x64xbf16>, tensor<1x2x48x64xbf16>, tensor<1x2x48x64xbf16>) -> tensor<1x8x32x64xbf16>
  // CHECK: fusec.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} : tensor<1x48xi1> {scale = 1.250000e-01 : f64}
  %4 = fusec.attention %q, %kv, %kv mask %pad : tensor<1x48xi1> {scale = 0.125 : f64} : (tensor<1x8x32x64xbf16>, tensor<1x2x48x64xbf16>, tensor<1x2x48x64xbf16>) -> tensor<1x8x32x64xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @composites
func.func @composites(%x: tensor<4x8xbf16>, %g: tensor<8xbf16>) {
  // CHECK: fusec.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %0 = fusec.layer_norm %x, %g, %g {epsilon = 1.0e-3 : f64} : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  // CHECK: fusec.rms_norm %{{.*}}, %{{.*}} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %1 = fusec.rms_norm %x, %g : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  // CHECK: fusec.softmax %{{.*}} dim 1 : tensor<4x8xbf16>{{$}}
  %2 = fusec.softmax %x dim 1 : tensor<4x8xbf16>
  // CHECK: fusec.gelu %{{.*}} : tensor<4x8xbf16>{{$}}
  %3 = fusec.gelu %x : tensor<4x8xbf16>
  // CHECK: fusec.gelu %{{.*}} {tanh} : tensor<4x8xbf16>
  %4 = fusec.gelu %x {tanh} : tensor<4x8xbf16>
  // CHECK: fusec.silu %{{.*}} : tensor<4x8xbf16>
  %5 = fusec.silu %x : tensor<4x8xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @kernel
func.func @kernel(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  // CHECK: %[[R:.*]]:2 = fusec.kernel "add_mul"(%{{.*}}, %{{.*}}) : (tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<64xf32>, %[[Y:.*]]: tensor<64xf32>):
  // CHECK: fusec.yield %{{.*}}, %{{.*}} : tensor<64xf32>, tensor<64xf32>
  %r:2 = fusec.kernel "add_mul" (%a, %b) : (tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%x: tensor<64xf32>, %y: tensor<64xf32>):
    %s = fusec.add %x, %y : tensor<64xf32>
    %m = fusec.mul %s, %y : tensor<64xf32>
    fusec.yield %s, %m : tensor<64xf32>, tensor<64xf32>
  }
  return %r#0, %r#1 : tensor<64xf32>, tensor<64xf32>
}

// -----

// The attributes passes write on a kernel, typed: the launch plan, cache
// hints, the strategy and TMA tensor maps.
// An im2col map: the channels-last input's corners and strides.
// CHECK-LABEL: func.func @im2col_map
// CHECK: #fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 15, 14, 2], strides = [128, 1920, 26880], box = [64, 128, 1, 1], swizzle = 128, lower = [-1, -1], upper = [-1, -2], element_strides = [1, 2, 2, 1]>
func.func @im2col_map(%a: tensor<2x14x15x64xf16>) -> tensor<2x14x15x64xf16> {
  %r = fusec.kernel "k" (%a) {fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 15, 14, 2], strides = [128, 1920, 26880], box = [64, 128, 1, 1], swizzle = 128, lower = [-1, -1], upper = [-1, -2], element_strides = [1, 2, 2, 1]>]}
      : (tensor<2x14x15x64xf16>) -> tensor<2x14x15x64xf16> {
  ^bb0(%x: tensor<2x14x15x64xf16>):
    fusec.yield %x : tensor<2x14x15x64xf16>
  }
  return %r : tensor<2x14x15x64xf16>
}

// CHECK-LABEL: func.func @kernel_attributes
// CHECK: fusec.cache_hints = [#fusec<cache_hint stream>, #fusec<cache_hint keep>]
// CHECK-SAME: fusec.launch = #fusec.launch<strategy = row_cta, grid = 16, block = 1024, vector = 8, rows = 1, smem = 256, regs = 56>
// CHECK-SAME: fusec.strategy = #fusec<strategy row_cta>
// CHECK-SAME: fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 16], strides = [128], box = [64, 8], swizzle = 128>]
func.func @kernel_attributes(%a: tensor<16x64xbf16>, %b: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %r = fusec.kernel "k" (%a, %b) {fusec.cache_hints = [#fusec<cache_hint stream>, #fusec<cache_hint keep>],
      fusec.launch = #fusec.launch<strategy = row_cta, grid = 16, block = 1024, vector = 8, chunks = 1, rows = 1, smem = 256, regs = 56>,
      fusec.strategy = #fusec<strategy row_cta>,
      fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 16], strides = [128], box = [64, 8], swizzle = 128>]}
      : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16> {
  ^bb0(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>):
    %gb = fusec.broadcast %g dims [1] : tensor<64xbf16> -> tensor<16x64xbf16>
    %m = fusec.mul %x, %gb : tensor<16x64xbf16>
    fusec.yield %m : tensor<16x64xbf16>
  }
  return %r : tensor<16x64xbf16>
}

// -----

// A matmul plan: tile, stages and cluster.
// CHECK-LABEL: func.func @matmul_plan
// CHECK: fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 256, 64], stages = 4, cluster = 2, smem = 200000>
func.func @matmul_plan(%a: tensor<256x64xbf16>, %b: tensor<64x256xbf16>) -> tensor<256x256xf32> {
  %r = fusec.kernel "mm" (%a, %b) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [128, 256, 64], stages = 4, cluster = 2, smem = 200000>}
      : (tensor<256x64xbf16>, tensor<64x256xbf16>) -> tensor<256x256xf32> {
  ^bb0(%x: tensor<256x64xbf16>, %y: tensor<64x256xbf16>):
    %m = fusec.matmul %x, %y : (tensor<256x64xbf16>, tensor<64x256xbf16>) -> tensor<256x256xf32>
    fusec.yield %m : tensor<256x256xf32>
  }
  return %r : tensor<256x256xf32>
}

// -----

// Resident rhs tiles (the launch's `resident`, printed only when set).
// CHECK-LABEL: func.func @matmul_plan_resident
// CHECK: fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [64, 256, 64], stages = 8, smem = 132240, regs = 232, resident = 1>
func.func @matmul_plan_resident(%a: tensor<4096x64xf16>, %b: tensor<64x256xf16>) -> tensor<4096x256xf16> {
  %r = fusec.kernel "mm" (%a, %b) {fusec.launch = #fusec.launch<strategy = matmul_wgmma, grid = 132, block = 384, tile = [64, 256, 64], stages = 8, smem = 132240, regs = 232, resident = 1>}
      : (tensor<4096x64xf16>, tensor<64x256xf16>) -> tensor<4096x256xf16> {
  ^bb0(%x: tensor<4096x64xf16>, %y: tensor<64x256xf16>):
    %m = fusec.matmul %x, %y : (tensor<4096x64xf16>, tensor<64x256xf16>) -> tensor<4096x256xf16>
    fusec.yield %m : tensor<4096x256xf16>
  }
  return %r : tensor<4096x256xf16>
}
