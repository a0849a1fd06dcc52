"""Searching for a captured kernel's code: Triton's kernels by the cubin behind the very
CUfunction the graph launches (Triton's and Inductor's kernel objects, Triton's cache),
library kernels by name in the fatbins of each loaded library's .nv_fatbin section,
and the rest among the module images the process loaded (module_watch.ModuleWatch,
through CUPTI); kernel_code.py decides with what these find.

    found = find_in_libraries({symbol: attrs}, print)   # {symbol: (library path, fatbin offset)}

Assumes the driver (the candidates are loaded with cuLibraryLoadData and compared by
their attributes); torch is imported only inside cache_roots, to find Inductor's cache.
Nothing is guessed: where two images with different code hold a
kernel, the one its function was taken from (ModuleWatch.image_of) is taken, or the
kernel is reported; the other places holding a library kernel's name
(library_candidates, loaded by LibraryFunctions) are judged by running them
(kernel_code.prove_code).
"""
import ctypes as C
import gc
import hashlib
import json
import os
import time
import warnings
from collections.abc import Mapping

from .cuda import check, cu, write_device
from .fatbin import fatbin_section, fatbins, read_section, same_kernel_code
from .search_cache import library_facts, memo_key

__all__ = ["FUNC_ATTRS", "LibraryFunctions", "cache_index", "cache_roots", "cached_cubin", "driver_version",
           "find_in_images", "find_in_libraries", "forget_generated_kernels", "func_attrs", "library_candidates",
           "loaded_libraries", "matching_kernels", "same_kernel", "triton_cubins", "triton_images"]

# max threads, shared, const, local, registers, PTX and binary version: what tells compiled kernels apart
FUNC_ATTRS = (0, 1, 2, 3, 4, 5, 6)


def triton_images(roots, log=None):
    """{CUfunction handle: cubin} for every kernel Triton (or Inductor's static launcher) has
    loaded in this process.  The handle is what a captured kernel node launches, so this
    finds its very cubin: a name alone does not, since autotuning leaves several variants of
    one kernel in the cache and different graphs (forward, backward) reuse kernel names."""
    out, classes, unfound = {}, {}, {}
    index = cache_index(roots)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for o in gc.get_objects():
            try:
                if not hasattr(type(o), "__dict__") or "function" not in getattr(o, "__dict__", {}):
                    continue
                f = o.__dict__["function"]
                if not isinstance(f, int) or isinstance(f, bool) or not f:
                    continue
                d = o.__dict__
                asm = d.get("asm")
                image = asm.get("cubin") if isinstance(asm, Mapping) else None
                image = image or d.get("kernel") or d.get("cubin_raw") or d.get("cubin")  # (Triton: kernel)
                path = d.get("cubin_path")
                if not image and isinstance(path, str) and os.path.isfile(path):
                    with open(path, "rb") as fh:
                        image = fh.read()
                if not image and isinstance(d.get("hash"), str):  # Inductor's static launcher drops its
                    image = cached_cubin(index, d["hash"], d.get("name"))  # cubin once loaded: Triton's cache
                name = type(o).__name__
                classes[name] = classes.get(name, 0) + 1
                if isinstance(image, (bytes, bytearray)) and image:
                    out[f] = bytes(image)
                else:
                    unfound[name] = unfound.get(name, 0) + 1
            except Exception:  # whatever gc holds: some objects do not like being asked
                continue
    if log:
        log(f"  objects holding a loaded kernel: {classes or 'none'}; {len(out)} with their cubin"
            + "".join(f"; {k} {n} without" for n, k in unfound.items()))
    return out


def cached_cubin(index, key, name):
    """The cubin Triton's cache keeps for compilation `key`: the one beside a metadata file
    (NAME.json) whose "hash" is key.  index: {key: cubin path}, from cache_index."""
    path = index.get(key)
    if not path or (name and os.path.basename(path) != name + ".cubin"):
        return None
    with open(path, "rb") as fh:
        return fh.read()


def cache_index(roots):
    """{compilation hash: cubin path} for the Triton caches under roots."""
    index = {}
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(".json") and f[:-5] + ".cubin" in files:
                    try:
                        with open(os.path.join(dirpath, f)) as fh:
                            key = json.load(fh).get("hash")
                    except (OSError, ValueError, AttributeError):
                        continue
                    if isinstance(key, str):
                        index[key] = os.path.join(dirpath, f[:-5] + ".cubin")
    return index


def triton_cubins(name, roots):
    """Cubins in the caches that may hold kernel `name`.  Triton cuts long names short
    in file names (to 150 characters, seen with Inductor's attention kernels), so a
    file whose name is a prefix of the kernel's is a candidate too; same_kernel decides."""
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(".cubin") and (f == name + ".cubin" or (len(f) > 100 and name.startswith(f[:-6]))):
                    yield os.path.join(dirpath, f)


def cache_roots():
    """The Triton and Inductor cache directories of this process that exist."""
    roots = [p for p in (os.environ.get("TORCHINDUCTOR_CACHE_DIR"), os.environ.get("TRITON_CACHE_DIR"),
                         os.path.expanduser("~/.triton/cache")) if p and os.path.isdir(p)]
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir
        roots.append(cache_dir())
    except Exception:
        pass
    return roots


def func_attrs(fn):
    """The attributes that tell compiled kernels apart (FUNC_ATTRS), of a CUfunction."""
    got = []
    for a in FUNC_ATTRS:
        v = C.c_int()
        check(cu().FuncGetAttribute(C.byref(v), a, fn), "cuFuncGetAttribute")
        got.append(v.value)
    return got


def matching_kernels(image_ptr, wanted, skip=()):
    """Loads the module image at image_ptr and yields each symbol of wanted ({symbol:
    attrs}, less skip) that it holds compiled to those attributes."""
    d = cu()
    lib = C.c_void_p()
    if d.LibraryLoadData(C.byref(lib), image_ptr, None, None, 0, None, None, 0) != 0:
        return  # not a module, or none for this GPU
    try:
        for sym, attrs in wanted.items():
            k, fn = C.c_void_p(), C.c_void_p()
            if sym in skip or d.LibraryGetKernel(C.byref(k), lib, sym.encode()) != 0:
                continue
            if d.KernelGetFunction(C.byref(fn), k) == 0 and func_attrs(fn) == attrs:
                yield sym
    finally:
        d.LibraryUnload(lib)


def same_kernel(image, name, attrs):
    """Loads a cubin and says whether its kernel `name` compiled to what was captured."""
    buf = C.create_string_buffer(image, len(image))
    return any(True for _ in matching_kernels(buf, {name: attrs}))


def loaded_libraries():
    """Shared libraries in this process that carry device code (.nv_fatbin), most likely first."""
    seen = []
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1] if len(line.split()) >= 6 else ""
            if ".so" in p and p.startswith("/") and p not in seen:
                seen.append(p)
    order = ("libcublasLt", "libcublas", "libtorch_cuda", "libcudnn", "libc10_cuda")
    key = lambda p: next((i for i, o in enumerate(order) if os.path.basename(p).startswith(o)), len(order))
    return sorted((p for p in seen if fatbin_section(p) is not None), key=key)


def forget_generated_kernels(blas_handle, log):
    """cuBLASLt generates its nvjet GEMM kernels in memory at run time and keeps them for the
    rest of the process: no file holds them, and a ModuleWatch started after the model first
    ran never sees them loaded.  This clears that cache (cublasLtClearNvjetCache, given
    PyTorch's cuBLAS handle, blas_handle), so that the next GEMMs -- the export's warm-up,
    with the watch attached -- generate and load them again where the watch sees their
    images.  The process pays one regeneration of each kernel.  Returns whether it cleared."""
    with open("/proc/self/maps") as f:
        paths = [p for p in (l.split()[-1] for l in f if len(l.split()) >= 6)
                 if os.path.basename(p).startswith("libcublasLt.so")]
    if not paths:
        return False
    clear = getattr(C.CDLL(paths[0]), "cublasLtClearNvjetCache", None)
    if clear is None:
        log(f"  {os.path.basename(paths[0])} has no cublasLtClearNvjetCache: its generated kernels are seen only "
            "where they are generated after the watch started")
        return False
    clear.restype, clear.argtypes = C.c_int, [C.c_void_p]
    status = clear(C.c_void_p(blas_handle))
    log(f"  cuBLASLt's generated kernels forgotten (cublasLtClearNvjetCache: status {status}), to be seen again")
    return status == 0


def find_in_libraries(wanted, log, sm=None, progress=None):
    """wanted: {symbol: attrs}.  Returns {symbol: (library path, offset of its fatbin in .nv_fatbin)}.
    sm: the GPU's SM version (90).  A fatbin without a cubin for it is not loaded: the
    kernel that ran was compiled for this GPU, and loading a fatbin that has only PTX
    for it makes the driver compile that PTX (libtorch_cuda and cuDNN hold thousands,
    which made a search through every library take minutes).  progress: a callable
    given a short status line while a library is searched.  With the environment
    variable PGCC_FIND_ALL=1 the search goes on through every fatbin and counts, in
    find_in_libraries.candidates, how many hold each kernel (a name found in several is
    taken from the first: a diagnosis of wrong results, not a fix).

    What a library was searched for is remembered (search_cache.py: for the process, and
    on disk for later ones): a kernel searched for before, with the same attributes, is
    not searched for in that library again, and a library with nothing new to search for
    is not opened (an export of a branch searches for its other path's kernels, most of
    them the first path's: every library's fatbins were loaded again, 8 s for a ViT
    training step; and every export searched the same libraries for the same GEMMs)."""
    found = {}
    every = os.environ.get("PGCC_FIND_ALL") == "1"
    find_in_libraries.candidates = counts = {}
    for path in loaded_libraries():
        if len(found) == len(wanted) and not every:
            break
        facts = library_facts(path, sm, driver_version())
        memo = facts.fatbins
        for sym, attrs in wanted.items():
            hit = memo.get(memo_key(sym, attrs))
            if hit is not None and not every and sym not in found:
                found[sym] = (path, hit)
        todo = {sym: attrs for sym, attrs in wanted.items()
                if every or (sym not in found and memo_key(sym, attrs) not in memo)}
        if not todo:
            continue
        t0 = time.perf_counter()
        sec = read_section(path)
        base = C.cast(C.c_char_p(sec), C.c_void_p).value
        loaded, before = 0, len(found)
        blobs = fatbins(sec, sm)
        if sm is not None and blobs and not any(ok for _, ok in blobs):  # headers not as expected: load them all
            log(f"  no fatbin of {os.path.basename(path)} lists a cubin for sm_{sm}: searching all of them")
            blobs = [(at, True) for at, _ in blobs]
        here = {}
        for n, (at, ok) in enumerate(blobs):
            if len(here) == len(todo) and not every:
                break
            if not ok:
                continue
            if progress and n % 64 == 0:
                progress(f"searching {os.path.basename(path)}: fatbin {n}/{len(blobs)}, "
                         f"{len(found) + len(here)}/{len(wanted)} kernels found")
            loaded += 1
            for sym in list(matching_kernels(C.c_void_p(base + at), todo, skip=() if every else here)):
                counts[sym] = counts.get(sym, 0) + 1
                here.setdefault(sym, (path, at))
        for sym, attrs in todo.items():
            memo[memo_key(sym, attrs)] = here[sym][1] if sym in here else None  # (None: not in this library)
            if sym in here:
                found.setdefault(sym, here[sym])
        facts.save()
        log(f"  {os.path.basename(path)}: {len(blobs)} fatbins, {loaded} with a cubin for "
            f"{'this GPU' if sm is not None else 'any GPU'} loaded, {len(found) - before} kernels found "
            f"({len(found)}/{len(wanted)} so far), {time.perf_counter() - t0:.1f} s")
    return found


def driver_version():
    """The CUDA driver's version (13000 for 13.0), or None where it cannot be read."""
    v = C.c_int()
    try:
        return v.value if cu().DriverGetVersion(C.byref(v)) == 0 else None
    except (OSError, AttributeError):
        return None


def library_candidates(symbol, attrs, sm, paths):
    """Every (library path, offset of a fatbin in its .nv_fatbin) among paths whose cubin for
    this GPU (sm) holds symbol compiled to attrs: a library may hold several kernels of one
    name (cuDNN's depthwise convolution, one per data type), and only running them tells
    which one ran (kernel_code.prove_code)."""
    out = []
    for path in paths:
        sec = read_section(path)
        if not sec:
            continue
        base = C.cast(C.c_char_p(sec), C.c_void_p).value
        for at, ok in fatbins(sec, sm):
            if ok and any(True for _ in matching_kernels(C.c_void_p(base + at), {symbol: attrs})):
                out.append((path, at))
    return out


class LibraryFunctions:
    """Functions loaded from libraries' fatbins, as libpgrt would load them (the fatbin at
    an offset of the .nv_fatbin section); unloaded by close()."""

    def __init__(self):
        self.libs, self.sections = [], {}

    def load(self, path, at, symbol):
        """symbol's function in the fatbin at offset `at` of path's .nv_fatbin section."""
        sec = self.sections.setdefault(path, read_section(path))
        return self._load(C.c_void_p(C.cast(C.c_char_p(sec), C.c_void_p).value + at), symbol,
                          f"{os.path.basename(path)} at {at}")

    def load_image(self, image, symbol, globals_=()):
        """symbol's function in a module image (bytes), its data objects set to globals_
        [(name, bytes)] after loading, as libpgrt does."""
        buf = C.create_string_buffer(image, len(image))
        self.sections[id(buf)] = buf  # alive as long as the functions
        return self._load(buf, symbol, "a module image", globals_)

    def _load(self, ptr, symbol, what, globals_=()):
        d = cu()
        lib, k, fn = C.c_void_p(), C.c_void_p(), C.c_void_p()
        check(d.LibraryLoadData(C.byref(lib), ptr, None, None, 0, None, None, 0), f"cuLibraryLoadData ({what})")
        self.libs.append(lib)
        for name, data in globals_:
            at, size = C.c_uint64(), C.c_size_t()
            check(d.LibraryGetGlobal(C.byref(at), C.byref(size), lib, name.encode()), f"cuLibraryGetGlobal ({name})")
            write_device(at.value, data[:size.value])
        check(d.LibraryGetKernel(C.byref(k), lib, symbol.encode()), f"cuLibraryGetKernel ({symbol[:60]})")
        check(d.KernelGetFunction(C.byref(fn), k), "cuKernelGetFunction")
        return fn.value

    def close(self):
        for lib in self.libs:
            cu().LibraryUnload(lib)
        self.libs = []


def find_in_images(wanted, images, log, problems):
    """wanted: {symbol: attrs}; images: module images.  Returns {symbol: image}.  Where
    several images hold a kernel of that name and those attributes with different code
    (cuDNN compiles its attention kernels at run time, one name for several variants),
    which one ran cannot be told from them: the first is returned, and all of them are
    in find_in_images.alternatives[symbol], for kernel_code.py to run each and keep the one
    that reproduces the capture."""
    found, more = {}, {}
    find_in_images.alternatives = {}
    for image in images:
        buf = C.create_string_buffer(image, len(image))
        for sym in list(matching_kernels(buf, wanted)):
            if sym in found:
                more.setdefault(sym, [found[sym]]).append(image)
            else:
                found[sym] = image
    for sym, holders in list(more.items()):
        if same_kernel_code(holders, sym):  # (cuDNN loads its runtime-compiled engines more than once)
            del more[sym]
            continue
        find_in_images.alternatives[sym] = list({hashlib.sha256(h).digest(): h for h in holders}.values())
    log(f"  searched {len(images)} module images the process loaded: {len(found)}/{len(wanted)} kernels found"
        + (f", {len(find_in_images.alternatives)} in several images with different code" if more else ""))
    return found
