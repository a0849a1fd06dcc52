"""The CUDA driver API through ctypes: the few entry points the exporter and the
loader call (versioned names, as cuda.h maps them), the parameter structs the graph
walk reads, and one check function that turns a CUresult into an exception.

Assumes libcuda.so.1 can be loaded (a machine with the NVIDIA driver); nothing here
loads it until cu() is first called, so importing this module needs no GPU.
"""
import contextlib
import ctypes as C

__all__ = ["allocation_span", "ATTR_CLUSTER_DIMENSION", "ATTR_COOPERATIVE", "ATTR_PRIORITY", "ATTR_VALUE_BYTES",
           "check", "cu", "device_bytes", "FUNC_MAX_DYNAMIC_SHARED_SIZE", "FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
           "FUNC_REQUIRED_CLUSTER_WIDTH", "kernel_argv", "KernelNodeParams", "LAUNCH_PARAM_BUFFER_POINTER",
           "LAUNCH_PARAM_BUFFER_SIZE", "LAUNCH_PARAM_END", "LaunchAttribute", "LaunchConfig", "Memcpy3D",
           "MemsetParams", "NODE_EMPTY", "NODE_KERNEL", "NODE_MEMCPY", "NODE_MEMSET", "NODE_NAMES", "placed",
           "read_device", "stuck_error", "write_device"]

_cu = None


def cu():
    """libcuda, with the few entry points used here (versioned names, as cuda.h maps them)."""
    global _cu
    if _cu:
        return _cu
    lib = C.CDLL("libcuda.so.1")
    P, U, S, I = C.c_void_p, C.c_uint, C.c_size_t, C.c_int

    def fn(name, *args):
        f = getattr(lib, name)
        f.restype, f.argtypes = C.c_int, list(args)
        return f

    class NS:
        pass

    n = NS()
    n.GetErrorString = fn("cuGetErrorString", I, C.POINTER(C.c_char_p))
    n.DriverGetVersion = fn("cuDriverGetVersion", C.POINTER(I))
    n.GraphGetNodes = fn("cuGraphGetNodes", P, C.POINTER(P), C.POINTER(S))
    n.GraphGetEdges = fn("cuGraphGetEdges_v2", P, C.POINTER(P), C.POINTER(P), P, C.POINTER(S))
    n.GraphNodeGetType = fn("cuGraphNodeGetType", P, C.POINTER(I))
    n.KernelNodeGetParams = fn("cuGraphKernelNodeGetParams_v2", P, P)
    n.MemsetNodeGetParams = fn("cuGraphMemsetNodeGetParams", P, P)
    n.MemcpyNodeGetParams = fn("cuGraphMemcpyNodeGetParams", P, P)
    n.FuncGetName = fn("cuFuncGetName", C.POINTER(C.c_char_p), P)
    n.FuncGetParamInfo = fn("cuFuncGetParamInfo", P, S, C.POINTER(S), C.POINTER(S))
    try:  # (CUDA 12.4 or later, as cuFuncGetParamInfo)
        n.KernelGetParamInfo = fn("cuKernelGetParamInfo", P, S, C.POINTER(S), C.POINTER(S))
    except AttributeError:
        n.KernelGetParamInfo = None
    n.FuncGetAttribute = fn("cuFuncGetAttribute", C.POINTER(I), I, P)
    n.FuncSetAttribute = fn("cuFuncSetAttribute", P, I, I)
    n.ModuleLoadData = fn("cuModuleLoadData", C.POINTER(P), P)
    n.ModuleGetFunction = fn("cuModuleGetFunction", C.POINTER(P), P, C.c_char_p)
    n.ModuleUnload = fn("cuModuleUnload", P)
    n.ModuleGetGlobal = fn("cuModuleGetGlobal_v2", C.POINTER(C.c_uint64), C.POINTER(S), P, C.c_char_p)
    n.ModuleGetFunctionCount = fn("cuModuleGetFunctionCount", C.POINTER(U), P)
    n.FuncGetModule = fn("cuFuncGetModule", C.POINTER(P), P)
    n.LibraryGetGlobal = fn("cuLibraryGetGlobal", C.POINTER(C.c_uint64), C.POINTER(S), P, C.c_char_p)
    n.MemGetAddressRange = fn("cuMemGetAddressRange_v2", C.POINTER(C.c_uint64), C.POINTER(S), C.c_uint64)
    n.CtxGetDevice = fn("cuCtxGetDevice", C.POINTER(I))
    n.MemGetAllocationGranularity = fn("cuMemGetAllocationGranularity", C.POINTER(S), P, I)
    n.MemCreate = fn("cuMemCreate", C.POINTER(C.c_uint64), S, P, C.c_ulonglong)
    n.MemRelease = fn("cuMemRelease", C.c_uint64)
    n.MemAddressReserve = fn("cuMemAddressReserve", C.POINTER(C.c_uint64), S, S, C.c_uint64, C.c_ulonglong)
    n.MemAddressFree = fn("cuMemAddressFree", C.c_uint64, S)
    n.MemMap = fn("cuMemMap", C.c_uint64, S, S, C.c_uint64, C.c_ulonglong)
    n.MemUnmap = fn("cuMemUnmap", C.c_uint64, S)
    n.MemSetAccess = fn("cuMemSetAccess", C.c_uint64, S, P, S)
    n.LibraryLoadData = fn("cuLibraryLoadData", C.POINTER(P), P, P, P, U, P, P, U)
    n.LibraryGetKernel = fn("cuLibraryGetKernel", C.POINTER(P), P, C.c_char_p)
    n.LibraryUnload = fn("cuLibraryUnload", P)
    n.KernelGetFunction = fn("cuKernelGetFunction", C.POINTER(P), P)
    n.MemcpyDtoH = fn("cuMemcpyDtoH_v2", P, C.c_uint64, S)
    n.MemcpyHtoD = fn("cuMemcpyHtoD_v2", C.c_uint64, P, S)
    n.MemcpyDtoD = fn("cuMemcpyDtoD_v2", C.c_uint64, C.c_uint64, S)
    n.MemsetD8 = fn("cuMemsetD8_v2", C.c_uint64, C.c_ubyte, S)
    n.MemsetD8Async = fn("cuMemsetD8Async", C.c_uint64, C.c_ubyte, S, P)
    n.MemFree = fn("cuMemFree_v2", C.c_uint64)
    n.PointerGetAttribute = fn("cuPointerGetAttribute", P, I, C.c_uint64)
    n.GraphInstantiate = fn("cuGraphInstantiateWithFlags", C.POINTER(P), P, C.c_ulonglong)
    n.GraphLaunch = fn("cuGraphLaunch", P, P)
    n.GraphExecDestroy = fn("cuGraphExecDestroy", P)
    n.GraphExecKernelNodeSetParams = fn("cuGraphExecKernelNodeSetParams_v2", P, P, P)
    n.GraphNodeSetEnabled = fn("cuGraphNodeSetEnabled", P, P, U)
    n.StreamSynchronize = fn("cuStreamSynchronize", P)
    n.StreamQuery = fn("cuStreamQuery", P)
    n.GraphKernelNodeGetAttribute = fn("cuGraphKernelNodeGetAttribute", P, I, P)
    n.LaunchKernelEx = fn("cuLaunchKernelEx", P, P, P, P)
    n.MemsetD16 = fn("cuMemsetD16_v2", C.c_uint64, C.c_ushort, S)
    n.MemsetD32 = fn("cuMemsetD32_v2", C.c_uint64, U, S)
    n.CtxSynchronize = fn("cuCtxSynchronize")
    n.StreamIsCapturing = fn("cuStreamIsCapturing", P, C.POINTER(I))
    n.StreamEndCapture = fn("cuStreamEndCapture", P, C.POINTER(P))
    n.GraphDestroy = fn("cuGraphDestroy", P)
    _cu = n
    return n


def error_text(r):
    s = C.c_char_p()
    cu().GetErrorString(r, C.byref(s))
    return f"CUDA error {r} ({(s.value or b'?').decode()})"


def check(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: {error_text(r)}")


def stuck_error():
    """The error the current CUDA context is stuck in, as text, or None: after a kernel faults
    (an illegal address, a trap) every later call of the process on it fails so."""
    r = cu().CtxSynchronize()
    return None if r == 0 else error_text(r)


def allocation_span(addr):
    """(base, size) of the device allocation holding addr, or None where none does."""
    base, size = C.c_uint64(), C.c_size_t()
    if cu().MemGetAddressRange(C.byref(base), C.byref(size), C.c_uint64(addr)) != 0:
        return None
    return base.value, size.value


def read_device(addr, size):
    raw = C.create_string_buffer(size)
    check(cu().MemcpyDtoH(raw, addr, size), "cuMemcpyDtoH")
    return raw.raw


def write_device(addr, data):
    check(cu().MemcpyHtoD(addr, data, len(data)), "cuMemcpyHtoD")


def kernel_argv(layout, blob):
    """A kernel's parameters as cuLaunchKernel* and kernel node parameters take them (an
    array of pointers, one per parameter of layout, into copies of blob's bytes), and the
    copies, which must stay alive as long as the array is used."""
    vals = [C.create_string_buffer(bytes(blob[o:o + s]), max(s, 1)) for o, s in layout]
    return (C.c_void_p * max(len(vals), 1))(*[C.cast(v, C.c_void_p) for v in vals]), vals


class _MemAllocationProp(C.Structure):  # CUmemAllocationProp
    _fields_ = [("type", C.c_int), ("handleTypes", C.c_int), ("locType", C.c_int), ("locId", C.c_int),
                ("win32", C.c_void_p), ("allocFlags", C.c_ubyte * 8)]


class _MemAccessDesc(C.Structure):  # CUmemAccessDesc
    _fields_ = [("locType", C.c_int), ("locId", C.c_int), ("flags", C.c_int)]


@contextlib.contextmanager
def placed(data, low32):
    """Device memory holding data at an address whose low 32 bits are low32 (any value):
    a virtual range of 4 GiB and some granules is reserved, and memory is mapped from
    the granule before the one low32 falls in to the end of data (zeroed, then data
    written), so that a kernel reading a little before or after the copy reads zeros,
    not unmapped memory.  Yields the address; unmaps and frees it after."""
    d = cu()
    dev = C.c_int()
    check(d.CtxGetDevice(C.byref(dev)), "cuCtxGetDevice")
    prop = _MemAllocationProp(type=1, locType=1, locId=dev.value)  # pinned, on this device
    g = C.c_size_t()
    check(d.MemGetAllocationGranularity(C.byref(g), C.byref(prop), 0), "cuMemGetAllocationGranularity")
    gran = g.value
    lead = gran + low32 % gran  # mapped bytes before the copy
    size = -(-(lead + len(data)) // gran) * gran
    va, handle = C.c_uint64(), C.c_uint64()
    span = (1 << 32) + size + gran
    check(d.MemAddressReserve(C.byref(va), span, gran, 0, 0), "cuMemAddressReserve")
    try:
        at = (va.value & ~0xFFFFFFFF) | low32
        while at - lead < va.value:
            at += 1 << 32
        check(d.MemCreate(C.byref(handle), size, C.byref(prop), 0), "cuMemCreate")
        try:
            check(d.MemMap(at - lead, size, 0, handle.value, 0), "cuMemMap")
            try:
                access = _MemAccessDesc(locType=1, locId=dev.value, flags=3)  # read and write
                check(d.MemSetAccess(at - lead, size, C.byref(access), 1), "cuMemSetAccess")
                check(d.MemsetD8(at - lead, 0, size), "cuMemsetD8")
                write_device(at, bytes(data))
                yield at
            finally:
                check(d.CtxSynchronize(), "cuCtxSynchronize")
                d.MemUnmap(at - lead, size)
        finally:
            d.MemRelease(handle.value)
    finally:
        d.MemAddressFree(va.value, span)


class _DeviceMemory:
    """Device memory as a __cuda_array_interface__ object."""

    def __init__(self, addr, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (addr, False), "version": 3}


def device_bytes(torch, addr, n):
    """A uint8 tensor over n bytes of device memory at addr (no copy; torch passed in)."""
    if not n:
        return torch.empty(0, dtype=torch.uint8, device="cuda")
    return torch.as_tensor(_DeviceMemory(addr, n), device="cuda")


class KernelNodeParams(C.Structure):
    _fields_ = [("func", C.c_void_p), ("grid", C.c_uint * 3), ("block", C.c_uint * 3), ("smem", C.c_uint),
                ("kernelParams", C.c_void_p), ("extra", C.c_void_p), ("kern", C.c_void_p), ("ctx", C.c_void_p)]


class MemsetParams(C.Structure):
    _fields_ = [("dst", C.c_uint64), ("pitch", C.c_size_t), ("value", C.c_uint), ("elementSize", C.c_uint),
                ("width", C.c_size_t), ("height", C.c_size_t)]


class Memcpy3D(C.Structure):
    _fields_ = [("srcXInBytes", C.c_size_t), ("srcY", C.c_size_t), ("srcZ", C.c_size_t), ("srcLOD", C.c_size_t),
                ("srcMemoryType", C.c_int), ("srcHost", C.c_void_p), ("srcDevice", C.c_uint64),
                ("srcArray", C.c_void_p), ("reserved0", C.c_void_p), ("srcPitch", C.c_size_t),
                ("srcHeight", C.c_size_t),
                ("dstXInBytes", C.c_size_t), ("dstY", C.c_size_t), ("dstZ", C.c_size_t), ("dstLOD", C.c_size_t),
                ("dstMemoryType", C.c_int), ("dstHost", C.c_void_p), ("dstDevice", C.c_uint64),
                ("dstArray", C.c_void_p), ("reserved1", C.c_void_p), ("dstPitch", C.c_size_t),
                ("dstHeight", C.c_size_t),
                ("WidthInBytes", C.c_size_t), ("Height", C.c_size_t), ("Depth", C.c_size_t)]


class LaunchAttribute(C.Structure):
    _fields_ = [("id", C.c_int), ("pad", C.c_int), ("value", C.c_ubyte * 64)]


class LaunchConfig(C.Structure):
    _fields_ = [("grid", C.c_uint * 3), ("block", C.c_uint * 3), ("smem", C.c_uint), ("stream", C.c_void_p),
                ("attrs", C.c_void_p), ("numAttrs", C.c_uint)]


FUNC_MAX_DYNAMIC_SHARED_SIZE, FUNC_REQUIRED_CLUSTER_WIDTH, FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 8, 11, 14

# kernel node attributes read (CUlaunchAttributeID) and their values' size
ATTR_COOPERATIVE, ATTR_CLUSTER_DIMENSION, ATTR_PRIORITY = 2, 4, 8
ATTR_VALUE_BYTES = 64  # CUlaunchAttributeValue

# the keys of a kernel launch's `extra` array (cuda.h)
LAUNCH_PARAM_END, LAUNCH_PARAM_BUFFER_POINTER, LAUNCH_PARAM_BUFFER_SIZE = 0, 1, 2

NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, NODE_EMPTY = 0, 1, 2, 5
NODE_NAMES = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "child graph", 5: "empty", 6: "event wait",
              7: "event record", 8: "external semaphore signal", 9: "external semaphore wait", 10: "memory alloc",
              11: "memory free", 12: "batch memop", 13: "conditional"}
