"""graphfile.py: a .graph written from synthetic export data (relocate.py's buffers, a
real cubin as the module, weights by weights.py) that pgcc reads: --stats counts it,
--emit=graph writes it back, and that reads back to the same bytes; pgcc's C is emitted."""
import hashlib
import os
import shutil
import struct
import subprocess
from dataclasses import replace

from conftest import FIXTURES

from pgcc.graphfile import graph_text, ident, node_buffers, write_graph
from pgcc.model import Kernel, Node
from pgcc.relocate import Buffers, Relocator
from pgcc.weights import write_safetensors


def program(tmp_path):
    os.makedirs(tmp_path / "kernels")
    cubin = os.path.join(FIXTURES, "scale.cubin")
    shutil.copy(cubin, tmp_path / "kernels" / "scale.cubin")
    digest = hashlib.sha256(open(cubin, "rb").read()).hexdigest()
    bufs = Buffers()
    bufs.add(name="in0", size=1024, role="input", dtype="f32", shape=[256], ranges={0: 0x10000, 1: 0x90000})
    bufs.add(name="out0", size=1024, role="output", dtype="f32", shape=[256], ranges={0: 0x20000, 1: 0xA0000})
    bufs.add(name="w_a", size=1024, role="weight", dtype="f32", shape=[256], tensor="a", ranges={0: 0x30000, 1: 0x30000})
    rel = Relocator(bufs, [[(0x40000, 4096)], [(0xB0000, 4096)]], [[(0x40000, 4096)], [(0xB0000, 4096)]])
    k = Kernel(symbol="scale", layout=[(0, 8), (8, 4), (12, 4)], ptr_words=set(),
               module={"name": "m_scale", "kind": "cubin", "file": "kernels/scale.cubin", "sha256": digest})
    nodes = []
    for i, (pa, pb) in enumerate([(0x10000, 0x90000), (0x40000, 0xB0000), (0x20000, 0xA0000)]):
        blobs = [struct.pack("<QfI", p, 2.0, 256) for p in (pa, pb)]
        args = rel.kernel_args(k.layout, blobs, f"node {i}", k.ptr_words)
        nodes.append(Node(kind="kernel", func=1, grid=[1, 1, 1], block=[256, 1, 1], smem=0, args=args,
                          index=i))
    nodes.append(Node(kind="memcpy", src=rel.resolve((0x10000, 0x90000), "cp"),
                      dst=rel.resolve((0x40000, 0xB0000), "cp"), width=1024, index=3))
    nodes.append(Node(kind="memset", dst=rel.resolve((0x30000, 0x30000), "ms"), value=0, elem=4,
                      width=4, index=4))
    assert rel.problems == []
    used = {id(b) for n in nodes for b in node_buffers(n)}
    write_safetensors(tmp_path / "p.safetensors", [("a", "f32", [256], b"\0" * 1024)])
    return {1: k}, bufs, used, nodes, [(0, 1), (1, 2), (3, 1), (4, 2)]


def pgcc(pgcc_bin, *args, cwd=None):
    r = subprocess.run([pgcc_bin, *map(str, args)], capture_output=True, text=True, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_graph_text(tmp_path):
    kernels, bufs, used, nodes, edges = program(tmp_path)
    text = graph_text("p", kernels, bufs, used, nodes, edges, "sm_90", origin="a test")
    assert text.startswith("# p: exported by pgcc-export from a test\npgcc 1;\narch sm_90;\n")
    assert "kernel scale symbol \"scale\" module m_scale {\n  param 0 8 ptr;\n  param 8 4 u32;\n  param 12 4 u32;\n}" \
        in text
    assert "buffer t0 size 4096 align 256 role intermediate;" in text
    assert 'buffer w_a size 1024 align 256 role weight dtype f32 shape [256] weights w tensor "a";' in text
    assert "  node n1 kernel scale grid [1, 1, 1] block [256, 1, 1] smem 0 args [t0, 1073741824, 256];" in text
    assert "  node n3 memcpy dir dtod src in0 dst t0 width 1024;" in text
    assert "  n3 -> n1;" in text


def test_pgcc_reads_it_and_round_trips(tmp_path, pgcc_bin):
    kernels, bufs, used, nodes, edges = program(tmp_path)
    write_graph(tmp_path / "p.graph", "p", kernels, bufs, used, nodes, edges, "sm_90", origin="a test")
    assert pgcc(pgcc_bin, "--stats", tmp_path / "p.graph").split() == \
        ["nodes=5", "edges=4", "graphs=1", "kernels=3"]  # (kernel nodes)
    pgcc(pgcc_bin, "--emit=graph", "-o", tmp_path / "again.graph", tmp_path / "p.graph")
    pgcc(pgcc_bin, "--emit=graph", "-o", tmp_path / "again2.graph", tmp_path / "again.graph")
    assert (tmp_path / "again.graph").read_bytes() == (tmp_path / "again2.graph").read_bytes()
    assert pgcc(pgcc_bin, "--stats", tmp_path / "again.graph").split()[0] == "nodes=5"
    pgcc(pgcc_bin, tmp_path / "p.graph", "-o", tmp_path / "p.c")
    assert "p_run" in (tmp_path / "p.h").read_text()


def test_pgcc_rejects_a_wrong_module_hash(tmp_path, pgcc_bin):
    kernels, bufs, used, nodes, edges = program(tmp_path)
    kernels[1].module["sha256"] = "0" * 64
    write_graph(tmp_path / "p.graph", "p", kernels, bufs, used, nodes, edges, "sm_90")
    r = subprocess.run([pgcc_bin, str(tmp_path / "p.graph"), "-o", str(tmp_path / "p.c")], capture_output=True)
    assert r.returncode != 0


def test_ident():
    assert ident("layers.0.weight") == "layers_0_weight"
    assert ident("0abc") == "_0abc"


def test_relocation_kinds_and_dontcare_read_back(tmp_path, pgcc_bin):
    """A kernel whose struct holds a whole address at a 4-byte-aligned offset, a split
    address (low and high halves apart) and don't-care bytes: the exporter writes format
    version 2, and pgcc reads it and writes the same relocations back."""
    from pgcc.graphfile import graph_text
    bufs = Buffers()
    x = bufs.add(name="in0", size=1024, role="input", dtype="f32", shape=[256], ranges={0: 0x10000})
    k = Kernel(symbol="split", layout=[(0, 40)], module={"name": "lib", "kind": "library", "library": "libx.so.1"},
               ptr_words={(0, 4, "abs64"), (0, 16, "lo32"), (0, 24, "hi32")}, dontcare={(0, 32, 4), (0, 36, 4)})
    raw = bytes(range(40))
    node = Node(kind="kernel", func=1, grid=[1, 1, 1], block=[32, 1, 1], smem=0, index=0,
                args=[("bytes", raw, [(4, x, 0, "abs64"), (16, x, 8, "lo32"), (24, x, 8, "hi32")])])
    # another launch of the kernel, whose bytes 32..40 are a value it reads: the don't-care
    # ranges are the kernel's (proven for the first launch), its bytes are its own
    other = replace(node, index=1, args=[("bytes", bytes(range(100, 140)), [(4, x, 0, "abs64"), (16, x, 8, "lo32"),
                                                                          (24, x, 8, "hi32")])])
    text = graph_text("m", {1: k}, bufs, {id(x)}, [node, other], [], "sm_90")
    assert "pgcc 2;" in text
    assert "param 0 40 bytes ptrs [4, lo32 16, hi32 24] dontcare [32:8];" in text
    assert '"' + raw.hex() + '", in0, in0+8, in0+8]' in text  # each launch's bytes as given
    assert '"' + bytes(range(100, 140)).hex() + '", in0, in0+8, in0+8]' in text
    (tmp_path / "m.graph").write_text(text)
    write_safetensors(tmp_path / "m.safetensors", [])
    again = pgcc(pgcc_bin, "--emit=graph", str(tmp_path / "m.graph"))
    assert "param 0 40 bytes ptrs [4, lo32 16, hi32 24] dontcare [32:8];" in again
    assert "in0, in0+8, in0+8]" in again


def test_a_slot_another_launch_fills_stays_as_given(tmp_path, pgcc_bin):
    """A struct place that is an address in one launch of a kernel and a constant in
    another (an address table's unused slot holding a stale word): the second launch
    writes it `null`, its bytes as they are, and pgcc patches nothing there."""
    from pgcc.graphfile import graph_text
    bufs = Buffers()
    x = bufs.add(name="in0", size=1024, role="input", dtype="f32", shape=[256], ranges={0: 0x10000})
    k = Kernel(symbol="table", layout=[(0, 16)], module={"name": "lib", "kind": "library", "library": "libx.so.1"},
               ptr_words={(0, 0, "abs64"), (0, 8, "abs64")})
    both = Node(kind="kernel", func=1, grid=[1, 1, 1], block=[32, 1, 1], smem=0, index=0,
                args=[("bytes", bytes(16), [(0, x, 0, "abs64"), (8, x, 64, "abs64")])])
    stale = (0x7F00DEADBEEF).to_bytes(8, "little")
    one = replace(both, index=1, args=[("bytes", bytes(8) + stale, [(0, x, 128, "abs64")])])
    text = graph_text("m", {1: k}, bufs, {id(x)}, [both, one], [], "sm_90")
    assert f'["{(bytes(8) + stale).hex()}", in0+128, null]' in text
    (tmp_path / "m.graph").write_text(text)
    write_safetensors(tmp_path / "m.safetensors", [])
    assert f'"{(bytes(8) + stale).hex()}", in0+128, null]' in pgcc(pgcc_bin, "--emit=graph", str(tmp_path / "m.graph"))


def test_a_0_dimensional_output_keeps_its_shape(tmp_path, pgcc_bin):
    """A training step's loss is a 0-dimensional tensor: `shape []`, read back as such, and
    the generated C's field says 0 dimensions (not unknown), so that pgcc.load makes a
    0-dimensional float output for it."""
    bufs = Buffers()
    out = bufs.add(name="out0", size=4, role="output", dtype="f32", shape=[], ranges={0: 0x10000})
    node = Node(kind="memset", dst=(out, 0), value=0, elem=4, width=1, index=0)
    text = graph_text("m", {}, bufs, {id(out)}, [node], [], "sm_90")
    assert "buffer out0 size 4 align 256 role output dtype f32 shape [];" in text
    (tmp_path / "m.graph").write_text(text)
    write_safetensors(tmp_path / "m.safetensors", [])
    assert "shape [];" in pgcc(pgcc_bin, "--emit=graph", str(tmp_path / "m.graph"))
    c = pgcc(pgcc_bin, str(tmp_path / "m.graph"), "-o", "-")
    assert '.name = "out0", .role = PGRT_FIELD_OUTPUT, .dtype = "f32", .ndim = 0,' in c


def host_read_program(guard):
    """in0 -> kernel 0 -> t0; t0's first f32 read back (copy n1 into host buffer r0, sync
    n2); kernel 3 takes it as an f64 scalar -- or, with guard, only chose the path."""
    bufs = Buffers()
    x = bufs.add(name="in0", size=1024, role="input", dtype="f32", shape=[256], ranges={0: 0x10000})
    t = bufs.add(name="t0", size=1024, role="intermediate", ranges={0: 0x40000})
    y = bufs.add(name="out0", size=1024, role="output", dtype="f32", shape=[256], ranges={0: 0x20000})
    r = bufs.add(name="r0", size=4, role="host", dtype="f32", shape=[])
    k = Kernel(symbol="scale", layout=[(0, 8), (8, 8), (16, 8)], ptr_words={(0, 0, "abs64"), (8, 0, "abs64")},
               module={"name": "lib", "kind": "library", "library": "libx.so.1"})
    s = {"name": "v0_f64", "type": "f64", "from": "r0", "read": 0}
    nodes = [Node(kind="kernel", func=1, grid=[1, 1, 1], block=[256, 1, 1], smem=0, index=0,
                  args=[("ptr", x, 0), ("ptr", t, 0), ("value", struct.pack("<d", 0.5))]),
             Node(kind="read", src=(t, 0), dst=(r, 0), width=4, index=1, read=0,
                  where='model.py:12: m = h.abs().max().item()  # "max"', op="item"),
             Node(kind="sync", index=2, read=0, where='model.py:12: m = h.abs().max().item()  # "max"'),
             Node(kind="kernel", func=1, grid=[1, 1, 1], block=[256, 1, 1], smem=0, index=3,
                  args=[("ptr", t, 0), ("ptr", y, 0), ("value", struct.pack("<d", 1.75))])]
    if guard:
        nodes[2].guard = struct.pack("<f", 1.75)
        scalars = []
    else:
        k.scalar_types = {16: "f64"}
        nodes[3].args[2] = ("scalar", struct.pack("<d", 1.75), s)
        scalars = [s]
    used = {id(b) for n in nodes for b in node_buffers(n)}
    return {1: k}, bufs, used, nodes, [(0, 1), (1, 2), (2, 3)], scalars


def test_a_host_read_and_its_scalar(tmp_path, pgcc_bin):
    """A value read back that a later kernel takes: the copy into a host buffer, the sync,
    the scalar `from` that buffer, the parameter typed as the scalar (and another launch's
    constant there written as a literal of that type); pgcc reads it back."""
    kernels, bufs, used, nodes, edges, scalars = host_read_program(guard=False)
    text = graph_text("h", kernels, bufs, used, nodes, edges, "sm_90", scalars=scalars)
    assert "  param 16 8 f64;" in text
    assert "buffer r0 size 4 role host dtype f32 shape [];" in text
    assert "scalar v0_f64 type f64 from r0;" in text
    assert "  node n1 memcpy dir dtoh src t0 dst r0 width 4;" in text
    assert "  node n2 hostop op sync reason \"model.py:12: m = h.abs().max().item()" in text
    assert "args [in0, t0, 0.5];" in text and "args [t0, out0, v0_f64];" in text
    assert "guard" not in text
    (tmp_path / "h.graph").write_text(text)
    write_safetensors(tmp_path / "h.safetensors", [])
    again = pgcc(pgcc_bin, "--emit=graph", str(tmp_path / "h.graph"))
    assert "scalar v0_f64 type f64 from r0;" in again and "role host" in again


def test_a_host_read_that_chose_the_path_is_guarded(tmp_path, pgcc_bin):
    """A value read back that no kernel takes: a guard after the sync holds the bytes read
    at export, and what waited for the sync waits for the guard."""
    kernels, bufs, used, nodes, edges, scalars = host_read_program(guard=True)
    text = graph_text("h", kernels, bufs, used, nodes, edges, "sm_90", scalars=scalars)
    assert ('  node n2g hostop op guard buffer r0 expect "0000e03f" reason "the value read at model.py:12: '
            "m = h.abs().max().item()  # 'max' chose what ran next\";") in text
    assert "  n2 -> n2g;" in text and "  n2g -> n3;" in text and "  n2 -> n3;" not in text
    assert "  node n1 memcpy dir dtoh src t0 dst r0 width 4;" in text
    assert "'max'" in text  # (a quote in the user's line, made safe)
    (tmp_path / "h.graph").write_text(text)
    write_safetensors(tmp_path / "h.safetensors", [])
    again = pgcc(pgcc_bin, "--emit=graph", str(tmp_path / "h.graph"))
    assert 'op guard buffer r0 expect "0000e03f"' in again


def test_a_value_the_host_computes_is_a_callback_scalar(tmp_path, pgcc_bin):
    """A kernel argument computed on the host from a value read (hostvalues.host_computed):
    `scalar cb0 type f64 callback`, a pgrt_scalar_fn field of the generated NAME_args."""
    kernels, bufs, used, nodes, edges, scalars = host_read_program(guard=False)
    cb = {"name": "cb0", "type": "f64", "callback": True}
    nodes[3].args[2] = ("scalar", struct.pack("<d", 0.25), cb)
    text = graph_text("h", kernels, bufs, used, nodes, edges, "sm_90", scalars=[cb])
    assert "scalar cb0 type f64 callback;" in text and "args [t0, out0, cb0];" in text
    (tmp_path / "h.graph").write_text(text)
    write_safetensors(tmp_path / "h.safetensors", [])
    pgcc(pgcc_bin, str(tmp_path / "h.graph"), "-o", str(tmp_path / "h.c"))
    assert "pgrt_scalar_fn cb0;" in (tmp_path / "h.h").read_text()


def test_module_globals_are_written_and_read_back(tmp_path, pgcc_bin):
    """A module whose library wrote its data objects after loading it (kernel_code.own_images):
    the exporter writes them as the module's globals (format version 2), and pgcc reads
    them back and carries them into the generated C."""
    kernels, bufs, used, nodes, edges = program(tmp_path)
    kernels[1].module["globals"] = [("WINDOW_SIZE", b"\x03\0\0\0"), ("CONV_STRIDE_SIZE", b"\x02\0\0\0")]
    text = graph_text("p", kernels, bufs, used, nodes, edges, "sm_90")
    assert "pgcc 2;" in text
    assert 'globals ["WINDOW_SIZE" "03000000", "CONV_STRIDE_SIZE" "02000000"];' in text
    (tmp_path / "p.graph").write_text(text)
    again = pgcc(pgcc_bin, "--emit=graph", tmp_path / "p.graph", cwd=tmp_path)
    assert 'globals ["WINDOW_SIZE" "03000000", "CONV_STRIDE_SIZE" "02000000"];' in again
    pgcc(pgcc_bin, tmp_path / "p.graph", "-o", tmp_path / "p.c")
    c = (tmp_path / "p.c").read_text()
    assert '"WINDOW_SIZE"' in c and '"CONV_STRIDE_SIZE"' in c


def test_a_pointer_parameter_that_is_a_constant_in_one_launch(tmp_path, pgcc_bin):
    """cuBLASLt's split-K reduction (an AdamW step): parameter 8 is an address in one
    launch and a constant, not null, in another.  It is declared a struct with one
    relocation, so that the second launch keeps its bytes (its relocation null)."""
    bufs = Buffers()
    x = bufs.add(name="in0", size=1024, role="input", dtype="f32", shape=[256], ranges={0: 0x10000})
    k = Kernel(symbol="reduce", layout=[(0, 8), (8, 8)], ptr_words={(0, 0, "abs64"), (8, 0, "abs64")},
               module={"name": "lib", "kind": "library", "library": "libx.so.1"})
    const = bytes.fromhex("0000fc7f00000000")
    one = Node(kind="kernel", func=1, grid=[1, 1, 1], block=[32, 1, 1], smem=0, index=0,
               args=[("ptr", x, 0), ("ptr", x, 64)])
    two = replace(one, index=1, args=[("ptr", x, 0), ("value", const)])
    text = graph_text("v", {1: k}, bufs, {id(x)}, [one, two], [], "sm_90")
    assert "  param 0 8 ptr;\n  param 8 8 bytes ptrs [0];" in text
    assert 'args [in0, ["0000000000000000", in0+64]]' in text
    assert f'args [in0, ["{const.hex()}", null]]' in text
    (tmp_path / "v.graph").write_text(text)
    write_safetensors(tmp_path / "v.safetensors", [])
    again = pgcc(pgcc_bin, "--emit=graph", str(tmp_path / "v.graph"))
    assert f'["{const.hex()}", null]' in again


def test_programmatic_edges_are_written_and_read_back(tmp_path, pgcc_bin):
    """Edges a PDL kernel launch was captured with keep their kind (format version 3)
    where both ends are kernels; pgcc reads them, writes them back and gives the kernel
    its dependency kinds in the C; one that ends at a copy is written as a full one."""
    kernels, bufs, used, nodes, edges = program(tmp_path)
    kinds = {(0, 1): "programmatic", (1, 2): "launch_order", (3, 1): "programmatic"}
    write_graph(tmp_path / "p.graph", "p", kernels, bufs, used, nodes, edges, "sm_90", edge_kinds=kinds)
    text = (tmp_path / "p.graph").read_text()
    assert "\npgcc 3;\n" in text
    assert "  n0 -> n1 programmatic;" in text and "  n1 -> n2 launch_order;" in text
    assert "  n3 -> n1;" in text  # (from a memcpy: full)
    pgcc(pgcc_bin, "--emit=graph", "-o", tmp_path / "again.graph", tmp_path / "p.graph")
    again = (tmp_path / "again.graph").read_text()
    assert "pgcc 3;" in again and "n0 -> n1 programmatic;" in again and "n1 -> n2 launch_order;" in again
    pgcc(pgcc_bin, tmp_path / "p.graph", "-o", tmp_path / "p.c")
    c = (tmp_path / "p.c").read_text()
    assert "p_dep_kinds[]" in c and ".dep_kinds = DEP_KINDS(" in c
    write_graph(tmp_path / "q.graph", "p", kernels, bufs, used, nodes, edges, "sm_90")
    assert "\npgcc 1;\n" in (tmp_path / "q.graph").read_text()  # (none: the version before)
    pgcc(pgcc_bin, tmp_path / "q.graph", "-o", tmp_path / "q.c")
    assert "dep_kinds" not in (tmp_path / "q.c").read_text()


def test_edge_kind_from_edge_data():
    from pgcc.capture import edge_kind
    assert edge_kind(bytes(8)) == ""
    assert edge_kind(bytes([1, 0, 1, 0, 0, 0, 0, 0])) == "programmatic"
    assert edge_kind(bytes([2, 0, 1, 0, 0, 0, 0, 0])) == "launch_order"
    assert edge_kind(bytes([0, 0, 1, 0, 0, 0, 0, 0])) is None  # (programmatic from the default port: not known)
    assert edge_kind(bytes([1, 1, 1, 0, 0, 0, 0, 0])) is None
    assert edge_kind(bytes([3, 0, 1, 0, 0, 0, 0, 0])) is None


def split_kernel():
    """A kernel of two launches: one carries a whole address at byte 8 of its parameter,
    the other the high half of one at byte 12 only (its low half a constant), as cuDNN's
    kernel did on an H200 (`ptrs [..., 328, hi32 332, ...]`, refused by pgcc)."""
    bufs = Buffers()
    x = bufs.add(name="in0", size=1024, role="input", dtype="f32", shape=[256], ranges={0: 0x10000})
    k = Kernel(symbol="conv", layout=[(0, 24)], module={"name": "lib", "kind": "library", "library": "libx.so.1"},
               ptr_words=set())
    a = Node(kind="kernel", func=1, grid=[1, 1, 1], block=[32, 1, 1], smem=0, index=0,
             args=[("bytes", bytes(24), [(0, x, 0, "abs64"), (8, x, 64, "abs64")])])
    b = replace(a, index=1, args=[("bytes", bytes(range(24)), [(0, x, 0, "abs64"), (12, x, 128, "hi32")])])
    k.ptr_words = {(0, 0, "abs64"), (0, 8, "abs64"), (0, 12, "hi32")}
    return k, bufs, x, [a, b]


def test_a_whole_address_and_a_high_half_of_it_are_written_as_halves(tmp_path, pgcc_bin):
    """The union of the launches' relocations would overlap (abs64 8..16, hi32 12..16): the
    word is written as lo32 at 8 and hi32 at 12 for both launches -- the first launch's
    whole address as its two halves, the second's low half as it has it (null) -- and pgcc
    accepts the .graph."""
    k, bufs, x, nodes = split_kernel()
    text = graph_text("m", {1: k}, bufs, {id(x)}, nodes, [], "sm_90")
    assert "param 0 24 bytes ptrs [0, lo32 8, hi32 12];" in text
    assert f'["{bytes(24).hex()}", in0, in0+64, in0+64]' in text
    assert f'["{bytes(range(24)).hex()}", in0, null, in0+128]' in text
    (tmp_path / "m.graph").write_text(text)
    write_safetensors(tmp_path / "m.safetensors", [])
    assert "ptrs [0, lo32 8, hi32 12]" in pgcc(pgcc_bin, "--emit=graph", str(tmp_path / "m.graph"))
    # written twice (export.py writes again with every region whole): the same text
    assert graph_text("m", {1: k}, bufs, {id(x)}, nodes, [], "sm_90") == text


def test_overlapping_relocations_no_layout_holds_are_refused():
    """A whole address at 8 in one launch and one at 12 in another: no split makes them one
    layout, so the export says which kernel, rather than write a .graph pgcc refuses."""
    import pytest
    from pgcc.errors import ExportError
    k, bufs, x, nodes = split_kernel()
    k.ptr_words = {(0, 0, "abs64"), (0, 8, "abs64"), (0, 12, "abs64")}
    with pytest.raises(ExportError, match=r"kernel conv: parameter at 0: .*abs64 address at byte 8 .*abs64 one at "
                                          r"byte 12"):
        graph_text("m", {1: k}, bufs, {id(x)}, nodes, [], "sm_90")


def test_a_graph_pgcc_refuses_is_an_export_error_naming_its_line(tmp_path, pgcc_bin):
    """export_files.check_graph, run after every .graph the export writes: pgcc's refusal
    (here the overlapping relocations the exporter wrote before consistent_words) is an
    ExportError naming the .graph's line and showing it; an accepted .graph passes."""
    import pytest
    from pgcc.errors import ExportError
    from pgcc.export_files import check_graph
    k, bufs, x, nodes = split_kernel()
    text = graph_text("m", {1: k}, bufs, {id(x)}, nodes, [], "sm_90")
    write_safetensors(tmp_path / "m.safetensors", [])
    (tmp_path / "m.graph").write_text(text)
    check_graph(tmp_path / "m.graph", pgcc_bin)
    bad = text.replace("ptrs [0, lo32 8, hi32 12]", "ptrs [0, 8, hi32 12]")
    (tmp_path / "m.graph").write_text(bad)
    line = bad.split("\n").index("  param 0 24 bytes ptrs [0, 8, hi32 12];") + 1
    with pytest.raises(ExportError) as e:
        check_graph(tmp_path / "m.graph", pgcc_bin)
    assert f"m.graph:{line}: error: kernel 'conv': parameter 0: hi32 bytes 12..16 overlap abs64 bytes 8..16" \
        in str(e.value)
    assert "param 0 24 bytes ptrs [0, 8, hi32 12];" in str(e.value)


def test_a_refusal_without_located_diagnostics_keeps_pgccs_words(tmp_path):
    from pgcc.export_files import refusal
    (tmp_path / "m.graph").write_text("pgcc 1;\n")
    msg = refusal(str(tmp_path / "m.graph"), "pgcc: out of memory\n")
    assert msg.endswith("is refused by pgcc (an exporter bug: please report it with the .graph):\n    pgcc: out of "
                        "memory")
    many = "".join(f"{tmp_path}/m.graph:1:1: error: e{i}\n" for i in range(10))
    msg = refusal(str(tmp_path / "m.graph"), many)
    assert msg.count("m.graph:1: error: e") == 8 and msg.endswith("... and 2 more")
    assert "\n      pgcc 1;" in msg  # (each error shows its line)


def test_measured_times_are_written_and_pgcc_costs_with_them(tmp_path, pgcc_bin):
    """A node's gpu_us (kernel_times.py) reaches the .graph, pgcc reads it back, and its
    cost model takes it: the graph region's predicted time grows by what was measured."""
    kernels, bufs, used, nodes, edges = program(tmp_path)
    write_graph(tmp_path / "p.graph", "p", kernels, bufs, used, nodes, edges, "sm_90", origin="a test")
    nodes = [replace(n, gpu_us=100.0) if n.index in (1, 3) else n for n in nodes]
    write_graph(tmp_path / "t.graph", "p", kernels, bufs, used, nodes, edges, "sm_90", origin="a test")
    text = (tmp_path / "t.graph").read_text()
    assert "  node n1 kernel scale grid [1, 1, 1] block [256, 1, 1] smem 0 args [t0, 1073741824, 256] gpu_us 100;" \
        in text
    assert "  node n3 memcpy dir dtod src in0 dst t0 width 1024 gpu_us 100;" in text
    assert text.count("gpu_us") == 2
    pgcc(pgcc_bin, "--emit=graph", "-o", tmp_path / "again.graph", tmp_path / "t.graph")
    assert (tmp_path / "again.graph").read_text().count("gpu_us 100") == 2

    def predicted(path):
        out = pgcc(pgcc_bin, "--report", path)
        line = next(x for x in out.splitlines() if x.startswith("predicted per call"))
        return float(line.split(",")[1].split()[0])  # ("..., T us as planned")
    assert predicted(tmp_path / "t.graph") >= predicted(tmp_path / "p.graph") + 190
