// fuzz_onnx, once its inputs went through precision lowering (stop 58): a
// ConstantOfShape of 100000 x 100000 x 100 timed out (31 s under ASan) in
// the pass's magnitude of a constant, which iterated the splat's 10^12
// elements; converting such a constant to the narrow type would have done
// the same. A splat is now one value for both.
// RUN: timeout 20 fusec-opt %s --fusec-lower-precision 2>/dev/null | FileCheck %s
// RUN: timeout 20 fusec-translate --import-onnx %fusec_src/test/lit/Import/Inputs/fuzz/huge_splat_lower_precision_timeout.onnx | timeout 20 fusec-opt --fusec-pipeline="precision=bf16" | FileCheck %s --check-prefix=ONNX
// ONNX: fusec.constant dense<0.000000e+00> : tensor<100000x100000x100xf32>

// CHECK-LABEL: func.func @huge
// CHECK: fusec.constant dense<5.000000e-01> : tensor<100000x100000x100xbf16>
// CHECK: fusec.tanh {{.*}} : tensor<100000x100000x100xbf16>
func.func @huge(%x: tensor<100000x100000x100xf32>) -> tensor<100000x100000x100xf32> {
  %c = fusec.constant dense<0.5> : tensor<100000x100000x100xf32>
  %a = fusec.add %x, %c : tensor<100000x100000x100xf32>
  %t = fusec.tanh %a : tensor<100000x100000x100xf32>
  %r = fusec.mul %t, %c : tensor<100000x100000x100xf32>
  return %r : tensor<100000x100000x100xf32>
}
