"""Access sets for library GEMMs, found by running each node alone on the GPU
(docs/graph-format.md, "Access sets").

A library's GEMM takes its operands' addresses in a by-value struct laid out as the
library likes (cuBLASLt's nvjet kernels: 17 addresses of three tensors, inside TMA
descriptors and out of them; CUTLASS's Params: four), so no signature says which it
writes.  For the dense GEMMs of cuBLAS, cuBLASLt and CUTLASS (GEMM_NAMES) it is
measured: the node is launched alone with capture A's parameter bytes, every buffer its
pointers point into filled with one byte pattern, then with another (FILLS); a buffer
whose bytes changed in either run is written -- every pointer into it gets "rw" -- and
one unchanged in both is only read ("r").  Two fills, because a GEMM of filled operands
can write its fill back (alpha * K * v * v equals v for at most one v).  One more run
repeats the second with the written buffers filled as in the first: a written buffer
that comes out byte for byte as in the second run does not depend on what it held, so
the node wrote every byte of it and read none first -- "o", an overwrite, after which
the value the buffer held is dead (compiler/rename.c gives the next value a buffer of
its own).  Each buffer's bytes are saved first and written back after.

Not probed, so read and written as before:
- a kernel of another family, or a GEMM that takes device arrays of addresses, sizes or
  indices (grouped, pointer-array, gather and scatter GEMMs; CUTLASS's attention kernels:
  NOT_PROBED), which a fill would send anywhere;
- a node with a pointer into anything but the program's tensors (a library workspace, a
  copy of host memory, the random-number state: a stream-K GEMM waits on counters in its
  workspace, and a workspace filled with a pattern could keep it waiting for ever), or
  whose parameter bytes the export fixed (host words: host_words.py);
- a node whose buffers overlap one another, or hold a word that is an address of one of
  them (an array of pointers: filled, it would send the kernel anywhere);
- more than PROBE_BYTES of buffers, or more copies than PROBE_TOTAL for the export.
A kernel's code decides which of its pointers it writes through, not its operands, so
one answer holds for every node of the kernel: up to NODES_PER_KERNEL of its nodes are
probed and their answers joined (a pointer only read in all is "r", overwritten in all
"o", else "rw"); a kernel none of whose nodes could be probed gets none.  Whether a
pointer overwrites its whole buffer is also the node's (a GEMM can write a slice of a
concatenation's buffer): "o" stands only where every node of the kernel ran and said it,
so a kernel with an overwrite has all its nodes probed, and one node not run makes it
"rw".  An overwrite is
of the buffer as probed, a slot (slot_layout.whole_regions takes "o" back where the
regions are made whole again).

    probe_access(kernels, nodes, skip, Device(capA), log)   # {func: Kernel}: k.access set

k.access keys: a parameter offset (a pointer parameter) or (offset, byte inside) (a
pointer inside a struct: graphfile writes `access [..]`, one per pointer).  Pure but for
Device, which launches on the GPU (tests pass a stand-in).
"""
import re
import struct
import time

from .cuda import check, cu, read_device, stuck_error, write_device
from .diagnose import launch
from .errors import ExportError

__all__ = ["Device", "FILLS", "GEMM_NAMES", "is_gemm", "join", "pointers", "probe_access", "probe_node", "regions",
           "verdict"]

GEMM_NAMES = re.compile(r"nvjet|gemm|gemv", re.I)
# grouped and pointer-array GEMMs (device arrays of addresses or sizes), gather and scatter
# GEMMs (device index arrays), attention kernels built on CUTLASS (sequence-length arrays);
# convolutions as implicit GEMMs (cuDNN's: their buffers are whole activation maps, the
# largest copies a probe would make, and no branch this is for runs them)
NOT_PROBED = re.compile(r"group|ptr_?array|array_of|gather|scatter|fmha|attention|flash|sdpa|conv|fprop|dgrad|wgrad|"
                        r"implicit", re.I)
FILLS = (0x3C, 0x41)  # (bf16 0x3c3c = 0.0115, fp16 1.06, fp32 0.0115; 0x4141: 12.1, 2.63, 12.1)
NODES_PER_KERNEL = 3
PROBE_BYTES = 256 << 20  # a node's buffers, at most
PROBE_TOTAL = 4 << 30    # bytes copied between host and device for one export, at most
PROBED_ROLES = ("input", "output", "weight", "intermediate")


def is_gemm(symbol):
    """Whether a kernel of this (mangled) name is a dense GEMM of cuBLAS, cuBLASLt or CUTLASS."""
    return bool(GEMM_NAMES.search(symbol)) and not NOT_PROBED.search(symbol)


def pointers(node, layout):
    """[(key, buffer, offset)]: each address in a kernel node's arguments, keyed by its
    parameter's offset (a "ptr" argument) or (parameter offset, byte inside) (a relocation
    of a "bytes" argument)."""
    out = []
    for (off, _size), a in zip(layout, node.args or ()):
        if a[0] == "ptr" and a[1] is not None:
            out.append((off, a[1], a[2]))
        elif a[0] == "bytes":
            out += [((off, r.at), r.buffer, r.offset) for r in a[2]]
    return out


def regions(ptrs):
    """{id(buffer): (address in capture A, bytes)} of the buffers ptrs point into, or a
    string saying why the node is not probed."""
    out = {}
    for _key, b, _off in ptrs:
        if b.role not in PROBED_ROLES or b.host is not None or 0 not in (b.ranges or {}):
            return f"a pointer into {b.name} ({b.role}{', host memory' if b.host is not None else ''})"
        out[id(b)] = (b.ranges[0], b.size)
    spans = sorted(out.values())
    for (a, n), (c, _m) in zip(spans, spans[1:]):
        if c < a + n:
            return "two of its buffers overlap"
    if sum(n for _a, n in spans) > PROBE_BYTES:
        return f"its buffers are over {PROBE_BYTES >> 20} MiB"
    return out


def holds_addresses(data, spans):
    """Whether bytes data hold an aligned 8-byte word inside one of spans [(address, bytes)]:
    found by the words' high halves (bytes.find, as fast on a weight of 256 MiB as on a
    scalar), each such word then compared whole."""
    for high in {h for a, n in spans for h in range(a >> 32, ((a + n - 1) >> 32) + 1)}:
        pattern, at = struct.pack("<I", high), data.find(struct.pack("<I", high), 4)
        while at >= 0:
            if at % 8 == 4:
                w = struct.unpack_from("<Q", data, at - 4)[0]
                if any(a <= w < a + n for a, n in spans):
                    return True
            at = data.find(pattern, at + 1)
    return False


def run(device, i, what, spans, fills):
    """Node i launched once with each buffer (spans: {key: (address, bytes)}) filled with
    its byte of fills; {key: its bytes after}."""
    for key, (a, size) in spans.items():
        device.fill(a, fills[key], size)
    device.launch(i, what)
    return {key: device.read(a, size) for key, (a, size) in spans.items()}


def verdict(ptrs, written, whole=()):
    """{key: "o" | "rw" | "r"} for one node (written, whole: buffer ids): a pointer into a
    buffer the node overwrote whole is "o", into one it wrote otherwise "rw", else "r"."""
    return {key: "o" if id(b) in whole else "rw" if id(b) in written else "r" for key, b, _off in ptrs}


def join(answers):
    """One kernel's access from its nodes' answers: a pointer every node read only is "r",
    one every node overwrote is "o", any other "rw" (one some node did not have -- a word
    that is an address in some launches only -- too)."""
    keys = set().union(*answers) if answers else set()
    return {k: next((how for how in ("r", "o") if all(a.get(k) == how for a in answers)), "rw") for k in keys}


def probe_access(kernels, nodes, skip, device, log=None):
    """Sets k.access for the GEMM kernels of kernels ({func: Kernel}) that carry none (model.Node
    nodes; skip: node indices not to launch); returns how many kernels got one.  Whether a
    pointer is written is the kernel's code's: NODES_PER_KERNEL nodes say it.  Whether it
    overwrites its buffer whole is also its node's (a GEMM writing into a slice of a larger
    buffer, a concatenation's, writes part of it): "o" stands only where every node of the
    kernel was run and overwrote, else it is "rw"."""
    by_func = {}
    for n in nodes:
        k = kernels.get(n.func) if n.kind == "kernel" else None
        if k is not None and not k.access and is_gemm(k.symbol):
            by_func.setdefault(n.func, []).append(n)
    marked, why_not, moved = 0, {}, 0
    for func, ns in by_func.items():
        k, answers, every = kernels[func], [], True  # (every: each node so far run)
        for n in ns:
            if len(answers) >= NODES_PER_KERNEL and "o" not in join(answers).values():
                every = False  # (nothing left to learn but overwrites, and there are none)
                break
            why = probe_node(n, k, skip, device, PROBE_TOTAL - moved)
            if isinstance(why, str):
                why_not[k.symbol], every = why, False
                continue
            answer, copies = why
            moved += copies
            answers.append(answer)
        if answers:
            k.access = {key: "rw" if how == "o" and not every else how for key, how in join(answers).items()}
            marked += 1
            why_not.pop(k.symbol, None)
    if log and by_func:
        log(f"  access sets for {marked} of {len(by_func)} library GEMM kernels, each run alone with its buffers "
            "filled" + "".join(f"; {s[:60]}: none ({w})" for s, w in list(why_not.items())[:3]))
    return marked


def probe_node(n, k, skip, device, budget):
    """One node of kernel k run alone, its buffers filled: (its verdict, the bytes copied), or
    why it was not run (skip: node indices not to launch; budget: bytes it may copy)."""
    if not isinstance(n.index, int) or n.index in skip:
        return "a node whose parameter bytes the export fixed, or one it added"
    ptrs = pointers(n, k.layout)
    spans = regions(ptrs)
    if isinstance(spans, str):
        return spans
    copies = 5 * sum(size for _a, size in spans.values())  # (saved, read after three runs, put back)
    if copies > budget:
        return f"the export's {PROBE_TOTAL >> 30} GiB of probe copies spent"
    saved = {key: device.read(a, size) for key, (a, size) in spans.items()}
    if any(holds_addresses(data, list(spans.values())) for data in saved.values()):
        return "a buffer holds addresses of its buffers"
    written, whole, hung = set(), set(), False
    try:
        for fill in FILLS:
            after = run(device, n.index, k.symbol, spans, {key: fill for key in spans})
            written |= {key for key, (a, size) in spans.items() if after[key] != bytes([fill]) * size}
        if written:  # the last run again, the written buffers filled as the first: the same bytes?
            again = run(device, n.index, k.symbol, spans, {key: FILLS[0] if key in written else FILLS[-1] for key in spans})
            whole = {key for key in written if again[key] == after[key]}
    except ExportError:  # (a launch that never finished: a copy back would wait behind it for ever)
        hung = True
        raise
    finally:
        for key, (a, _size) in spans.items():
            if not hung:
                device.write(a, saved[key])
    return verdict(ptrs, written, whole), copies


class Device:
    """The GPU side of probe_access: capture A's nodes launched alone, on the legacy
    default stream, each waited for at most TIMEOUT seconds (doing: what a hung launch was
    for, and what to do, for its message)."""
    TIMEOUT = 20.0
    PROBING = ("run alone with its buffers filled to learn which it writes",
               "its buffers (inputs and weights among them) keep the fill, and this process's CUDA context may be "
               "unusable from here (restart it; PGCC_PROBE=off skips this step)")

    def __init__(self, capA, doing=PROBING):
        self.capA, self.doing = capA, doing

    def launch(self, i, what, blob=None):
        """Node i launched alone (with parameter bytes blob, else capture A's), waited for."""
        node = self.capA.nodes[i]
        launch(node, node["bytes"] if blob is None else blob)
        end = time.monotonic() + self.TIMEOUT
        while (r := cu().StreamQuery(None)) == 600:  # CUDA_ERROR_NOT_READY
            if time.monotonic() > end:
                raise ExportError(f"cannot export: node {i} ({what[:80]}), {self.doing[0]}, did not finish in "
                                  f"{self.TIMEOUT:.0f} s; {self.doing[1]}")
            time.sleep(0.0005)
        if r:
            why = stuck_error()
            check(r, f"node {i} ({what[:80]}) run alone" + (f" (the context is stuck: {why})" if why else ""))

    def read(self, a, n):
        return read_device(a, n)

    def write(self, a, data):
        write_device(a, data)

    def fill(self, a, byte, n):
        check(cu().MemsetD8(a, byte, n), "cuMemsetD8")
