"""branches.py: two paths of a program that branched on a value read back, joined into
one program with an IF/ELSE node; pgcc reads the result and generates its C.  And the
paths are refused where they differ before the read."""
import struct
import subprocess
from types import SimpleNamespace

import pytest
from conftest import scale_module

from pgcc.branches import branch_to_export, join
from pgcc.errors import ExportError
from pgcc.graphfile import graph_text, node_buffers
from pgcc.model import Analysis, Kernel, Node
from pgcc.relocate import Buffers
from pgcc.weights import write_safetensors


def path(tmp_path, then, offset=0):
    """One path's analysis: kernel n0 (in0 -> t0), the read of t0's first byte (n1 into
    r0, sync n2, guarded), then kernel n3 (t0 -> out0) with scale `then`."""
    module = scale_module(tmp_path)
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", dtype="f32", shape=[256], ranges={0: 0x10000})
    t = bufs.add(name="t0", size=2048, role="intermediate", ranges={0: 0x40000})
    y = bufs.add(name="out0", size=1024, role="output", dtype="f32", shape=[256], ranges={0: 0x20000})
    r = bufs.add(name="r0", size=1, role="host", dtype="bool", shape=[])
    k = Kernel(symbol="scale", layout=[(0, 8), (8, 4), (12, 4)], ptr_words={(0, 0, "abs64")}, module=module)

    def launch(i, buf, off, scale):
        return Node(kind="kernel", func=1, grid=[1, 1, 1], block=[256, 1, 1], smem=0, index=i,
                    args=[("ptr", buf, off), ("value", struct.pack("<f", scale)), ("value", struct.pack("<I", 256))])
    nodes = [launch(0, t, offset, 1.0),
             Node(kind="read", src=(t, 0), dst=(r, 0), width=1, index=1, read=0, where="m.py:3",
                  op="__bool__"),
             Node(kind="sync", index=2, read=0, where="m.py:3", guard=b"\x01"),
             launch(3, y, 0, then)]
    return Analysis(capA=SimpleNamespace(reads=[{"where": "m.py:3", "dtype": "bool", "value": b"\x01"}]),
                    bufs=bufs, nodes=nodes,
                    edges=[(0, 1), (1, 2), (2, 3)], kernels={1: k}, scalars=[],
                    report={"host_reads": [{"guarded": True}]}, outputs=[])


def test_two_paths_join_as_an_if_else_node(tmp_path, pgcc_bin):
    a, b = path(tmp_path, 2.0), path(tmp_path, -3.0)
    b.capA.reads[0]["forced"] = True
    join(a, b, 0, str(tmp_path))
    assert [n.index for n in a.nodes] == [0, "c0", "if0"]
    assert (0, "c0") in a.edges and ("c0", "if0") in a.edges
    branch = a.nodes[2]
    (then_name, then_nodes, _), (else_name, else_nodes, _) = branch.bodies
    assert [n.index for n in then_nodes] == [3] and [n.index for n in else_nodes] == ["f3"]
    # the other path's nodes use this path's buffers
    assert else_nodes[0].args[0][1] is next(x for x in a.bufs.list if x.name == "out0")
    assert a.report["host_reads"][0] == {"guarded": False, "conditional": True, "joined": "as captured"}
    used = {id(x) for n in a.nodes for x in node_buffers(n)}
    text = graph_text("j", a.kernels, a.bufs, used, a.nodes, a.edges, "sm_90", conditions=a.conditions)
    assert "condition c0 default 0;" in text
    assert "  node nif0 conditional type if condition c0 bodies [then0, else0];" in text
    assert "graph else0 {\n  node nf3 kernel scale" in text
    assert "node nc0 kernel pgcc_cond_equal grid [1, 1, 1] block [1, 1, 1] smem 0 args [c0, t0, 1, 1];" in text
    assert "r0" not in text  # the read's copy, sync and guard are gone: the device decides
    (tmp_path / "j.graph").write_text(text)
    write_safetensors(tmp_path / "j.safetensors", [])
    r = subprocess.run([pgcc_bin, str(tmp_path / "j.graph"), "-o", str(tmp_path / "j.c")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    c = (tmp_path / "j.c").read_text()
    assert "PGRT_NODE_CONDITIONAL" in c and "pgcc_cond_equal" in c
    r = subprocess.run([pgcc_bin, "--report", str(tmp_path / "j.graph")], capture_output=True, text=True)
    assert r.returncode == 0 and "eager" not in r.stdout.split("reasons")[1].split("\n")[1], r.stdout


def test_the_last_guarded_read_is_the_one_to_export_the_other_path_of(tmp_path):
    warned = []
    prog = SimpleNamespace(warn=lambda *w: warned.append(w), log=print)
    a = path(tmp_path, 2.0)
    assert branch_to_export(a, str(tmp_path), prog) == (0, "m.py:3") and warned == []
    a.nodes[2].guard = None  # (a value a kernel took: nothing to branch on)
    assert branch_to_export(a, str(tmp_path), prog) is None and warned == []
    a = path(tmp_path, 2.0)
    a.capA.reads[0].update(dtype="f32", value=b"\x01\0\0\0")
    assert branch_to_export(a, str(tmp_path), prog) is None and warned[0][0] == "the read at m.py:3 stays guarded"


def test_paths_that_differ_before_the_read_are_not_joined(tmp_path):
    a, b = path(tmp_path, 2.0), path(tmp_path, -3.0, offset=1024)
    b.capA.reads[0]["forced"] = True
    with pytest.raises(ExportError, match="differ at node 0"):
        join(a, b, 0, str(tmp_path))


def test_a_join_that_fails_leaves_both_paths_as_they_were(tmp_path):
    """join: paths that do not join change neither analysis' buffers, so that the other
    path may be joined to this path captured once more (export.join_other_path)."""
    a, b = path(tmp_path, 2.0), path(tmp_path, -3.0, offset=1024)
    b.capA.reads[0]["forced"] = True
    b.bufs.add(name="t9", size=64, role="intermediate", ranges={0: 0x50000})
    names_a, names_b = [x.name for x in a.bufs.list], [x.name for x in b.bufs.list]
    with pytest.raises(ExportError, match="differ at node 0"):
        join(a, b, 0, str(tmp_path))
    assert [x.name for x in a.bufs.list] == names_a and [x.name for x in b.bufs.list] == names_b
    again = path(tmp_path, 2.0, offset=1024)  # (this path captured again, laid out as the other)
    join(again, b, 0, str(tmp_path))
    assert [n.kind for n in again.nodes] == ["kernel", "kernel", "if"]
    assert "f_t9" in [x.name for x in again.bufs.list] and "f_t0" not in [x.name for x in again.bufs.list]


def test_a_number_that_read_other_than_zero_is_not_joined(tmp_path):
    """A float that read 0.73 may have met `if m > 0.5`; comparing with 0.73 would send
    0.9 to the other side.  A zero flag (GradScaler's found_inf) is joined."""
    from pgcc.branches import two_sided
    a, b = path(tmp_path, 2.0), path(tmp_path, -3.0)
    b.capA.reads[0]["forced"] = True
    a.capA.reads[0].update(dtype="f32", value=struct.pack("<f", 0.73))
    with pytest.raises(ExportError, match="neither a bool nor zero"):
        join(a, b, 0, str(tmp_path))
    assert two_sided({"dtype": "f32", "value": bytes(4)}) is None
    assert two_sided({"dtype": "bool", "value": b"\x00"}) is None
    assert two_sided({"dtype": "f32", "value": struct.pack("<f", -0.0)}) is not None  # (its bytes are not zero)


def test_a_path_that_was_not_flipped_is_refused(tmp_path):
    a, b = path(tmp_path, 2.0), path(tmp_path, -3.0)
    with pytest.raises(ExportError, match="did not flip"):
        join(a, b, 0, str(tmp_path))


def loop(tmp_path, passes=4, moved=False):
    """A loop's analysis: prologue kernel p (stretch 0), then `passes` stretches of one
    kernel each, every one followed by a read of t0's first byte (guarded: 00 = go on,
    the last 01), then the epilogue kernel e.  moved: the fourth pass's kernel writes
    elsewhere (its state not in the same memory)."""
    base = path(tmp_path, 1.0)  # (for the module, buffers and the kernel)
    bufs, k = base.bufs, base.kernels[1]
    t, y, r = (next(b for b in bufs.list if b.name == n) for n in ("t0", "out0", "r0"))

    def launch(i, buf, off):
        return Node(kind="kernel", func=1, grid=[1, 1, 1], block=[256, 1, 1], smem=0, index=i,
                    args=[("ptr", buf, off), ("value", struct.pack("<f", 1.0)), ("value", struct.pack("<I", 256))])
    nodes, edges, segment_of, reads, i, last = [], [], [], [], 0, None
    for s in range(passes + 1):
        nodes.append(launch(i, t, 1024 if moved and s == 3 else 0) if s < passes else launch(i, y, 0))
        segment_of.append(s)
        if last is not None:
            edges.append((last, i))
        last = i
        i += 1
        if s < passes:
            nodes += [Node(kind="read", src=(t, 0), dst=(r, 0), width=1, index=i, read=s,
                           where="gen.py:9", op="__bool__"),
                      Node(kind="sync", index=i + 1, read=s, where="gen.py:9",
                           guard=b"\x01" if s == passes - 1 else b"\x00")]
            segment_of += [None, None]
            edges += [(last, i), (i, i + 1)]
            reads.append({"where": "gen.py:9", "dtype": "bool", "value": b"\x01" if s == passes - 1 else b"\x00"})
            last = i + 1
            i += 2
    cap = SimpleNamespace(reads=reads, nodes=[{}] * len(nodes), segment_of=segment_of)
    return Analysis(capA=cap, bufs=bufs, nodes=nodes, edges=edges, kernels={1: k}, scalars=[],
                    report={"host_reads": [{"guarded": True} for _ in reads]}, outputs=[])


def test_a_loop_of_reads_becomes_a_while_node(tmp_path, pgcc_bin):
    from pgcc.branches import join_loop
    a = loop(tmp_path)
    assert join_loop(a, str(tmp_path)) == 3  # passes after the first
    assert [n.index for n in a.nodes] == [0, "c0", "loop0", 12]
    (body_name, body, body_edges), = a.nodes[2].bodies
    assert [n.index for n in body] == ["w3", "cb"] and body_edges == [("w3", "cb")]
    assert (0, "c0") in a.edges and ("c0", "loop0") in a.edges and ("loop0", 12) in a.edges
    assert all(r["loop"] and not r["guarded"] for r in a.report["host_reads"])
    used = {id(x) for n in a.nodes for x in node_buffers(n)}
    text = graph_text("l", a.kernels, a.bufs, used, a.nodes, a.edges, "sm_90", conditions=a.conditions)
    assert "  node nloop0 conditional type while condition c0 bodies [loop0_body];" in text
    assert "graph loop0_body {\n  node nw3 kernel scale" in text and "node ncb kernel pgcc_cond_equal" in text
    (tmp_path / "l.graph").write_text(text)
    write_safetensors(tmp_path / "l.safetensors", [])
    r = subprocess.run([pgcc_bin, str(tmp_path / "l.graph"), "-o", str(tmp_path / "l.c")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


def test_passes_in_other_memory_are_no_loop(tmp_path):
    from pgcc.branches import join_loop
    with pytest.raises(ExportError, match="pass 4 of the loop differs"):
        join_loop(loop(tmp_path, moved=True), str(tmp_path))


def moved(tmp_path, shift=1024):
    """Paths a and b where b's pool laid t0 out `shift` bytes further on (the same tensor,
    elsewhere): b's kernel n0 writes, and its read reads, t0 + shift.  Each path's kernel
    n0 also writes its t1 (at the same place in both), and after the read each n3 reads
    t0 + 8 (b's: + shift) and t1 + 16."""
    a, b = path(tmp_path, 2.0), path(tmp_path, -3.0)
    b.capA.reads[0]["forced"] = True
    t0b = next(x for x in b.bufs.list if x.name == "t0")
    b.nodes[0].args[0] = ("ptr", t0b, shift)
    b.nodes[1].src = (t0b, shift)
    for x in (a, b):
        x.bufs.add(name="t1", size=512, role="intermediate", ranges={0: 0x80000})
    t1a = a.bufs.list[-1]
    a.nodes[0].args.append(("ptr", t1a, 0))  # (each kernel 0 writes its t1 too: its bytes live past the read)
    b.nodes[0].args.append(("ptr", b.bufs.list[-1], 0))
    b.nodes[3].args.append(("ptr", t0b, shift + 8))
    b.nodes[3].args.append(("ptr", b.bufs.list[-1], 16))
    a.nodes[3].args.append(("ptr", next(x for x in a.bufs.list if x.name == "t0"), 8))
    a.nodes[3].args.append(("ptr", t1a, 16))
    return a, b


def test_paths_whose_memory_before_the_read_lies_elsewhere_join_moved(tmp_path):
    a, b = moved(tmp_path)
    assert join(a, b, 0, str(tmp_path)) == "by one shift of whole buffers"
    (_, _, _), (_, else_nodes, _) = a.nodes[2].bodies
    t0a = next(x for x in a.bufs.list if x.name == "t0")
    t1a = next(x for x in a.bufs.list if x.name == "t1")
    args = else_nodes[0].args
    assert args[3][1] is t0a and args[3][2] == 8  # (b's t0 + 1032 is a's t0 + 8)
    assert args[4][1] is t1a and args[4][2] == 16  # (b's t1, used before the read: a's, not moved)
    assert t0a.size == 2048 + 0 and not any(x.name.startswith("f_t0") for x in a.bufs.list)


def test_an_intermediate_the_other_path_uses_only_after_the_read_gets_its_own_buffer(tmp_path, pgcc_bin):
    a, b = moved(tmp_path)
    t2b = b.bufs.add(name="t2", size=256, role="intermediate", ranges={0: 0x90000})
    a.bufs.add(name="t2", size=256, role="intermediate", ranges={0: 0x90000})
    b.nodes[3].args.append(("ptr", t2b, 0))
    a.nodes[3].args.append(("ptr", a.bufs.list[-1], 0))
    join(a, b, 0, str(tmp_path))
    (_, _, _), (_, else_nodes, _) = a.nodes[2].bodies
    mine = else_nodes[0].args[-1][1]
    assert mine.name == "f_t2" and mine is not a.bufs.list[-2] and mine in a.bufs.list
    used = {id(x) for n in a.nodes for x in node_buffers(n)}
    (tmp_path / "j.graph").write_text(graph_text("j", a.kernels, a.bufs, used, a.nodes, a.edges, "sm_90",
                                                 conditions=a.conditions))
    write_safetensors(tmp_path / "j.safetensors", [])
    r = subprocess.run([pgcc_bin, str(tmp_path / "j.graph"), "-o", str(tmp_path / "j.c")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert "f_t2" in (tmp_path / "j.c").read_text()


def crossed(tmp_path):
    """Paths a and b whose allocations before the read lie crosswise: kernel n0 writes P
    and Q, the read reads Q, n3 reads P after it; a put P at t0 + 0 and Q at t0 + 512, b
    put P at t0 + 1024 and Q at t0 + 0 -- no one shift moves b's t0 onto a's.  Their
    captures' traces say so (t0 at 0x40000 in both)."""
    a, b = path(tmp_path, 2.0), path(tmp_path, -3.0)
    b.capA.reads[0]["forced"] = True
    for x, (p, q) in ((a, (0, 512)), (b, (1024, 0))):
        t0 = next(y for y in x.bufs.list if y.name == "t0")
        x.nodes[0].args[0] = ("ptr", t0, p)
        x.nodes[0].args.append(("ptr", t0, q))
        x.nodes[1].src = (t0, q)
        x.nodes[3].args.append(("ptr", t0, p))
        x.capA.trace = [("alloc", 0x40000 + p, 512), ("alloc", 0x40000 + q, 512)]
        x.capA.read_clock = [(2, 0)]
    return a, b


def test_paths_laid_out_crosswise_join_by_their_allocator_traces(tmp_path, monkeypatch):
    """join: paths no shift joins are joined by pairing their captures' allocations through
    their traces: b's P (t0 + 1024) is a's (t0 + 0); PGCC_JOIN_BY_TRACE=0 turns it off."""
    a, b = crossed(tmp_path)
    monkeypatch.setenv("PGCC_JOIN_BY_TRACE", "0")
    with pytest.raises(ExportError, match="nor are they the same moved"):
        join(*crossed(tmp_path), 0, str(tmp_path))
    monkeypatch.delenv("PGCC_JOIN_BY_TRACE")
    assert join(a, b, 0, str(tmp_path)) == "allocation by allocation through the captures' allocator traces"
    assert a.report["host_reads"][0]["joined"].startswith("allocation by allocation")
    (_, _, _), (_, else_nodes, _) = a.nodes[2].bodies
    t0a = next(x for x in a.bufs.list if x.name == "t0")
    assert else_nodes[0].args[-1][1] is t0a and else_nodes[0].args[-1][2] == 0


def test_paths_whose_traces_do_not_pair_their_places_are_not_joined(tmp_path):
    a, b = crossed(tmp_path)
    b.capA.trace = [("alloc", 0x40000, 512), ("alloc", 0x40400, 512)]  # (the other order: P' would be Q)
    names = [x.name for x in a.bufs.list]
    with pytest.raises(ExportError, match="nor paired by their allocator traces .*is no allocation the traces pair"):
        join(a, b, 0, str(tmp_path))
    assert [x.name for x in a.bufs.list] == names
    a, b = crossed(tmp_path)
    del b.capA.read_clock
    with pytest.raises(ExportError, match="no allocator traces to pair"):
        join(a, b, 0, str(tmp_path))


def test_paths_moved_by_no_one_shift_are_not_joined(tmp_path):
    a, b = moved(tmp_path)
    b.nodes[1].src = (b.nodes[1].src[0], 512)  # (the read: another shift of b's t0 than kernel 0's)
    with pytest.raises(ExportError, match=r"differ at node 0.*node 1: the other path's t0 \+ 512 is this path's t0 "
                                          r"\+ 0, where an earlier node had it t0 \+ -512"):
        join(a, b, 0, str(tmp_path))


def test_two_moved_buffers_that_would_overlap_are_not_joined(tmp_path):
    a, b = moved(tmp_path)
    t0a = next(x for x in a.bufs.list if x.name == "t0")
    a.nodes[0].args[-1] = ("ptr", t0a, 512)  # (a keeps its "t1" tensor in t0, 512 bytes on: b's t1 lands
    a.nodes[3].args[-1] = ("ptr", t0a, 528)  # there, over b's t0 moved to 0..1024 of it)
    with pytest.raises(ExportError, match="differ at node 0.*two of the other path's buffers would overlap"):
        join(a, b, 0, str(tmp_path))
