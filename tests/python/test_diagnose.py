"""diagnose.py's pure parts: the parameter bytes a .graph launch gives once its
relocations are patched (what the node-by-node comparison launches), the order that
keeps every edge, and a kernel node described as captured and as exported."""
import struct

from pgcc.diagnose import as_captured, describe_node, exported_bytes, order
from pgcc.model import Buffer, Node
from pgcc.relocate import Buffers


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


def test_describe_node_names_each_relocation_and_a_pointer_missed():
    bufs = Buffers()
    x = bufs.add(name="in0", size=1024, role="input", ranges={0: 0x1000_0000})
    t = bufs.add(name="t0", size=4096, role="intermediate", ranges={0: 0x2000_0000})
    # captured: in0+16 at 0 (a relocation), 5 at 8 (exported as 6), t0+64 at 16 (no relocation: missed)
    blob = struct.pack("<QIIQ", 0x1000_0010, 5, 0, 0x2000_0040)
    cap_node = {"layout": [(0, 8), (8, 4), (12, 4), (16, 8)], "bytes": blob}
    n = Node(kind="kernel", index=4, args=[("ptr", x, 16), ("value", struct.pack("<I", 6)), ("value", bytes(4)),
                                           ("value", blob[16:])])
    lines = describe_node(n, cap_node, bufs, [])
    assert lines == ["param 0+0 abs64 -> in0+16 (input, 1024 bytes); captured 0x10000010",
                     "param 8 (4 bytes): exported 06000000, captured 05000000",
                     "byte 16: 0x20000040 is t0+64 (intermediate) in capture A, but no relocation"]
    assert describe_node(Node(kind="memset", index=5, dst=(t, 0), value=0, elem=4, width=1), {}, bufs, []) == []
