"""pgcc from Python: export a PyTorch model or callable, captured as a CUDA graph, to
pgcc's .graph (with its kernels and weights), and load the export back as a callable
that runs the generated C through libpgrt.

    import pgcc
    pgcc.export(model, (x,), "out")
    y = pgcc.load("out")(x)

The modules, one per job: cuda (driver bindings), capture (torch.cuda.graph and the
graph walk), kernels and fatbin (where kernels' code is), relocate (pointer words to
buffers), weights (safetensors), graphfile (.graph text), export (the orchestration),
toolchain (pgcc and libpgrt), loader (load), verify, progress, cli.  Importing the
package needs neither torch nor a GPU; export and load do.
"""
from .errors import ExportError
from .export import ExportResult
from .export import export as _export
from .module_watch import ModuleWatch
from .loader import Program, load

__version__ = "0.1.0"
__all__ = ["export", "load", "ExportError", "ExportResult", "ModuleWatch", "Program", "__version__"]

# (importing the submodule export above bound pgcc.export to it: the function takes the name back;
# `from pgcc.export import ...` still reaches the module)
export = _export
