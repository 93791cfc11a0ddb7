// RUN: fusec-opt %s --fusec-fuse --fusec-assign-cache-hints | FileCheck %s
// RUN: fusec-opt %s --fusec-fuse --fusec-assign-cache-hints=aggressive=false | FileCheck %s --check-prefix=OFF
// RUN: env FUSEC_DISABLE_AGGRESSIVE_PTX=1 fusec-opt %s --fusec-fuse --fusec-assign-cache-hints | FileCheck %s --check-prefix=OFF

// x is read once (stream); g is broadcast across rows (keep); y is read by
// two kernels, since a column sum cannot share the row kernel (keep).
// CHECK-LABEL: func.func @hints
// CHECK-DAG: fusec.kernel "{{.*}}"(%arg1, %arg0, %arg2) {fusec.cache_hints = [#fusec<cache_hint keep>, #fusec<cache_hint stream>, #fusec<cache_hint keep>]}
// CHECK-DAG: fusec.kernel "{{.*}}"(%arg2) {fusec.cache_hints = [#fusec<cache_hint keep>]}
// OFF-LABEL: func.func @hints
// OFF-DAG: fusec.cache_hints = [#fusec<cache_hint default>, #fusec<cache_hint default>, #fusec<cache_hint default>]
// OFF-DAG: fusec.cache_hints = [#fusec<cache_hint default>]
// OFF-NOT: cache_hint stream
// OFF-NOT: cache_hint keep
func.func @hints(%x: tensor<64x256xf32>, %g: tensor<256xf32>, %y: tensor<64x256xf32>) -> (tensor<64x256xf32>, tensor<64xf32>, tensor<256xf32>) {
  %gb = fusec.broadcast %g dims [1] : tensor<256xf32> -> tensor<64x256xf32>
  %0 = fusec.mul %x, %gb : tensor<64x256xf32>
  %1 = fusec.add %0, %y : tensor<64x256xf32>
  %2 = fusec.reduce sum %y dims [0] : tensor<64x256xf32> -> tensor<256xf32>
  %3 = fusec.reduce max %y dims [1] : tensor<64x256xf32> -> tensor<64xf32>
  return %1, %3, %2 : tensor<64x256xf32>, tensor<64xf32>, tensor<256xf32>
}
