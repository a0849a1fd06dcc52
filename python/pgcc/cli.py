"""pgcc-export, the command: a PyTorch callable, captured as a CUDA graph, to a .graph.

    pgcc-export MODEL.py -o DIR [--name NAME] [--eager] [--no-verify] [-q] [--debug]

MODEL.py defines build() -> (fn, inputs, weights): fn is called as fn(*inputs) and
returns a tensor or a tuple of tensors; weights maps names to the tensors fn reads
that are not inputs (a module's named_parameters() and named_buffers()).  With
--eager fn runs as it is; by default it runs under torch.compile.  Writes, in DIR:
NAME.graph, kernels/, NAME.safetensors, NAME.io.safetensors, NAME.export.json
(docs/e2e.md); then builds and runs the export against fn (--no-verify: not).

Assumes PyTorch with CUDA and a GPU.  What stands in the way (no such model file, no
torch, a model file that fails, an export that fails) is one line on stderr,
`pgcc-export: error: REASON`, and exit status 1; --debug shows the traceback instead.
"""
import argparse
import importlib.util
import os
import sys

from .errors import ExportError
from .export import export
from .graphfile import ident
from .module_watch import ModuleWatch
from .progress import Progress

__all__ = ["main", "one_line", "torch_available"]


def torch_available():
    """Whether torch can be imported (found, not imported: importing pgcc needs no torch)."""
    return importlib.util.find_spec("torch") is not None


def one_line(e):
    """An exception's message on one line: an ExportError's list of problems (one a line)
    joined with "; ", anything else but an ExportError prefixed with its type's name."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    text = lines[0] + (" " + "; ".join(lines[1:]) if len(lines) > 1 else "") if lines else ""
    if isinstance(e, ExportError):
        return text or "the export failed"
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def main(argv=None):
    """Runs the command on argv (sys.argv[1:] by default); returns the exit status: 0, or
    1 with one line `pgcc-export: error: REASON` on stderr (argparse's own usage errors
    exit 2).

        main(["model.py", "-o", "out", "--no-verify"])
    """
    ap = argparse.ArgumentParser(prog="pgcc-export", description=__doc__.split("\n")[0])
    ap.add_argument("model", help="a Python file with build() -> (fn, inputs, weights)")
    ap.add_argument("-o", "--out", required=True, help="output directory")
    ap.add_argument("--name", help="program name (default: the model file's name)")
    ap.add_argument("--eager", action="store_true", help="capture fn as it is, without torch.compile")
    ap.add_argument("--no-verify", action="store_true", help="do not build and run the export against fn")
    ap.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    ap.add_argument("--debug", action="store_true", help="on an error, show the traceback")
    a = ap.parse_args(argv)
    prog = Progress(quiet=a.quiet, prefix="pgcc-export")
    try:
        return _run(a, prog)
    except Exception as e:  # (not KeyboardInterrupt, SystemExit)
        prog.flush()
        if a.debug:
            raise
        print(f"pgcc-export: error: {one_line(e)}", file=sys.stderr)
        return 1


def _run(a, prog):
    """The command proper, given its arguments; raises what stands in the way."""
    if not os.path.isfile(a.model):
        raise ExportError(f"{a.model}: no such model file")
    if not torch_available():
        raise ExportError("PyTorch is not installed: pgcc-export captures a PyTorch program (torch with CUDA)")
    spec = importlib.util.spec_from_file_location("pgcc_model", a.model)
    if spec is None or spec.loader is None:
        raise ExportError(f"{a.model}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pgcc_model"] = mod  # torch.compile looks its functions' module up by name
    spec.loader.exec_module(mod)
    if not callable(getattr(mod, "build", None)):
        raise ExportError(f"{a.model}: defines no build() -> (fn, inputs, weights)")
    try:  # before build(): library modules load on first use
        watch = ModuleWatch()
    except ExportError as e:
        prog.warn("no ModuleWatch: library kernels outside .nv_fatbin cannot be exported", e)
        watch = None
    name = a.name or ident(os.path.splitext(os.path.basename(a.model))[0])
    try:
        fn, inputs, weights = mod.build()
        export(fn, inputs, a.out, name=name, weights=weights, compile=not a.eager, verify=not a.no_verify,
               watch=watch, progress=prog)
    finally:
        if watch:
            watch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
