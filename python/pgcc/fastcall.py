"""A loaded program's call in C where it can be: _fastcall.c, built once per Python and C
compiler into pgcc's cache (toolchain.cache_root()) and imported, gives Program a Caller
that checks the call's tensors and calls NAME_run without ctypes or Python-level checks
(a few µs of host time less per call: docs/python.md, "Calls").

caller_for(program) makes one where NAME_args holds addresses only, every field of a known
dtype and shape (a program that draws random numbers sets its generator's state around it); else None, and
Program calls through ctypes as before.  So it does where the extension cannot be built
(no Python.h, no C compiler) or PGCC_FASTCALL=0 is set: why_not() says which.
PGCC_FASTCALL_SO names a build of the extension to import instead (one made with the
sanitizers: tests/python/asan_fastcall.sh).
"""
import ctypes as C
import fcntl
import hashlib
import importlib.util
import os
import sysconfig
import tempfile

from .errors import ExportError
from .toolchain import PKG, cache_root, cc, run

__all__ = ["caller_for", "module", "why_not"]

_state = {}  # ("module": the imported extension, or "why": why there is none), once per process


def why_not():
    """Why calls take the ctypes path in this process (None: they need not)."""
    module()
    return _state.get("why")


def _build(src, dest, include):
    """Compiles src into dest (a Python extension), under a lock, written whole then renamed."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.path.isfile(dest):  # (another process built it while this one waited)
                return
            fd, tmp = tempfile.mkstemp(prefix=".fastcall-", suffix=".so", dir=os.path.dirname(dest))
            os.close(fd)
            try:
                run([cc(), "-std=c11", "-O2", "-fPIC", "-shared", f"-I{include}", src, "-o", tmp],
                    "building pgcc's call in C (_fastcall.c)")
                os.replace(tmp, dest)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def module():
    """The _fastcall extension, built where it is not yet (None where it cannot be: why_not)."""
    if "module" in _state or "why" in _state:
        return _state.get("module")
    if os.environ.get("PGCC_FASTCALL") == "0":
        _state["why"] = "PGCC_FASTCALL=0"
        return None
    src = os.path.join(PKG, "_fastcall.c")
    include = sysconfig.get_paths().get("include") or ""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    dest = os.environ.get("PGCC_FASTCALL_SO")  # (a build of its own: tests/python/asan_fastcall.sh's)
    if dest and not os.path.isfile(dest):
        _state["why"] = f"PGCC_FASTCALL_SO={dest}: no such file"
        return None
    if not dest and not os.path.isfile(os.path.join(include, "Python.h")):
        _state["why"] = f"no Python.h in {include or 'this Python'} (install Python's development headers)"
        return None
    if not dest:
        with open(src, "rb") as f:
            h = hashlib.sha256(f.read() + f"\0{cc()}\0{include}\0{suffix}".encode()).hexdigest()[:16]
        dest = os.path.join(cache_root(), f"fastcall-{h}", "_fastcall" + suffix)
    try:
        if not os.path.isfile(dest):
            _build(src, dest, include)
        spec = importlib.util.spec_from_file_location("pgcc._fastcall", dest)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except (ExportError, OSError, ImportError) as e:
        _state["why"] = f"_fastcall.c did not build or import: {str(e).splitlines()[0][:300]}"
        return None
    _state["module"] = mod
    return mod


def caller_for(p):
    """A Caller for Program p's calls (None where p's fields are not all tensors of known
    dtype and shape -- packed_layout's condition, and theirs recorded --, torch has no raw
    current-stream getter, or there is no extension)."""
    torch = p.torch
    stream_of = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    fields = p.inputs + p.outputs
    if (p._packed is None or stream_of is None
            or any(f.torch_dtype is None or f.shape is None for f in fields)):
        return None
    mod = module()
    if mod is None:
        return None
    return mod.Caller(C.cast(p.run_fn, C.c_void_p).value, p.ctx.value, max(p.args_size, 1), p.arena.data_ptr(),
                      p.device.index, torch.Tensor, stream_of,
                      [(f.offset, f.torch_dtype, tuple(f.shape), None if f.stride is None else tuple(f.stride))
                       for f in fields])
