//===- fusec-opt.cpp - The fusec optimizer driver ---------------*- C++ -*-===//
//
// MlirOptMain with the fusec dialect, every fusec pass, and the few upstream
// passes a user of fusec needs (canonicalize, cse, symbol-dce, inline).
//
//===----------------------------------------------------------------------===//

#include "fusec/IR/Fusec.h"
#include "fusec/Passes/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<fusec::FusecDialect, mlir::func::FuncDialect>();
  fusec::registerFusecPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "fusec optimizer: the fusec dialect and its passes\n",
      registry));
}
