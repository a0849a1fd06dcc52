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
