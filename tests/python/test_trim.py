"""slot_layout.place_intermediates: a capture region split into the allocations its nodes
use (slots.py), or else cut after the last allocation a node points into; what no node
points into is not the program's (no GPU needed)."""
import json
from dataclasses import replace
from types import SimpleNamespace

from pgcc.graphfile import node_refs
from pgcc.model import Analysis, Buffer, Kernel, Node, WholeLayout

from pgcc import slot_layout

BASE = 0x7F0000000000


def buffers():
    t0 = Buffer(name="t0", size=8704 + (1 << 20), role="intermediate", ranges={0: BASE, 1: BASE + (1 << 32)})
    t1 = Buffer(name="t1", size=4096, role="intermediate", ranges={0: BASE + (4 << 20)})
    ws = Buffer(name="t2", size=1 << 20, role="weight", static=True, ranges={0: BASE + 8704})
    w = Buffer(name="w_a", size=256, role="weight", ranges={0: 0x1000})
    return t0, t1, ws, w


ALLOCS = [(BASE, 8192), (BASE + 8192, 512), (BASE + 8704, 1 << 20), (BASE + (4 << 20), 4096)]


class Bufs:
    def __init__(self, items):
        self.list = list(items)


def capture(allocs, nodes=3, edges=None):
    """Capture A as place_intermediates reads it: allocations made in order, none freed;
    nodes 0..nodes-1 a chain unless edges are given."""
    return SimpleNamespace(allocs=allocs, trace=None if allocs is None else [("alloc", a, s) for a, s in allocs],
                           nodes=[None] * nodes, edges=[(i, i + 1) for i in range(nodes - 1)] if edges is None else edges)


def trim(bufs, nodes, allocs, log):
    nodes, report = slot_layout.place_intermediates(bufs, nodes, capture(allocs), log, split=False)
    return report["cut"]


def test_regions_are_cut_after_what_the_nodes_point_into():
    t0, t1, ws, w = buffers()
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0), ("ptr", w, 0), ("bytes", b"\0" * 16, [(8, ws, 0, "abs64")])]),
             Node(kind="memset", dst=(t0, 8192), value=0, elem=4, width=1),
             Node(kind="kernel", args=[("ptr", t1, 128), ("value", b"\1\0\0\0")])]
    said = []
    cut = trim(Bufs((t0, t1, ws, w)), nodes, ALLOCS, said.append)
    assert cut == {"t0": [8704 + (1 << 20), 8704]}
    assert t0.size == 8704 and t1.size == 4096  # (t1's one allocation is all of it)
    assert ws.size == 1 << 20 and w.size == 256  # static blocks and weights are not regions
    assert said and "t0 1057280 -> 8704 bytes" in said[0]


def test_a_copy_out_of_the_region_keeps_what_it_reads():
    t0, t1, ws, w = buffers()
    out = Buffer(name="out0", size=1 << 20, role="output", ranges={0: 0x2000})
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0)]),
             Node(kind="memcpy", src=(t0, 8704), dst=(out, 0), width=1 << 20)]
    trim(Bufs((t0, out)), nodes, ALLOCS, lambda s: None)
    assert t0.size == 8704 + (1 << 20)


def test_without_the_allocators_trace_nothing_is_cut():
    t0, t1, ws, w = buffers()
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0)])]
    assert trim(Bufs((t0,)), nodes, None, lambda s: None) == {}
    assert t0.size == 8704 + (1 << 20)


def test_node_refs_reach_into_bodies_and_say_what_copies_cover():
    t0, t1, ws, w = buffers()
    body = [Node(kind="memset", dst=(t1, 64), value=0, elem=2, width=10)]
    n = Node(kind="if", bodies=[("then", body, None)])
    assert list(node_refs(n)) == [(t1, 64, 20)]
    m = Node(kind="read", src=(t0, 4), dst=(w, 0), width=4)
    assert list(node_refs(m)) == [(t0, 4, 4), (w, 0, 4)]


def test_regions_are_split_into_the_allocations_the_nodes_use():
    t0, t1, ws, w = buffers()
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0), ("ptr", w, 0)], index=0),
             Node(kind="memset", dst=(t0, 8192), value=0, elem=4, width=1, index=1),
             Node(kind="kernel", args=[("ptr", t1, 128), ("bytes", b"\0" * 16, [(8, t0, 8200, "lo32")])],
                  index=2)]
    bufs, said = Bufs((t0, t1, ws, w)), []
    out, report = slot_layout.place_intermediates(bufs, nodes, capture(ALLOCS), said.append)
    assert [b.name for b in bufs.list] == ["t0_0", "t0_1", "t1_0", "t2", "w_a"]
    s0, s1, s2 = bufs.list[:3]
    assert (s0.size, s1.size, s2.size) == (8192, 512, 4096)
    assert s1.ranges == {0: BASE + 8192, 1: BASE + (1 << 32) + 8192} and s1.role == "intermediate"
    assert out[0].args == [("ptr", s0, 0), ("ptr", w, 0)]
    assert out[1].dst == (s1, 0)
    assert out[2].args == [("ptr", s2, 128), ("bytes", b"\0" * 16, [(8, s1, 8, "lo32")])]
    assert nodes[0].args[0] == ("ptr", t0, 0)  # (the nodes given are not changed)
    assert report["split"] == {"t0": [8704 + (1 << 20), 2, 8704], "t1": [4096, 1, 4096]}
    assert report["whole"] == {} and report["cut"] == {}
    assert said and "2 intermediates split into the 3 allocations" in said[0]


def test_a_capture_that_is_not_a_chain_is_only_cut():
    t0, t1, ws, w = buffers()
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0)], index=0),
             Node(kind="kernel", args=[("ptr", t0, 8192)], index=1),
             Node(kind="kernel", args=[("ptr", t1, 0)], index=2)]
    bufs = Bufs((t0, t1))
    out, report = slot_layout.place_intermediates(bufs, nodes, capture(ALLOCS, edges=[(0, 1), (0, 2)]), lambda s: None)
    assert bufs.list == [t0, t1] and out == nodes
    assert report["split"] == {} and report["cut"] == {"t0": [8704 + (1 << 20), 8704]}
    assert "not one chain" in report["whole"]["t0"]


def test_the_nodes_are_timed_in_the_chains_order_and_copies_added_come_last():
    # X at 0 is freed and Y made there; the chain runs node 1 (X and V) before node 0 (Y and W)
    t0 = Buffer(name="t0", size=12288, role="intermediate", ranges={0: BASE})
    out0 = Buffer(name="out0", size=4096, role="output", ranges={0: 0x2000})
    trace = [("alloc", BASE, 4096), ("alloc", BASE + 4096, 4096), ("free_requested", BASE, 4096),
             ("free_requested", BASE + 4096, 4096), ("alloc", BASE, 4096), ("alloc", BASE + 8192, 4096)]
    cap = SimpleNamespace(allocs=[(a, s) for act, a, s in trace if act == "alloc"], trace=trace,
                          nodes=[None, None], edges=[(1, 0)])
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0), ("ptr", t0, 8192)], index=0),
             Node(kind="kernel", args=[("ptr", t0, 0), ("ptr", t0, 4096)], index=1),
             Node(kind="memcpy", src=(t0, 0), dst=(out0, 0), width=4096, index=2)]  # (the export's copy)
    bufs = Bufs((t0, out0))
    out, report = slot_layout.place_intermediates(bufs, nodes, cap, lambda s: None)
    assert report["split"] == {"t0": [12288, 4, 16384]} and report["whole"] == {}
    x, y = out[1].args[0][1], out[0].args[0][1]
    assert x is not y and x.size == y.size == 4096
    assert out[2].src == (y, 0)  # the copy at the end reads Y, the allocation live then
    # in the nodes' numbering the trace would contradict them: nothing split
    cap.edges = [(0, 1)]
    out, report = slot_layout.place_intermediates(Bufs((t0, out0)), nodes, cap, lambda s: None)
    assert report["split"] == {} and "not all live" in report["whole"]["t0"]


def test_pgcc_packs_the_slots_of_a_region(tmp_path, pgcc_bin):
    """Through pgcc: three allocations the allocator laid side by side, copied from one to
    the next; split, the first and the last share bytes in pgcc's arena."""
    import subprocess
    from pgcc.graphfile import node_buffers, write_graph
    from pgcc.weights import write_safetensors
    t0 = Buffer(name="t0", size=12288, role="intermediate", ranges={0: BASE})
    in0 = Buffer(name="in0", size=4096, role="input", dtype="u8", shape=[4096], ranges={0: 0x1000})
    out0 = Buffer(name="out0", size=4096, role="output", dtype="u8", shape=[4096], ranges={0: 0x3000})
    trace = [("alloc", BASE + 4096 * i, 4096) for i in range(3)]
    cap = SimpleNamespace(allocs=[(a, s) for _, a, s in trace], trace=trace, nodes=[None] * 4,
                          edges=[(0, 1), (1, 2), (2, 3)])
    places = [(in0, 0), (t0, 0), (t0, 4096), (t0, 8192), (out0, 0)]
    nodes = [Node(kind="memcpy", src=places[i], dst=places[i + 1], width=4096, index=i) for i in range(4)]

    def arena(bufs, nodes):
        used = {id(b) for n in nodes for b in node_buffers(n)}
        write_graph(tmp_path / "p.graph", "p", {}, bufs, used, nodes, cap.edges, "sm_90", origin="a test")
        r = subprocess.run([pgcc_bin, "--report", str(tmp_path / "p.graph")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return next(line for line in r.stdout.splitlines() if line.startswith("memory: arena"))

    write_safetensors(tmp_path / "p.safetensors", [])
    assert arena(Bufs((in0, out0, t0)), nodes).startswith("memory: arena 12.00 KiB for 1 intermediates")
    bufs = Bufs((in0, out0, t0))
    out, report = slot_layout.place_intermediates(bufs, nodes, cap, lambda s: None)
    assert report["split"] == {"t0": [12288, 3, 12288]}
    assert arena(bufs, out).startswith("memory: arena 8.00 KiB for 3 intermediates")


def split_analysis(tmp_path=None):
    """An analysis whose region t0 was split into slots, as analyse() leaves it."""
    t0, t1, ws, w = buffers()
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0)], index=0),
             Node(kind="kernel", args=[("ptr", t1, 0)], index=1)]
    bufs = Bufs((t0, t1, w))
    whole = WholeLayout(nodes=list(nodes), bufs=list(bufs.list), sizes={id(b): b.size for b in bufs.list})
    out, report = slot_layout.place_intermediates(bufs, nodes, capture(ALLOCS, nodes=2), lambda s: None)
    assert report["split"]
    written = []
    a = Analysis(capA=None, bufs=bufs, nodes=out, edges=[], kernels={}, scalars=[], report={"intermediates": report},
                 outputs=[], whole=whole)
    a.write_report = lambda: written.append(json.dumps(a.report["intermediates"], default=str))
    if tmp_path is not None:
        (tmp_path / "m.graph").write_text("split\n")
    return a, nodes, written



def test_whole_regions_undoes_the_split_and_the_cut():
    a, nodes, written = split_analysis()
    bufs = a.bufs
    t0, t1, w = a.whole.bufs
    assert [b.name for b in bufs.list] == ["t0_0", "t1_0", "w_a"]
    k = Kernel(symbol="nvjet", layout=[(0, 24)], access={(0, 0): "r", (0, 8): "o", (0, 16): "rw"})
    a.kernels[0x1] = k
    assert slot_layout.whole_regions(a, "verify m: output 0 differs")
    # an overwrite measured on a slot is no overwrite of its region
    assert k.access == {(0, 0): "r", (0, 8): "rw", (0, 16): "rw"}
    assert a.nodes == nodes and bufs.list == [t0, t1, w] and t0.size == 8704 + (1 << 20)
    assert a.report["intermediates"]["undone"] == "verify m: output 0 differs" and written
    assert not slot_layout.whole_regions(a, "again")  # (nothing left to undo)
    # cut only (a capture that is not one chain): the sizes come back
    bufs = Bufs((t0, t1, w))
    whole = WholeLayout(nodes=list(nodes), bufs=list(bufs.list), sizes={id(b): b.size for b in bufs.list})
    out, report = slot_layout.place_intermediates(bufs, nodes, capture(ALLOCS, nodes=2, edges=[]), lambda s: None)
    assert report["cut"] and t0.size == 8192
    a = Analysis(capA=None, bufs=bufs, nodes=out, edges=[], kernels={}, scalars=[], report={"intermediates": report},
                 outputs=[], whole=whole)
    assert slot_layout.whole_regions(a, "x") and t0.size == 8704 + (1 << 20) and bufs.list == [t0, t1, w]


def test_the_nodes_are_placed_where_capture_a_saw_them():
    # kernel 1 reads X and writes W; X is freed and kernel 2 writes Z in its place
    t0 = Buffer(name="t0", size=8192, role="intermediate", ranges={0: BASE})
    trace = [("alloc", BASE, 4096), ("alloc", BASE + 4096, 4096), ("free_requested", BASE, 4096),
             ("alloc", BASE, 4096)]
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0), ("ptr", t0, 4096)], index=0),
             Node(kind="kernel", args=[("ptr", t0, 4096), ("ptr", t0, 0)], index=1)]

    def place(clock, kinds=None):
        cap = SimpleNamespace(allocs=[(a, s) for act, a, s in trace if act == "alloc"], trace=trace,
                              nodes=[{"type": 0}, {"type": 0}], edges=[(0, 1)], node_clock=clock,
                              node_clock_kinds=kinds or ["kernel"] * len(clock or ()))
        bufs = Bufs((replace(t0),))
        ns = [replace(n, args=[(a[0], bufs.list[0], a[2]) for a in n.args]) for n in nodes]
        return slot_layout.place_intermediates(bufs, ns, cap, lambda s: None)
    out, report = place([(2, 0), (3, 1)])
    assert report["timed"] == "seen" and report["split"] == {"t0": [8192, 3, 12288]}
    assert out[0].args[0][1] is not out[1].args[1][1]  # X and Z: two buffers
    out, report = place(None)  # (no ModuleWatch)
    assert report["timed"] == "inferred" and report["split"] == {"t0": [8192, 2, 8192]}
    out, report = place([(2, 0)])  # a launch the clock missed
    assert report["timed"] == "inferred (1 launches seen for 2 nodes)" and report["split"]["t0"][1] == 2
    # a memset call that made no node, between the kernels: matched away, both times seen
    out, report = place([(2, 0), (2, 0), (3, 1)], ["kernel", "memset", "kernel"])
    assert report["timed"] == "seen for 2 of 2 nodes (3 node-making calls seen, matched by kind)"
    assert report["split"] == {"t0": [8192, 3, 12288]}
    # a kernel call that made no node: the second kernel's time is (2, 0) or (3, 1), not known
    out, report = place([(2, 0), (2, 0), (3, 1)], ["kernel"] * 3)
    assert report["timed"] == "seen for 1 of 2 nodes (3 node-making calls seen, matched by kind)"
    assert report["split"]["t0"][1] == 2


def layout(a, path, name):  # (a stand-in for export_files.graph_of: which layout it wrote)
    with open(path, "w") as f:
        f.write(" ".join(b.name for b in a.bufs.list) + "\n")


def test_the_regions_are_kept_whole_where_pgcc_packs_them_smaller(tmp_path):
    a, whole_nodes, written = split_analysis(tmp_path)
    split_names = [b.name for b in a.bufs.list]
    sizes = {"split\n": 3 << 20, "t0 t1 w_a\n": 2 << 20}
    said = []
    assert slot_layout.keep_smaller_layout(a, str(tmp_path), "m", said.append, write=layout,
                                      arena=lambda g: sizes[open(g).read()])
    assert (tmp_path / "m.graph").read_text() == "t0 t1 w_a\n" and not (tmp_path / "m.whole.graph").exists()
    assert a.nodes == whole_nodes and [b.name for b in a.bufs.list] == ["t0", "t1", "w_a"]
    rep = a.report["intermediates"]
    assert rep["split"] == {} and set(rep["whole"]) == {"t0", "t1"} and written
    assert "2097152 bytes with the regions whole, 3145728 with them split" in rep["whole"]["t0"] and said
    # larger whole: the split stays, as it was
    a, _, written = split_analysis(tmp_path)
    a.kernels[0x1] = k = Kernel(symbol="nvjet", layout=[(0, 8)], access={0: "o"})
    before = (list(a.nodes), [b.name for b in a.bufs.list], dict(a.report["intermediates"]))
    sizes = {"split\n": 2 << 20, "t0 t1 w_a\n": 3 << 20}
    assert not slot_layout.keep_smaller_layout(a, str(tmp_path), "m", said.append, write=layout,
                                          arena=lambda g: sizes[open(g).read()])
    assert (tmp_path / "m.graph").read_text() == "split\n" and not (tmp_path / "m.whole.graph").exists()
    assert (a.nodes, [b.name for b in a.bufs.list], a.report["intermediates"]) == before
    assert [b.name for b in a.bufs.list] == split_names and k.access == {0: "o"}  # (the split's, as it was)
    assert all(b.size > 0 for b in a.bufs.list) and a.bufs.list[0].size != 8704 + (1 << 20)
    # pgcc does not read one of them: nothing changes
    a, _, _ = split_analysis(tmp_path)
    assert not slot_layout.keep_smaller_layout(a, str(tmp_path), "m", said.append, write=layout, arena=lambda g: None)
    assert a.report["intermediates"]["split"]
    # nothing split: nothing written
    a.report["intermediates"] = {"split": {}, "whole": {}, "cut": {}}
    assert not slot_layout.keep_smaller_layout(a, str(tmp_path), "m", said.append, write=None, arena=None)


def reused_output(out_bytes=4096, earlier_bytes=4096, view_of=None, freed=False):
    """Capture A where the program's output lies where an earlier tensor was: X made at
    BASE and freed, then the output made there (its allocation never freed, unless
    freed); node 0 writes X, node 1 reads X into the output, and the export copies the
    output's slot out at the end (node_mapping.copy_aliased_outputs)."""
    t0 = Buffer(name="t0", size=8192, role="intermediate", ranges={0: BASE, 1: BASE + (1 << 32)})
    out0 = Buffer(name="out0", size=out_bytes, role="output", aliased=True, view_of=view_of,
                  ranges={0: BASE, 1: BASE + (1 << 32)})
    trace = [("alloc", BASE, earlier_bytes), ("alloc", BASE + 4096, 4096), ("free_requested", BASE, earlier_bytes),
             ("alloc", BASE, out_bytes)] + ([("free_requested", BASE, out_bytes)] if freed else [])
    cap = SimpleNamespace(allocs=[(a, s) for act, a, s in trace if act == "alloc"], trace=trace,
                          nodes=[None, None], edges=[(0, 1)], node_clock=[(2, 0), (3, 1)])
    nodes = [Node(kind="kernel", args=[("ptr", t0, 0), ("ptr", t0, 4096)], index=0),
             Node(kind="kernel", args=[("ptr", t0, 4096), ("ptr", t0, 0)], index=1),
             Node(kind="memcpy", src=(t0, 0), dst=(out0, 0), width=out_bytes, index=2)]
    return Bufs((t0, out0)), nodes, cap, out0


def test_an_output_in_memory_reused_is_written_in_place_not_copied_out():
    bufs, nodes, cap, out0 = reused_output()
    said = []
    out, report = slot_layout.place_intermediates(bufs, nodes, cap, said.append)
    assert report["in_place"] == ["out0"] and out0.in_place
    assert [n.index for n in out] == [0, 1]  # (the copy out at the end is gone)
    assert out[1].args[1] == ("ptr", out0, 0)  # node 1 writes the output itself
    x = out[0].args[0][1]
    assert x.role == "intermediate" and x is not out0 and x in bufs.list  # X, before it, stays the arena's
    assert all(b is not out0 or b.role == "output" for b in bufs.list) and out0 in bufs.list
    assert any("written in place" in s for s in said)


def test_an_output_is_copied_out_where_its_slot_could_reach_past_it():
    # an earlier tensor the allocator gave the output's bytes and more, in one slot with it
    bufs, nodes, cap, out0 = reused_output(out_bytes=2048)
    cap.node_clock = None  # (no times seen: node 1's pointer may be X or the output, one slot)
    out, report = slot_layout.place_intermediates(bufs, nodes, cap, lambda s: None)
    assert "in_place" not in report and not out0.in_place
    assert out[-1].kind == "memcpy" and out[-1].dst == (out0, 0)
    # an allocation that is freed is not the output's; an output that is a view is its buffer's
    for kw in ({"freed": True}, {"view_of": "in0"}):
        bufs, nodes, cap, out0 = reused_output(**kw)
        out, report = slot_layout.place_intermediates(bufs, nodes, cap, lambda s: None)
        assert "in_place" not in report and out[-1].kind == "memcpy", kw


def test_an_output_written_in_place_is_copied_out_again_with_the_regions_whole():
    bufs, nodes, cap, out0 = reused_output()
    whole = WholeLayout(nodes=list(nodes), bufs=list(bufs.list), sizes={id(b): b.size for b in bufs.list})
    out, report = slot_layout.place_intermediates(bufs, nodes, cap, lambda s: None)
    assert out0.in_place
    a = Analysis(capA=cap, bufs=bufs, nodes=out, edges=[(0, 1), (1, 2)], kernels={}, scalars=[],
                 report={"intermediates": report}, outputs=[], whole=whole)
    a.write_report = lambda: None
    assert slot_layout.whole_regions(a, "verification failed")
    assert not out0.in_place and a.nodes[-1].kind == "memcpy" and a.nodes[-1].dst == (out0, 0)
