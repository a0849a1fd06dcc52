"""Finding, or building, the pgcc compiler and libpgrt, and building an export's C into
a shared library.

Where they come from, first match wins: $PGCC (the pgcc binary) and $PGCC_HOME (a
directory holding pgcc and libpgrt.a, directly or under bin/, lib/, build/, with
pgrt.h under include/ or runtime/); a source checkout's build/ when this package runs
from one and build/ is not older than the sources (`make build/pgcc runtime`);
otherwise they are built with $CC (default cc) from the C sources the wheel carries
(pgcc/_csrc) or the checkout's, into ~/.cache/pgcc/<hash of the sources> ($PGCC_CACHE
or $XDG_CACHE_HOME move it), under a lock file so that concurrent processes build it
once.  pgcc needs a C11 compiler and nothing else; libpgrt
needs the CUDA headers ($CUDA_HOME, default /usr/local/cuda), and programs link
-ldl -pthread (libpgrt opens the driver and NVRTC itself; extra C sources given to
build_program may call the driver, and get -lcuda).
"""
import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

from .errors import ExportError

__all__ = ["build_pgcc", "build_pgrt", "build_program", "cache_root", "cached_build", "cc", "csrc", "CSTD", "cuda_home",
           "find", "find_pgcc", "find_runtime", "PKG", "run", "source_files", "source_root", "sources_hash", "Toolchain"]

PKG = os.path.dirname(os.path.abspath(__file__))
CSTD = ["-std=c11", "-D_DEFAULT_SOURCE"]


def cuda_home():
    return os.environ.get("CUDA_HOME", "/usr/local/cuda")


def cc():
    return os.environ.get("CC", "cc")


def source_root():
    """The top directory of the source checkout this package runs from, or None."""
    root = os.path.abspath(os.path.join(PKG, "..", ".."))
    ok = all(os.path.isfile(os.path.join(root, p)) for p in ("compiler/pgcc.h", "runtime/pgrt.h", "Makefile"))
    return root if ok else None


def csrc():
    """The directory whose compiler/, grammar/gen/ and runtime/ hold the C sources."""
    packaged = os.path.join(PKG, "_csrc")
    if os.path.isfile(os.path.join(packaged, "compiler", "pgcc.h")):
        return packaged
    root = source_root()
    if root:
        return root
    raise ExportError("pgcc's C sources are not here: neither pgcc/_csrc (an installed wheel) nor a source "
                      "checkout; set PGCC or PGCC_HOME to a built pgcc and libpgrt")


def source_files(src, part):
    """The C sources of "pgcc" (compiler/*.c *.h, grammar/gen/*, and the headers it shares with
    libpgrt: the safetensors reader, the relocation kinds' table and the half conversion) or "runtime" (runtime/*.c *.h, and the build
    step that compiles its own kernels, runtime/tool/prebuild.c) under src."""
    pats = (["compiler/*.c", "compiler/*.h", "grammar/gen/*.c", "grammar/gen/*.h", "runtime/st_header.h",
             "runtime/pgrt_relocs.h", "runtime/half.h"]
            if part == "pgcc" else ["runtime/*.c", "runtime/*.h", "runtime/tool/*.c"])
    return sorted(f for p in pats for f in glob.glob(os.path.join(src, p)))


def sources_hash(src, part, extra=""):
    h = hashlib.sha256(f"{part}\0{cc()}\0{extra}\0".encode())
    for f in source_files(src, part):
        h.update(os.path.relpath(f, src).encode() + b"\0")
        with open(f, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]


def cache_root():
    if os.environ.get("PGCC_CACHE"):
        return os.environ["PGCC_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "pgcc")


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise ExportError(f"{what} failed (exit {r.returncode}): {' '.join(cmd)}\n{(r.stderr or r.stdout)[-4000:]}")
    return r


def _compile_all(sources, flags, objdir):
    os.makedirs(objdir, exist_ok=True)

    def one(src):
        obj = os.path.join(objdir, os.path.basename(os.path.dirname(src)) + "_" +
                           os.path.basename(src)[:-2] + ".o")
        run([cc()] + flags + ["-c", src, "-o", obj], f"compiling {os.path.basename(src)}")
        return obj
    with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as ex:
        return list(ex.map(one, sources))


def build_pgcc(src, dest):
    """Builds pgcc from src's compiler/ and grammar/gen/ into dest/pgcc."""
    files = source_files(src, "pgcc")
    flags = CSTD + ["-O2", f"-I{src}/compiler", f"-I{src}/grammar/gen"]
    objs = _compile_all([f for f in files if f.endswith(".c")], flags, os.path.join(dest, "obj"))
    run([cc()] + objs + ["-o", os.path.join(dest, "pgcc"), "-lm"], "linking pgcc")
    return os.path.join(dest, "pgcc")


def build_pgrt(src, dest, cuda=None):
    """Builds libpgrt.a from src's runtime/ into dest, with pgrt.h beside it under include/."""
    cuda = cuda or cuda_home()
    if not os.path.isfile(os.path.join(cuda, "include", "cuda.h")):
        raise ExportError(f"libpgrt needs the CUDA headers: no {cuda}/include/cuda.h (set CUDA_HOME)")
    files = source_files(src, "runtime")
    flags = CSTD + ["-O2", "-fPIC", f"-I{src}/runtime", f"-I{cuda}/include"]
    # libpgrt's own kernels as cubins, one per architecture NVRTC knows (as the Makefile's
    # build/rt/own_cubins.c): the tool compiled, run, and its table one more source
    tool = os.path.join(dest, "prebuild")
    table = os.path.join(dest, "own_cubins.c")
    run([cc()] + CSTD + ["-O2", f"-I{cuda}/include", os.path.join(src, "runtime", "tool", "prebuild.c"), "-o", tool,
                         f"-L{cuda}/lib64", f"-Wl,-rpath,{cuda}/lib64", "-lnvrtc"], "compiling prebuild.c")
    run([tool, table], "compiling libpgrt's own kernels with NVRTC (prebuild)")
    sources = [f for f in files if f.endswith(".c") and os.path.dirname(f) == os.path.join(src, "runtime")]
    objs = _compile_all(sources + [table], flags, os.path.join(dest, "obj"))
    lib = os.path.join(dest, "libpgrt.a")
    run(["ar", "rcs", lib] + objs, "archiving libpgrt.a")
    os.makedirs(os.path.join(dest, "include"), exist_ok=True)
    for h in files:
        if h.endswith(".h"):
            shutil.copy(h, os.path.join(dest, "include"))
    return lib


def cached_build(part, src=None, root=None):
    """The directory of a build of part ("pgcc" or "runtime") from src, in the cache: built
    once per hash of the sources, under a lock; a finished build holds a file 'ok'."""
    src = src or csrc()
    extra = cuda_home() if part == "runtime" else ""
    dest = os.path.join(root or cache_root(), f"{part}-{sources_hash(src, part, extra)}")
    if os.path.isfile(os.path.join(dest, "ok")):
        return dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.path.isfile(os.path.join(dest, "ok")):  # another process built it while we waited
                return dest
            tmp = tempfile.mkdtemp(prefix=f".{part}-", dir=os.path.dirname(dest))
            try:
                (build_pgcc if part == "pgcc" else build_pgrt)(src, tmp)
                open(os.path.join(tmp, "ok"), "w").close()
                shutil.rmtree(dest, ignore_errors=True)
                os.rename(tmp, dest)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return dest


class Toolchain:
    """pgcc: the compiler's path; libpgrt: libpgrt.a's path; include: the directory of pgrt.h."""

    def __init__(self, pgcc, libpgrt=None, include=None):
        self.pgcc, self.libpgrt, self.include = pgcc, libpgrt, include

    def __repr__(self):
        return f"Toolchain(pgcc={self.pgcc!r}, libpgrt={self.libpgrt!r}, include={self.include!r})"


def _first(*paths):
    return next((p for p in paths if p and os.path.exists(p)), None)


def _up_to_date(target, src, part):
    t = os.path.getmtime(target)
    return all(os.path.getmtime(f) <= t for f in source_files(src, part))


def find_pgcc():
    """The pgcc binary's path (building it if need be)."""
    if os.environ.get("PGCC"):
        return os.environ["PGCC"]
    home = os.environ.get("PGCC_HOME")
    if home:
        p = _first(*(os.path.join(home, d, "pgcc") for d in ("", "bin", "build")))
        if p:
            return p
    root = source_root()
    if root and os.path.isfile(os.path.join(root, "build", "pgcc")) and \
            _up_to_date(os.path.join(root, "build", "pgcc"), root, "pgcc"):
        return os.path.join(root, "build", "pgcc")
    return os.path.join(cached_build("pgcc"), "pgcc")


def find_runtime():
    """(libpgrt.a, the directory of pgrt.h), building them if need be."""
    home = os.environ.get("PGCC_HOME")
    if home:
        lib = _first(*(os.path.join(home, d, "libpgrt.a") for d in ("", "lib", "build")))
        inc = _first(*(os.path.join(home, d) for d in ("include", "runtime", "")
                       if os.path.isfile(os.path.join(home, d, "pgrt.h"))))
        if lib and inc:
            return lib, inc
    root = source_root()
    lib = os.path.join(root, "build", "libpgrt.a") if root else None
    if lib and os.path.isfile(lib) and _up_to_date(lib, root, "runtime"):
        return lib, os.path.join(root, "runtime")
    dest = cached_build("runtime")
    return os.path.join(dest, "libpgrt.a"), os.path.join(dest, "include")


def find(runtime=True):
    """The Toolchain: pgcc, and with runtime=True libpgrt."""
    lib, inc = find_runtime() if runtime else (None, None)
    return Toolchain(find_pgcc(), lib, inc)


def _file_digest(h, path, head=None):
    with open(path, "rb") as f:
        data = f.read(head) if head else f.read()
    h.update(os.path.basename(path).encode() + b"\0" + hashlib.sha256(data).digest())


def build_program(export_dir, name, build_dir=None, toolchain=None, extra_sources=(), extra_flags=(), pgcc_flags=()):
    """Compiles export_dir/NAME.graph with pgcc (and pgcc_flags: ["--priorities"]) and
    builds the C with libpgrt into build_dir/NAME.so (default export_dir/build, or a cache
    directory where that is not writable).  Rebuilt only when an input changed: the .graph,
    the module files under kernels/, the weights file's header, pgcc, libpgrt, extra
    sources and flags.  Returns the .so's path."""
    tc = toolchain or find()
    graph = os.path.join(export_dir, name + ".graph")
    if not os.path.isfile(graph):
        raise ExportError(f"no {graph}: not an export of a program named {name}")
    given = [cc(), cuda_home()] + list(extra_flags) + (["pgcc"] + list(pgcc_flags) if pgcc_flags else [])
    h = hashlib.sha256(" ".join(given).encode())
    for p in [graph, tc.pgcc, tc.libpgrt, os.path.join(tc.include, "pgrt.h")] + list(extra_sources):
        _file_digest(h, p)
    for p in sorted(glob.glob(os.path.join(export_dir, "kernels", "*"))):
        _file_digest(h, p)
    wfile = os.path.join(export_dir, name + ".safetensors")
    if os.path.isfile(wfile):
        _file_digest(h, wfile, head=1 << 20)
        h.update(str(os.path.getsize(wfile)).encode())
    stamp = h.hexdigest()
    if build_dir is None:
        build_dir = os.path.join(export_dir, "build")
        try:
            os.makedirs(build_dir, exist_ok=True)
            if not os.access(build_dir, os.W_OK):
                raise OSError
        except OSError:
            build_dir = os.path.join(cache_root(), "programs", stamp[:16])
    os.makedirs(build_dir, exist_ok=True)
    so = os.path.join(build_dir, name + ".so")
    stamp_file = so + ".stamp"
    if os.path.isfile(so) and os.path.isfile(stamp_file) and open(stamp_file).read() == stamp:
        return so
    c = os.path.join(build_dir, name + ".c")
    run([tc.pgcc, graph, "-o", c] + list(pgcc_flags), f"pgcc {name}.graph")
    cuda = cuda_home()
    tmp = so + f".tmp{os.getpid()}"
    run([cc(), "-std=c11", "-O2", "-fPIC", "-shared", f"-I{tc.include}", f"-I{cuda}/include"] + list(extra_flags)
        + [c] + list(extra_sources) + [tc.libpgrt]
        + ([f"-L{cuda}/lib64/stubs", "-lcuda"] if extra_sources else []) + ["-ldl", "-pthread", "-o", tmp],
        f"building {name}.so")
    os.replace(tmp, so)
    with open(stamp_file, "w") as f:
        f.write(stamp)
    return so
