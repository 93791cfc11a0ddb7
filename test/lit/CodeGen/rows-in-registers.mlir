// row_warp and row_cta: the row held in registers, read once.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/rms_norm_warp.k0_cast_cast.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/softmax_cta.k0_cast_cast.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/softmax_1024.k0_cast_cast.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/row_quant.k0_cast_div.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/b arch=sm_100a" -o /dev/null
// RUN: %ptxas -arch=sm_100a -v %t/b/row_quant.k0_cast_div.ptx -o %t/e.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=BOUND < %t/row_quant.k0_cast_div.ptx
// RUN: FileCheck %s --check-prefix=UNBOUND < %t/softmax_cta.k0_cast_cast.ptx
// RUN: env FUSEC_ROW_MIN_CTAS=0 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/off" -o /dev/null
// RUN: FileCheck %s --check-prefix=UNBOUND < %t/off/row_quant.k0_cast_div.ptx
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

// fp8 row quantization: one input, 32 elements a thread, one reduction, no
// transcendental per element: the kernel asks for 4 CTAs of 256 an SM (64
// registers), and fits them without a spill. softmax (two reductions, exp
// per element) is left to ptxas, as is everything under FUSEC_ROW_MIN_CTAS=0.
// BOUND: .maxntid 256
// BOUND: .minnctapersm 4
// UNBOUND-NOT: .minnctapersm
func.func @row_quant(%x: tensor<6x8192xbf16>) -> (tensor<6x8192xf8E4M3FN>, tensor<6xf32>) {
  %xf = fusec.cast %x : tensor<6x8192xbf16> to tensor<6x8192xf32>
  %a = fusec.abs %xf : tensor<6x8192xf32>
  %amax = fusec.reduce max %a dims [1] : tensor<6x8192xf32> -> tensor<6xf32>
  %k = fusec.constant dense<448.0> : tensor<6xf32>
  %sc = fusec.div %k, %amax : tensor<6xf32>
  %sb = fusec.broadcast %sc dims [0] : tensor<6xf32> -> tensor<6x8192xf32>
  %q = fusec.mul %xf, %sb : tensor<6x8192xf32>
  %y = fusec.cast %q : tensor<6x8192xf32> to tensor<6x8192xf8E4M3FN>
  %inv = fusec.div %amax, %k : tensor<6xf32>
  return %y, %inv : tensor<6x8192xf8E4M3FN>, tensor<6xf32>
}
