//===- RooflineReport.cpp - The roofline report of a graph ------*- C++ -*-===//

#include "fusec/Passes/Passes.h"
#include "fusec/Target/Roofline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

namespace fusec {
#define GEN_PASS_DEF_ROOFLINEREPORT
#include "fusec/Passes/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace fusec;

namespace {

/// Writes `text` to `path` ('-' is standard output).
LogicalResult writeText(ModuleOp module, StringRef path, StringRef text) {
  if (path == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    return success();
  }
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return module.emitError() << "fusec-roofline-report: " << error;
  file->os() << text;
  file->keep();
  return success();
}

class RooflineReportPass
    : public fusec::impl::RooflineReportBase<RooflineReportPass> {
public:
  using RooflineReportBase::RooflineReportBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto loaded = loadTargetFor(getOperation(), "fusec-roofline-report", target);
    if (!loaded)
      return signalPassFailure();
    if (format != "text" && format != "json") {
      module.emitError() << "fusec-roofline-report: format '" << format
                         << "' is not text or json";
      return signalPassFailure();
    }
    std::vector<GraphAnalysis> graphs;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      graphs.push_back(analyzeFunction(func, *loaded));
      if (remarks)
        for (Operation &op : func.getBody().front())
          if (isa<CostOpInterface>(op) && !op.hasTrait<OpTrait::ConstantLike>())
            emitRooflineRemark(&op, *loaded, "roofline");
    }
    if (!measured.empty()) {
      auto buffer = llvm::MemoryBuffer::getFile(measured);
      if (!buffer) {
        mlir::emitError(module.getLoc()) << "fusec-roofline-report: cannot read '" << measured
                           << "': " << buffer.getError().message();
        return signalPassFailure();
      }
      auto applied = applyMeasurements(graphs, (*buffer)->getBuffer().str());
      if (!applied.ok()) {
        mlir::emitError(module.getLoc()) << "fusec-roofline-report: " << measured << ": "
                           << std::string(applied.status().message());
        return signalPassFailure();
      }
    }
    std::string report = format == "json" ? formatReportJson(graphs, *loaded)
                                          : formatReportText(graphs, *loaded);
    if (failed(writeText(module, output, report)))
      return signalPassFailure();
    if (!svg.empty() &&
        failed(writeText(module, svg, formatRooflineSvg(graphs, *loaded))))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
