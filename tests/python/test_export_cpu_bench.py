"""bench/export_cpu.py, the parts that decide its "same result" column: the synthetic
step relocates to the same arguments with the searches as scans and by bisection (and
the comparison sees a difference where there is one), and the generated C's modules
turned back into lists of numbers hold the same bytes."""
import os
import re
import subprocess

from conftest import ROOT

from bench import export_cpu


def test_scans_and_bisection_relocate_the_same_and_a_difference_shows():
    step = export_cpu.synthetic_step(nodes=40, weights=120)
    now, before = export_cpu.relocate_once(step, False), export_cpu.relocate_once(step, True)
    assert now == before and not now[1]  # (no problems)
    assert any(kind == "ptr" for args, _ in now[0] for kind, _, _ in args)
    bufs, blocks, regions, allocs, progs = step
    layout, blobs = progs[0]
    moved = [blobs[0], blobs[1], bytes(8) + blobs[2][8:]]  # capture C's first word points nowhere now
    other = export_cpu.relocate_once((bufs, blocks, regions, allocs, [(layout, moved)] + progs[1:]), False)
    assert other != now


def test_numbers_hold_the_literals_bytes(pgcc_bin, tmp_path):
    c = tmp_path / "m.c"
    subprocess.run([pgcc_bin, os.path.join(ROOT, "tests", "codegen", "module_bytes.graph"), "-o", str(c)],
                   check=True)
    text = c.read_text()
    numbers = export_cpu.as_numbers(text)
    got = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2}),", numbers.split("module_bytes_module_0[")[1]
                                                 .split("};")[0]))
    with open(os.path.join(ROOT, "tests", "modules", "escapes.cubin"), "rb") as f:
        assert got == f.read()
    assert '"' not in numbers.split("module_bytes_module_0[")[1].split("};")[0]
