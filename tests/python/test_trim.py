"""export.trim_intermediates: a capture region cut after the last allocation a node
points into; what no node points into is not the program's (no GPU needed)."""
import importlib

from pgcc.graphfile import node_refs

export = importlib.import_module("pgcc.export")

BASE = 0x7F0000000000


def buffers():
    t0 = {"name": "t0", "size": 8704 + (1 << 20), "role": "intermediate", "ranges": {0: BASE, 1: BASE + (1 << 32)}}
    t1 = {"name": "t1", "size": 4096, "role": "intermediate", "ranges": {0: BASE + (4 << 20)}}
    ws = {"name": "t2", "size": 1 << 20, "role": "weight", "static": True, "ranges": {0: BASE + 8704}}
    w = {"name": "w_a", "size": 256, "role": "weight", "ranges": {0: 0x1000}}
    return t0, t1, ws, w


ALLOCS = [(BASE, 8192), (BASE + 8192, 512), (BASE + 8704, 1 << 20), (BASE + (4 << 20), 4096)]


class Bufs:
    def __init__(self, items):
        self.list = list(items)


def test_regions_are_cut_after_what_the_nodes_point_into():
    t0, t1, ws, w = buffers()
    nodes = [{"kind": "kernel", "args": [("ptr", t0, 0), ("ptr", w, 0), ("bytes", b"\0" * 16, [(8, ws, 0, "abs64")])]},
             {"kind": "memset", "dst": (t0, 8192), "value": 0, "elem": 4, "width": 1},
             {"kind": "kernel", "args": [("ptr", t1, 128), ("value", b"\1\0\0\0")]}]
    said = []
    cut = export.trim_intermediates(Bufs((t0, t1, ws, w)), nodes, ALLOCS, said.append)
    assert cut == {"t0": [8704 + (1 << 20), 8704]}
    assert t0["size"] == 8704 and t1["size"] == 4096  # (t1's one allocation is all of it)
    assert ws["size"] == 1 << 20 and w["size"] == 256  # static blocks and weights are not regions
    assert said and "t0 1057280 -> 8704 bytes" in said[0]


def test_a_copy_out_of_the_region_keeps_what_it_reads():
    t0, t1, ws, w = buffers()
    out = {"name": "out0", "size": 1 << 20, "role": "output", "ranges": {0: 0x2000}}
    nodes = [{"kind": "kernel", "args": [("ptr", t0, 0)]},
             {"kind": "memcpy", "src": (t0, 8704), "dst": (out, 0), "width": 1 << 20}]
    export.trim_intermediates(Bufs((t0, out)), nodes, ALLOCS, lambda s: None)
    assert t0["size"] == 8704 + (1 << 20)


def test_without_the_allocators_trace_nothing_is_cut():
    t0, t1, ws, w = buffers()
    nodes = [{"kind": "kernel", "args": [("ptr", t0, 0)]}]
    assert export.trim_intermediates(Bufs((t0,)), nodes, None, lambda s: None) == {}
    assert t0["size"] == 8704 + (1 << 20)


def test_node_refs_reach_into_bodies_and_say_what_copies_cover():
    t0, t1, ws, w = buffers()
    body = [{"kind": "memset", "dst": (t1, 64), "value": 0, "elem": 2, "width": 10}]
    n = {"kind": "if", "bodies": [("then", body, None)]}
    assert list(node_refs(n)) == [(t1, 64, 20)]
    m = {"kind": "read", "src": (t0, 4), "dst": (w, 0), "width": 4}
    assert list(node_refs(m)) == [(t0, 4, 4), (w, 0, 4)]
