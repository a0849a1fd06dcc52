"""bench/widen_timing.py, the parts that need no GPU: --help without torch, the floor's
copy of an export (its access sets taken off, nothing else changed), the table."""
import os
import subprocess
import sys

from conftest import ROOT

from bench import widen_timing


def test_help_needs_no_torch():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "widen_timing.py"), "--help"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), ROOT])))
    assert r.returncode == 0, r.stderr
    assert "reduce-overhead" in r.stdout and "--rounds" in r.stdout


def test_the_floor_is_the_export_without_access_sets(tmp_path):
    exp = tmp_path / "m"
    (exp / "kernels").mkdir(parents=True)
    (exp / "build").mkdir()
    (exp / "kernels" / "k.cubin").write_bytes(b"\x7fELF")
    (exp / "build" / "m.so").write_bytes(b"")
    graph = ("kernel k symbol \"k\" module m {\n  param 0 8 ptr access r;\n  param 8 8 ptr access rw;\n"
             "  param 16 8 ptr access w;\n  param 24 16 bytes ptrs [0, 8] access r;\n  param 40 8 ptr;\n"
             "  param 48 24 bytes ptrs [0, 8, 16] access [r, rw, r];\n}\n")
    (exp / "m.graph").write_text(graph)
    n = widen_timing.floor_copy(str(exp), str(tmp_path / "m_floor"), "m")
    assert n == 5
    got = (tmp_path / "m_floor" / "m.graph").read_text()
    assert "access" not in got
    assert got == graph.replace(" access r;", ";").replace(" access rw;", ";").replace(" access w;", ";").replace(
        " access [r, rw, r];", ";")
    assert (tmp_path / "m_floor" / "kernels" / "k.cubin").exists() and not (tmp_path / "m_floor" / "build").exists()
    assert "access r;" in (exp / "m.graph").read_text()  # the export itself as it was


def test_the_table():
    way = {"gpu_us": 10.0, "spread": 0.01, "host_us": 5.0}
    rec = {"model": "moe", "ways": {"reduce-overhead": dict(way, gpu_us=12.0), "pgcc floor": way,
                                    "pgcc widened": dict(way, gpu_us=7.5)},
           "widened_over_floor": 0.75, "widened_over_ro": 0.625, "pgcc floor": {"init_ms": 3.0, "arena_bytes": 4096},
           "pgcc widened": {"init_ms": 3.5, "arena_bytes": 8192}, "access_params": 12,
           "report_widened": {"widen": {"ran": True, "kept": True, "own_plan": True, "width": 8, "predicted_us": 7.0,
                                        "serial_us": 10.0}},
           "max_err_widened_vs_floor": 0.0, "bit_identical": True, "max_rel_err_widened_vs_compiled": 1e-6}
    t = widen_timing.table([rec, {"model": "mlp", "failed": "in the export"}]).splitlines()
    assert t[2].startswith("| moe | 12.0 | 10.0 | 7.5 | 0.750x | 0.625x |")
    assert "4 KiB, 8 KiB (own plan) | 8, 7.0 / 10.0 | 12 | 0 (same bits) | 1.0e-06 | — |" in t[2]
    assert t[3].startswith("| mlp | FAIL: in the export |") and t[3].count("|") == t[0].count("|")
    rec["ways"]["pgcc prioritized"] = dict(way, gpu_us=7.2)
    rec.update(prioritized_over_widened=0.96, prioritized_bit_identical=False,
               report_prioritized={"priority": {"critical": 5, "kernels": 9}})
    assert widen_timing.table([rec]).splitlines()[2].endswith("| 7.2, 0.960x (5 of 9, DIFFERENT bits) |")
