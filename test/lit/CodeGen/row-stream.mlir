// row_stream: rows too long for registers, and reductions over dims apart.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/softmax_long.k0_reduce_div.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/mvn.k0_reduce_mul.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/cross_entropy.k0_cast_sub.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: FUSEC_ROW_STREAM_LONG=0 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=INREGS
// RUN: FUSEC_ROW_STREAM_VECTOR=1 fusec-opt %s --fusec-pipeline | FileCheck %s --check-prefix=SCALAR
// SCALAR-LABEL: func.func @softmax_long
// SCALAR: strategy = row_stream, grid = 1, block = 256, rows = 8
// SCALAR-LABEL: func.func @cross_entropy
// SCALAR: strategy = row_stream, grid = 1, block = 256, rows = 8
// REQUIRES: ptxas
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// f32 softmax over 50304: a warp per row. One loop finds the max and the
// sum of exp(x - max) together (online softmax: two carried values); each
// lane reads 4 adjacent columns with one 16-byte load, 128 columns a step,
// one exp a column; a butterfly combines both; a last loop writes the
// outputs.
// CHECK-LABEL: llvm.func @k0_reduce_div(
// CHECK: %[[L32:.*]] = llvm.and %{{.*}}, %{{.*}} : i32
// CHECK: %[[LANE:.*]] = llvm.zext %[[L32]] : i32 to i64
// The row loop.
// CHECK: ^{{.*}}(%[[ROW:.*]]: i64):
// CHECK: llvm.icmp "ult" %[[ROW]]
// The pass over the row: (column, max, sum), from lane * 4.
// CHECK: %[[START:.*]] = llvm.mul %[[LANE]], %{{.*}} : i64
// CHECK: llvm.br ^[[PASS:bb[0-9]+]](%[[START]], %{{.*}}, %{{.*}} : i64, f32, f32)
// CHECK: ^[[PASS]](%[[COL:.*]]: i64, %[[MAX:.*]]: f32, %[[SUM:.*]]: f32):
// CHECK: llvm.icmp "ult" %[[COL]]
// CHECK: llvm.inline_asm "ld.global.v4.u32
// CHECK: llvm.intr.maximum(%[[MAX]], %{{.*}})
// CHECK-COUNT-4: ex2.approx.ftz.f32
// CHECK-NOT: ex2.approx
// CHECK: %[[NEXT:.*]] = llvm.add %[[COL]], %{{.*}} : i64
// CHECK: llvm.br ^[[PASS]](%[[NEXT]]
// CHECK-COUNT-10: nvvm.shfl.sync  bfly
// The output loop.
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<1>
// CHECK: llvm.return
func.func @softmax_long(%x: tensor<2x50304xf32>) -> tensor<2x50304xf32> {
  %0 = fusec.softmax %x dim 1 : tensor<2x50304xf32>
  return %0 : tensor<2x50304xf32>
}

// MeanVarianceNormalization's dims 0, 2, 3: a warp per kept position, each
// element found through its coordinates (divisions by the dims' strides).
// CHECK-LABEL: llvm.func @k0_reduce_mul(
// CHECK: llvm.udiv
// CHECK: llvm.urem
// CHECK: nvvm.shfl.sync  bfly
func.func @mvn(%x: tensor<3x5x7x9xf32>) -> tensor<3x5x7x9xf32> {
  %m = fusec.reduce mean %x dims [0, 2, 3] : tensor<3x5x7x9xf32> -> tensor<5xf32>
  %mb = fusec.broadcast %m dims [1] : tensor<5xf32> -> tensor<3x5x7x9xf32>
  %d = fusec.sub %x, %mb : tensor<3x5x7x9xf32>
  %s = fusec.mul %d, %d : tensor<3x5x7x9xf32>
  %v = fusec.reduce mean %s dims [0, 2, 3] : tensor<3x5x7x9xf32> -> tensor<5xf32>
  %vb = fusec.broadcast %v dims [1] : tensor<5xf32> -> tensor<3x5x7x9xf32>
  %r = fusec.mul %d, %vb : tensor<3x5x7x9xf32>
  return %r : tensor<3x5x7x9xf32>
}

// Cross-entropy over a 50304 bf16 vocabulary: logsumexp and the target
// logit's masked sum do not depend on each other, so one pass reads the row
// for both (rowStreamPasses): (column, max, sum, target) carried, one 16-byte
// load (8 bf16 columns) a lane a step and one exp an element. Its row would fit a 1024-thread CTA's
// registers, one row in flight an SM; with no output of the row's shape
// it is streamed instead (FUSEC_ROW_STREAM_LONG=0: in registers).
// CHECK-LABEL: llvm.func @k0_cast_sub(
// CHECK: llvm.br ^[[CE:bb[0-9]+]](%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i64, f32, f32, f32)
// CHECK: ^[[CE]](%{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK: llvm.inline_asm "ld.global.v4.u32
// CHECK-COUNT-8: ex2.approx.ftz.f32
// CHECK-NOT: ex2.approx
// CHECK-NOT: ld.global.v4.u32
// CHECK: llvm.br ^[[CE]](
// CHECK-COUNT-15: nvvm.shfl.sync  bfly
// CHECK-NOT: ld.global.v4.u32
// CHECK: llvm.return
// INREGS-LABEL: func.func @cross_entropy
// INREGS: strategy = row_cta, grid = 4, block = 1024
func.func @cross_entropy(%x: tensor<4x50304xbf16>, %t: tensor<4xi32>, %iota: tensor<50304xi32>) -> tensor<4xf32> {
  %xf = fusec.cast %x : tensor<4x50304xbf16> to tensor<4x50304xf32>
  %m = fusec.reduce max %xf dims [1] : tensor<4x50304xf32> -> tensor<4xf32>
  %mb = fusec.broadcast %m dims [0] : tensor<4xf32> -> tensor<4x50304xf32>
  %d = fusec.sub %xf, %mb : tensor<4x50304xf32>
  %e = fusec.exp %d : tensor<4x50304xf32>
  %s = fusec.reduce sum %e dims [1] : tensor<4x50304xf32> -> tensor<4xf32>
  %l = fusec.log %s : tensor<4xf32>
  %lse = fusec.add %l, %m : tensor<4xf32>
  %tb = fusec.broadcast %t dims [0] : tensor<4xi32> -> tensor<4x50304xi32>
  %ib = fusec.broadcast %iota dims [1] : tensor<50304xi32> -> tensor<4x50304xi32>
  %eq = fusec.compare eq, %ib, %tb : tensor<4x50304xi32>
  %z = fusec.constant dense<0.0> : tensor<4x50304xf32>
  %sel = fusec.select %eq, %xf, %z : tensor<4x50304xf32>
  %xt = fusec.reduce sum %sel dims [1] : tensor<4x50304xf32> -> tensor<4xf32>
  %loss = fusec.sub %lse, %xt : tensor<4xf32>
  return %loss : tensor<4xf32>
}
