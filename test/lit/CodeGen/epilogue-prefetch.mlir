// With FUSEC_EPILOGUE_PREFETCH=1, matmul_wgmma's producer thread prefetches
// each tile of the epilogue's full-shape inputs (a residual) to L2 once the
// tile's k-blocks are on their way (cp.async.bulk.prefetch.L2): one run
// when the tile spans whole rows, one a row otherwise; nothing for a
// broadcast bias, nothing with aggressive PTX off. By default (measured
// slower on ResNet-50) and with FUSEC_EPILOGUE_PREFETCH=0 there is none.
// (pdl=false for the counts: with the early weight loads of programmatic
// dependent launch LLVM may duplicate the prefetch block.)
// RUN: rm -rf %t && mkdir -p %t/on %t/default %t/off %t/plain
// RUN: env FUSEC_EPILOGUE_PREFETCH=1 fusec-opt %s --fusec-pipeline --fusec-codegen="pdl=false dump-dir=%t/on" -o /dev/null
// RUN: FileCheck %s --check-prefix=WHOLE < %t/on/whole.k0_matmul_max.ptx
// RUN: FileCheck %s --check-prefix=ROWS < %t/on/rows.k0_matmul_add.ptx
// RUN: FileCheck %s --check-prefix=NONE < %t/on/bias.k0_matmul_add.ptx
// RUN: fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/default" -o /dev/null
// RUN: FileCheck %s --check-prefix=NONE < %t/default/whole.k0_matmul_max.ptx
// RUN: FileCheck %s --check-prefix=NONE < %t/default/rows.k0_matmul_add.ptx
// RUN: env FUSEC_EPILOGUE_PREFETCH=0 fusec-opt %s --fusec-pipeline --fusec-codegen="dump-dir=%t/off" -o /dev/null
// RUN: FileCheck %s --check-prefix=NONE < %t/off/rows.k0_matmul_add.ptx
// RUN: env FUSEC_EPILOGUE_PREFETCH=1 fusec-opt %s --fusec-pipeline --fusec-codegen="aggressive-ptx=false dump-dir=%t/plain" -o /dev/null
// RUN: FileCheck %s --check-prefix=NONE < %t/plain/rows.k0_matmul_add.ptx
// RUN: %python %S/Inputs/ptxas_clean.py %ptxas sm_90a 232 %t/on/whole.k0_matmul_max.ptx %t/on/rows.k0_matmul_add.ptx
// REQUIRES: ptxas

// 128 columns: a tile's rows are one contiguous run of rows x 256 bytes.
// WHOLE: shl.b32 {{.*}}, 8;
// WHOLE: cp.async.bulk.prefetch.L2.global [%rd{{[0-9]+}}], %r{{[0-9]+}};
// WHOLE-NOT: cp.async.bulk.prefetch
func.func @whole(%a: tensor<1000x64xf16>, %w: tensor<64x128xf16>, %r: tensor<1000x128xf16>) -> tensor<1000x128xf16> {
  %zero = fusec.constant dense<0.0> : tensor<1000x128xf16>
  %m = fusec.matmul %a, %w : (tensor<1000x64xf16>, tensor<64x128xf16>) -> tensor<1000x128xf16>
  %y = fusec.add %m, %r : tensor<1000x128xf16>
  %z = fusec.max %y, %zero : tensor<1000x128xf16>
  return %z : tensor<1000x128xf16>
}

// 1024 columns: a prefetch per row of the tile, in a loop.
// ROWS: $L__BB{{.*}}:
// ROWS: cp.async.bulk.prefetch.L2.global
// ROWS: bra
func.func @rows(%a: tensor<512x128xbf16>, %w: tensor<128x1024xbf16>, %r: tensor<512x1024xbf16>) -> tensor<512x1024xbf16> {
  %m = fusec.matmul %a, %w : (tensor<512x128xbf16>, tensor<128x1024xbf16>) -> tensor<512x1024xbf16>
  %y = fusec.add %m, %r : tensor<512x1024xbf16>
  return %y : tensor<512x1024xbf16>
}

// NONE-NOT: cp.async.bulk.prefetch
func.func @bias(%a: tensor<512x128xbf16>, %w: tensor<128x1024xbf16>, %b: tensor<1024xbf16>) -> tensor<512x1024xbf16> {
  %m = fusec.matmul %a, %w : (tensor<512x128xbf16>, tensor<128x1024xbf16>) -> tensor<512x1024xbf16>
  %bb = fusec.broadcast %b dims [1] : tensor<1024xbf16> -> tensor<512x1024xbf16>
  %y = fusec.add %m, %bb : tensor<512x1024xbf16>
  return %y : tensor<512x1024xbf16>
}
