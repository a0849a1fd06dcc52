"""pgcc from Python: export a PyTorch model or callable, captured as a CUDA graph, to
pgcc's .graph (with its kernels and weights), and load the export back as a callable
that runs the generated C through libpgrt.

    import pgcc
    pgcc.export(model, (x,), "out")
    y = pgcc.load("out")(x)

Both raise ExportError for every failure (errors.entry_point: pgcc's own file and line,
or the user's, named, the original chained); a loaded program's call raises its kinds
ArgumentError (arguments it does not take) and RunError (libpgrt failed the call).

The modules, one per concept (docs/architecture.md): export (the public export and
the pipeline, analyse, as one list of steps) and model (what the steps pass on);
the callable's inputs and outputs (example_inputs, structure); captures (warmup, capture, capture_set, farmem, collectives); relocations and proofs
(relocate, node_mapping, replay, host_words); kernel code (kernel_search,
module_watch, fatbin, kernel_code); host values and branches (hostreads, hostvalues,
branches); memory slots (slots, slot_layout); shape_buckets; writing (export_files,
graphfile, weights); checking (verify_export, diagnose); progress and cli.  The run
side -- loader, toolchain, call_args, structure, cuda, errors -- imports nothing from
the export side.  Importing the package needs neither torch nor a GPU (torch is imported inside
the functions that use it); export and load do.
"""
from .errors import ArgumentError, CallError, ExportError, RunError, entry_point
from .export import ExportResult
from .export import export as _export
from .module_watch import ModuleWatch
from .loader import Program
from .loader import load as _load

__version__ = "0.1.0"
__all__ = ["export", "load", "ArgumentError", "CallError", "ExportError", "ExportResult", "ModuleWatch", "Program",
           "RunError", "__version__"]

# (importing the submodule export above bound pgcc.export to it: the function takes the name back;
# `from pgcc.export import ...` still reaches the module)
export = _export


@entry_point("pgcc.load")
def load(out_dir, *, structured=True, **kw):
    """loader.load (its arguments), the Program taking and returning the structure the export
    recorded (structured=True: dicts, ModelOutputs, nested tuples, as the callable did);
    every failure an ExportError."""
    return _load(out_dir, structured=structured, **kw)
