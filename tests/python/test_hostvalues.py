"""hostvalues.py: which kernel arguments are values read back to the host, from two
captures' bytes; conversions as C makes them; when two captures ran other nodes."""
import struct

from pgcc.call_args import decode, encode
from pgcc.hostvalues import explain, flows, same_path

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
