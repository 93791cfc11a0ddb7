// RUN: fusec-run --reference %s --function=axpy | FileCheck %s --check-prefix=AXPY
// The same seed gives the same results; another seed does not.
// RUN: fusec-run --reference %s --function=axpy --seed=7 > %t.a
// RUN: fusec-run --reference %s --function=axpy --seed=7 > %t.b
// RUN: fusec-run --reference %s --function=axpy --seed=8 > %t.c
// RUN: diff %t.a %t.b
// RUN: not diff %t.a %t.c
// Inputs and outputs as .npy; feeding the written inputs back reproduces the
// written results.
// RUN: rm -rf %t.dir %t.dir2 && mkdir -p %t.dir %t.dir2
// RUN: fusec-run --reference %s --function=axpy --seed=3 --output-dir=%t.dir > %t.first
// RUN: fusec-run --reference %s --function=axpy --input=%t.dir/input_0.npy --input=%t.dir/input_1.npy --output-dir=%t.dir2 > %t.second
// RUN: diff %t.first %t.second
// RUN: cmp %t.dir/result_0.npy %t.dir2/result_0.npy
// RUN: fusec-run --reference %s --function=axpy --json | FileCheck %s --check-prefix=JSON
// RUN: not fusec-run --reference %s 2>&1 | FileCheck %s --check-prefix=WHICH
// RUN: not fusec-run --reference %s --function=axpy --input=%t.dir/input_0.npy 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not fusec-run --reference %s --function=axpy --input=%t.dir/result_0.npy --input=%t.dir/nothing.npy 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not fusec-run --reference %s --function=bad_gather 2>&1 | FileCheck %s --check-prefix=GATHER
// RUN: not fusec-run %s --function=axpy 2>&1 | FileCheck %s --check-prefix=NOGPU
// RUN: fusec-run --reference %s --function=exact | FileCheck %s --check-prefix=EXACT

// AXPY: result #0: tensor<1000xf32> sum={{.*}} nans=0 first=[
// JSON: {"function": "axpy", "mode": "reference", "seed": 0, "results": [{"index": 0, "type": "tensor<1000xf32>"
// WHICH: several functions (@axpy, @bad_gather, @exact); choose one (fusec-run --function
// COUNT: @axpy takes 2 arguments, but 1 --input files were given
// NOFILE: cannot open {{.*}}nothing.npy
// GATHER: fusec-run.mlir:{{[0-9]+}}:8: 'fusec.gather': index 12 is out of range [-4, 4) of table dimension 0
// NOGPU: run with --reference

func.func @axpy(%x: tensor<1000xf32>, %y: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = fusec.constant dense<2.5> : tensor<1000xf32>
  %0 = fusec.mul %a, %x : tensor<1000xf32>
  %1 = fusec.add %0, %y : tensor<1000xf32>
  return %1 : tensor<1000xf32>
}

func.func @bad_gather(%t: tensor<4x2xf32>) -> tensor<1x2xf32> {
  %i = fusec.constant dense<[12]> : tensor<1xi32>
  %0 = fusec.gather %t[%i] axis 0 : (tensor<4x2xf32>, tensor<1xi32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// Constants only: the printed values are exact.
// EXACT: result #0: tensor<4xbf16> sum=4 min=1 max=1 nans=0 first=[1, 1, 1, 1]
// EXACT: result #1: tensor<2x2xf32> sum=10 min=1 max=4 nans=0 first=[1, 3, 2, 4]
func.func @exact() -> (tensor<4xbf16>, tensor<2x2xf32>) {
  %a = fusec.constant dense<1.001> : tensor<4xbf16>
  %m = fusec.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = fusec.transpose %m perm [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
  return %a, %t : tensor<4xbf16>, tensor<2x2xf32>
}
