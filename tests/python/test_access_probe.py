"""access_probe: which buffers a library GEMM writes, from its nodes run alone with their
buffers filled -- here over a stand-in device (a bytearray, and kernels written in
Python), which is all the probe asks of the GPU -- and the answer on the param lines as
one access per pointer, which pgcc reads and widens by."""
import json
import struct
import subprocess

import pytest

from pgcc.access_probe import FILLS, NODES_PER_KERNEL, is_gemm, join, pointers, probe_access, regions
from pgcc.graphfile import access_text
from pgcc.model import Buffer, Kernel, Node, Relocation
from standin_device import BASE, Memory

def buf(name, at, size=256, role="intermediate", **kw):
    return Buffer(name=name, size=size, role=role, ranges={0: BASE + at}, **kw)


def gemm(dev, w, x, out):
    """A GEMM's stand-in: out from w and x -- and, as a real one can, its fill back when both
    operands hold the first fill (0.0 of 0.0)."""
    a, b = dev.read(w.ranges[0], 1)[0], dev.read(x.ranges[0], 1)[0]
    v = a if a == b == FILLS[0] else (a * 7 + b) & 0xFF
    dev.fill(out.ranges[0], v, out.size)


def half_write(dev, w, x, out):
    """A GEMM writing the first half of its buffer only (a slice of a concatenation's)."""
    keep = dev.read(out.ranges[0] + out.size // 2, out.size // 2)
    gemm(dev, w, x, out)
    dev.write(out.ranges[0] + out.size // 2, keep)


NVJET = "nvjet_sm90_tst_64x8_64x16_2x2_h_bz_TNT"
# one 40-byte struct: w at 0, x at 8, out at 16, w again at 24 (as lo32 and hi32 halves), out at 32
LAYOUT = [(0, 40)]


def node(i, w, x, out):
    relocs = [Relocation(0, w, 0, "abs64"), Relocation(8, x, 0, "abs64"), Relocation(16, out, 0, "abs64"),
              Relocation(24, w, 0, "lo32"), Relocation(28, w, 0, "hi32"), Relocation(32, out, 64, "abs64")]
    return Node(kind="kernel", index=i, func=0x1, args=[("bytes", bytes(40), relocs)])


def program(dev, n=3):
    """q, k, v projections: each reads x and its own weight, writes its own output."""
    x = buf("x", 0, role="input")
    ws = [buf(f"w{j}", 0x1000 * (j + 1), role="weight") for j in range(n)]
    outs = [buf(f"o{j}", 0x8000 + 0x1000 * j) for j in range(n)]
    nodes = []
    for j in range(n):
        nodes.append(node(j, ws[j], x, outs[j]))
        dev.kernels[j] = lambda d, _blob, w=ws[j], o=outs[j]: gemm(d, w, x, o)
    return {0x1: Kernel(symbol=NVJET, layout=LAYOUT)}, nodes, x, ws, outs


def test_each_pointer_read_or_written_and_memory_as_it_was():
    dev = Memory()
    dev.mem[:] = bytes(range(256)) * (len(dev.mem) // 256)
    before = bytes(dev.mem)
    kernels, nodes, *_ = program(dev)
    assert probe_access(kernels, nodes, set(), dev) == 1
    # the output written whole, whatever it held: overwritten ("o")
    assert kernels[0x1].access == {(0, 0): "r", (0, 8): "r", (0, 16): "o", (0, 24): "r", (0, 28): "r",
                                   (0, 32): "o"}
    assert dev.mem == before  # every buffer written back
    assert dev.launched == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # each node once per fill, and once more
    inner = [(0, "abs64"), (8, "abs64"), (16, "abs64"), (24, "lo32"), (28, "hi32"), (32, "abs64")]
    assert access_text(kernels[0x1], 0, inner) == " access [r, r, o, r, r, o]"


def test_read_and_written_where_the_output_depends_on_what_it_held():
    def accumulate(d, w, x, out):  # beta = 1: out += w x
        old = d.read(out.ranges[0], out.size)
        gemm(d, w, x, out)
        d.write(out.ranges[0], bytes((a + b) & 0xFF for a, b in zip(old, d.read(out.ranges[0], out.size))))

    for kernel in (accumulate, half_write):
        dev = Memory()
        kernels, nodes, x, ws, outs = program(dev, 1)
        dev.kernels[0] = lambda d, _blob, k=kernel: k(d, ws[0], x, outs[0])
        assert probe_access(kernels, nodes, set(), dev) == 1
        assert kernels[0x1].access[(0, 16)] == "rw" and kernels[0x1].access[(0, 8)] == "r", kernel.__name__


def test_the_second_fill_finds_a_gemm_that_wrote_its_fill_back():
    dev = Memory()
    kernels, nodes, x, ws, outs = program(dev, 1)
    # written only where the operands differ from the first fill: the first run changes nothing
    assert probe_access(kernels, nodes, set(), dev) == 1
    assert kernels[0x1].access[(0, 16)] == "o"


def test_what_is_not_run():
    dev = Memory()
    kernels, nodes, x, ws, outs = program(dev, 1)
    kernels[0x1].symbol = "vectorized_elementwise_kernel"
    assert not is_gemm(kernels[0x1].symbol) and probe_access(kernels, nodes, set(), dev) == 0
    assert not is_gemm("cutlass_grouped_gemm_ptr_array") and is_gemm("_ZN7cutlass7Kernel2I42cutlass_80_simt_sgemm")
    assert not is_gemm("_Z39fmha_cutlassF_f32_aligned_64x64_rf_sm80N22PyTorchMemEffAttention15AttentionKernel")
    assert is_gemm("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x128x8_stage3_warpsize1x2x1_ffma_aligna4")
    assert not is_gemm("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc")
    kernels[0x1].symbol = NVJET
    assert probe_access(kernels, nodes, {0}, dev) == 0  # a node whose bytes the export fixed
    # a workspace, host memory, buffers that overlap, one holding addresses of them: not run
    ws_block = buf("ws", 0x9000, role="workspace")
    assert "a pointer into ws (workspace)" == regions(pointers(node(0, ws_block, x, outs[0]), LAYOUT))
    host = buf("h", 0x9000, role="weight", host=b"\0" * 8)
    assert "host memory" in regions(pointers(node(0, host, x, outs[0]), LAYOUT))
    inside = buf("inside", 0x8000 + 128)
    assert regions(pointers(node(0, ws[0], inside, outs[0]), LAYOUT)) == "two of its buffers overlap"
    dev.write(ws[0].ranges[0] + 8, struct.pack("<Q", outs[0].ranges[0] + 16))
    log = []
    assert probe_access(kernels, nodes, set(), dev, log.append) == 0 and dev.launched == []
    assert kernels[0x1].access == {} and "holds addresses" in log[0]


def test_the_copies_have_a_budget(monkeypatch):
    import pgcc.access_probe as probe
    dev = Memory()
    kernels, nodes, *_ = program(dev, 3)
    monkeypatch.setattr(probe, "PROBE_TOTAL", 5 * 3 * 256 * 2)  # two nodes' copies: 5 x 3 buffers of 256
    assert probe_access(kernels, nodes, set(), dev) == 1
    assert sorted(set(dev.launched)) == [0, 1]  # (the third node's copies over the budget: not run)
    dev, log = Memory(), []
    kernels, nodes, *_ = program(dev, 3)
    monkeypatch.setattr(probe, "PROBE_TOTAL", 100)
    assert probe_access(kernels, nodes, set(), dev, log.append) == 0 and dev.launched == []
    assert "probe copies spent" in log[0]


def test_a_launch_that_never_finishes_is_an_export_error_and_copies_nothing_back():
    from pgcc.errors import ExportError
    dev = Memory()
    kernels, nodes, *_ = program(dev, 1)
    events = []

    def hang(i, what):
        events.append("launch")
        raise ExportError(f"cannot export: node {i} ({what}) did not finish")
    dev.launch, dev.write = hang, lambda a, data: events.append("write")
    with pytest.raises(ExportError, match="did not finish"):
        probe_access(kernels, nodes, set(), dev)
    assert events[-1] == "launch"  # nothing written after it (a copy would wait behind the kernel for ever)


def test_addresses_found_in_a_buffer():
    from pgcc.access_probe import holds_addresses
    spans = [(BASE, 256), (BASE + (5 << 32), 512)]
    data = bytearray(4096)
    assert not holds_addresses(bytes(data), spans)
    struct.pack_into("<Q", data, 1024, BASE + (5 << 32) + 100)  # inside the second span, aligned
    assert holds_addresses(bytes(data), spans)
    data = bytearray(4096)
    struct.pack_into("<Q", data, 1028, BASE + 8)  # not aligned: a float's bytes, say
    struct.pack_into("<Q", data, 2048, BASE + 256)  # one past the first span
    struct.pack_into("<II", data, 3000, 0xFFFF_FFFF, BASE >> 32)  # a high half, the low one far off
    assert not holds_addresses(bytes(data), spans)


def test_one_answer_for_every_node_of_a_kernel():
    dev = Memory()
    kernels, nodes, x, ws, outs = program(dev, NODES_PER_KERNEL + 2)
    assert probe_access(kernels, nodes, set(), dev) == 1
    # an overwrite is each node's to say: every node run
    assert sorted(set(dev.launched)) == list(range(NODES_PER_KERNEL + 2)) and kernels[0x1].access[(0, 16)] == "o"
    # one node writing a slice of its buffer (a concatenation's): no overwrite for the kernel
    dev = Memory()
    kernels, nodes, x, ws, outs = program(dev, NODES_PER_KERNEL + 2)
    last = NODES_PER_KERNEL + 1
    dev.kernels[last] = lambda d, _blob: half_write(d, ws[last], x, outs[last])
    probe_access(kernels, nodes, set(), dev)
    assert kernels[0x1].access[(0, 16)] == "rw" and kernels[0x1].access[(0, 8)] == "r"
    # one node not run (its bytes fixed): the others' overwrite is not its
    dev = Memory()
    kernels, nodes, *_ = program(dev, NODES_PER_KERNEL + 2)
    probe_access(kernels, nodes, {2}, dev)
    assert 2 not in dev.launched and kernels[0x1].access[(0, 16)] == "rw"
    # no overwrite to learn: NODES_PER_KERNEL nodes say it all
    dev = Memory()
    kernels, nodes, x, ws, outs = program(dev, NODES_PER_KERNEL + 2)
    for j in range(NODES_PER_KERNEL + 2):
        dev.kernels[j] = lambda d, _blob, j=j: half_write(d, ws[j], x, outs[j])
    probe_access(kernels, nodes, set(), dev)
    assert sorted(set(dev.launched)) == list(range(NODES_PER_KERNEL)) and kernels[0x1].access[(0, 16)] == "rw"
    # a pointer written by some node, or missing from one, is read and written
    assert join([{1: "r", 2: "r"}, {1: "rw", 2: "r"}]) == {1: "rw", 2: "r"}
    assert join([{1: "r", 2: "r"}, {1: "r"}]) == {1: "r", 2: "rw"}
    assert join([{1: "o", 2: "o"}, {1: "o", 2: "r"}]) == {1: "o", 2: "rw"}
    k = Kernel(symbol=NVJET, layout=LAYOUT, access={(0, 0): "r", (0, 8): "r"})
    assert access_text(k, 0, [(0, "abs64"), (8, "abs64")]) == " access r"
    assert access_text(k, 0, [(0, "abs64"), (8, "abs64"), (16, "abs64")]) == " access [r, r, rw]"
    assert access_text(Kernel(symbol="k", layout=[(0, 8)], access={0: "w"}), 0, [(0, "abs64")]) == " access w"


def test_pgcc_widens_by_the_answer(tmp_path, pgcc_bin):
    dev = Memory()
    kernels, nodes, *_ = program(dev)
    probe_access(kernels, nodes, set(), dev)
    inner = [(0, "abs64"), (8, "abs64"), (16, "abs64"), (24, "lo32"), (28, "hi32"), (32, "abs64")]
    ptrs = "0, 8, 16, lo32 24, hi32 28, 32"
    head = (f"pgcc 2;\nkernel gemm symbol \"{NVJET}\" {{\n  param 0 40 bytes ptrs [{ptrs}]"
            f"{access_text(kernels[0x1], 0, inner)};\n}}\n"
            "buffer x size 256 role input;\n" + "".join(f"buffer w{j} size 256 role weight;\n" for j in range(3)) +
            "".join(f"buffer o{j} size 256 role output;\n" for j in range(3)))
    body = "".join(f"  node n{j} kernel gemm grid [1, 1, 1] block [128, 1, 1] smem 0 args [[\"{'0' * 80}\", w{j}, x, "
                   f"o{j}, w{j}, w{j}, o{j}+64]] gpu_us 20;\n" for j in range(3))
    path = tmp_path / "g.graph"
    path.write_text(head + "graph main {\n" + body + "  n0 -> n1;\n  n1 -> n2;\n}\n")
    r = subprocess.run([pgcc_bin, "--report=json", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    widen = json.loads(r.stdout)["widen"]
    assert widen["ran"] and widen["kept"] and widen["width"] == 3
    # the old single access (every pointer read and written) keeps the chain
    path.write_text((head + "graph main {\n" + body + "  n0 -> n1;\n  n1 -> n2;\n}\n").replace(
        "access [r, r, o, r, r, o]", "access rw"))
    r = subprocess.run([pgcc_bin, "--report=json", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["widen"]["width"] == 1


@pytest.mark.parametrize("fill", FILLS)
def test_fills_are_finite_numbers(fill):
    # (a fill must not be NaN in bf16, fp16 or fp32: a GEMM of NaNs writes NaN, maybe the fill's own bits)
    import math
    v16 = struct.unpack("<e", bytes([fill, fill]))[0]
    v32 = struct.unpack("<f", bytes([fill] * 4))[0]
    bf16 = struct.unpack("<f", bytes([0, 0, fill, fill]))[0]
    assert all(math.isfinite(v) and v != 0 for v in (v16, v32, bf16))
