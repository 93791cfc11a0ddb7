//===- fusec-translate.cpp - Other formats to fusec graphs -----*- C++ -*-===//
//
//   fusec-translate --import-onnx M.onnx [-o OUT.mlir] [--function=NAME]
//
// Imports an ONNX model as a fusec graph and prints it (verified). Exit 0 on
// success, 2 on an unsupported op or type (the message names the node, its
// op type and the opset), 1 on an unreadable or malformed model.
//
//===----------------------------------------------------------------------===//

#include "fusec/IR/Fusec.h"
#include "fusec/Import/Onnx.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("fusec-translate options");
static cl::opt<std::string> importOnnx("import-onnx",
                                       cl::desc("Import this ONNX model"),
                                       cl::value_desc("M.onnx"), cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"),
                                   cl::value_desc("OUT.mlir"), cl::init("-"),
                                   cl::cat(category));
static cl::list<std::string> inputShape(
    "input-shape",
    cl::desc("An input's shape, NAME=D0xD1x... (binds its dynamic dims); once per dynamic input"),
    cl::cat(category));
static cl::opt<std::string> functionName("function",
                                         cl::desc("Name of the imported function (default main)"),
                                         cl::init("main"), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "fusec-translate: import models as fusec graphs\n");
  if (importOnnx.empty()) {
    llvm::errs() << "fusec-translate: nothing to do: give --import-onnx M.onnx\n";
    return 2;
  }
  fusec::OnnxImportOptions options;
  options.functionName = functionName;
  auto shapes = fusec::parseOnnxInputShapes(
      std::vector<std::string>(inputShape.begin(), inputShape.end()));
  if (!shapes.ok()) {
    llvm::errs() << "fusec-translate: " << std::string(shapes.status().message()) << "\n";
    return 2;
  }
  options.inputShapes = *shapes;
  auto imported = fusec::importOnnxFile(importOnnx, options);
  if (!imported.ok()) {
    bool unsupported = imported.status().code() == absl::StatusCode::kUnimplemented;
    llvm::errs() << "fusec-translate: " << (unsupported ? "unsupported: " : "error: ")
                 << std::string(imported.status().message()) << "\n";
    return unsupported ? 2 : 1;
  }
  DialectRegistry registry;
  registry.insert<fusec::FusecDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(imported->mlir, importOnnx),
                               llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(verify(*module))) {
    llvm::errs() << "fusec-translate: internal error: the imported graph does not verify\n";
    return 1;
  }
  std::string error;
  auto out = openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << "fusec-translate: " << error << "\n";
    return 1;
  }
  module->print(out->os());
  out->keep();
  return 0;
}
