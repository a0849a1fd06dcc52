"""collectives.py: NCCL kernel names read (the export refuses an NCCL kernel it did not
record), a recorded all-reduce as a libcall node in the place of its marker, and the
result written as .graph that pgcc reads and compiles (staging a collective on an
output through the arena)."""
import subprocess

import pytest
from conftest import scale_module

from pgcc.collectives import kernel_collective, libcall
from pgcc.errors import ExportError
from pgcc.graphfile import graph_text, node_buffers
from pgcc.model import Kernel, Node
from pgcc.relocate import Buffers
from pgcc.weights import write_safetensors

PROBED = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"


def test_kernel_names():
    assert kernel_collective(PROBED) == {"fn": "ncclAllReduce", "op": "sum", "dtype": "f32"}
    assert kernel_collective("ncclDevKernel_AllGather_RING_LL") == {"fn": "ncclAllGather", "op": None,
                                                                    "dtype": None}
    assert kernel_collective("_Z40ncclDevKernel_ReduceScatter_Max_bf16_RING_LL")["dtype"] == "bf16"
    assert kernel_collective("triton_poi_fused_mul_0") is None


def probed(tmp_path, on_output=False):
    """What analyse makes of the probe's capture: a GEMM-like kernel into t0 (node 1), the
    recorded all-reduce where its marker memset was (node 3), a kernel into out0 (node 5);
    with on_output, the all-reduce is in place on out0, as Inductor writes it."""
    module = scale_module(tmp_path)
    bufs = Buffers()
    x = bufs.add(name="in0", size=4096, role="input", dtype="f32", shape=[8, 128], ranges={0: 0x10000})
    t = bufs.add(name="t0", size=8192, role="intermediate", ranges={0: 0x40000})
    y = bufs.add(name="out0", size=8192, role="output", dtype="f32", shape=[8, 256], ranges={0: 0x20000})
    k = Kernel(symbol="scale", layout=[(0, 8), (8, 4), (12, 4)], ptr_words={(0, 0, "abs64")}, module=module)

    def launch(i, buf):
        return Node(kind="kernel", func=1, grid=[1, 1, 1], block=[64, 1, 1], smem=0, index=i,
                    args=[("ptr", buf, 0), ("value", bytes(4)), ("value", bytes(4))])
    end = (y, 0) if on_output else (t, 0)
    call = {"fn": "ncclAllReduce", "send": end, "recv": end, "count": 2048, "dtype": "f32", "op": "sum"}
    comm = {"name": "world", "ranks": 2}
    nodes = [launch(1, x), libcall(call, 3, comm), launch(5, y)]
    return bufs, {1: k}, nodes, [(1, 3), (1, 5), (3, 5)], comm


def written_and_compiled(tmp_path, pgcc_bin, on_output=False):
    """probed()'s program written as .graph and compiled to C by pgcc: (the .graph's
    text, pgcc --report's output)."""
    bufs, kernels, nodes, edges, comm = probed(tmp_path, on_output)
    used = {id(b) for n in nodes for b in node_buffers(n)}
    text = graph_text("tp", kernels, bufs, used, nodes, edges, "sm_90", comms=[comm])
    (tmp_path / "tp.graph").write_text(text)
    write_safetensors(tmp_path / "tp.safetensors", [])
    r = subprocess.run([pgcc_bin, str(tmp_path / "tp.graph"), "-o", str(tmp_path / "tp.c")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([pgcc_bin, "--report", str(tmp_path / "tp.graph")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return text, r.stdout


def test_a_recorded_all_reduce_is_a_libcall_pgcc_compiles(tmp_path, pgcc_bin):
    _, _, nodes, _, _ = probed(tmp_path)
    assert [b.name for b in node_buffers(nodes[1])] == ["t0", "t0"]
    text, report = written_and_compiled(tmp_path, pgcc_bin)
    assert "comm world ranks 2;" in text
    assert ('  node n3 libcall fn "ncclAllReduce" comm world send t0 recv t0 count 2048 dtype f32 op sum;'
            in text)
    assert "const pgrt_nccl_id *id, int rank" in (tmp_path / "tp.h").read_text()
    assert "collective n3: ncclAllReduce on comm world (2 ranks)" in report and "staged" not in report, report


def test_a_reduction_nccl_lacks_is_refused():
    with pytest.raises(ExportError, match="reduction 'xor' is not one NCCL has"):
        libcall({"fn": "ncclAllReduce", "send": None, "recv": None, "count": 1, "dtype": "f32", "op": "xor"}, 3,
                {"name": "world", "ranks": 2})


def test_a_collective_on_an_output_is_written_as_is_and_pgcc_stages_it(tmp_path, pgcc_bin):
    """Inductor all-reduces the output in place: the export writes the collective on the
    output, and pgcc (compiler/stage.c) routes it through an arena buffer of its own,
    since libpgrt captures a collective once, at init."""
    text, report = written_and_compiled(tmp_path, pgcc_bin, on_output=True)
    assert ('  node n3 libcall fn "ncclAllReduce" comm world send out0 recv out0 count 2048 dtype f32 op sum;'
            in text)
    assert "staged through 8.00 KiB of arena (in place on 'out0', a per-call buffer)" in report, report


def test_nccl_id_comes_from_rank_0_and_needs_torch_distributed():
    import ctypes
    from types import SimpleNamespace

    from pgcc.nccl_id import nccl_id
    sent = []

    def dist(init=True, world=2, rank=0):
        return SimpleNamespace(is_available=lambda: True, is_initialized=lambda: init, get_world_size=lambda: world,
                               get_rank=lambda: rank, broadcast_object_list=lambda box, src: sent.append((box[0], src)))

    def unique_id(buf):
        buf.raw = b"\x07" * 128
        return 0
    prog = SimpleNamespace(name="tp", comms=[("c0", 2)], err=lambda: "?",
                           lib=SimpleNamespace(pgrt_nccl_unique_id=unique_id))
    prog.torch = SimpleNamespace(distributed=dist())
    (addr,) = nccl_id(prog)
    assert prog.rank == 0 and sent == [(b"\x07" * 128, 0)] and ctypes.string_at(addr, 128) == b"\x07" * 128
    prog.torch = SimpleNamespace(distributed=dist(init=False))
    with pytest.raises(ExportError, match="initialise torch.distributed first"):
        nccl_id(prog)
    prog.torch = SimpleNamespace(distributed=dist(world=4))
    with pytest.raises(ExportError, match="exported for 2 ranks, running on 4"):
        nccl_id(prog)
