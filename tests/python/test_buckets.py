"""shape_buckets.py (and call_args.choose): the bucket dimension found from shapes, the bucket a size runs, and the
analyses of several sizes merged into one program with a SWITCH node (weights once,
inputs and outputs with the dimension named, intermediates per bucket), which pgcc
reads and compiles."""
import struct
import subprocess
from types import SimpleNamespace

import pytest
from conftest import scale_module

from pgcc.call_args import choose
from pgcc.shape_buckets import SETTER_SOURCE, check_values, dim_position, merge, setter_kernel
from pgcc.errors import ExportError
from pgcc.graphfile import graph_text, node_buffers
from pgcc.model import Analysis, Kernel, Node
from pgcc.relocate import Buffers
from pgcc.weights import write_safetensors


def test_dim_position():
    assert dim_position([(1, 64), (2, 64), (4, 64)], [1, 2, 4], "x") == 0
    assert dim_position([(3, 1, 8), (3, 2, 8)], [1, 2], "x") == 1
    assert dim_position([(16,), (16,)], [1, 2], "a loss") is None
    # the first entry is the size too by chance at bucket 1, but only position 1 moves
    assert dim_position([(1, 1), (1, 2), (1, 4)], [1, 2, 4], "x") == 1
    with pytest.raises(ExportError, match="other than in one dimension"):
        dim_position([(1, 64), (2, 32)], [1, 2], "input 0")
    with pytest.raises(ExportError, match="other than in one dimension"):
        dim_position([(1, 64), (4, 64)], [1, 2], "input 0")  # moves, but not as the bucket's size
    with pytest.raises(ExportError, match="number of dimensions"):
        dim_position([(1, 64), (2, 64, 1)], [1, 2], "input 0")


def test_choose_and_values():
    values = [1, 2, 4, 8]
    assert [choose(values, n, True) for n in range(0, 10)] == [None, 0, 1, 2, 2, 3, 3, 3, 3, None]
    assert [choose(values, n, False) for n in (1, 3, 4, 8, 9)] == [0, None, 2, 3, None]
    assert check_values([1, 2, 4]) == [1, 2, 4]
    for bad in ([], [0, 1], [2, 2], [4, 2]):
        with pytest.raises(ExportError):
            check_values(bad)


def bucket(tmp_path, n, static_at=0x900000):
    """The analysis of one bucket: x (n x 64 floats) -> t0 = x*w -> out0 (n x 64), with a
    weight w, an intermediate t0 of n rows and a static block (the same memory in every
    bucket)."""
    bufs = Buffers()
    x = bufs.add(name="in0", size=256 * n, role="input", dtype="f32", shape=[n, 64], ranges={0: 0x10000})
    w = bufs.add(name="w_w", size=256, role="weight", dtype="f32", shape=[64], tensor="w", ranges={0: 0x30000})
    t = bufs.add(name="t0", size=256 * n, role="intermediate", ranges={0: 0x40000})
    s = bufs.add(name="t1", size=512, role="weight", static=True, tensor="__static_1", ranges={0: static_at})
    y = bufs.add(name="out0", size=256 * n, role="output", dtype="f32", shape=[n, 64], ranges={0: 0x20000})
    k = Kernel(symbol="scale", layout=[(0, 8), (8, 4), (12, 4)], ptr_words={(0, 0, "abs64")},
               module=scale_module(tmp_path))

    def launch(i, buf, off=0):
        return Node(kind="kernel", func=1, grid=[n, 1, 1], block=[64, 1, 1], smem=0, index=i,
                    args=[("ptr", buf, off), ("value", struct.pack("<f", 2.0)), ("value", struct.pack("<I", 64 * n))])
    nodes = [launch(0, x), launch(1, w), launch(2, t), launch(3, s), launch(4, y)]
    return Analysis(capA=SimpleNamespace(reads=[], edges=[(0, 1)]), bufs=bufs, nodes=nodes,
                    edges=[(i, i + 1) for i in range(4)], kernels={1: k}, scalars=[],
                    report={"nodes": 5, "edges": 4}, outputs=[f"out{n}"])


def test_merge_shares_weights_and_names_the_dimension(tmp_path, pgcc_bin):
    values = [1, 2, 4]
    analyses = [bucket(tmp_path, n) for n in values]
    a = merge(analyses, values, "batch", True, setter_kernel(str(tmp_path)))
    names = [b.name for b in a.bufs.list]
    assert names.count("in0") == 1 and names.count("out0") == 1 and names.count("w_w") == 1
    assert {"b1_t0", "b2_t0", "b4_t0", "b1_t1"} <= set(names) and "b2_t1" not in names  # the static block once
    x = next(b for b in a.bufs.list if b.name == "in0")
    assert x.shape == ["batch", 64] and x.size == 256 * 4
    assert [n.index for n in a.nodes] == ["bset", "bswitch"] and a.edges == [("bset", "bswitch")]
    switch = a.nodes[1]
    assert switch.kind == "switch" and [g for g, _, _ in switch.bodies] == ["bucket_1", "bucket_2", "bucket_4"]
    # every bucket's nodes point at the merged buffers
    for _, body, edges in switch.bodies:
        assert body[0].args[0][1] is x
        assert edges[0][0].startswith("b")
    assert a.outputs == ["out4"] and a.dims == [{"name": "batch", "values": [1, 2, 4], "pad": True}]
    assert len(a.kernels) == 2 and (tmp_path / "kernels" / "pgcc_bucket.cu").read_text() == SETTER_SOURCE

    used = {id(b) for n in a.nodes for b in node_buffers(n)}
    text = graph_text("bk", a.kernels, a.bufs, used, a.nodes, a.edges, "sm_90", scalars=a.scalars,
                      conditions=a.conditions, dims=a.dims)
    assert "dim batch values [1, 2, 4] pad;" in text
    assert "buffer in0 size 1024 align 256 role input dtype f32 shape [batch, 64];" in text
    assert "scalar batch_bucket type u32 bucket batch;" in text
    assert "node nbset kernel pgcc_bucket_set grid [1, 1, 1] block [1, 1, 1] smem 0 args [c_batch, batch_bucket];" \
        in text
    assert "node nbswitch conditional type switch condition c_batch bucket batch bodies [bucket_1, bucket_2, " \
        "bucket_4];" in text
    assert "graph bucket_2 {\n  node nb2_0 kernel scale grid [2, 1, 1]" in text
    (tmp_path / "bk.graph").write_text(text)
    write_safetensors(tmp_path / "bk.safetensors", [("w", "f32", [64], bytes(256)),
                                                    ("__b1__static_1", "u8", [512], bytes(512))])
    r = subprocess.run([pgcc_bin, "--emit=graph", str(tmp_path / "bk.graph"), "-o", str(tmp_path / "again.graph")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([pgcc_bin, str(tmp_path / "bk.graph"), "-o", str(tmp_path / "bk.c")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    c = (tmp_path / "bk.c").read_text()
    assert "pgcc_bucket_set" in c and "PGRT_COND_SWITCH" in c
    h = (tmp_path / "bk.h").read_text()
    assert "int64_t batch;" in h
    r = subprocess.run([pgcc_bin, "--report", str(tmp_path / "bk.graph")], capture_output=True, text=True)
    assert r.returncode == 0 and "bucket batch=4" in r.stdout, r.stdout + r.stderr


def test_merge_refuses_what_it_cannot_say(tmp_path):
    a = [bucket(tmp_path, 1), bucket(tmp_path, 2)]
    a[1].bufs.list[1].ranges = {0: 0x31000}  # the weight is another tensor in bucket 2
    with pytest.raises(ExportError, match="another tensor"):
        merge(a, [1, 2], "batch", True, {})
    a = [bucket(tmp_path, 1), bucket(tmp_path, 2)]
    a[0].scalars = [{"name": "v0", "type": "f32", "from": "r0"}]
    with pytest.raises(ExportError, match="reads values back"):
        merge(a, [1, 2], "batch", True, {})
    a = [bucket(tmp_path, 1), bucket(tmp_path, 2)]
    a[1].bufs.list[4].shape = [2, 32]
    with pytest.raises(ExportError, match="output out0"):
        merge(a, [1, 2], "batch", True, {})


def test_a_cluster_inside_a_bucket_makes_the_file_version_2(tmp_path):
    analyses = [bucket(tmp_path, n) for n in (1, 2)]
    analyses[1].nodes[0].cluster = [1, 1, 1]
    a = merge(analyses, [1, 2], "batch", True, setter_kernel(str(tmp_path)))
    used = {id(b) for n in a.nodes for b in node_buffers(n)}
    text = graph_text("bk", a.kernels, a.bufs, used, a.nodes, a.edges, "sm_90", scalars=a.scalars,
                      conditions=a.conditions, dims=a.dims)
    assert "pgcc 2;" in text and "cluster [1, 1, 1]" in text
