"""access_sets.py: Inductor's Triton kernels' signatures (real generated code, and the
driver's parameter layouts of the same kernels) mapped to access sets; every mismatch
gives none; the handles found among Inductor's kernel objects; graphfile.py writes the
sets on the param lines, and pgcc reads them and rebuilds the chain from them."""
import json
import os
import subprocess

from conftest import FIXTURES
from test_graphfile import program

from pgcc.access_sets import access_of, mark_access, signatures_in_source, triton_signatures
from pgcc.graphfile import graph_text
from pgcc.model import Kernel


def gpt2():
    with open(os.path.join(FIXTURES, "inductor_gpt2_meta.txt")) as f:
        sigs = signatures_in_source(f.read())
    with open(os.path.join(FIXTURES, "inductor_gpt2_layouts.json")) as f:
        layouts = {k: [tuple(p) for p in v] for k, v in json.load(f).items()}
    return sigs, layouts


def test_the_signatures_of_real_generated_code():
    sigs, layouts = gpt2()
    assert set(sigs) == set(layouts) and len(sigs) == 9
    sig, consts = sigs["triton_per_fused_add_arange_cat_cumsum_ne_slice_sub_unsqueeze_1"]
    assert sig == {"out_ptr0": "*i64", "xnumel": "constexpr", "r0_numel": "i32", "XBLOCK": "constexpr"}
    assert consts == ("xnumel",)


def test_each_pointer_by_its_name_each_kernel_of_gpt2():
    sigs, layouts = gpt2()
    want = {"in_ptr": "r", "out_ptr": "w", "in_out_ptr": "rw"}
    for name, (sig, consts) in sigs.items():
        layout = layouts[name]
        got = access_of(sig, layout, consts)
        passed = [(n, t) for n, t in sig.items() if t != "constexpr"]
        assert len(layout) == len(passed) + 2, name  # Triton 3.6: global and profile scratch appended
        pointers = [(n, off) for (n, t), (off, _) in zip(passed, layout) if t.startswith("*")]
        assert pointers and got == {off: want[n.rstrip("0123456789")] for n, off in pointers}, name
        assert all(off not in got for off, _ in layout[len(passed):])  # the scratch pointers: none
    # one by hand: in_ptr0..4 read, out_ptr2 written, the two i32 and the scratch pointers not
    red = access_of(*sigs["triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0"][:1],
                    layouts["triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0"])
    assert red == {0: "r", 8: "r", 16: "r", 24: "r", 32: "r", 40: "w"}


def test_a_mismatch_gives_nothing():
    sig = {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
    assert access_of(sig, [(0, 8), (8, 8), (16, 4)]) == {0: "r", 8: "w"}
    assert access_of(sig, [(0, 8), (8, 8), (16, 4), (24, 8)]) == {0: "r", 8: "w"}
    assert access_of(sig, [(0, 8), (8, 8), (16, 4), (24, 8), (32, 8), (40, 8)]) == {}  # three more
    assert access_of(sig, [(0, 8), (8, 8), (16, 4), (24, 4)]) == {}  # a 4-byte one more: no scratch pointer
    assert access_of(sig, [(0, 8), (8, 8)]) == {}                    # fewer
    assert access_of(sig, [(0, 8), (8, 8), (16, 8)]) == {}           # xnumel of 8 bytes: not this kernel
    assert access_of(sig, [(0, 8), (8, 4), (16, 4)]) == {}           # a pointer of 4
    assert access_of({"in_ptr0": "*fp32", "d": "nvTmaDesc"}, [(0, 8), (64, 128)]) == {}  # a size not known
    # a constant Inductor gave as such is not passed; a pointer of another name is not annotated
    assert access_of({"in_out_ptr0": "*bf16", "arg_A": "*bf16", "ks0": "i64", "xnumel": "i32"},
                     [(0, 8), (8, 8), (16, 4)], ("ks0",)) == {0: "rw"}


class _Compiled:
    def __init__(self, function):
        self.function = function


class _Launcher:
    def __init__(self, function):
        self.bin = _Compiled(function)


class _Autotuner:
    def __init__(self, sig, handles, constants=None, arg_names=None):
        self.triton_meta = {"signature": sig, "constants": constants or {}}
        self.launchers = [_Launcher(h) for h in handles]
        if arg_names:
            self.fn = type("JIT", (), {"arg_names": arg_names})()


def test_the_handles_of_inductors_kernel_objects():
    a = _Autotuner({"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}, [0x7001, 0x7002])
    b = _Autotuner({0: "*fp16", 1: "i32"}, [0x7003], {}, ["in_out_ptr0", "n"])  # keyed by position
    c = _Autotuner({"in_ptr0": "*fp32"}, [0x7004])
    d = _Autotuner({"out_ptr0": "*fp32"}, [0x7004])  # the same handle, another signature: neither
    sigs = triton_signatures()
    assert sigs[0x7001] == sigs[0x7002] == ({"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}, ())
    assert sigs[0x7003] == ({"in_out_ptr0": "*fp16", "n": "i32"}, ())
    assert 0x7004 not in sigs
    kernels = {0x7001: Kernel(symbol="triton_poi_fused_add_0", layout=[(0, 8), (8, 8), (16, 4), (24, 8), (32, 8)]),
               0x7002: Kernel(symbol="add_kernel", layout=[(0, 8), (8, 8), (16, 4)]),  # a user's: not Inductor's names
               0x7003: Kernel(symbol="triton_poi_fused_relu_1", layout=[(0, 8)]),  # its i32 missing: no match
               0x7005: Kernel(symbol="gemv", layout=[(0, 152)])}
    assert mark_access(kernels, sigs) == 1
    assert kernels[0x7001].access == {0: "r", 8: "w"}
    assert kernels[0x7002].access == {} and kernels[0x7003].access == {} and kernels[0x7005].access == {}
    del a, b, c, d


def test_written_on_the_param_lines_and_widened(tmp_path, pgcc_bin):
    kernels, bufs, used, nodes, edges = program(tmp_path)
    text = graph_text("p", kernels, bufs, used, nodes, edges, "sm_90")
    assert "access" not in text
    kernels[1].access = {0: "rw"}
    text = graph_text("p", kernels, bufs, used, nodes, edges, "sm_90")
    assert "kernel scale symbol \"scale\" module m_scale {\n  param 0 8 ptr access rw;\n  param 8 4 u32;\n" in text
    path = tmp_path / "p.graph"
    path.write_text(text)
    back = subprocess.run([pgcc_bin, "--emit=graph", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert "  param 0 8 ptr access rw;\n" in back.stdout
    # a chain of two kernels on their own buffers, annotated: pgcc rebuilds it from the sets
    chain = text.replace("graph main {", "graph main {").split("graph main {")[0] + (
        "graph main {\n  node a kernel scale grid [1, 1, 1] block [256, 1, 1] smem 0 args [in0, 2, 256] gpu_us 50;\n"
        "  node b kernel scale grid [1, 1, 1] block [256, 1, 1] smem 0 args [out0, 2, 256] gpu_us 50;\n"
        "  a -> b;\n}\n")
    path.write_text(chain)
    r = subprocess.run([pgcc_bin, "--report=json", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    widen = json.loads(r.stdout)["widen"]
    assert widen["ran"] and widen["kept"] and widen["width"] == 2


def test_the_layouts_are_weighed_on_the_serial_plan(tmp_path, pgcc_bin):
    """slot_layout.arena_bytes: the arena of the plan on the captured order, where widening
    kept a plan of its own (two branches side by side on bytes the serial plan shared)."""
    from pgcc.slot_layout import arena_bytes
    nodes = "".join(f"  node {n} kernel k grid [2] block [64] args [{a}, {b}] gpu_us 10;\n"
                    for n, a, b in (("a", "x", "t0"), ("b", "t0", "y"), ("c", "x", "t1"), ("d", "t1", "z")))
    text = ("pgcc 1;\nkernel k symbol \"k\" { param 0 8 ptr access r; param 8 8 ptr access w; }\n"
            "buffer x size 4096 role input;\nbuffer y size 4096 role output;\nbuffer z size 4096 role output;\n"
            "buffer t0 size 4096 role intermediate;\nbuffer t1 size 4096 role intermediate;\n"
            "graph g {\n" + nodes + "  a -> b;\n  b -> c;\n  c -> d;\n}\n")
    path = tmp_path / "two.graph"
    path.write_text(text)
    rep = json.loads(subprocess.run([pgcc_bin, "--report=json", str(path)], capture_output=True, text=True).stdout)
    assert rep["widen"]["own_plan"] and rep["arena_bytes"] == 8192  # the branches apart
    assert arena_bytes(str(path)) == 4096
