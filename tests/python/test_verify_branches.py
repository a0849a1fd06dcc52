"""verify_branches' pure parts: which reads are IF nodes, and the .graph with an IF node's
bodies swapped (still a program pgcc compiles, its IF now running the other body first)."""
import os
import shutil
import subprocess

import pytest

from pgcc.verify_branches import conditional_reads, swapped_graph

HERE = os.path.dirname(os.path.abspath(__file__))
BRANCH = os.path.join(HERE, "..", "corpus", "export", "branch", "branch.graph")


def test_conditional_reads_are_the_if_nodes_not_loops_or_guards():
    report = {"host_reads": [{"conditional": True, "guarded": False},
                             {"guarded": True},
                             {"conditional": True, "guarded": False, "loop": True},
                             {"conditional": True, "guarded": False, "joined": "as captured"}]}
    assert conditional_reads(report) == [0, 3]
    assert conditional_reads({}) == []


def test_swapped_graph_puts_the_other_body_first():
    with open(BRANCH) as f:
        text = f.read()
    out = swapped_graph(text, 0)
    assert "node nif0 conditional type if condition c0 bodies [else0, then0];" in out
    assert out.replace("[else0, then0]", "[then0, else0]") == text  # (nothing else changed)
    with pytest.raises(ValueError, match="0 IF nodes of read 1"):
        swapped_graph(text, 1)
    with pytest.raises(ValueError, match="0 IF nodes of read 0"):  # (an IF with one body has no other side here)
        swapped_graph(text.replace("bodies [then0, else0]", "bodies [then0]"), 0)


def test_the_swapped_graph_compiles_with_the_other_body_first(tmp_path, pgcc_bin):
    """pgcc takes the swapped file, and its C lays out the IF's first body -- the one a
    condition of 1 (the value read at export) runs -- from the other path's nodes (nf4..)."""
    src = os.path.dirname(BRANCH)
    for d in ("orig", "swapped"):
        shutil.copytree(src, tmp_path / d)
    graph = tmp_path / "swapped" / "branch.graph"
    graph.write_text(swapped_graph(graph.read_text(), 0))
    first = {}
    for d in ("orig", "swapped"):
        r = subprocess.run([pgcc_bin, str(tmp_path / d / "branch.graph"), "-o", str(tmp_path / d / "branch.c")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        c = (tmp_path / d / "branch.c").read_text()
        first[d] = "then" if c.index("/* node n4:") < c.index("/* node nf4:") else "else"
    assert first == {"orig": "then", "swapped": "else"}
