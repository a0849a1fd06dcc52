"""pgcc-export, the command: a PyTorch callable, captured as a CUDA graph, to a .graph.

    pgcc-export MODEL.py -o DIR [--name NAME] [--eager] [--no-verify] [-q]

MODEL.py defines build() -> (fn, inputs, weights): fn is called as fn(*inputs) and
returns a tensor or a tuple of tensors; weights maps names to the tensors fn reads
that are not inputs (a module's named_parameters() and named_buffers()).  With
--eager fn runs as it is; by default it runs under torch.compile.  Writes, in DIR:
NAME.graph, kernels/, NAME.safetensors, NAME.io.safetensors, NAME.export.json
(docs/e2e.md); then builds and runs the export against fn (--no-verify: not).

Assumes PyTorch with CUDA and a GPU; exits 1 with the reasons when the export fails.
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

__all__ = ["main"]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="pgcc-export", description=__doc__.split("\n")[0])
    ap.add_argument("model", help="a Python file with build() -> (fn, inputs, weights)")
    ap.add_argument("-o", "--out", required=True, help="output directory")
    ap.add_argument("--name", help="program name (default: the model file's name)")
    ap.add_argument("--eager", action="store_true", help="capture fn as it is, without torch.compile")
    ap.add_argument("--no-verify", action="store_true", help="do not build and run the export against fn")
    ap.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    a = ap.parse_args(argv)

    prog = Progress(quiet=a.quiet, prefix="pgcc-export")
    spec = importlib.util.spec_from_file_location("pgcc_model", a.model)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pgcc_model"] = mod  # torch.compile looks its functions' module up by name
    spec.loader.exec_module(mod)
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
    except ExportError as e:
        prog.flush()
        print(f"pgcc-export: {e}", file=sys.stderr)
        return 1
    finally:
        if watch:
            watch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
