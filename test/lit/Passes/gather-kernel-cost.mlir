// A kernel that reads an operand only as a gather's table costs the rows
// the gather takes, not the whole table: the embedding below reads 2 x 8
// rows of 64 f32 (4096 bytes) and the 64 bytes of ids, not the table's
// 256000 bytes.
// RUN: fusec-opt %s --fusec-fuse --fusec-roofline-report="format=json output=%t.json" -o /dev/null
// RUN: %python -c "import json; r = json.load(open('%t.json')); print(*sorted((k['function'], k['bytes_read']) for k in r['kernels']))" | FileCheck %s
// CHECK: ('embed', 4160) ('embed_and_exp', 256064)

func.func @embed(%w: tensor<1000x64xf32>, %ids: tensor<2x8xi32>) -> tensor<2x8x64xf32> {
  %y = fusec.gather %w[%ids] axis 0 : (tensor<1000x64xf32>, tensor<2x8xi32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// Written as one kernel: the table is also read by the exp, so it counts
// whole (256000) besides the ids (64).
func.func @embed_and_exp(%w: tensor<1000x64xf32>, %ids: tensor<2x8xi32>) -> (tensor<2x8x64xf32>, tensor<1000x64xf32>) {
  %r:2 = fusec.kernel "k_both"(%w, %ids) : (tensor<1000x64xf32>, tensor<2x8xi32>) -> (tensor<2x8x64xf32>, tensor<1000x64xf32>) {
  ^bb0(%a: tensor<1000x64xf32>, %i: tensor<2x8xi32>):
    %y = fusec.gather %a[%i] axis 0 : (tensor<1000x64xf32>, tensor<2x8xi32>) -> tensor<2x8x64xf32>
    %z = fusec.exp %a : tensor<1000x64xf32>
    fusec.yield %y, %z : tensor<2x8x64xf32>, tensor<1000x64xf32>
  }
  return %r#0, %r#1 : tensor<2x8x64xf32>, tensor<1000x64xf32>
}
