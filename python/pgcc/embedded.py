"""Cubins that libraries keep compressed outside their .nv_fatbin section.

cuBLASLt 13 keeps part of its kernels (the CUTLASS GEMMs cuBLAS picks for fp32 and
tf32, cutlass_80_simt_sgemm_* and cutlass_80_tensorop_s1688gemm_*) as zstd frames in
its large data section (.ldata), each frame a whole cubin, and loads them itself: the
driver never sees them as part of a fatbin, so a search of .nv_fatbin does not find
them, and a ModuleWatch started after they were loaded has not seen them either.  This
module finds such frames in an ELF file's sections, decompresses them with the
system's libzstd (ctypes; the `zstandard` package where libzstd is missing) and keeps
the cubins built for one GPU architecture that hold one of the wanted kernel names.

Pure: file bytes in, images out (no CUDA, no torch).  Which of the images holds the
very kernel that ran is for the caller to prove (kernels.find_in_images compares the
loaded functions' attributes and refuses a name held by several images with different
code).
"""
import ctypes as C
import ctypes.util
import mmap
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
            self.lib = lib
        except OSError:
            self.module = zstandard

    def __bool__(self):
        return self.lib is not None or self.module is not None

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
        frames = []
        for name, off, size in data_sections(m):
            if name in skip:
                continue
            sec = m[off:off + size]
            at = sec.find(ZSTD_MAGIC)
            while at >= 0:
                got = zstd.frame(sec, at)
                if got is None:
                    at = sec.find(ZSTD_MAGIC, at + 4)
                    continue
                image, n = got
                if cubin_sm(image) == sm:
                    frames.append([name, off + at, n, symbol_names(image)])
                    if holds_symbol(image, names):
                        yield name, off + at, image
                at = sec.find(ZSTD_MAGIC, at + n)
        if index is not None:
            index["frames"] = frames


def symbol_names(image):
    """A cubin's symbol names: its .strtab's strings but section names (those that begin
    with a dot); None where it has no .strtab."""
    strtab = elf_sections(image).get(".strtab")
    if strtab is None:
        return None
    return [x.decode(errors="replace") for x in strtab.split(b"\0") if x and not x.startswith(b".")]
