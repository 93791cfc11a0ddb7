// fusec.round (halves to even: ONNX's Round and QuantizeLinear's rounding)
// is one cvt.rni a lane in the generated kernel, and the pipeline keeps the
// graph's meaning on the interpreter (std::nearbyint). A QuantizeLinear as
// the importer writes it: round(x / scale) + zero point, clamped to uint8.
// RUN: fusec-compile %s --target=h200 --emit=ptx -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: fusec-run --reference --verify-pipeline=fusec-pipeline %s | FileCheck %s --check-prefix=SAME
// CHECK: .entry
// CHECK: cvt.rni.f32.f32
// SAME: PASS: fusec-pipeline keeps the graph's meaning
func.func @quantize(%x: tensor<4096xf32>) -> tensor<4096xi32> {
  %s = fusec.constant dense<0.03125> : tensor<4096xf32>
  %z = fusec.constant dense<128.0> : tensor<4096xf32>
  %lo = fusec.constant dense<0.0> : tensor<4096xf32>
  %hi = fusec.constant dense<255.0> : tensor<4096xf32>
  %q = fusec.div %x, %s : tensor<4096xf32>
  %r = fusec.round %q : tensor<4096xf32>
  %a = fusec.add %r, %z : tensor<4096xf32>
  %b = fusec.max %a, %lo : tensor<4096xf32>
  %c = fusec.min %b, %hi : tensor<4096xf32>
  %y = fusec.cast %c : tensor<4096xf32> to tensor<4096xi32>
  return %y : tensor<4096xi32>
}
