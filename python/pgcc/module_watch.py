"""The module images this process loads, watched through CUPTI (ModuleWatch): copies of
each image as it is loaded, and which image each function came from (image_of); and
which loaded images a function's module could have been loaded from, with the data
objects its library wrote after loading it (ModuleFingerprints).  The second route to
a library kernel that is in no fatbin of its library (kernel_search.py is the first).

    watch = pgcc.ModuleWatch()   # before the model first runs
    ...                          # the model runs: its libraries load their modules
    watch.images                 # {name: image bytes}
    watch.close()

Assumes libcupti and the driver, found when a ModuleWatch is made (torch is imported
then only to find CUPTI beside it: importing this module needs neither).
"""
import bisect
import contextlib
import ctypes as C
import hashlib
import os

from .cuda import check, cu, read_device
from .errors import ExportError
from .fatbin import FATBIN_MAGIC, elf_data_objects, elf_sections
from .kernel_search import func_attrs

__all__ = ["CALL_NODE_KINDS", "HOST_WINDOW", "HostMaps", "ModuleFingerprints", "ModuleWatch", "host_words_in",
           "image_at", "image_size", "launch_host_words", "node_made_by"]


# CUPTI: callback domains, the resource callback for a module's loading, and the
# driver API calls whose handles say which image a function came from
# (cupti_callbacks.h, cupti_driver_cbid.h; their parameters: generated_cuda_meta.h)
DOMAIN_DRIVER_API, DOMAIN_RUNTIME_API, DOMAIN_RESOURCE, RESOURCE_MODULE_LOADED = 1, 2, 3, 6
CBID_MODULE_LOAD = (19, 20, 21)  # cuModuleLoadData, ...DataEx, ...FatBinary: (CUmodule *, const void *image)
CBID_MODULE_GET_FUNCTION = 23  # (CUfunction *, CUmodule, name)
CBID_LIBRARY_LOAD = 678  # cuLibraryLoadData: (CUlibrary *, const void *code, ...)
CBID_LIBRARY_GET_KERNEL = 681  # (CUkernel *, CUlibrary, name)
CBID_KERNEL_GET_FUNCTION = 683  # (CUfunction *, CUkernel)
CBID_CTX_SYNCHRONIZE = (17, 800)  # cuCtxSynchronize, ..._v2: where ModuleWatch.close detaches CUPTI


CALL_NODE_KINDS = ("kernel", "host", "memset", "memcpy")  # the kinds of node node_made_by gives


def node_made_by(name):
    """The kind of graph node a driver call of this name (a CUPTI callback's functionName)
    makes when the stream it runs on is being captured, as cuda.NODE_NAMES names it: a
    kernel's launch "kernel", a host function's "host", an asynchronous memset or copy
    "memset" or "memcpy"; None for a call that makes none."""
    if name.startswith(("cuLaunchKernel", "cuLaunchCooperativeKernel")):
        return "kernel"
    if name.startswith("cuLaunchHostFunc"):
        return "host"
    if "Async" in name:
        return "memset" if name.startswith("cuMemset") else "memcpy" if name.startswith("cuMemcpy") else None
    return None


HOST_WINDOW = 256  # bytes of host memory read at a launch behind a word that points there (host_words.py's)


class HostMaps:
    """Readable host mappings [(start, end, name)], searchable: end_of(addr) is the end
    of the mapping holding addr, or None."""

    def __init__(self, maps):
        self.maps = sorted((lo, hi) for lo, hi, *_ in maps)
        self.starts = [lo for lo, _ in self.maps]

    def end_of(self, addr):
        k = bisect.bisect_right(self.starts, addr) - 1
        return self.maps[k][1] if k >= 0 and addr < self.maps[k][1] else None


def host_words_in(blob, maps):
    """[(offset, address, bytes to read)] for every 8-byte-aligned word of blob (a
    kernel's parameters, laid out) that points into maps (HostMaps)."""
    out = []
    for at in range(0, len(blob) - 7, 8):
        w = int.from_bytes(blob[at:at + 8], "little")
        end = maps.end_of(w) if w else None
        if end is not None:
            out.append((at, w, min(HOST_WINDOW, end - w)))
    return out


# The parameters of the driver's launch calls, as CUPTI passes them (generated_cuda_meta.h):
# where the function and the array of argument pointers are
LAUNCH_PARAMS = {"cuLaunchKernel": (0, 48), "cuLaunchKernel_ptsz": (0, 48), "cuLaunchCooperativeKernel": (0, 48),
                 "cuLaunchCooperativeKernel_ptsz": (0, 48), "cuLaunchKernelEx": (8, 16), "cuLaunchKernelEx_ptsz": (8, 16)}


def param_layout(f, layouts):
    """[(offset, size)] of function (or library kernel) f's parameters, cached in layouts."""
    got = layouts.get(f)
    if got is None:
        got, d = [], cu()
        for query in (d.FuncGetParamInfo, d.KernelGetParamInfo):  # (a launch may name a library's kernel)
            if query is None:
                continue
            i = 0
            while True:
                off, size = C.c_size_t(), C.c_size_t()
                if query(f, i, C.byref(off), C.byref(size)) != 0:
                    break
                got.append((off.value, size.value))
                i += 1
            if got:
                break
        layouts[f] = got
    return got


def launch_host_words(fname, params, maps, layouts):
    """[(address, bytes there now)] for the words of a launch's arguments (a driver launch
    call's CUPTI parameters) that point into host memory (maps: HostMaps); [] where the
    call or its arguments cannot be read (extra-packed arguments)."""
    where = LAUNCH_PARAMS.get(fname)
    if where is None:
        return []
    P = C.POINTER(C.c_void_p)
    f = C.cast(params + where[0], P)[0]
    argv = C.cast(params + where[1], P)[0]
    if not f or not argv:
        return []
    layout = param_layout(f, layouts)
    if not layout:
        return []
    argv = C.cast(argv, P)
    blob = bytearray(max(o + s for o, s in layout))
    for k, (o, s) in enumerate(layout):
        if argv[k]:
            blob[o:o + s] = C.string_at(argv[k], s)
    return [(w, C.string_at(w, n)) for _, w, n in host_words_in(bytes(blob), maps)]


FATBIN_WRAPPER_MAGIC = 0x466243B1  # what nvcc's registration passes: magic, version, the fatbin's address


def image_at(ptr):
    """The module image at ptr (an address) as a driver call takes it, or None where it is
    none of the kinds known: a cubin, a fatbin (or the wrapper nvcc puts around one), PTX
    text.  (Bytes read past an unknown structure and later loaded as an image crashed
    the driver.)"""
    head = C.string_at(ptr, 16)
    magic = int.from_bytes(head[:4], "little")
    if magic == FATBIN_WRAPPER_MAGIC:
        inner = int.from_bytes(head[8:16], "little")
        return image_at(inner) if inner else None
    if head[:4] == b"\x7fELF" or magic == FATBIN_MAGIC:
        return C.string_at(ptr, image_size(ptr))
    if head.lstrip().startswith((b"//", b".version")):  # PTX, as ptxas reads it, up to its zero
        return C.string_at(ptr)
    return None


def image_size(ptr):
    """The size of the module image at ptr (an address): an ELF cubin to the end of its
    section headers, a fatbin by its header, PTX to its terminating zero."""
    head = C.string_at(ptr, 16)
    if head[:4] == b"\x7fELF":
        eh = C.string_at(ptr, 64)
        shoff = int.from_bytes(eh[0x28:0x30], "little")
        shentsize, shnum = int.from_bytes(eh[0x3A:0x3C], "little"), int.from_bytes(eh[0x3C:0x3E], "little")
        phoff = int.from_bytes(eh[0x20:0x28], "little")
        phentsize, phnum = int.from_bytes(eh[0x36:0x38], "little"), int.from_bytes(eh[0x38:0x3A], "little")
        return max(shoff + shentsize * shnum, phoff + phentsize * phnum)
    if int.from_bytes(head[:4], "little") == FATBIN_MAGIC:
        return int.from_bytes(head[6:8], "little") + int.from_bytes(head[8:16], "little")
    return len(C.string_at(ptr))


class ModuleWatch:
    """Copies of the module images this process loads from now on, from CUPTI's
    module-loaded callback: the second route to a library kernel that is in no
    fatbin of its library's .nv_fatbin section (cuBLASLt's CUTLASS SGEMMs).  And which
    image each function came from (image_of): cuDNN compiles kernels at run time under
    one name for several variants, and only the handles tell them apart -- the driver
    calls that load an image (cuModuleLoadData*, cuLibraryLoadData) and the ones that
    take a function out of it (cuModuleGetFunction; cuLibraryGetKernel, then
    cuKernelGetFunction).  Start it before the callable first runs; close it before
    anything else uses CUPTI (torch.profiler): CUPTI takes one subscriber at a time."""

    class _Resource(C.Structure):
        _fields_ = [("context", C.c_void_p), ("handle", C.c_void_p), ("descriptor", C.c_void_p)]

    class _Module(C.Structure):
        _fields_ = [("moduleId", C.c_uint32), ("cubinSize", C.c_size_t), ("pCubin", C.c_void_p)]

    class _Api(C.Structure):  # CUpti_CallbackData, as far as used
        _fields_ = [("site", C.c_int), ("functionName", C.c_char_p), ("params", C.c_void_p),
                    ("result", C.c_void_p)]

    def __init__(self, trace=False):
        """trace: also count every driver and runtime API call by name (self.calls: a
        diagnosis of how a library loads its code; slow)."""
        self.images, self.paused, self.sub = {}, False, None
        self.host_seen, self._maps, self._layouts = {}, None, {}  # (node_clock)
        self._clock, self._clocked, self._pending = None, [], None  # (node_clock)
        self._detach = self._detached = False
        self.calls = {} if trace else None
        self.loaded_by = {}  # module or library handle -> digests of the images loaded by that call
        self.parent = {}  # function -> module, or kernel; kernel -> library
        self._during = None  # digests of the images loaded during the call in progress
        lib = None
        for path in self._candidates():
            try:
                lib = C.CDLL(path)
                break
            except OSError:
                continue
        if lib is None:
            raise ExportError("CUPTI (libcupti) not found: library kernels outside .nv_fatbin cannot be exported")
        self.lib = lib
        CB = C.CFUNCTYPE(None, C.c_void_p, C.c_int, C.c_uint, C.c_void_p)
        watched = CBID_MODULE_LOAD + (CBID_MODULE_GET_FUNCTION, CBID_LIBRARY_LOAD, CBID_LIBRARY_GET_KERNEL,
                                      CBID_KERNEL_GET_FUNCTION)

        def seen(user, domain, cbid, data):
            if self._detach:  # closing: nothing more is kept
                if domain == DOMAIN_DRIVER_API and cbid in CBID_CTX_SYNCHRONIZE and data and \
                        C.cast(data, C.POINTER(self._Api)).contents.site == 1:  # (the call's exit: CUPTI's advice)
                    self._detached = lib.cuptiFinalize() == 0
                return
            if self._clock is not None and domain == DOMAIN_DRIVER_API and data:
                self._tick(C.cast(data, C.POINTER(self._Api)).contents)
            if self.paused or not data:
                return
            if self.calls is not None and domain in (DOMAIN_DRIVER_API, DOMAIN_RUNTIME_API):
                cd = C.cast(data, C.POINTER(self._Api)).contents
                if cd.site == 0 and cd.functionName:
                    key = cd.functionName.decode()
                    self.calls[key] = self.calls.get(key, 0) + 1
                if domain == DOMAIN_RUNTIME_API:
                    return
            if domain == DOMAIN_RESOURCE and cbid == RESOURCE_MODULE_LOADED:
                res = C.cast(data, C.POINTER(self._Resource)).contents
                if not res.descriptor:
                    return
                m = C.cast(res.descriptor, C.POINTER(self._Module)).contents
                if m.pCubin and m.cubinSize:
                    self._keep(C.string_at(m.pCubin, m.cubinSize))
            elif domain == DOMAIN_DRIVER_API and cbid in watched:
                self._api(cbid, C.cast(data, C.POINTER(self._Api)).contents)

        self.watched = watched
        self._cb = CB(seen)
        sub = C.c_void_p()
        r = lib.cuptiSubscribe(C.byref(sub), self._cb, None)
        if r != 0:
            raise ExportError(f"cuptiSubscribe failed ({r}): another CUPTI subscriber (a profiler) is active")
        self.sub = sub
        lib.cuptiEnableCallback(1, sub, DOMAIN_RESOURCE, RESOURCE_MODULE_LOADED)
        for cbid in watched:
            lib.cuptiEnableCallback(1, sub, DOMAIN_DRIVER_API, cbid)
        if trace:
            lib.cuptiEnableDomain(1, sub, DOMAIN_DRIVER_API)
            lib.cuptiEnableDomain(1, sub, DOMAIN_RUNTIME_API)

    @contextlib.contextmanager
    def node_clock(self, clock, maps=None):
        """While in it, clock() is read as each driver call that makes a graph node begins
        (node_made_by), and kept with the kind of node, in order, for the calls that
        succeed: the list of (clock, kind) it yields.
        Capture A reads the caching allocator's counts so (Capture.node_clock), to place
        each node in the allocator's trace.  Works while paused.
        maps: this process's readable host mappings (capture.host_maps); with them, each
        kernel launch's parameter words that point into them get the bytes there read
        as the launch begins (host_seen: {address: [bytes, one per launch]}).  A library
        may hand a kernel pointers to its caller's locals, valid only during the call
        (cuBLASLt's split-K reduction: alpha and beta); what lies there later is not
        what the kernel read."""
        self._clock, self._clocked, self._pending = clock, [], None
        self.host_seen, self._maps = {}, HostMaps(maps) if maps else None
        self.lib.cuptiEnableDomain(1, self.sub, DOMAIN_DRIVER_API)
        try:
            yield self._clocked
        finally:
            self._clock = None
            if self.calls is None:  # (tracing keeps the domain on)
                self.lib.cuptiEnableDomain(0, self.sub, DOMAIN_DRIVER_API)
                for cbid in self.watched:
                    self.lib.cuptiEnableCallback(1, self.sub, DOMAIN_DRIVER_API, cbid)

    def _tick(self, cd):
        fname = cd.functionName.decode() if cd.functionName else ""
        kind = node_made_by(fname) if fname else None
        if kind is None:
            return
        if cd.site == 0:
            self._pending = self._clock(), kind
            if kind == "kernel" and self._maps is not None and cd.params:
                for addr, data in launch_host_words(fname, cd.params, self._maps, self._layouts):
                    self.host_seen.setdefault(addr, []).append(data)
        elif self._pending is not None:
            if not cd.result or C.cast(cd.result, C.POINTER(C.c_int))[0] == 0:
                self._clocked.append(self._pending)
            self._pending = None

    def _keep(self, image):
        digest = hashlib.sha256(image).hexdigest()
        self.images.setdefault(digest, image)
        if self._during is not None:
            self._during.append(digest)
        return digest

    def _api(self, cbid, cd):
        P = C.POINTER(C.c_void_p)
        if cd.site == 0:  # entering: the images loaded from here on are this call's
            if cbid in CBID_MODULE_LOAD or cbid == CBID_LIBRARY_LOAD:
                self._during = []
            return
        if not cd.params or (cd.result and C.cast(cd.result, C.POINTER(C.c_int))[0] != 0):
            self._during = None
            return
        p = C.cast(cd.params, P)
        if cbid in CBID_MODULE_LOAD or cbid == CBID_LIBRARY_LOAD:
            handle = C.cast(p[0], P)[0] if p[0] else None
            during, self._during = self._during or [], None
            if handle and not during and p[1]:  # loaded lazily: the image given is what will run
                image = image_at(p[1])
                during = [self._keep(image)] if image else []
            if handle:
                self.loaded_by[handle] = during
        elif cbid in (CBID_MODULE_GET_FUNCTION, CBID_LIBRARY_GET_KERNEL, CBID_KERNEL_GET_FUNCTION):
            out = C.cast(p[0], P)[0] if p[0] else None
            if out:
                self.parent[out] = p[1]

    def image_of(self, func):
        """The digest of the image function func was taken from, if this watch saw it
        loaded and taken (None otherwise, or where one load gave several images)."""
        h = func
        for _ in range(3):  # function -> module; function -> kernel -> library
            if h in self.loaded_by:
                d = self.loaded_by[h]
                return d[0] if len(set(d)) == 1 else None
            h = self.parent.get(h)
            if h is None:
                return None
        return None

    @staticmethod
    def _candidates():
        with open("/proc/self/maps") as f:  # the one already loaded, if any
            for line in f:
                if "libcupti.so" in line:
                    yield line.split()[-1]
        try:
            import torch
            root = os.path.dirname(os.path.dirname(torch.__file__))
            for dirpath, _, files in os.walk(os.path.join(root, "nvidia")):
                for f in sorted(files):
                    if f.startswith("libcupti.so"):
                        yield os.path.join(dirpath, f)
        except ImportError:
            pass
        for d in ("/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64"):
            for f in ("libcupti.so", "libcupti.so.13", "libcupti.so.12"):
                yield os.path.join(d, f)

    def close(self):
        """Stops watching and detaches CUPTI from the process (cuptiFinalize, from the exit
        of a driver call as CUPTI advises): once a subscriber has attached it, unsubscribing
        is not enough -- every kernel node of every graph launch went on costing the host
        about 0.5 µs (a ResNet-50 graph's launch 71 µs against 7; bench/launch.py --watch).
        Returns whether CUPTI detached."""
        if not self.sub:
            return self._detached
        self._detach = True
        for cbid in CBID_CTX_SYNCHRONIZE:
            self.lib.cuptiEnableCallback(1, self.sub, DOMAIN_DRIVER_API, cbid)
        cu().CtxSynchronize()  # (the callback finalizes at its exit)
        if not self._detached:  # (no callback came: unsubscribed at least)
            self.lib.cuptiUnsubscribe(self.sub)
        self.sub = None
        return self._detached


class ModuleFingerprints:
    """Which module images a function's module (cuFuncGetModule) could have been loaded
    from, told without seeing the call that loaded it.  cuDNN's depthwise convolution is
    in several of its fatbins under one name with different code; the CUDA runtime
    loads them lazily, inside itself, where CUPTI reports each image (ModuleWatch) but
    no driver call, so ModuleWatch.image_of knows nothing of them.  An image fits a
    module when a fresh load of it has the module's kernels (the same count, names and
    attributes) and data objects of the same names and sizes; among those that fit, the
    ones whose data objects the module still holds at their initial bytes come first.
    Images with the same code for the kernel fit alike: any of them will do."""

    DATA_LIMIT = 1 << 16  # bytes of one data object compared (a lookup table may be large)

    def __init__(self):
        self._prints = {}

    def _print(self, image):
        """(kernel count, {name: attrs}, [(object name, initial bytes)]) of an ELF image,
        as a fresh load of it gives them; None if it does not load."""
        key = hashlib.sha256(image).digest()
        if key not in self._prints:
            d, mod = cu(), C.c_void_p()
            buf = C.create_string_buffer(image, len(image))
            got = None
            if d.ModuleLoadData(C.byref(mod), buf) == 0:
                try:
                    count = C.c_uint()
                    check(d.ModuleGetFunctionCount(C.byref(count), mod), "cuModuleGetFunctionCount")
                    attrs = {}
                    for sec in elf_sections(image):
                        f = C.c_void_p()
                        name = sec[len(".text."):]
                        if sec.startswith(".text.") and d.ModuleGetFunction(C.byref(f), mod, name.encode()) == 0:
                            attrs[name] = func_attrs(f)
                    got = (count.value, attrs, [(n, init) for n, _, init in elf_data_objects(image)])
                finally:
                    d.ModuleUnload(mod)
            self._prints[key] = got
        return self._prints[key]

    GLOBAL_LIMIT = 1 << 20  # bytes of one data object an export carries (the .graph format's limit)

    def globals_of(self, func, image):
        """[(name, bytes)] of the data objects of func's module that hold other bytes than
        `image` starts them with: what its library wrote after loading it (cuDNN's
        depthwise convolution reads WINDOW_SIZE and CONV_STRIDE_SIZE from there), for the
        export's module to carry and libpgrt to write after loading it.  ExportError for
        an object that cannot be carried: over GLOBAL_LIMIT bytes, or holding a device
        address (which no relocation patches there)."""
        d, mod = cu(), C.c_void_p()
        check(d.FuncGetModule(C.byref(mod), C.c_void_p(func)), "cuFuncGetModule")
        out = []
        for name, init in (self._print(image) or (0, {}, []))[2]:
            ptr, size = C.c_uint64(), C.c_size_t()
            check(d.ModuleGetGlobal(C.byref(ptr), C.byref(size), mod, name.encode()), f"cuModuleGetGlobal ({name})")
            if size.value > self.GLOBAL_LIMIT:
                if read_device(ptr.value, self.DATA_LIMIT) != init[:self.DATA_LIMIT]:
                    raise ExportError(f"data object {name} of a library module ({size.value} bytes) holds other "
                                      f"bytes than its image starts it with, and is over {self.GLOBAL_LIMIT} bytes")
                continue
            live = read_device(ptr.value, size.value)
            if live == init:
                continue
            for at in range(0, len(live) - 7, 4):
                word, base = int.from_bytes(live[at:at + 8], "little"), C.c_uint64()
                if word >> 32 and d.MemGetAddressRange(C.byref(base), None, C.c_uint64(word)) == 0:
                    raise ExportError(f"data object {name} of a library module holds a device address at byte {at} "
                                      f"(0x{word:x}), written after the module loaded: it cannot be carried")
            out.append((name, live))
        return out

    def images_for(self, func, images):
        """The images (ELF, of `images`) func's module fits, best first; [] if none does."""
        d, mod = cu(), C.c_void_p()
        if d.FuncGetModule(C.byref(mod), C.c_void_p(func)) != 0 or not mod.value:
            return []
        count = C.c_uint()
        if d.ModuleGetFunctionCount(C.byref(count), mod) != 0:
            return []
        fits = []
        for image in images:
            fp = self._print(image) if image[:4] == b"\x7fELF" else None
            if not fp or fp[0] != count.value or not fp[1]:
                continue
            ok, untouched = True, True
            for name, attrs in fp[1].items():
                f = C.c_void_p()
                if d.ModuleGetFunction(C.byref(f), mod, name.encode()) != 0 or func_attrs(f) != attrs:
                    ok = False
                    break
            for name, init in fp[2] if ok else ():
                ptr, size = C.c_uint64(), C.c_size_t()
                if d.ModuleGetGlobal(C.byref(ptr), C.byref(size), mod, name.encode()) != 0 or size.value != len(init):
                    ok = False
                    break
                n = min(len(init), self.DATA_LIMIT)
                untouched = untouched and read_device(ptr.value, n) == init[:n]
            if ok:
                fits.append((not untouched, len(fits), image))
        return [image for _, _, image in sorted(fits)]
