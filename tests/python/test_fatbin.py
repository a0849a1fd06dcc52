"""fatbin.py: fatbins found in a section, the SM versions of their cubins, an ELF's
.nv_fatbin section, the kind of a module image."""
import os
import shutil
import struct
import subprocess

import pytest
from conftest import FIXTURES

from pgcc.fatbin import FATBIN_MAGIC, fatbin_cubin_archs, fatbin_section, fatbins, image_kind, read_section


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def archs(sec, at):
    _, _, hsize, fsize = struct.unpack_from("<IHHQ", sec, at)
    return fatbin_cubin_archs(sec, at, hsize, fsize)


def test_one_fatbin_cubin_for_sm90_ptx_for_80():
    fb = fixture("scale.fatbin")
    assert struct.unpack_from("<I", fb)[0] == FATBIN_MAGIC
    assert archs(fb, 0) == {90}  # the compute_80 entry is PTX: not a cubin
    assert fatbins(fb) == [(0, True)]
    assert fatbins(fb, 90) == [(0, True)]
    assert fatbins(fb, 80) == [(0, False)]


def test_section_of_several_fatbins_with_padding_between():
    fb = fixture("scale.fatbin")
    pad = b"\0" * (-len(fb) % 8)
    sec = fb + pad + b"\0" * 8 + fb  # (an 8-byte gap: the scan steps over it)
    found = fatbins(sec, 90)
    assert [at for at, _ in found] == [0, len(fb) + len(pad) + 8]
    assert all(ok for _, ok in found)
    assert fatbins(b"\0" * 64) == []


def test_elf_section():
    where = fatbin_section(os.path.join(FIXTURES, "scale.elf"))
    assert where is not None
    sec = read_section(os.path.join(FIXTURES, "scale.elf"))
    assert len(sec) == where[1]
    assert fatbins(sec, 90) == [(0, True)]
    assert fatbin_section(os.path.join(FIXTURES, "scale.cu")) is None  # not an ELF
    assert fatbin_section(os.path.join(FIXTURES, "missing")) is None


def test_image_kind():
    assert image_kind(fixture("scale.cubin")) == "cubin"
    assert image_kind(fixture("scale.fatbin")) == "fatbin"
    assert image_kind(b"//\n.version 8.0\n") == "ptx"


NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.mark.skipif(not os.path.exists(NVCC), reason="no nvcc")
def test_nvcc_fatbin_now(tmp_path):
    """A fatbin made here, for two cubins: both SM versions are seen."""
    out = tmp_path / "two.fatbin"
    subprocess.run([NVCC, "-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                    "arch=compute_90,code=sm_90", os.path.join(FIXTURES, "scale.cu"), "-o", str(out)], check=True)
    fb = out.read_bytes()
    assert archs(fb, 0) == {80, 90}
    assert fatbins(fb, 75) == [(0, False)]


def test_elf_sections_and_same_kernel_code():
    """The cubin nvcc made of scale.cu: its kernel's code section is found; two copies of
    one image hold the same code, an image with that code changed does not."""
    from pgcc.fatbin import elf_sections, same_kernel_code
    cubin = open(os.path.join(FIXTURES, "scale.cubin"), "rb").read()
    secs = elf_sections(cubin)
    sym = next(n[len(".text."):] for n in secs if n.startswith(".text."))
    assert secs[f".text.{sym}"] and f".nv.info.{sym}" in secs
    assert same_kernel_code([cubin, bytes(cubin)], sym)
    code = secs[f".text.{sym}"]
    at = cubin.index(code)
    changed = cubin[:at] + bytes([code[0] ^ 1]) + cubin[at + 1:]
    assert not same_kernel_code([cubin, changed], sym)
    assert not same_kernel_code([cubin], "no_such_kernel")
    assert elf_sections(b"not an elf") == {}


def test_data_objects_of_a_cubin():
    """globals.cu's cubin: its __constant__ table with the values it was compiled with,
    its __device__ counter as zeros (a section with no bytes); a cubin without
    variables has none, and anything but an ELF image none either."""
    import struct as st
    from pgcc.fatbin import elf_data_objects
    objs = elf_data_objects(open(os.path.join(FIXTURES, "globals.cubin"), "rb").read())
    assert [(n, s) for n, s, _ in objs] == [("table", ".nv.constant3"), ("counter", ".nv.global")]
    assert st.unpack("<4f", objs[0][2]) == (1.0, 2.0, 3.0, 4.0)
    assert objs[1][2] == bytes(4)
    assert elf_data_objects(open(os.path.join(FIXTURES, "scale.cubin"), "rb").read()) == []
    assert elf_data_objects(b"not an elf") == []


def test_image_size_of_a_cubin_a_fatbin_and_ptx():
    """ModuleWatch hashes the image a driver call was given, by its size at an address."""
    import ctypes
    from pgcc.module_watch import image_size
    cubin = open(os.path.join(FIXTURES, "scale.cubin"), "rb").read()
    fat = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 40) + bytes(40) + b"trailing bytes of the section"
    ptx = b".version 8.0\n.target sm_90\n\0more"
    for blob, size in ((cubin, len(cubin)), (fat, 56), (ptx, ptx.index(b"\0"))):
        buf = ctypes.create_string_buffer(blob, len(blob))
        assert image_size(ctypes.addressof(buf)) == size


def test_image_at_reads_only_images_it_knows():
    """A fatbin behind nvcc's wrapper is read; an unknown structure is not (bytes read
    past one and later loaded as an image crashed the driver)."""
    import ctypes
    from pgcc.module_watch import image_at
    fat = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 8) + b"12345678" + b"past the end"
    fbuf = ctypes.create_string_buffer(fat, len(fat))
    wrapper = struct.pack("<IIQQ", 0x466243B1, 1, ctypes.addressof(fbuf), 0)
    wbuf = ctypes.create_string_buffer(wrapper, len(wrapper))
    assert image_at(ctypes.addressof(wbuf)) == fat[:24]
    ptx = ctypes.create_string_buffer(b"//\n// Generated by NVIDIA NVVM\n.version 8.0\n")
    assert image_at(ctypes.addressof(ptx)).startswith(b"//")
    junk = ctypes.create_string_buffer(bytes(range(1, 200)))
    assert image_at(ctypes.addressof(junk)) is None


def test_module_watch_knows_which_image_a_function_came_from():
    """ModuleWatch's driver-API bookkeeping, fed the callback data CUPTI gives: a module
    loaded from an image (none reported loaded during the call: the image given is
    kept), a function taken out of it; a library, a kernel, its function."""
    import ctypes as C
    from pgcc.module_watch import CBID_KERNEL_GET_FUNCTION, CBID_LIBRARY_GET_KERNEL, CBID_LIBRARY_LOAD, \
        CBID_MODULE_GET_FUNCTION, CBID_MODULE_LOAD, ModuleWatch

    w = ModuleWatch.__new__(ModuleWatch)
    w.images, w.paused, w.loaded_by, w.parent, w._during = {}, False, {}, {}, None
    keep = []

    def call(cbid, *params, site=None):
        vals = [C.c_void_p(p) for p in params]
        keep.append(vals)
        arr = (C.c_void_p * len(vals))(*[v.value for v in vals])
        keep.append(arr)
        ok = C.c_int(0)
        keep.append(ok)
        for s in ((0, 1) if site is None else (site,)):
            cd = ModuleWatch._Api(site=s, params=C.cast(arr, C.c_void_p), result=C.cast(C.pointer(ok), C.c_void_p))
            w._api(cbid, cd)

    def out_slot(value):
        slot = C.c_void_p(value)
        keep.append(slot)
        return C.addressof(slot)

    cubin = C.create_string_buffer(fixture("scale.cubin"))
    call(CBID_MODULE_LOAD[0], out_slot(0x1111), C.addressof(cubin))
    call(CBID_MODULE_GET_FUNCTION, out_slot(0x2222), 0x1111, 0)
    digest = w.image_of(0x2222)
    assert digest and w.images[digest] == fixture("scale.cubin")
    # a library whose load reported an image during the call (the cubin it really loaded)
    call(CBID_LIBRARY_LOAD, out_slot(0x3333), 0, site=0)
    w._keep(b"\x7fELF another image")
    call(CBID_LIBRARY_LOAD, out_slot(0x3333), 0, site=1)
    call(CBID_LIBRARY_GET_KERNEL, out_slot(0x4444), 0x3333, 0)
    call(CBID_KERNEL_GET_FUNCTION, out_slot(0x5555), 0x4444)
    assert w.images[w.image_of(0x5555)] == b"\x7fELF another image"
    assert w.image_of(0x9999) is None


def test_which_kernels_wait_on_their_grid_dependency():
    """griddepcontrol.wait found in a kernel's sm_90 code, and not in one without it; the
    library kernels of the committed exports (cuBLASLt's nvjet, CUTLASS SGEMMs, cuDNN's
    attention) wait in none, which is why pgcc keeps only the programmatic edges a
    capture has (docs/e2e.md, "Programmatic dependent launch")."""
    import glob
    from pgcc.fatbin import elf_sections, waits_on_grid
    gdc = fixture("gdc.cubin")
    assert waits_on_grid(gdc, "waits") is True
    assert waits_on_grid(gdc, "plain") is False
    assert waits_on_grid(gdc, "absent") is None
    root = os.path.join(os.path.dirname(__file__), "..", "corpus", "export")
    images = {}
    for path in glob.glob(os.path.join(root, "*", "kernels", "image_*.cubin")):  # (library kernels' images)
        with open(path, "rb") as f:
            images[path] = f.read()
    kernels = [(p, s[6:]) for p, image in images.items() for s in elf_sections(image) if s.startswith(".text.")]
    assert len(kernels) >= 30 and any("nvjet" in s for _, s in kernels) and any("sdpa" in s for _, s in kernels)
    assert [k for k in kernels if waits_on_grid(images[k[0]], k[1])] == []
