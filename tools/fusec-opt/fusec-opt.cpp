//===- fusec-opt.cpp - The fusec optimizer driver ---------------*- C++ -*-===//
//
// MlirOptMain with the fusec dialect, every fusec pass, and the few upstream
// passes a user of fusec needs (canonicalize, cse, symbol-dce). An input with
// nothing in it is an error, not an empty module.
//
//===----------------------------------------------------------------------===//

#include "fusec/CodeGen/CodeGen.h"
#include "fusec/CodeGen/Passes.h"
#include "fusec/IR/Fusec.h"
#include "fusec/Passes/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

/// True if `text` holds nothing but whitespace and `//` comments.
static bool isBlank(llvm::StringRef text) {
  while (!text.empty()) {
    text = text.ltrim();
    if (text.consume_front("//")) {
      text = text.drop_until([](char c) { return c == '\n'; });
      continue;
    }
    return text.empty();
  }
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::DialectRegistry registry;
  registry.insert<fusec::FusecDialect, mlir::func::FuncDialect>();
  fusec::registerCodeGenDialects(registry);
  fusec::registerFusecPasses();
  fusec::registerFusecCodeGenPasses();
  fusec::registerFusecPipeline();
  // The environment's overrides of code generation, read once here.
  auto overrides = fusec::codeGenOverridesFromEnvironment();
  if (!overrides.ok()) {
    llvm::WithColor::error(llvm::errs(), "fusec-opt") << std::string(overrides.status().message()) << "\n";
    return 1;
  }
  fusec::setCodeGenOverrides(*overrides);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();

  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "fusec optimizer: the fusec dialect and its passes\n",
      registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &error);
  if (!input) {
    llvm::WithColor::error(llvm::errs(), "fusec-opt") << error << "\n";
    return 1;
  }
  if (isBlank(input->getBuffer())) {
    llvm::errs() << (inputFile == "-" ? "<stdin>" : inputFile)
                 << ":1:1: error: empty input: expected a module or at least "
                    "one operation\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &error);
  if (!output) {
    llvm::WithColor::error(llvm::errs(), "fusec-opt") << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     config)))
    return 1;
  output->keep();
  return 0;
}
