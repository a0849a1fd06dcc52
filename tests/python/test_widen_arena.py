"""bench/widen_arena.py on graphs of the tree: a chain widened with no memory traded
(q, k and v apart) and one whose widening renames an intermediate and runs its two
values side by side (twice the serial plan's arena); a graph that is no chain is not
widened."""
import os

from conftest import ROOT

from bench import widen_arena


def test_widened_against_the_serial_plan(pgcc_bin):
    qkv = widen_arena.row(os.path.join(ROOT, "tests", "golden", "qkv.graph"), pgcc_bin)
    assert qkv["widen_kept"] and qkv["width"] == 3
    assert qkv["arena_default"] == qkv["arena_serial"] and qkv["ratio"] == 1.0
    assert qkv["path_us"] < qkv["serial_us"]
    reuse = widen_arena.row(os.path.join(ROOT, "tests", "gpu", "codegen", "reuse.graph"), pgcc_bin)
    assert reuse["widen_kept"] and reuse["arena_default"] == 2 * reuse["arena_serial"] and reuse["ratio"] == 2.0
    assert reuse["widen_arena"] == reuse["arena_default"] and reuse["widen_serial_arena"] == reuse["arena_serial"]
    chain = widen_arena.row(os.path.join(ROOT, "tests", "golden", "qkv_widened.graph"), pgcc_bin)
    assert not chain["widen_kept"] and chain["why_not"] and chain["ratio"] == 1.0


def test_main_tabulates_and_fails_on_a_bad_graph(pgcc_bin, tmp_path, capsys):
    bad = tmp_path / "bad.graph"
    bad.write_text("pgcc 1;\nnode;\n")
    assert widen_arena.main(["--pgcc", pgcc_bin, os.path.join(ROOT, "tests", "golden", "qkv.graph"), str(bad)]) == 1
    out = capsys.readouterr()
    assert "| tests/golden/qkv.graph | 5 | yes | 3 |" in out.out.replace(os.path.relpath(ROOT) + "/", "")
    assert "bad.graph" in out.err
