// fusec-fuse's last step folds slice and transpose kernels into the matmul
// kernels next to them: into the store (the QKV projection writes Q, K and V
// head-major) and into the operand load (the output projection reads the
// attention output [B, H, S, D] through a tensor map over its factors).
// FUSEC_WGMMA_PINGPONG=0 keeps the cooperative schedule these checks
// describe (matmul-wgmma-pingpong.mlir covers ping-pong).
// FUSEC_ATTENTION_LAYOUTS=0 keeps the transposes around the attention,
// which by default fold into its layouts instead (LAYOUTS below).
// RUN: env FUSEC_WGMMA_PINGPONG=0 FUSEC_ATTENTION_LAYOUTS=0 fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s
// RUN: env FUSEC_ATTENTION_LAYOUTS=0 fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=attention_block | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=attention_block | FileCheck %s --check-prefix=SAME
// RUN: fusec-run --verify-pipeline="fusec-pipeline{target=h200}" %s --function=not_folded | FileCheck %s --check-prefix=SAME
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FUSEC_WGMMA_PINGPONG=0 FUSEC_ATTENTION_LAYOUTS=0 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="dump-dir=%t" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=MAPS < %t/out.mlir
// RUN: %python %S/../CodeGen/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/attention_block.k0_matmul.ptx %t/attention_block.k8_matmul_add.ptx
// RUN: env FUSEC_WGMMA_PINGPONG=0 FUSEC_ATTENTION_LAYOUTS=0 fusec-opt %s --fusec-pipeline="target=h200" --fusec-codegen="arch=sm_80 dump-dir=%t/sm_80" -o /dev/null
// RUN: fusec-opt %s --fusec-pipeline="target=h200" | FileCheck %s --check-prefix=LAYOUTS
// RUN: FileCheck %s --check-prefix=SIMT < %t/sm_80/attention_block.k0_matmul.ptx
// REQUIRES: ptxas
// SAME: PASS

// 2 sequences of 256 tokens, width 256, 4 heads of 64.
// CHECK-LABEL: func.func @attention_block
// CHECK: %[[QKV:.*]]:3 = fusec.kernel "k0_matmul"(%arg0, %arg1) {{.*}}strategy = matmul_wgmma{{.*}} -> (tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>)
// CHECK-DAG: fusec.slice {{.*}} offsets [0, 0]
// CHECK-DAG: fusec.slice {{.*}} offsets [0, 256]
// CHECK-DAG: fusec.slice {{.*}} offsets [0, 512]
// CHECK: fusec.transpose
// CHECK: fusec.yield
// CHECK-NOT: fusec.kernel
// CHECK: %[[O:.*]] = fusec.attention
// CHECK-NEXT: fusec.kernel "{{k[0-9]+}}_matmul_add"(%[[O]], %arg2, %arg3) {{.*}}strategy = matmul_wgmma
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x4x256x64xbf16>
// CHECK-NEXT: fusec.transpose %[[A]] perm [0, 2, 1, 3]
// CHECK-NEXT: fusec.reshape
// CHECK-NEXT: fusec.matmul
// CHECK-NOT: fusec.kernel
// CHECK: return
// By default the transposes fold into the attention's layouts: the QKV
// projection writes Q, K and V as [B, S, H, D] slices (plain rows), the
// attention reads them and writes O in place, and the output projection
// reads O as plain rows.
// LAYOUTS-LABEL: func.func @attention_block
// LAYOUTS: fusec.kernel "k0_matmul"{{.*}} -> (tensor<512x256xbf16>, tensor<512x256xbf16>, tensor<512x256xbf16>)
// LAYOUTS-NOT: fusec.transpose
// LAYOUTS: fusec.attention {{.*}}key_perm = array<i64: 0, 2, 1, 3>, query_perm = array<i64: 0, 2, 1, 3>, result_perm = array<i64: 0, 2, 1, 3>{{.*}} -> tensor<2x256x4x64xbf16>
// LAYOUTS-NOT: fusec.transpose
// LAYOUTS: return
// The attention output as the lhs: d (64, contiguous), h (4, 16384 bytes
// apart), s (256 rows, 128 bytes apart), b (2): a box of 64 d x 1 x 128 s x 1.
// MAPS-LABEL: func.func @attention_block
// MAPS: fusec.tensor_maps = [#fusec.tensor_map<slot = 0, element_bytes = 2, dims = [64, 4, 256, 2], strides = [32768, 128, 131072], box = [64, 1, 128, 1], swizzle = 128>
// The SIMT fallback writes through the same maps (guards for the slices).
// SIMT: .target sm_80
// SIMT: st.global.b16
func.func @attention_block(%x: tensor<512x256xbf16>, %wqkv: tensor<256x768xbf16>,
                           %wo: tensor<256x256xbf16>, %res: tensor<512x256xbf16>)
    -> tensor<512x256xbf16> {
  %qkv = fusec.matmul %x, %wqkv : (tensor<512x256xbf16>, tensor<256x768xbf16>) -> tensor<512x768xbf16>
  %q2 = fusec.slice %qkv offsets [0, 0] strides [1, 1] : tensor<512x768xbf16> -> tensor<512x256xbf16>
  %k2 = fusec.slice %qkv offsets [0, 256] strides [1, 1] : tensor<512x768xbf16> -> tensor<512x256xbf16>
  %v2 = fusec.slice %qkv offsets [0, 512] strides [1, 1] : tensor<512x768xbf16> -> tensor<512x256xbf16>
  %q3 = fusec.reshape %q2 : tensor<512x256xbf16> -> tensor<2x256x4x64xbf16>
  %k3 = fusec.reshape %k2 : tensor<512x256xbf16> -> tensor<2x256x4x64xbf16>
  %v3 = fusec.reshape %v2 : tensor<512x256xbf16> -> tensor<2x256x4x64xbf16>
  %q = fusec.transpose %q3 perm [0, 2, 1, 3] : tensor<2x256x4x64xbf16> -> tensor<2x4x256x64xbf16>
  %k = fusec.transpose %k3 perm [0, 2, 1, 3] : tensor<2x256x4x64xbf16> -> tensor<2x4x256x64xbf16>
  %v = fusec.transpose %v3 perm [0, 2, 1, 3] : tensor<2x256x4x64xbf16> -> tensor<2x4x256x64xbf16>
  %o = fusec.attention %q, %k, %v {scale = 0.125 : f64, causal}
      : (tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>) -> tensor<2x4x256x64xbf16>
  %o3 = fusec.transpose %o perm [0, 2, 1, 3] : tensor<2x4x256x64xbf16> -> tensor<2x256x4x64xbf16>
  %o2 = fusec.reshape %o3 : tensor<2x256x4x64xbf16> -> tensor<512x256xbf16>
  %p = fusec.matmul %o2, %wo : (tensor<512x256xbf16>, tensor<256x256xbf16>) -> tensor<512x256xbf16>
  %r = fusec.add %res, %p : tensor<512x256xbf16>
  return %r : tensor<512x256xbf16>
}

// What stays apart: a transpose of the whole (square) result reads it at
// another index; a strided slice; heads of 32 (a 64-wide K box would cross
// heads).
// CHECK-LABEL: func.func @not_folded
// CHECK: fusec.kernel "k0_matmul"
// CHECK: fusec.kernel "{{k[0-9]+}}_transpose"
// CHECK: fusec.kernel "{{k[0-9]+}}_slice"
// CHECK: fusec.kernel "{{k[0-9]+}}_transpose"
// CHECK: fusec.kernel "{{k[0-9]+}}_matmul"
func.func @not_folded(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %h: tensor<2x8x256x32xbf16>,
                      %w: tensor<256x128xbf16>)
    -> (tensor<256x256xbf16>, tensor<256x128xbf16>, tensor<512x128xbf16>) {
  %0 = fusec.matmul %a, %b : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %1 = fusec.transpose %0 perm [1, 0] : tensor<256x256xbf16> -> tensor<256x256xbf16>
  %2 = fusec.slice %0 offsets [0, 0] strides [1, 2] : tensor<256x256xbf16> -> tensor<256x128xbf16>
  %3 = fusec.transpose %h perm [0, 2, 1, 3] : tensor<2x8x256x32xbf16> -> tensor<2x256x8x32xbf16>
  %4 = fusec.reshape %3 : tensor<2x256x8x32xbf16> -> tensor<512x256xbf16>
  %5 = fusec.matmul %4, %w : (tensor<512x256xbf16>, tensor<256x128xbf16>) -> tensor<512x128xbf16>
  return %1, %2, %5 : tensor<256x256xbf16>, tensor<256x128xbf16>, tensor<512x128xbf16>
}
