"""diagnose.py's pure parts: the parameter bytes a .graph launch gives once its
relocations are patched (what the node-by-node comparison launches), and the order
that keeps every edge."""
import struct

from pgcc.diagnose import as_captured, exported_bytes, order
from pgcc.model import Buffer, Node


def test_exported_bytes_patches_every_kind():
    a = Buffer(name="a", size=64, role="input")
    b = Buffer(name="b", size=64, role="input")
    addr = {id(a): 0x7F12_3456_7000, id(b): 0x19_0000_0100}.get
    layout = [(0, 8), (8, 4), (16, 40)]
    raw = bytearray(40)
    raw[32:36] = b"\x11\x22\x33\x44"  # a value among the relocations, kept
    args = [("ptr", a, 64), ("value", struct.pack("<I", 7)),
            ("bytes", bytes(raw), [(4, b, 8, "abs64"), (16, a, 0, "lo32"), (20, a, 0, "hi32")])]
    blob = exported_bytes(layout, args, lambda buf: addr(id(buf)))
    assert struct.unpack_from("<Q", blob, 0)[0] == 0x7F12_3456_7040
    assert struct.unpack_from("<I", blob, 8)[0] == 7
    assert struct.unpack_from("<Q", blob, 16 + 4)[0] == 0x19_0000_0108
    assert struct.unpack_from("<I", blob, 16 + 16)[0] == 0x3456_7000
    assert struct.unpack_from("<I", blob, 16 + 20)[0] == 0x7F12
    assert blob[16 + 32:16 + 36] == b"\x11\x22\x33\x44"
    assert len(blob) == 56


def test_order_keeps_capture_order_when_it_can_and_every_edge_when_not():
    assert order(4, [(0, 1), (1, 3), (2, 3)]) == [0, 1, 2, 3]
    got = order(4, [(3, 0), (0, 1), (2, 1)])
    pos = {n: i for i, n in enumerate(got)}
    assert sorted(got) == [0, 1, 2, 3]
    assert all(pos[x] < pos[y] for x, y in [(3, 0), (0, 1), (2, 1)])


def test_an_added_copy_is_run_at_capture_a_addresses():
    t = Buffer(name="t0", size=1024, role="intermediate", ranges={0: 0x1000})
    out = Buffer(name="out0", size=16, role="output", ranges={0: 0x1000 + 64})
    n = Node(kind="memcpy", src=(t, 64), dst=(out, 0), width=16, index=9)
    assert as_captured(n) == {"src": 0x1040, "dst": 0x1040}
