"""Cubins that libraries keep compressed outside their .nv_fatbin section.

cuBLASLt 13 keeps part of its kernels (the CUTLASS GEMMs cuBLAS picks for fp32 and
tf32, cutlass_80_simt_sgemm_* and cutlass_80_tensorop_s1688gemm_*) as zstd frames in
its large data section (.ldata), each frame a whole cubin, and loads them itself: the
driver never sees them as part of a fatbin, so a search of .nv_fatbin does not find
them, and a ModuleWatch started after they were loaded has not seen them either.  This
module finds such frames in an ELF file's sections, decompresses them with the
system's libzstd (ctypes; the `zstandard` package where libzstd is missing) and keeps
the cubins built for one GPU architecture that hold one of the wanted kernel names.  With
libzstd, a frame's first bytes (its ELF header) are decompressed first and only a cubin
for that architecture is decompressed whole, on several threads (ctypes lets go of the
GIL while libzstd works): most of cuBLASLt's frames are for other GPUs.

Pure: file bytes in, images out (no CUDA, no torch).  Which of the images holds the
very kernel that ran is for the caller to prove (kernels.find_in_images compares the
loaded functions' attributes and refuses a name held by several images with different
code).
"""
import concurrent.futures
import ctypes as C
import ctypes.util
import mmap
import os
import struct

from .fatbin import elf_sections

try:
    import zstandard  # the fallback where the system has no libzstd
except ImportError:
    zstandard = None

__all__ = ["ZSTD_MAGIC", "Zstd", "cubin_sm", "data_sections", "embedded_cubins", "holds_symbol", "symbol_names"]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ELF_MAGIC = b"\x7fELF"
SHT_PROGBITS = 1
SHF_EXECINSTR = 0x4
# A frame that says it holds more than this is not a cubin (the bytes only looked like a frame).
MAX_IMAGE = 256 << 20
HEAD = 64  # bytes of a frame decompressed to read its ELF header (cubin_sm needs 52)


class _InBuffer(C.Structure):
    _fields_ = [("src", C.c_void_p), ("size", C.c_size_t), ("pos", C.c_size_t)]


class _OutBuffer(C.Structure):
    _fields_ = [("dst", C.c_void_p), ("size", C.c_size_t), ("pos", C.c_size_t)]


class Zstd:
    """One-shot zstd decompression of frames whose header states their size."""

    def __init__(self):
        self.lib, self.module = None, None
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        try:
            lib = C.CDLL(name)
            lib.ZSTD_findFrameCompressedSize.restype = C.c_size_t
            lib.ZSTD_findFrameCompressedSize.argtypes = [C.c_void_p, C.c_size_t]
            lib.ZSTD_getFrameContentSize.restype = C.c_ulonglong
            lib.ZSTD_getFrameContentSize.argtypes = [C.c_void_p, C.c_size_t]
            lib.ZSTD_decompress.restype = C.c_size_t
            lib.ZSTD_decompress.argtypes = [C.c_void_p, C.c_size_t, C.c_void_p, C.c_size_t]
            lib.ZSTD_isError.restype = C.c_uint
            lib.ZSTD_isError.argtypes = [C.c_size_t]
            lib.ZSTD_createDCtx.restype = C.c_void_p
            lib.ZSTD_createDCtx.argtypes = []
            lib.ZSTD_freeDCtx.restype = C.c_size_t
            lib.ZSTD_freeDCtx.argtypes = [C.c_void_p]
            lib.ZSTD_decompressStream.restype = C.c_size_t
            lib.ZSTD_decompressStream.argtypes = [C.c_void_p, C.POINTER(_OutBuffer), C.POINTER(_InBuffer)]
            self.lib = lib
        except OSError:
            self.module = zstandard

    def __bool__(self):
        return self.lib is not None or self.module is not None

    @property
    def peeks(self):
        """Whether a frame's length and first bytes can be had without decompressing it
        whole (libzstd; not the `zstandard` package)."""
        return self.lib is not None

    def length(self, data, at):
        """The compressed length of the frame at data[at:] (data: bytes), or None where the
        bytes there are no complete frame; None too without libzstd (the `zstandard`
        package tells a frame's length only by decompressing it)."""
        if self.lib is None:
            return None
        n = self.lib.ZSTD_findFrameCompressedSize(C.cast(C.c_char_p(data), C.c_void_p).value + at, len(data) - at)
        return None if self.lib.ZSTD_isError(n) else n

    def head(self, data, size=HEAD):
        """The first `size` bytes data (one whole frame, bytes) decompresses to (fewer where
        it holds fewer), or None where it is no frame or libzstd is missing.  Decoding stops
        once they are out: the frame's first block, not the whole frame."""
        if self.lib is None:
            return None
        ctx = self.lib.ZSTD_createDCtx()
        if not ctx:
            return None
        try:
            out = C.create_string_buffer(size)
            ob = _OutBuffer(C.cast(out, C.c_void_p).value, size, 0)
            ib = _InBuffer(C.cast(C.c_char_p(data), C.c_void_p).value, len(data), 0)
            while ob.pos < size and ib.pos < ib.size:
                r = self.lib.ZSTD_decompressStream(ctx, C.byref(ob), C.byref(ib))
                if self.lib.ZSTD_isError(r):
                    return None
                if r == 0:  # (the frame ended)
                    break
            return out.raw[:ob.pos]
        finally:
            self.lib.ZSTD_freeDCtx(ctx)

    def frame(self, data, at):
        """(decompressed bytes, compressed length) of the frame at data[at:] (data: bytes), or
        None where the bytes there are no complete frame that states its size."""
        if self.lib is not None:
            src, left = C.cast(C.c_char_p(data), C.c_void_p).value + at, len(data) - at  # (no copy)
            n = self.lib.ZSTD_findFrameCompressedSize(src, left)
            if self.lib.ZSTD_isError(n):
                return None
            size = self.lib.ZSTD_getFrameContentSize(src, n)
            if size >= MAX_IMAGE:  # unknown (2**64-1), an error (2**64-2) or too large
                return None
            out = C.create_string_buffer(max(size, 1))
            got = self.lib.ZSTD_decompress(out, size, src, n)
            if self.lib.ZSTD_isError(got) or got != size:
                return None
            return out.raw[:size], n
        if self.module is not None:
            d = self.module.ZstdDecompressor().decompressobj()
            try:
                out = d.decompress(memoryview(data)[at:at + MAX_IMAGE])
            except self.module.ZstdError:
                return None
            if not d.eof:
                return None
            return out, min(len(data) - at, MAX_IMAGE) - len(d.unused_data)
        return None


def cubin_sm(image):
    """The SM version (90) a cubin is built for, or None if image is no CUDA ELF.  e_flags
    holds it in bits 0-7, or in bits 8-15 from ELF ABI version 8 on (compiler/arch.c)."""
    if len(image) < 52 or image[:4] != ELF_MAGIC or image[4] != 2:
        return None
    flags, = struct.unpack_from("<I", image, 48)
    return (flags >> 8) & 0xff if image[8] >= 8 else flags & 0xff


def holds_symbol(image, names):
    """Whether a cubin's symbol names (its .strtab, split at its nulls) include one of names
    (a set of bytes); where it has no .strtab, whether one of them is anywhere in its
    bytes.  A set's lookup, not a search of the whole image for each name: cuBLASLt's
    frames hold hundreds of MB of code, searched for every kernel an export looks for."""
    strtab = elf_sections(image).get(".strtab")
    if strtab is None:
        return any(s in image for s in names)
    return not names.isdisjoint(strtab.split(b"\0"))


def data_sections(head):
    """[(name, file offset, size)] of the sections of an ELF file (given as bytes or an mmap)
    that hold data on disk and no code: where a library could keep compressed images."""
    if head[:4] != ELF_MAGIC or head[4] != 2:
        return []
    shoff, = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    if not shoff or shentsize < 64 or shstrndx >= shnum or shoff + shnum * shentsize > len(head):
        return []
    so, ss = struct.unpack_from("<QQ", head, shoff + shstrndx * shentsize + 0x18)
    names = bytes(head[so:so + ss])
    out = []
    for i in range(shnum):
        at = shoff + i * shentsize
        nm, kind, flags = struct.unpack_from("<IIQ", head, at)
        off, size = struct.unpack_from("<QQ", head, at + 0x18)
        if kind != SHT_PROGBITS or flags & SHF_EXECINSTR or off + size > len(head) or nm >= len(names):
            continue
        name = names[nm:names.index(b"\0", nm)].decode(errors="replace") if b"\0" in names[nm:] else "?"
        out.append((name, off, size))
    return out


def embedded_cubins(path, sm, symbols, zstd=None, skip=(".nv_fatbin",), index=None):
    """Yields (section, offset, cubin) for each zstd frame in the data sections of the ELF
    file at path (less skip: .nv_fatbin is the driver's, searched by its own fatbin reader)
    that decompresses to a cubin for SM version sm holding one of symbols' names.

    index: a dict the caller keeps for this file and GPU between searches
    (search_cache.py).  Empty, it is filled by a whole search: index["frames"], one
    [section, file offset, compressed length, [symbol names], or None where the cubin has no
    symbol table] per frame that holds a cubin for sm.  Filled, only the frames that name a
    wanted symbol are read and decompressed."""
    zstd = zstd if zstd is not None else Zstd()
    if not zstd:
        return
    names = {s.encode() for s in symbols}
    with open(path, "rb") as f:
        try:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return
    with m:
        if index is not None and "frames" in index:
            wanted = set(symbols)
            for name, at, n, held in index["frames"]:
                if held is not None and wanted.isdisjoint(held):
                    continue
                got = zstd.frame(m[at:at + n], 0)
                if got is not None and cubin_sm(got[0]) == sm and holds_symbol(got[0], names):
                    yield name, at, got[0]
            return
        frames, search = [], _whole_search(m, sm, names, zstd, skip)
        try:
            for name, at, n, held, image in search:
                frames.append([name, at, n, held])
                if image is not None:
                    yield name, at, image
        finally:  # (a caller that stops early: the threads finish before the file is closed)
            search.close()
        if index is not None:
            index["frames"] = frames


def _whole_search(m, sm, names, zstd, skip):
    """(section, file offset, compressed length, symbol names, the cubin where it holds one
    of names else None) of each frame of the mapped file m that holds a cubin for sm, in
    file order.  With libzstd the frames are found first (their lengths), then each one's
    header is read and a cubin for sm decompressed, on threads; else one after another."""
    spans = []
    for name, off, size in data_sections(m):
        if name in skip:
            continue
        sec = m[off:off + size]
        at = sec.find(ZSTD_MAGIC)
        while at >= 0:
            if not zstd.peeks:  # (the zstandard package: a frame's length is known once decompressed)
                got = zstd.frame(sec, at)
                if got is None:
                    at = sec.find(ZSTD_MAGIC, at + 4)
                    continue
                image, n = got
                if cubin_sm(image) == sm:
                    yield name, off + at, n, symbol_names(image), image if holds_symbol(image, names) else None
                at = sec.find(ZSTD_MAGIC, at + n)
                continue
            n = zstd.length(sec, at)
            if n is None:
                at = sec.find(ZSTD_MAGIC, at + 4)
                continue
            spans.append((name, off + at, n))
            at = sec.find(ZSTD_MAGIC, at + n)
    if not spans:
        return

    def look(span):
        name, at, n = span
        data = m[at:at + n]
        head = zstd.head(data)
        if head is None or (len(head) >= HEAD and cubin_sm(head) != sm):
            return None  # (no frame, or a cubin for another GPU: not decompressed whole)
        got = zstd.frame(data, 0)
        if got is None or cubin_sm(got[0]) != sm:
            return None
        image = got[0]
        return name, at, n, symbol_names(image), image if holds_symbol(image, names) else None
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for got in pool.map(look, spans):
            if got is not None:
                yield got


def symbol_names(image):
    """A cubin's symbol names: its .strtab's strings but section names (those that begin
    with a dot); None where it has no .strtab."""
    strtab = elf_sections(image).get(".strtab")
    if strtab is None:
        return None
    return [x.decode(errors="replace") for x in strtab.split(b"\0") if x and not x.startswith(b".")]
