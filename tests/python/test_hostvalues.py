"""hostvalues.py: which kernel arguments are values read back to the host, from two
captures' bytes; conversions as C makes them; when two captures ran other nodes; what
host_computed makes of an argument that changes with the values (its replays stood in
for)."""
import struct
from types import SimpleNamespace

from pgcc import hostvalues
from pgcc.call_args import decode, encode
from pgcc.hostvalues import explain, flows, host_computed, same_path
from pgcc.model import Kernel, Node

KERNEL = 0  # (capture.py's node type of a kernel: anything but "read")


def test_decode_encode_round_trip_and_conversions():
    assert decode(struct.pack("<f", 1.5), "f32") == 1.5
    assert decode(b"\x80\x3f", "bf16") == 1.0
    assert encode(1.5, "f64") == struct.pack("<d", 1.5)
    assert encode(2.9, "i64") == struct.pack("<q", 2)  # C truncates
    assert encode(-2.9, "i32") == struct.pack("<i", -2)
    assert encode(1.0, "bf16") == b"\x80\x3f"
    assert encode(1.00390625, "bf16") == b"\x80\x3f"  # halfway: to even
    assert encode(1 << 40, "i32") is None  # does not fit
    assert decode(b"\0" * 4, "c64") is None  # a dtype not known


def test_explain_finds_the_read_and_the_type():
    a, d = 1.8039, 2.25  # the value read in captures A and D (f32)
    reads = [("f32", struct.pack("<f", a), struct.pack("<f", d))]
    fa, fd = struct.unpack("<f", struct.pack("<f", a))[0], struct.unpack("<f", struct.pack("<f", d))[0]
    assert explain(8, struct.pack("<d", fa), struct.pack("<d", fd), reads) == (0, "f64")
    assert explain(4, struct.pack("<f", fa), struct.pack("<f", fd), reads) == (0, "f32")
    # 1/m is none of them: a value computed from the read
    assert explain(8, struct.pack("<d", 1 / fa), struct.pack("<d", 1 / fd), reads) is None
    # the last read that explains both wins
    two = reads + [("f32", struct.pack("<f", a), struct.pack("<f", d))]
    assert explain(8, struct.pack("<d", fa), struct.pack("<d", fd), two) == (1, "f64")
    # right in A, wrong in D: not that read
    assert explain(8, struct.pack("<d", fa), struct.pack("<d", fa), reads) is None


def kernel(blob):
    return {"type": KERNEL, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "layout": [(0, 8), (8, 8)],
            "bytes": blob}


def read(value):
    return {"type": "read", "width": 4, "dtype": "f32", "value": struct.pack("<f", value)}


def test_flows_over_captures():
    m_a, m_d = 2.0, 3.0
    ptr_a, ptr_d = 0x7F0000001000, 0x7F0000002000  # a pointer: other in D, relocated in A
    nodes_a = [kernel(struct.pack("<Qd", ptr_a, 0.5)), read(m_a), {"type": "sync"},
               kernel(struct.pack("<Qd", ptr_a, m_a)), kernel(struct.pack("<Qd", ptr_a, 7.0))]
    nodes_d = [kernel(struct.pack("<Qd", ptr_d, 0.5)), read(m_d), {"type": "sync"},
               kernel(struct.pack("<Qd", ptr_d, m_d)), kernel(struct.pack("<Qd", ptr_d, 7.0))]
    args = {i: [("ptr", None, 0), ("value", n["bytes"][8:])] for i, n in enumerate(nodes_a) if n["type"] == KERNEL}
    found, unexplained = flows(nodes_a, nodes_d, args, [nodes_a[1]], [nodes_d[1]])
    assert found == {(3, 1): (0, "f64")} and unexplained == []
    # an argument that changes but is no value read: unexplained
    nodes_d[4] = kernel(struct.pack("<Qd", ptr_d, 7.5))
    found, unexplained = flows(nodes_a, nodes_d, args, [nodes_a[1]], [nodes_d[1]])
    assert found == {(3, 1): (0, "f64")} and unexplained == [(4, 1)]
    # a kernel before the read cannot take it
    nodes_d[0] = kernel(struct.pack("<Qd", ptr_d, m_d))
    nodes_a[0] = kernel(struct.pack("<Qd", ptr_a, m_a))
    args[0] = [("ptr", None, 0), ("value", nodes_a[0]["bytes"][8:])]
    found, unexplained = flows(nodes_a, nodes_d, args, [nodes_a[1]], [nodes_d[1]])
    assert (0, 1) in unexplained and (0, 1) not in found


def test_same_path():
    a = [kernel(b"\0" * 16), read(1.0), {"type": "sync"}]
    assert same_path(a, [dict(n) for n in a]) is None
    assert "nodes" in same_path(a, a[:1])
    other = [dict(n) for n in a]
    other[0]["grid"] = [2, 1, 1]
    assert same_path(a, other).startswith("node 0")


def computed_case(monkeypatch, kernel_reads):
    """A read, its guarded sync, and a kernel after them whose parameter 0 (8 bytes, 0.25
    as captured) changes with the value read but is none of it; the replays that would
    tell whether the kernel reads it answer kernel_reads."""
    monkeypatch.setattr(hostvalues, "prove_irrelevant",
                        lambda replayer, suspects, name_of: ["it reads them"] if kernel_reads else [])
    capA = SimpleNamespace(nodes=[{"type": "read"}, {"type": "sync"},
                                  {"type": KERNEL, "name": "k", "func": 9, "layout": [(0, 8)]}])
    nodes = [Node(kind="read", index=0, read=0), Node(kind="sync", index=1, read=0, guard=b"\x01"),
             Node(kind="kernel", index=2, func=9, args=[("value", struct.pack("<d", 0.25))])]
    kernels = {9: Kernel(symbol="k", layout=[(0, 8)])}
    report = {"host_reads": [{"guarded": True}]}
    scalars = []
    host_computed(None, capA, nodes, kernels, {2: [(0, [(0, 8, "changes in D")])]}, scalars, report, lambda s: None)
    return nodes, kernels, scalars, report


def test_an_argument_the_host_computes_is_a_callback_scalar(monkeypatch):
    nodes, kernels, scalars, report = computed_case(monkeypatch, True)
    assert scalars == [{"name": "cb0", "type": "f64", "callback": True}]
    assert nodes[2].args == [("scalar", struct.pack("<d", 0.25), scalars[0])] and kernels[9].scalar_types == {0: "f64"}
    assert nodes[1].guard is None and report["host_reads"] == [{"guarded": False, "callbacks": ["cb0"]}]


def test_an_argument_the_kernel_does_not_read_is_dont_care(monkeypatch):
    nodes, kernels, scalars, report = computed_case(monkeypatch, False)
    assert scalars == [] and kernels[9].dontcare == {(0, 0, 8)} and kernels[9].scalar_types == {}
    assert nodes[2].args == [("value", struct.pack("<d", 0.25))] and nodes[1].guard == b"\x01"
