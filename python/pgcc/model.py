"""The exporter's data model: what the analysis of a callable holds between the steps of
export.analyse and the writers (export_files.py), declared once.

    a = Analysis(capA=cap, bufs=Buffers(), nodes=[], edges=[], kernels={}, scalars=[],
                 report={}, outputs=[])
    a.conditions      # [] unless branches.py joined a conditional node in

A buffer is a Buffer (relocate.Buffers makes them), a kernel a Kernel, a relocation a
PtrWord (the kernel's) and a Relocation (a launch's, to a buffer), a node of the export
a Node (node_mapping.map_nodes makes them from capture A's; graphfile.map_places walks
the places they refer to).

    Node(kind="memcpy", index=3, src=(t0, 0), dst=(out0, 0), width=4096)

Two kinds of node records, never mixed: the export's nodes (Analysis.nodes, the bodies
of conditional nodes) are Node; capture.py's own records of the raw graph walk
(capture.Capture.nodes, keyed "type", "name", "layout", "bytes", ...) stay plain dicts,
read where the captures themselves are needed (node_mapping, hostvalues, replay,
host_words, diagnose's launches, slot_layout's kinds, export's report).  A Node has no
item access and a dict no attributes, so one used for the other fails at once.  Pure:
no torch, no CUDA.
"""
import json
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["Analysis", "BucketExport", "Buffer", "CaptureSet", "Kernel", "Node", "PtrWord", "Relocation",
           "WholeLayout", "write_report"]


def write_report(path, report):
    """Writes the report (NAME.export.json) to path, indented by one; nothing where path is
    None (the other path of a branch: branches.py says its problems)."""
    if path is None:
        return
    with open(path, "w") as f:
        json.dump(report, f, indent=1)


class PtrWord(NamedTuple):
    """A relocation of a kernel's (in Kernel.ptr_words): its launches carry an address at
    byte `at` of the parameter at offset `param`, whole ("abs64") or its low or high 32
    bits ("lo32", "hi32").  A tuple: unpacked, hashed and compared as (param, at, kind)."""
    param: int
    at: int
    kind: str


class Relocation(NamedTuple):
    """A relocation of one launch's parameter (a ("bytes", raw, [Relocation]) argument):
    byte `at` of the parameter holds the address of `buffer` + `offset`, of `kind` as in
    PtrWord.  A tuple: unpacked and compared as (at, buffer, offset, kind)."""
    at: int
    buffer: object
    offset: int
    kind: str


@dataclass(eq=False)
class Buffer:
    """A buffer of the export: memory the program's nodes point into.

    name: its name in the .graph; size: bytes; role: "input", "output", "weight" (the
    model's tensors, and static blocks: memory from outside the captures that kernels
    read, with its bytes), "intermediate" (a region of capture A's memory, or a slot of
    one), "workspace" (a static block no result depends on) or "host" (where a value read
    back lands); ranges: {capture number: its address there} (0 is A, 1 B, 2 C); dtype,
    shape: the tensor's, where it is one; tensor: its name in the weights file (a weight);
    value: the model's tensor (a weight's, read when the weights are written); static: a
    static block (its bytes read from the device when written); host: the bytes of a copy
    of host memory a kernel reads through a pointer (host_words.py); aliased: an output
    whose memory held other tensors earlier in capture A, or that lies in an input's, a
    weight's or an earlier output's memory (view_of names that buffer: an output that is
    an input, a view of a parameter, a result returned twice; node_mapping.py); in_place:
    an aliased output that is no view, written in place after all (its slot is its own
    memory: slot_layout.outputs_in_place), not copied out at the end; places:
    {capture number: {address: offset}} for a buffer whose bytes lie apart in the captures
    (role "rng", the random-number state: PyTorch's generator's seed and offset tensors,
    random_state.py), then no ranges; increment: role "rng", how far a call advances the
    Philox offset.  Compared by
    identity (the export's maps are keyed by id()), as the dicts it replaces were in
    effect."""
    name: str
    size: int
    role: str
    ranges: dict = field(default_factory=dict)
    dtype: str = None
    shape: list = None
    tensor: str = None
    value: object = None
    static: bool = False
    host: bytes = None
    aliased: bool = False
    view_of: str = None
    in_place: bool = False
    places: dict = None
    increment: int = 0


@dataclass
class Kernel:
    """A kernel the program launches (one per function handle: node_mapping.map_nodes).

    symbol: its name; layout: [(offset, size)] of its parameters; attrs: the function
    attributes that tell compiled kernels apart (kernel_search.func_attrs; None for the
    exporter's own kernels); ptr_words: {PtrWord}, the relocations its launches need ("abs64", "lo32", "hi32"); packed: a launch passed its
    parameters packed; module: where its code is ({"name", "kind": "cubin" | "fatbin" |
    "library" | "cuda" | ..., "file" or "library", "sha256", "globals"}: kernel_code.py),
    None until found; entry: its offset in the library's fatbin section (a library
    kernel), else None; image: the module image its code was taken from, where it is one
    of the process's (kernel_code.set_image), else None; fits: the loaded images its
    module fits, for kernel_code.prove_code to try first (None: not looked at);
    dontcare: {(parameter offset, offset inside, length)} of bytes no launch depends on
    (replay.mark_dontcare); scalar_types: {parameter offset: type} of parameters that take
    scalars (hostvalues.py); name: its name in the .graph and valued: the parameter
    offsets some launch passes a value in (both set by graphfile.graph_text); access:
    {parameter offset, or (parameter offset, byte inside) for a pointer inside a struct:
    "r" | "w" | "rw" | "o"}, what it does with the memory a pointer points into, where that
    is known (access_sets.py, access_probe.py; none: read and written; "o": overwritten
    whole, none of it read first)."""
    symbol: str
    layout: list
    attrs: object = None
    ptr_words: set = field(default_factory=set)
    packed: bool = False
    module: dict = None
    entry: int = None
    image: bytes = None
    fits: list = None
    dontcare: set = field(default_factory=set)
    scalar_types: dict = field(default_factory=dict)
    name: str = None
    valued: set = field(default_factory=set)
    access: dict = field(default_factory=dict)


@dataclass
class Node:
    """A node of the export: `kind` and `index`, and the fields its kind uses (None where
    it does not: what a dict without the key read with .get() gave).  Compared by value,
    as the dicts it replaces were; copied with dataclasses.replace.

    index: capture A's node number (an int), or the name of a node the export added
    ("c0", "loop0", "if0", "bswitch", "w3", "f5", "b4_7": branches.py, shape_buckets.py).
    A place is (Buffer, offset).

    kernel: func (the function handle, the key of Analysis.kernels), grid, block ([x, y,
    z]), smem, args (one per parameter of the kernel's layout: ("ptr", buffer, offset),
    ("value", bytes), ("bytes", bytes, [Relocation]), ("scalar", bytes, scalar dict:
    hostvalues.py), ("cond", condition dict): relocate.Relocator.kernel_args, branches.py),
    cluster ([x, y, z] or None), priority (or None).
    memset: dst (a place), value, elem (bytes per element), width (elements).
    memcpy (device to device): src, dst (places), width (bytes).
    read (a copy of a value read back into a host buffer): src, dst, width, read (the
    read's number in capture A's reads), where (the source line), op.
    sync (the host waits for a read): read, where; guard: the bytes read at export, where
    the value only chose the path (hostvalues.host_values), else None.
    empty: nothing more.
    libcall (an NCCL collective: collectives.libcall): fn, comm ({"name", "ranks"}), send,
    recv (places), count, dtype, op (reductions; else None).
    if, while, switch (conditional nodes: branches.py, shape_buckets.py): condition
    ({"name"}), bodies [(graph name, [Node], edges)], where (if, while: the read's source
    line), bucket (switch: the dimension's name).
    gpu_us: a kernel's, memset's or copy's GPU time as measured (kernel_times.py), or None."""
    kind: str
    index: object = None
    func: object = None
    grid: list = None
    block: list = None
    smem: int = None
    args: list = None
    cluster: list = None
    priority: int = None
    src: tuple = None
    dst: tuple = None
    value: int = None
    elem: int = None
    width: int = None
    read: int = None
    where: str = None
    op: str = None
    guard: bytes = None
    fn: str = None
    comm: dict = None
    send: tuple = None
    recv: tuple = None
    count: int = None
    dtype: str = None
    condition: dict = None
    bodies: list = None
    bucket: str = None
    gpu_us: float = None  # (kernel, memset, memcpy: the GPU time measured in capture A, kernel_times.py)


@dataclass
class CaptureSet:
    """The captures of one analysis (capture_set.take_captures): A on the example inputs,
    B on copies at other addresses (inputs_b), C on copies far away (inputs_c), and D on
    other input values where the callable reads values back (else None)."""
    capA: object
    capB: object
    capC: object
    capD: object
    inputs_b: list
    inputs_c: list

    @property
    def caps(self):
        """[A, B, C]: the captures whose addresses the relocations compare (0, 1, 2)."""
        return [self.capA, self.capB, self.capC]


@dataclass
class WholeLayout:
    """The nodes, the buffer list and each buffer's size (by id) as capture A had them,
    before slot_layout split or cut its regions: what slot_layout.whole_regions puts back."""
    nodes: list
    bufs: list
    sizes: dict


@dataclass
class Analysis:
    """Everything an export holds, in memory (export.analyse's answer, or the merge of
    several: branches.join, shape_buckets.merge).

    capA: capture A (capture.Capture; a bucket merge's: the largest bucket's); bufs: the
    buffers (relocate.Buffers: its .list of Buffer); nodes ([Node]) and edges
    (pairs of node indices); kernels: {function: Kernel}; scalars: [scalar dicts];
    report: the export report's dict; outputs: capture A's outputs on the example
    inputs; report_path: where write_report() writes it (None: nowhere); comms: NCCL
    communicators; whole: the regions as captured (WholeLayout); conditions: the
    conditional nodes' conditions; dims: shape bucket dimensions; positions: {io buffer
    name: position of the bucket dimension}."""
    capA: object
    bufs: object
    nodes: list
    edges: list
    kernels: dict
    scalars: list
    report: dict
    outputs: list
    report_path: str = None
    comms: list = field(default_factory=list)
    whole: WholeLayout = None
    conditions: list = field(default_factory=list)
    dims: list = field(default_factory=list)
    positions: dict = None

    def write_report(self):
        """Writes the report to report_path (write_report)."""
        write_report(self.report_path, self.report)


@dataclass
class BucketExport:
    """A shape-bucketed export as written (export.export_buckets): the report, the bucket
    sizes (values) and each bucket's example inputs, each input's and output's position of
    the bucket dimension (None: none), whether sizes between buckets run padded, and the
    dimension's name."""
    report: dict
    values: list
    examples: list
    in_pos: list
    out_pos: list
    pad: bool
    dim_name: str
