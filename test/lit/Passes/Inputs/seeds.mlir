// The graphs behind the seeds' roofline facts (test/lit/Passes/roofline-report.mlir).
func.func @vector_add(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %0 = fusec.add %a, %b : tensor<1048576xf32>
  return %0 : tensor<1048576xf32>
}

func.func @chain_unfused(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %0 = fusec.add %a, %b : tensor<1048576xf32>
  %1 = fusec.neg %0 : tensor<1048576xf32>
  %2 = fusec.abs %1 : tensor<1048576xf32>
  %3 = fusec.floor %2 : tensor<1048576xf32>
  return %3 : tensor<1048576xf32>
}

func.func @chain_fused(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %r = fusec.kernel "chain" (%a, %b) : (tensor<1048576xf32>, tensor<1048576xf32>) -> tensor<1048576xf32> {
  ^bb0(%x: tensor<1048576xf32>, %y: tensor<1048576xf32>):
    %0 = fusec.add %x, %y : tensor<1048576xf32>
    %1 = fusec.neg %0 : tensor<1048576xf32>
    %2 = fusec.abs %1 : tensor<1048576xf32>
    %3 = fusec.floor %2 : tensor<1048576xf32>
    fusec.yield %3 : tensor<1048576xf32>
  }
  return %r : tensor<1048576xf32>
}

// Attention forward, bf16, head dim 128 (BENCHMARKS.md's first shape).
func.func @attention_d128(%q: tensor<4x32x4096x128xbf16>, %k: tensor<4x32x4096x128xbf16>, %v: tensor<4x32x4096x128xbf16>) -> tensor<4x32x4096x128xbf16> {
  %0 = fusec.attention %q, %k, %v {scale = 0.088388347648318 : f64} : (tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>) -> tensor<4x32x4096x128xbf16>
  return %0 : tensor<4x32x4096x128xbf16>
}

func.func @matmul_8192(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %0 = fusec.matmul %a, %b : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %0 : tensor<8192x8192xbf16>
}

func.func @layer_norm(%x: tensor<16384x8192xbf16>, %g: tensor<8192xbf16>, %b: tensor<8192xbf16>) -> tensor<16384x8192xbf16> {
  %0 = fusec.layer_norm %x, %g, %b : (tensor<16384x8192xbf16>, tensor<8192xbf16>, tensor<8192xbf16>) -> tensor<16384x8192xbf16>
  return %0 : tensor<16384x8192xbf16>
}
