// row_warp and row_cta: the row held in registers, read once.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/rms_norm_warp.k0_cast_cast.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/softmax_cta.k0_cast_cast.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/softmax_1024.k0_cast_cast.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// rms_norm over 1024 bf16: a warp per row (4 chunks of 8 a lane), 8 rows a
// CTA, no shared memory. The row's loads come first, all 16 bytes wide; the
// sum of squares is a butterfly of 5 shuffles; the outputs are stored 16
// bytes at a time.
// CHECK-LABEL: llvm.func @k0_cast_cast(
// CHECK-NOT: nvvm.barrier0
// CHECK-COUNT-4: llvm.inline_asm "ld.global.v4.u32
// CHECK-COUNT-5: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.inline_asm "rsqrt.approx.ftz.f32
// CHECK-COUNT-4: llvm.store %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// CHECK: llvm.return
func.func @rms_norm_warp(%x: tensor<9x1024xbf16>, %g: tensor<1024xbf16>) -> tensor<9x1024xbf16> {
  %0 = fusec.rms_norm %x, %g : (tensor<9x1024xbf16>, tensor<1024xbf16>) -> tensor<9x1024xbf16>
  return %0 : tensor<9x1024xbf16>
}

// softmax over 8192 bf16: a CTA of 256 threads per row. Each reduction
// crosses warps through shared memory with one barrier (slots by the row's
// parity); the division by the row's sum is one reciprocal per row.
// CHECK: llvm.mlir.global internal @__fusec_partials() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<128 x f32>
// CHECK-LABEL: llvm.func @k0_cast_cast(
// CHECK-SAME: attributes {nvvm.kernel}
// CHECK: %[[PARTIALS:.*]] = llvm.mlir.addressof @__fusec_partials : !llvm.ptr<3>
// CHECK: ^{{.*}}(%[[ROW:.*]]: i64, %[[PARITY:.*]]: i32):
// CHECK-COUNT-4: llvm.inline_asm "ld.global.v4.u32
// The max: a warp butterfly, partials, a barrier, a butterfly over 8 warps.
// CHECK-COUNT-5: nvvm.shfl.sync  bfly
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-3: nvvm.shfl.sync  bfly
// The sum of exp(x - max), the same way.
// CHECK: llvm.inline_asm "ex2.approx.ftz.f32
// CHECK: nvvm.barrier0
// One reciprocal of the sum, then multiplies.
// CHECK: %[[RCP:.*]] = llvm.fdiv %{{.*}}, %{{.*}} : f32
// CHECK-NOT: llvm.fdiv
// CHECK: llvm.fmul %{{.*}}, %[[RCP]] : f32
// CHECK-NOT: llvm.fdiv
// CHECK: llvm.xor %[[PARITY]], %{{.*}} : i32
func.func @softmax_cta(%x: tensor<4x8192xbf16>) -> tensor<4x8192xbf16> {
  %0 = fusec.softmax %x dim 1 : tensor<4x8192xbf16>
  return %0 : tensor<4x8192xbf16>
}

// 1024 threads a row must fit in 64 registers: the kernel says so.
// CHECK-LABEL: llvm.func @k0_cast_cast(
// CHECK-SAME: nvvm.maxntid = array<i32: 1024>
// Each later pass converts again from the packed words.
// CHECK: llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r"
func.func @softmax_1024(%x: tensor<3x50304xbf16>) -> tensor<3x50304xbf16> {
  %0 = fusec.softmax %x dim 1 : tensor<3x50304xbf16>
  return %0 : tensor<3x50304xbf16>
}
