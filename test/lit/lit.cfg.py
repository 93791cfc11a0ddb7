# -*- Python -*-
# lit configuration for fusec: FileCheck tests of fusec-opt and fusec-run.

import os
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "fusec"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fusec_obj_root, "test", "lit")

config.substitutions.append(("%fusec_src", config.fusec_src_root))
config.substitutions.append(("%python", sys.executable))
# %fusec-run-each PIPELINE: fusec-run --verify-pipeline on every example graph.
_graphs = " ".join(os.path.join(config.fusec_src_root, g) for g in [
    "examples/transformer_block.mlir",
    "examples/memory_bound.mlir",
    "test/lit/Passes/Inputs/composites.mlir",
    "test/lit/Dialect/Inputs/foldable.mlir",
    "test/lit/Passes/fuse.mlir",
    "test/lit/Passes/fuse-composites.mlir",
    "examples/convnet.mlir",
    "examples/resblock.mlir",
])
config.environment["FUSEC_EXAMPLE_GRAPHS"] = _graphs
config.substitutions.append(("%fusec-run-each", os.path.join(
    config.test_source_root, "Passes", "Inputs", "run_each.sh") + " " +
    os.path.join(config.fusec_tools_dir, "fusec-run")))
config.environment["FUSEC_OPT"] = os.path.join(config.fusec_tools_dir, "fusec-opt")

llvm_config.with_system_environment(["HOME", "TMPDIR"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["fusec-opt", "fusec-run", "fusec-compile", "fusec-translate", "fusec-calibrate"],
    [config.fusec_tools_dir])

# ptxas, where the CUDA toolkit is: the assembly tests need it.
for _ptxas in [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas"),
               "/usr/local/cuda/bin/ptxas"]:
    if os.path.exists(_ptxas):
        config.available_features.add("ptxas")
        config.substitutions.append(("%ptxas", _ptxas))
        break
