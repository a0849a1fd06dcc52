"""node_mapping.map_nodes and hostvalues.host_values on captures made by hand (capture.py's
raw records, dicts keyed "type"): the export's nodes are model.Node, with the fields of
their kind, and the steps after the mapping read and change them as such."""
import struct
from types import SimpleNamespace

from pgcc.cuda import NODE_EMPTY, NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET
from pgcc.hostvalues import host_values
from pgcc.model import CaptureSet, Node
from pgcc.node_mapping import copy_aliased_outputs, map_nodes
from pgcc.relocate import Buffers, Relocator

IN = (0x10000, 0x90000, 0x7000_0001_0000)  # in0 in captures A, B and C
OUT = (0x20000, 0xA0000, 0x7000_0002_0000)
REGION = (0x40000, 0xB0000, 0x7000_0004_0000)  # capture A's memory, 4096 bytes


def capture(c, read_value=b"\x01\0\0\0", use=False):
    """Capture c's records: a kernel, a memset, a memcpy, a value read back and its sync,
    an empty node; with use, a kernel after them that takes the value read."""
    nodes = [{"type": NODE_KERNEL, "name": "scale", "func": 0xABC, "layout": [(0, 8), (8, 4)],
              "bytes": struct.pack("<QI", IN[c], 7), "attrs": None, "grid": [2, 1, 1], "block": [64, 1, 1],
              "smem": 0, "cluster": [2, 1, 1]},
             {"type": NODE_MEMSET, "dst": OUT[c], "value": 0, "elem": 4, "width": 16, "height": 1},
             {"type": NODE_MEMCPY, "src": IN[c], "dst": REGION[c] + 64, "width": 256, "height": 1, "depth": 1,
              "src_type": 2, "dst_type": 2},
             {"type": "read", "read": 0, "src": REGION[c] + 64, "width": 4, "dtype": "i32", "value": read_value,
              "where": "m.py:3", "op": "item"},
             {"type": "sync", "read": 0},
             {"type": NODE_EMPTY}]
    if use:
        nodes.append({"type": NODE_KERNEL, "name": "use", "func": 0xDEF, "layout": [(0, 4)], "bytes": read_value,
                      "attrs": None, "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0})
    reads = [{"src": REGION[c] + 64, "width": 4, "dtype": "i32", "value": read_value, "op": "item",
              "where": "m.py:3"}]
    return SimpleNamespace(nodes=nodes, reads=reads, recorder=None, edges=[(k, k + 1) for k in range(len(nodes) - 1)],
                           allocs=None, outputs=[])


def mapped(use=False):
    caps = CaptureSet(capA=capture(0, use=use), capB=capture(1, use=use), capC=capture(2, use=use),
                      capD=capture(0, b"\x02\0\0\0", use=use), inputs_b=[], inputs_c=[])
    bufs = Buffers()
    x = bufs.add(name="in0", size=1024, role="input", dtype="f32", shape=[256], ranges=dict(enumerate(IN)))
    y = bufs.add(name="out0", size=64, role="output", dtype="f32", shape=[16], ranges=dict(enumerate(OUT)))
    rel = Relocator(bufs, [[(r, 4096)] for r in REGION], [[(r, 4096)] for r in REGION])
    suspects = {}
    nodes, kernels, comms = map_nodes(None, caps, rel, bufs, suspects)
    assert rel.problems == [] and suspects == {} and comms == {}
    return caps, bufs, x, y, nodes, kernels


def test_capture_a_nodes_become_nodes_of_their_kind():
    caps, bufs, x, y, nodes, kernels = mapped()
    t0 = next(b for b in bufs.list if b.role == "intermediate")
    r0 = next(b for b in bufs.list if b.role == "host")
    assert all(isinstance(n, Node) for n in nodes)
    assert [(n.kind, n.index) for n in nodes] == [("kernel", 0), ("memset", 1), ("memcpy", 2), ("read", 3),
                                                  ("sync", 4), ("empty", 5)]
    assert nodes[0] == Node(kind="kernel", index=0, func=0xABC, grid=[2, 1, 1], block=[64, 1, 1], smem=0,
                            args=[("ptr", x, 0), ("value", struct.pack("<I", 7))], cluster=[2, 1, 1])
    assert nodes[1] == Node(kind="memset", index=1, dst=(y, 0), value=0, elem=4, width=16)
    assert nodes[2] == Node(kind="memcpy", index=2, src=(x, 0), dst=(t0, 64), width=256)
    assert nodes[3] == Node(kind="read", index=3, src=(t0, 64), dst=(r0, 0), width=4, read=0, where="m.py:3",
                            op="item")
    assert nodes[4] == Node(kind="sync", index=4, read=0, where="m.py:3") and nodes[4].guard is None
    assert nodes[5] == Node(kind="empty", index=5)
    assert list(kernels) == [0xABC] and kernels[0xABC].symbol == "scale"
    assert kernels[0xABC].ptr_words == {(0, 0, "abs64")}
    # no output held other tensors first: capture A's edges, no copy added
    assert copy_aliased_outputs(caps, None, bufs, nodes, print) == caps.capA.edges and len(nodes) == 6


def test_a_value_no_kernel_takes_guards_its_sync_node():
    caps, bufs, x, y, nodes, kernels = mapped()
    said = []
    scalars = host_values(caps.capA, caps.capD, nodes, kernels, {}, {}, lambda *a: said.append(a), said.append)
    assert scalars == [] and nodes[4].guard == b"\x01\0\0\0"
    assert [n.guard for n in nodes if n is not nodes[4]] == [None] * 5


def test_a_value_a_kernel_takes_becomes_its_scalar_argument():
    caps, bufs, x, y, nodes, kernels = mapped(use=True)
    said = []
    scalars = host_values(caps.capA, caps.capD, nodes, kernels, {}, {}, lambda *a: said.append(a), said.append)
    assert scalars == [{"name": "v0_i32", "type": "i32", "from": "r0", "read": 0}]
    assert nodes[6].kind == "kernel" and nodes[6].args == [("scalar", b"\x01\0\0\0", scalars[0])]
    assert kernels[0xDEF].scalar_types == {0: "i32"}
    assert all(n.guard is None for n in nodes)  # (a value taken chose no path)


W = 0x50000  # a weight: the same address in every capture


def aliased_outputs():
    """Buffers in tensor_buffers' order (inputs, outputs, weights) for
    f(x) -> (x, x[2:], y, y again, y.t(), weight.t()), y computed; and a Relocator."""
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", ranges=dict(enumerate(IN)))
    bufs.add(name="out0", size=1024, role="output", ranges=dict(enumerate(IN)))  # x itself
    bufs.add(name="out1", size=1016, role="output", ranges={c: a + 8 for c, a in enumerate(IN)})  # x[2:]
    bufs.add(name="out2", size=64, role="output", ranges=dict(enumerate(OUT)))  # y
    bufs.add(name="out3", size=64, role="output", ranges=dict(enumerate(OUT)))  # y again
    bufs.add(name="out4", size=64, role="output", ranges=dict(enumerate(OUT)))  # y.t()
    bufs.add(name="out5", size=4096, role="output", ranges={c: W for c in range(3)})  # weight.t()
    bufs.add(name="w_lin_weight", size=4096, role="weight", tensor="lin.weight", ranges={c: W for c in range(3)})
    rel = Relocator(bufs, [[(r, 4096)] for r in REGION], [[(r, 4096)] for r in REGION])
    return bufs, rel


def test_outputs_in_an_inputs_a_weights_or_an_earlier_outputs_memory_are_views_of_it():
    from pgcc.node_mapping import mark_views
    bufs, rel = aliased_outputs()
    by = {b.name: b for b in bufs.list}
    assert bufs.find(0, W + 16)[0] is by["out5"]  # before: a kernel's pointer to the weight was out5's
    marked = mark_views(bufs.list)
    assert [(b.name, b.view_of) for b in marked] == [("out0", "in0"), ("out1", "in0"), ("out3", "out2"),
                                                     ("out4", "out2"), ("out5", "w_lin_weight")]
    assert not by["out2"].aliased  # y, computed: its own memory
    assert bufs.find(0, W + 16) == (by["w_lin_weight"], 16)  # now the weight's
    assert bufs.find(1, IN[1] + 8) == (by["in0"], 8)
    caps = SimpleNamespace(capA=SimpleNamespace(edges=[(0, 1)], nodes=[0, 1]), caps=[0, 1, 2])
    nodes = [Node(kind="kernel", index=0), Node(kind="kernel", index=1)]
    edges = copy_aliased_outputs(caps, rel, bufs, nodes, lambda s: None)
    copies = [(n.dst[0].name, n.src[0].name, n.src[1], n.width) for n in nodes[2:]]
    assert copies == [("out0", "in0", 0, 1024), ("out1", "in0", 8, 1016), ("out3", "out2", 0, 64),
                      ("out4", "out2", 0, 64), ("out5", "w_lin_weight", 0, 4096)]
    assert rel.problems == [] and all((1, n.index) in edges for n in nodes[2:])


def test_outputs_apart_from_every_other_buffer_are_not_views():
    from pgcc.node_mapping import mark_views
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", ranges=dict(enumerate(IN)))
    bufs.add(name="out0", size=64, role="output", ranges=dict(enumerate(OUT)))
    bufs.add(name="out1", size=0, role="output", ranges=dict(enumerate(OUT)))  # no elements: no memory
    bufs.add(name="out2", size=64, role="output", ranges={c: a + 32 for c, a in enumerate(OUT)})  # overlaps, not in
    assert mark_views(bufs.list) == [] and not any(b.aliased for b in bufs.list)


class _Storage:
    def __init__(self, at):
        self.at = at

    def data_ptr(self):
        return self.at


class _Tensor:
    """What tensor_span and flat_groups read of a tensor: a 1-d float32 view."""

    def __init__(self, storage, at, n):
        self.storage, self.at, self.n = storage, at, n
        self.shape = (n,)

    def data_ptr(self):
        return self.at

    def untyped_storage(self):
        return _Storage(self.storage)

    def numel(self):
        return self.n

    def stride(self):
        return (1,)

    def element_size(self):
        return 4


def test_flat_groups_keep_views_of_one_storage_together():
    """An LSTM's weights after flatten_parameters: views of one flat buffer (cuDNN's
    persistent kernel reads b_hh right after the b_ih it is given); a weight alone in its
    storage, and one tied twice (the same view), are no group."""
    from pgcc.node_mapping import flat_groups
    flat = 0x7000_0000
    weights = {"lstm.weight_ih_l0": _Tensor(flat, flat, 1024), "lstm.weight_hh_l0": _Tensor(flat, flat + 4096, 4096),
               "lstm.bias_ih_l0": _Tensor(flat, flat + 20480, 256), "lstm.bias_hh_l0": _Tensor(flat, flat + 21504, 256),
               "head.weight": _Tensor(0x9000_0000, 0x9000_0000, 64), "tied": _Tensor(0xA000_0000, 0xA000_0000, 8)}
    weights["tied_again"] = weights["tied"]
    ((first, lo, hi, members),) = flat_groups(weights)
    assert (first, lo, hi) == ("lstm.weight_ih_l0", flat, flat + 21504 + 1024)
    assert members == {flat, flat + 4096, flat + 20480, flat + 21504}
    assert flat_groups({"a": _Tensor(flat, flat, 8), "b": _Tensor(flat, flat, 8)}) == []  # (one place: tied)
