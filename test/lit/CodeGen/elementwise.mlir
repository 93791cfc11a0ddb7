// The elementwise and movement strategy, read at the LLVM/NVVM dialect
// (--fusec-codegen=emit=llvm) and as PTX.
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen=emit=llvm | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/silu_bias.k0_broadcast_cast.ptx
// RUN: %ptxas -arch=sm_90a -v %t/silu_bias.k0_broadcast_cast.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/three_reads.three_reads.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/to_int.k0_cast.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/rotary.k0_sin_add.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/int_pow.k0_pow.ptx -o %t/e.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// bf16: 8 elements per 16-byte chunk. The full-shape operand is one 16-byte
// load; so is the broadcast bias: a chunk's lanes stay in one row, and the
// broadcast keeps the last dim, so the lanes read consecutive elements of
// the bias (a lane run, from lane 0's remapped index).
// CHECK-LABEL: llvm.func @k0_broadcast_cast(
// CHECK-SAME: %[[B:.*]]: !llvm.ptr<1> {llvm.noalias}, %[[X:.*]]: !llvm.ptr<1> {llvm.noalias}, %[[OUT:.*]]: !llvm.ptr<1> {llvm.noalias}) attributes {nvvm.kernel}
// The grid-stride loop over tiles of 2 x 256 chunks (launch chunks = 2):
// thread t takes chunks t and t + 256 of its tile.
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[NTID:.*]] = nvvm.read.ptx.sreg.ntid.x
// CHECK: %[[CTAID:.*]] = nvvm.read.ptx.sreg.ctaid.x
// CHECK: llvm.br ^[[HEAD:bb[0-9]+]](%{{.*}} : i64)
// CHECK: ^[[HEAD]](%[[TILE:.*]]: i64):
// CHECK: %[[FIRST:.*]] = llvm.mul %[[TILE]], %{{.*}} : i64
// CHECK: llvm.cond_br %{{.*}}, ^{{.*}}, ^[[EXIT:bb[0-9]+]]
// A tile inside the domain runs both chunks together, else one by one.
// CHECK: %[[FULL:.*]] = llvm.icmp "ule"
// CHECK: llvm.cond_br %[[FULL]], ^[[FAST:bb[0-9]+]], ^[[SLOW:bb[0-9]+]]
// CHECK: ^[[FAST]]:
// Both chunks' loads of x first (in flight together).
// CHECK: llvm.getelementptr %[[X]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.inline_asm "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l"
// CHECK: llvm.bitcast %{{.*}} : vector<4xi32> to vector<8xbf16>
// CHECK: llvm.getelementptr %[[X]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.inline_asm "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l"
// The bias through its broadcast: a lane run, one vector load a chunk.
// CHECK: llvm.getelementptr %[[B]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.inline_asm "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l"
// CHECK-NOT: llvm.load %{{.*}} : !llvm.ptr<1> -> bf16
// sigmoid through the SFU's ex2.
// CHECK: llvm.inline_asm "ex2.approx.ftz.f32 $0, $1;", "=f,f"
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// CHECK: llvm.getelementptr %[[B]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.inline_asm "ld.global.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l"
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// The last tile: each chunk checked against the end, a partial chunk's
// lanes each guarded by its own index < 16384.
// CHECK: ^[[SLOW]]:
// CHECK-COUNT-8: llvm.icmp "ult" %{{.*}}, %{{.*}} : i64
// CHECK: llvm.return
// PTX: .visible .entry k0_broadcast_cast(
// PTX: ld.global.v4.u32
// PTX: ex2.approx.ftz.f32
// PTX: st.global.v4.b32
// PTX-NOT: .local
func.func @silu_bias(%x: tensor<64x256xbf16>, %b: tensor<256xbf16>) -> tensor<64x256xbf16> {
  %bb = fusec.broadcast %b dims [1] : tensor<256xbf16> -> tensor<64x256xbf16>
  %0 = fusec.add %x, %bb : tensor<64x256xbf16>
  %1 = fusec.silu %0 : tensor<64x256xbf16>
  return %1 : tensor<64x256xbf16>
}

// One operand read at three indices in the same lane: its own, and through
// two transposes. Each (value, index) pair is its own memo entry, keyed by the
// index value itself; the previous code generator keyed by a 32-bit hash of
// the index's text, which could give two indices one entry (one load for
// both). Lane 0 of the full chunk has one vector load of %x, another at the
// first transpose's index (it keeps the last dim: the lanes are a run), and
// a scalar load at the second's (it moves the last dim), each with its own
// address.
// (The tile's two chunks load %x first.)
// CHECK-LABEL: llvm.func @three_reads(
// CHECK-COUNT-2: llvm.inline_asm "ld.global.v4.u32
// CHECK: %[[T1:.*]] = llvm.getelementptr %arg0[%[[I1:.*]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: llvm.inline_asm "ld.global.v4.u32
// CHECK: %[[T2:.*]] = llvm.getelementptr %arg0[%[[I2:.*]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT: llvm.load %[[T2]] : !llvm.ptr<1> -> f32
func.func @three_reads(%x: tensor<8x8x8xf32>) -> tensor<8x8x8xf32> {
  %r = fusec.kernel "three_reads" (%x) : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32> {
  ^bb0(%a: tensor<8x8x8xf32>):
    %t = fusec.transpose %a perm [1, 0, 2] : tensor<8x8x8xf32> -> tensor<8x8x8xf32>
    %u = fusec.transpose %a perm [2, 1, 0] : tensor<8x8x8xf32> -> tensor<8x8x8xf32>
    %0 = fusec.add %a, %t : tensor<8x8x8xf32>
    %1 = fusec.add %0, %u : tensor<8x8x8xf32>
    fusec.yield %1 : tensor<8x8x8xf32>
  }
  return %r : tensor<8x8x8xf32>
}

// Float to integer saturates (NaN to 0), as the interpreter does.
// CHECK-LABEL: llvm.func @k0_cast(
// CHECK: llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"(%{{.*}}) : (f32) -> i32
func.func @to_int(%x: tensor<1000xf32>) -> tensor<1000xi32> {
  %0 = fusec.cast %x : tensor<1000xf32> to tensor<1000xi32>
  return %0 : tensor<1000xi32>
}

// sin and cos (rotary embeddings): the argument is reduced by k·2pi in two
// parts, then one SFU instruction each.
// CHECK-LABEL: llvm.func @k0_sin
// CHECK: llvm.intr.floor
// CHECK: llvm.fmul %{{.*}}, %{{.*}} : f32
// CHECK: llvm.inline_asm {{.*}}"sin.approx.ftz.f32
// CHECK: llvm.inline_asm {{.*}}"cos.approx.ftz.f32
func.func @rotary(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %s = fusec.sin %x : tensor<4096xf32>
  %c = fusec.cos %x : tensor<4096xf32>
  %0 = fusec.add %s, %c : tensor<4096xf32>
  return %0 : tensor<4096xf32>
}

// Integer powers are exact: square and multiply over the exponent's bits
// (a select per bit), never through lg2/ex2.
// CHECK-LABEL: llvm.func @k0_pow
// CHECK-NOT: lg2.approx
// CHECK: llvm.mul %{{.*}}, %{{.*}} : i32
// CHECK: llvm.select
// CHECK-NOT: ex2.approx
// CHECK: llvm.return
func.func @int_pow(%x: tensor<1000xi32>, %y: tensor<1000xi32>) -> tensor<1000xi32> {
  %0 = fusec.pow %x, %y : tensor<1000xi32>
  return %0 : tensor<1000xi32>
}
