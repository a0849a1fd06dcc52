"""loader.py's ctypes mirrors of libpgrt's structs (pgrt.h) against the C compiler's
layout: every field at the same offset, every struct of the same size (needs cc and the
CUDA headers, as libpgrt does)."""
import ctypes
import os
import subprocess

import pytest

from conftest import ROOT

from pgcc import loader
from pgcc.toolchain import cc, cuda_home

MIRRORS = {loader.PgrtField: "pgrt_field", loader.PgrtDim: "pgrt_dim", loader.PgrtComm: "pgrt_comm",
           loader.PgrtProgramInfo: "pgrt_program_info", loader.PgrtRunStats: "pgrt_run_stats",
           loader.PgrtInitStats: "pgrt_init_stats"}


def test_the_mirrors_lay_out_as_pgrt_h(tmp_path):
    if not os.path.isfile(os.path.join(cuda_home(), "include", "cuda.h")):
        pytest.skip("no CUDA headers: libpgrt's structs cannot be compiled here")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "pgrt.h"', "int main(void) {"]
    for py, c in MIRRORS.items():
        lines.append(f'  printf("{c} size %zu\\n", sizeof({c}));')
        for f, _ in py._fields_:
            lines.append(f'  printf("{c} {f} %zu\\n", offsetof({c}, {f}));')
    lines += ["  return 0;", "}"]
    (tmp_path / "layout.c").write_text("\n".join(lines) + "\n")
    subprocess.run([cc(), "-std=c11", "-I", os.path.join(ROOT, "runtime"), "-I", os.path.join(cuda_home(), "include"),
                    "-o", str(tmp_path / "layout"), str(tmp_path / "layout.c")], check=True)
    got = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout.split("\n")
    want = []
    for py, c in MIRRORS.items():
        want.append(f"{c} size {ctypes.sizeof(py)}")
        want += [f"{c} {f} {getattr(py, f).offset}" for f, _ in py._fields_]
    assert got[:-1] == want

