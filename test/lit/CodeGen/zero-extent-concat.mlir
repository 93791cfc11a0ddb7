// A concat whose parts are all empty along the concatenated dim (fuzz_mlir's
// structure-aware mutator, a segfault in code generation: the element's
// value was chosen among no parts, a null value). Such a kernel has no
// elements and no element reaches its body; the value is now a poison the
// guarded loop never uses, and every kernel is generated.
// RUN: fusec-compile %s --target=h200 --emit=ptx -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline %s | FileCheck %s --check-prefix=SAME
// CHECK-DAG: .visible .entry {{.*}}concat
// CHECK-DAG: .visible .entry {{.*}}mul
// SAME: PASS
func.func @empty_parts(%x: tensor<3x48xf16>) -> (tensor<3x0xf16>, tensor<3x0xf16>) {
  %g = fusec.slice %x offsets [0, 0] strides [1, 1] : tensor<3x48xf16> -> tensor<3x0xf16>
  %c = fusec.concat %g, %g, %g dim 1 : (tensor<3x0xf16>, tensor<3x0xf16>, tensor<3x0xf16>) -> tensor<3x0xf16>
  %u = fusec.slice %x offsets [0, 24] strides [1, 1] : tensor<3x48xf16> -> tensor<3x0xf16>
  %a = fusec.silu %g : tensor<3x0xf16>
  %d = fusec.div %a, %a : tensor<3x0xf16>
  %n = fusec.neg %d : tensor<3x0xf16>
  %y = fusec.mul %n, %u : tensor<3x0xf16>
  return %y, %c : tensor<3x0xf16>, tensor<3x0xf16>
}
