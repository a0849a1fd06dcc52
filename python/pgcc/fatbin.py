"""Fatbins, read without the driver: an ELF file's .nv_fatbin section, the fatbins in
it, and which SM versions each holds a cubin for; what kind a module image is.

Pure: bytes and files in, numbers out (no CUDA, no torch).  The layout assumed is the
one CUDA 11-13 write: a fatbin is a 16-byte header (magic 0xBA55ED50 as u32, version
u16, header size u16, size of its entries u64), then entries, each starting with its
kind (u16: 1 PTX, 2 a cubin), header size (u32 at +4), payload size (u64 at +8) and SM
version (u32 at +28); fatbins in a section start 8-byte aligned.
"""
import struct

__all__ = ["elf_data_objects", "elf_sections", "fatbin_cubin_archs", "FATBIN_ELF", "FATBIN_MAGIC", "fatbin_section",
           "fatbins", "GRIDDEPCONTROL_WAIT", "image_kind", "read_section", "same_kernel_code", "waits_on_grid"]

FATBIN_MAGIC = 0xBA55ED50
FATBIN_ELF = 2  # an entry's kind: 1 PTX, 2 a cubin (ELF)


def fatbin_section(path):
    """(offset, size) of the ELF file's .nv_fatbin section, or None."""
    try:
        with open(path, "rb") as f:
            eh = f.read(64)
            if eh[:4] != b"\x7fELF" or eh[4] != 2:
                return None
            shoff, = struct.unpack_from("<Q", eh, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", eh, 0x3A)
            f.seek(shoff)
            sh = f.read(shentsize * shnum)
            so, ss = struct.unpack_from("<QQ", sh, shstrndx * shentsize + 0x18)
            f.seek(so)
            names = f.read(ss)
            for i in range(shnum):
                nm, = struct.unpack_from("<I", sh, i * shentsize)
                off, size = struct.unpack_from("<QQ", sh, i * shentsize + 0x18)
                if names[nm:names.index(b"\0", nm)] == b".nv_fatbin":
                    return off, size
    except (OSError, struct.error, ValueError):
        return None
    return None


def read_section(path):
    """The bytes of the file's .nv_fatbin section, or None."""
    where = fatbin_section(path)
    if where is None:
        return None
    off, size = where
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(size)


def fatbin_cubin_archs(sec, at, hsize, fsize):
    """The SM versions (90 for sm_90) of the cubins in the fatbin at sec[at:].  Each entry
    starts with its kind (u16), header size (u32 at +4), payload size (u64 at +8) and SM
    version (u32 at +28)."""
    archs, e, end = set(), at + hsize, min(at + hsize + fsize, len(sec))
    while e + 32 <= end:
        kind, _, ehsize, psize = struct.unpack_from("<HHIQ", sec, e)
        sm, = struct.unpack_from("<I", sec, e + 28)
        if ehsize < 32:
            break
        if kind == FATBIN_ELF:
            archs.add(sm)
        e += ehsize + psize
    return archs


def fatbins(sec, sm=None):
    """The fatbins in a .nv_fatbin section: [(offset, wanted)], wanted saying whether it
    lists a cubin for SM version sm (always True for sm None)."""
    blobs, at = [], 0
    while at + 16 <= len(sec):
        magic, _, hsize, fsize = struct.unpack_from("<IHHQ", sec, at)
        if magic != FATBIN_MAGIC:
            at += 8
            continue
        blobs.append((at, sm is None or sm in fatbin_cubin_archs(sec, at, hsize, fsize)))
        at += (hsize + fsize + 7) & ~7
    return blobs


def image_kind(image):
    """What a module image is: "cubin" (ELF), "fatbin" or "ptx"."""
    if image[:4] == b"\x7fELF":
        return "cubin"
    if image[:4] == struct.pack("<I", FATBIN_MAGIC):
        return "fatbin"
    return "ptx"


def elf_sections(image):
    """A 64-bit little-endian ELF image's sections: {name: bytes}; {} for anything else."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        return {}
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    if shoff + shnum * shentsize > len(image) or shstrndx >= shnum:
        return {}
    heads = [struct.unpack_from("<IIQQQQ", image, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx]
    strtab = image[names[4]:names[4] + names[5]]
    out = {}
    for name, kind, _, _, off, size in heads:
        end = strtab.find(b"\0", name)
        data = b"" if kind == 8 else image[off:off + size]  # SHT_NOBITS holds no bytes
        out[strtab[name:end].decode(errors="replace")] = data
    return out


def elf_data_objects(image):
    """A cubin's data objects -- its __constant__ and __device__ variables, the symbols of
    type OBJECT with a size in a section -- as [(name, section name, initial bytes)]
    (zeros for a section that holds no bytes, .nv.global).  What a module loaded from the
    image starts with; a library may write other values into them after loading it.
    [] for anything but a 64-bit little-endian ELF image."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    if shoff + shnum * shentsize > len(image) or shstrndx >= shnum:
        return []
    # (name, type, offset, size, link) of each section header
    heads = [struct.unpack_from("<II16xQQI", image, shoff + i * shentsize) for i in range(shnum)]

    def cstr(off, size, at):
        tab = image[off:off + size]
        return tab[at:tab.find(b"\0", at)].decode(errors="replace")
    names = heads[shstrndx]
    out = []
    for _, kind, off, size, link in heads:
        if kind != 2 or link >= shnum:  # SHT_SYMTAB, its names in section `link`
            continue
        strtab = heads[link]
        for k in range(size // 24):
            name, info, _, shndx, value, sz = struct.unpack_from("<IBBHQQ", image, off + 24 * k)
            if info & 0xF != 1 or not sz or not 0 < shndx < shnum:  # STT_OBJECT, in a section
                continue
            sname, skind, soff, ssize, _ = heads[shndx]
            data = bytes(sz) if skind == 8 else image[soff + value:soff + value + sz]  # SHT_NOBITS: zeros
            out.append((cstr(strtab[2], strtab[3], name), cstr(names[2], names[3], sname), data))
    return out


def same_kernel_code(images, symbol):
    """Whether every image holds the very same code for kernel `symbol`: identical machine
    code (.text.SYM), constant bank (.nv.constant0.SYM) and attributes (.nv.info.SYM),
    and no relocations in it (code that refers to other symbols of its module could
    differ through them).  Then any of them will do."""
    keys = (f".text.{symbol}", f".nv.constant0.{symbol}", f".nv.info.{symbol}")
    seen = None
    for image in images:
        secs = elf_sections(image)
        if keys[0] not in secs or f".rel.text.{symbol}" in secs or f".rela.text.{symbol}" in secs:
            return False
        mine = tuple(secs.get(k) for k in keys)
        if seen is not None and mine != seen:
            return False
        seen = mine
    return seen is not None


GRIDDEPCONTROL_WAIT = 0x82E  # the opcode (low 12 bits of a 128-bit instruction) of griddepcontrol.wait, sm_90


def waits_on_grid(image, symbol):
    """Whether kernel `symbol` of a cubin for sm_90 waits on its grid dependency
    (griddepcontrol.wait, cudaGridDependencySynchronize): only such a kernel may be
    the later end of a programmatic edge.  None where the image holds no code for it.
    (The opcode was read from a cubin nvcc made of the PTX instruction: tests/python/
    fixtures/gdc.cu.)"""
    code = elf_sections(image).get(f".text.{symbol}")
    if code is None:
        return None
    return any(struct.unpack_from("<Q", code, i)[0] & 0xFFF == GRIDDEPCONTROL_WAIT
               for i in range(0, len(code) - 15, 16))
