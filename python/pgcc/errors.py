"""The exception the package raises for what stands in the way of an export, a build
or a load: ExportError, whose message names the node, kernel or argument (CapturesDiffer:
the export's captures of one call ran different GPU work) -- and, for a
loaded program's call (loader.Program), its kinds CallError: ArgumentError (arguments
the program does not take: their count, structure, dtype, shape, device, a scalar that
does not fit; also a TypeError and a ValueError, as Python's own for such arguments)
and RunError (libpgrt refused or failed the call: a guard, a size no bucket holds, a
CUDA error; also a RuntimeError); and the guard of the public entry points
(entry_point), which turns any other exception into one that says where it came from
-- pgcc's own file and line, or the user's.

    @entry_point("pgcc.export")
    def export(...): ...
"""
import contextvars
import functools
import os
import sysconfig
import traceback

__all__ = ["ArgumentError", "CallError", "CapturesDiffer", "ExportError", "RunError", "entry_point", "located", "step",
           "where_raised"]

PKG = os.path.dirname(os.path.abspath(__file__))
_step = contextvars.ContextVar("pgcc_step", default=None)  # (the step an entry point's work is in: step())


def step(what):
    """Says which step the current entry point's work is in (progress.Progress.status does,
    for every step it shows): an exception entry_point turns into an ExportError names it."""
    _step.set(what)


class ExportError(Exception):
    pass


class CapturesDiffer(ExportError):
    """The export's captures of one call ran different GPU work: the callable is not
    deterministic, or a Python value it changes from call to call decides its work."""


class CallError(ExportError):
    """A loaded program's call that did not run: its message names the program and the argument or libpgrt's error."""


class ArgumentError(CallError, TypeError, ValueError):
    """Arguments the loaded program does not take."""


class RunError(CallError, RuntimeError):
    """libpgrt refused or failed the call (pgrt_error's message)."""


def _under(path, root):
    return bool(root) and (path == root or path.startswith(root.rstrip(os.sep) + os.sep))


def _library(path):
    """Whether a frame's file is torch's (Triton's, the code Inductor and dynamo generate) or
    Python's own: neither pgcc's nor the user's."""
    parts = path.replace("\\", "/").split("/")
    if "torch" in parts or "triton" in parts or path.startswith("<") \
            or any(p.startswith("torchinductor_") for p in parts):  # (generated code: <eval_with_key>, Inductor's)
        return True
    stdlib = sysconfig.get_paths().get("stdlib")
    return _under(path, stdlib) and "site-packages" not in parts and "dist-packages" not in parts


def where_raised(frames, pkg=PKG, library=_library):
    """Where an exception came from, from its traceback's frames ((file, line), outermost
    first): ("user", file, line) where a frame outside pgcc and the libraries (torch,
    Python's) lies deeper than pgcc's innermost frame -- the user's code raised, maybe
    through torch --, else ("pgcc", path under the package, line) for pgcc's innermost
    frame, or None where neither is in the traceback."""
    own = user = None
    for depth, (path, line) in enumerate(frames):
        if _under(os.path.abspath(path), pkg):
            own = (depth, path, line)
        elif not library(path):
            user = (depth, path, line)
    if user and (own is None or user[0] > own[0]):
        return "user", user[1], user[2]
    if own:
        return "pgcc", "pgcc/" + os.path.relpath(os.path.abspath(own[1]), pkg), own[2]
    return None


def located(what, e, frames=None, pkg=PKG, library=_library):
    """The message of the ExportError that stands for exception e raised under `what`
    (the entry point: "pgcc.export"): `what: TypeName: message (at pgcc/file.py:line)`,
    or `(in your code at file:line)`.  frames: as where_raised takes them (default: e's
    traceback's)."""
    if frames is None:
        frames = [(f.filename, f.lineno) for f in traceback.extract_tb(e.__traceback__)]
    w = where_raised(frames, pkg, library)
    at = "" if w is None else f" (at {w[1]}:{w[2]})" if w[0] == "pgcc" else f" (in your code at {w[1]}:{w[2]})"
    msg = str(e).strip() or repr(e)
    return f"{what}: {type(e).__name__}: {msg}{at}"


def entry_point(what):
    """Decorates a public entry point: an ExportError passes as raised; any other Exception
    becomes an ExportError (located()) chained to it, naming the step it was raised in
    where one was said (step()); KeyboardInterrupt and SystemExit pass."""
    def wrap(f):
        @functools.wraps(f)
        def guarded(*args, **kw):
            token = _step.set(None)  # (a step of this call's own: not one an earlier call left)
            try:
                return f(*args, **kw)
            except ExportError:
                raise
            except Exception as e:
                at = _step.get()
                raise ExportError(located(what, e) + (f", in the step '{at}'" if at else "")) from e
            finally:
                _step.reset(token)
        return guarded
    return wrap

