"""Parameter words that point into this process's host memory (the GPU reaches host
memory: cuBLAS and CUTLASS epilogues read alpha and beta where the caller left them),
and the proof by replay of every changing parameter byte (prove_suspects): a word a
kernel reads through becomes a relocation to a copy of the bytes there (a static block
of the weights); a word it takes as a value is kept as captured; bytes replays with
them zeroed and poisoned show irrelevant (or, where the graph's replays are not
deterministic, runs of their node alone: alone.py) are don't-care.

    prove_suspects(replayer, caps, host_maps(), bufs, nodes, kernels, suspects, report,
                   report_path, problems, prog, "mlp")

Assumes the driver and a Replayer (replay.py) of capture A.
"""
import contextlib
import ctypes as C
import struct

from .access_probe import Device
from .alone import ALONE, Alone
from .cuda import allocation_span, placed, read_device
from .errors import ExportError
from .model import PtrWord, Relocation, write_report
from .module_watch import HOST_WINDOW  # bytes of host memory copied where a kernel reads through a host address
from .relocate import FOREIGN, u64
from .replay import mark_dontcare, prove_irrelevant

__all__ = ["device_values", "FILLS", "HOST_WINDOW", "LIBRARY_HINTS", "holds_word", "host_copy_check", "host_found",
           "keep_as_captured", "launch_time_bytes", "library_hint", "MANY_COPIES", "prove_suspects", "read_host",
           "values_together", "words_hex"]


def prove_suspects(replayer, captures, maps, bufs, nodes, kernels, suspects, report, report_path, problems, prog,
                   name):
    """The changing parameter bytes of suspects ({node index: [(byte, length, why)]},
    emptied of what is proven) proven by replay: words into host memory first
    (read_host), then the rest irrelevant (replay.prove_irrelevant), marked don't-care
    in their kernels; the report's host_memory_read and host_like_values, written to
    report_path.  Raises ExportError with the problems where a proof fails."""
    capA, caps = captures.capA, captures.caps
    log = prog.log
    prog.status(f"{name}: replaying to prove {sum(map(len, suspects.values()))} changing parameter words "
                "irrelevant")
    # Words that point into host memory first: the kernels may read
    # through them (cuBLAS's alpha and beta), or take them as values (CUTLASS SGEMM's
    # float bound beside stale stack bytes).  read_host tells which with copies that
    # keep their low 32 bits, where zeroing or poisoning such a word could make a
    # kernel fault.  The exported bytes hold the other suspects zeroed (relocate.py
    # never writes this process's addresses), so those are proven irrelevant by
    # replays with them zeroed and poisoned.
    rescued, kept, kept_device, check, launched = {}, [], [], host_copy_check(replayer), []
    # Most such words are values (a multi-tensor table's unused slots hold hundreds), and
    # each replay costs a whole step: a node's are proven together first, and one by one
    # only where they are not all values (values_together).  Node by node, in order: a
    # node whose host bytes are fixed (as launched) makes the later replays' reference.
    for i in list(suspects):
        first = len(launched)
        blob = capA.nodes[i]["bytes"]
        host = host_found(blob, [r for r in suspects[i] if host_found(blob, [r], maps)], maps)
        if host and values_together(check, i, host):  # (kept as captured, as read_host keeps each value)
            together = {at for at, _, _ in host}
            read_host(i, [r for r in suspects[i] if r[0] in together], capA, maps, bufs, nodes, kernels, rescued,
                      lambda *_: "value", kept, problems, launched)
            suspects[i] = [r for r in suspects[i] if r[0] not in together]
        suspects[i] = [r for r in suspects[i] if not read_host(i, [r], capA, maps, bufs, nodes, kernels,
                                                                rescued, check, kept, problems, launched)]
        if any(why == FOREIGN for _, _, why in suspects[i]):
            gone = device_values(i, suspects[i], capA, nodes, kernels, check, allocation_span, kept_device)
            suspects[i] = [r for r in suspects[i] if r not in gone]
        if len(launched) > first:  # later replays read what the launch read, not what lies there now
            blob = bytearray(replayer.base(i))
            for _, at, addr, data in launched[first:]:
                struct.pack_into("<Q", blob, at, replayer.hold(placed(data, addr & 0xFFFFFFFF)))
            replayer.fix(i, bytes(blob))
            check.forget()
        if not suspects[i]:
            del suspects[i]
    problems += prove_irrelevant(replayer, suspects, lambda i: capA.nodes[i]["name"][:80],
                                 words=lambda i, at, n: " ".join(
                                     f"{'ABC'[c]} {words_hex(cap.nodes[i]['bytes'], at, n)}"
                                     for c, cap in enumerate(caps)),
                                 alone=(alone := Alone(Device(capA, ALONE), nodes, kernels)))
    at_launch = [a[0] for a in rescued if isinstance(a, tuple)]  # (read_host: bytes as the capture launched them)
    report["host_memory_read"] = [f"0x{a:x}" for a in rescued if not isinstance(a, tuple)]
    report["host_memory_read_at_launch"] = [f"0x{a:x}" for a in at_launch]
    report["host_like_values"] = [{"node": i, "at": at, "word": f"0x{w:x}"} for i, at, w in kept]
    report["device_like_values"] = [{"node": i, "at": at, "word": f"0x{w:x}"} for i, at, w in kept_device]
    report["judged_alone"] = alone.proven  # (nodes whose bytes their runs alone proved: alone.py)
    write_report(report_path, report)
    if problems:
        raise ExportError("cannot export; what stands in the way:\n  " + "\n  ".join(problems))
    if len(rescued) > len(at_launch):
        log(f"  {len(rescued) - len(at_launch)} parameter words in host memory that kernels read (through the GPU's "
            "access to host memory): their bytes copied into the weights, the words pointed at the copies")
    if at_launch:
        log(f"  {len(at_launch)} parameter words in host memory whose bytes there changed after the launch (a "
            "library's locals, as cuBLASLt's split-K alpha and beta): the bytes as the capture launched the kernels "
            "copied into the weights, the words pointed at the copies; the verification judges them")
    if kept:
        at = sorted({i for i, _, _ in kept})
        log(f"  {len(kept)} parameter words in {len(at)} nodes point into this process's host memory but are "
            "taken as values (replays with them pointed at copies of the bytes there, or of other bytes, "
            "with the same low 32 bits compute the same: a float beside stale stack bytes, an unused slot): "
            "kept as captured, listed in the report's host_like_values; e.g. " + ", ".join(
                f"node {i} bytes {a}..{a + 8} 0x{w:x} ({capA.nodes[i]['name'][:40]})" for i, a, w in kept[:3]))
    if kept_device:
        log(f"  {len(kept_device)} constant parameter words that read as addresses of device memory the export does "
            "not own are taken as values (replays with them pointed at copies of the bytes there, or of other bytes, "
            "with the same low 32 bits compute the same): kept as captured, listed in the report's device_like_values")
    for i, r in suspects.items():
        mark_dontcare(kernels[capA.nodes[i]["func"]], r)
    log(f"  {sum(map(len, suspects.values()))} parameter byte ranges in {len(suspects)} nodes change between "
        "captures or hold this process's addresses, and replays with them zeroed and poisoned give the same "
        "results bit for bit: written as don't-care" + (
            f" ({len(alone.proven)} nodes judged run alone, the graph's replays not being deterministic: "
            f"{', '.join(str(i) for i in alone.proven[:8])})" if alone.proven else ""))


# What a library kernel that reads stale host bytes is, and the settings that avoid it,
# by a piece of its symbol.  Found on an H200 with PyTorch 2.11 and CUDA 13.0: cuBLASLt's
# split-K reduction takes pointers to the matmul's alpha and beta where the caller keeps
# them (PyTorch: locals of the call), read when the kernel runs; in a CUDA graph, at every
# replay, long after the call.  PyTorch's own capture of a GPT-2 step with foreach AdamW
# replayed to states 0.61 (relative) from the compiled step's after one step
# (docs/training.md).  Before pgcc read these bytes at launch (module_watch.py),
# DISABLE_ADDMM_CUDA_LT=1 made that step export bit-identical, and cuBLAS without a
# workspace a Llama step's: the hint is for what the launch-time bytes cannot mend.
LIBRARY_HINTS = (
    ("splitKreduce", "; it is cuBLASLt's split-K reduction of a matmul, which reads alpha and beta through "
                     "pointers to the caller's host memory, valid only during the call (a CUDA graph of it, "
                     "PyTorch's own too, replays with whatever lies there later).  Settings that kept cuBLAS "
                     "from splitting, in the environment before the process first uses it: "
                     "DISABLE_ADDMM_CUDA_LT=1 (linear layers with a bias), or CUBLASLT_WORKSPACE_SIZE=0 with "
                     "CUBLAS_WORKSPACE_CONFIG=:0:0 (no workspace, no split-K)"),
)


def library_hint(symbol):
    """What LIBRARY_HINTS says of a kernel of this symbol (with its leading "; "), or ""."""
    return next((hint for piece, hint in LIBRARY_HINTS if piece in symbol), "")


FILLS = (0x00, 0xA5)  # what the copies hold instead of the host bytes, to tell a word read through
MANY_COPIES = 256  # host addresses copied for one replay, at most (values_together)


def host_copy_check(replayer):
    """check(i, found) for read_host: what node i's words at found [(offset in its
    parameters, host address, size)] are to its kernel, found by replaying capture A
    with each word pointed at a device copy of the host bytes there.  The copies are
    placed at addresses with the words' own low 32 bits (cuda.placed): a word whose low
    half is a value (CUTLASS SGEMM's float bound beside stale stack bytes, an index)
    keeps it, and the replay cannot fault on it.  Returns "read" where the results are
    a plain replay's with the host bytes copied and differ with the copies filled
    (FILLS): the kernel reads through the words; "value" where they are the same either
    way: the high halves and what they point at do not matter, the words are kept as
    captured; None where even faithful copies change the results.  check(i, found,
    device=True): the same of words into device memory (device_values)."""
    state = {}

    def replay_with(i, found, fill, device):
        with contextlib.ExitStack() as stack:
            blob, copies = bytearray(replayer.base(i)), {}  # (one copy per address: stale words repeat)
            for at, addr, size in found:
                if addr not in copies:
                    data = bytes([fill]) * size if fill is not None else \
                        read_device(addr, size) if device else C.string_at(addr, size)
                    copies[addr] = stack.enter_context(placed(data, addr & 0xFFFFFFFF))
                struct.pack_into("<Q", blob, at, copies[addr])
            return replayer.replay_params({i: bytes(blob)})

    def check(i, found, device=False):
        try:
            if "reference" not in state:
                state["reference"] = replayer.replay_params({})
            if replay_with(i, found, None, device) != state["reference"]:
                return None
            return "read" if any(replay_with(i, found, f, device) != state["reference"] for f in FILLS) else "value"
        except RuntimeError as e:  # a fault: the kernel reads further than the copy, or otherwise
            where = "device memory the export does not own" if device else "host memory of this process"
            raise ExportError(f"node {i} ({replayer.cap.nodes[i]['name'][:80]}): replaying with " + ", ".join(
                f"bytes {at}..{at + 8} (0x{addr:x}, {where})" for at, addr, _ in found[:8]) +
                (f", and {len(found) - 8} more" if len(found) > 8 else "") +
                f" pointed at device copies of the bytes there failed ({e}): the kernel reads memory it was not "
                "given (this process's CUDA context may now be unusable)") from e
    check.forget = state.clear  # (the replays' bytes changed: a new reference)
    return check


def read_host(i, ranges, cap, maps, bufs, nodes, kernels, done, check, kept, problems, launched=None):
    """A node whose parameters hold words that point into this process's host memory
    (the GPU reaches host memory: cuBLAS and CUTLASS epilogues read alpha and beta where
    the caller left them).  Returns False unless every one of ranges is such a word;
    else decides, by check (host_copy_check), what they are: words the kernel reads
    through get the bytes there (HOST_WINDOW of them, within the mapping) copied into a
    static block of the weights and become relocations to the copy -- what was there at
    export, right for constants, which is what a captured graph can rely on anyway;
    words it takes as values (MobileNet's CUTLASS SGEMM: a NaN float beside 4 bytes of
    stale stack, together 0x7f..7fc00000) are kept as captured and listed in kept
    [(node, offset, word)]; words neither explains get the bytes there as capture A
    launched the node, where it read them (launch_time_bytes), as a copy the same way
    (each listed in launched [(node, offset, address, bytes)]), else add a problem.
    Returns True."""
    blob = cap.nodes[i]["bytes"]
    found = host_found(blob, ranges, maps)
    if found is None:
        return False
    node = next(n for n in nodes if n.index == i)
    k = kernels[cap.nodes[i]["func"]]
    what = check(i, found)
    at_launch = launch_time_bytes(cap, i, found) if what is None else None
    if at_launch is not None:
        # No replay explains the bytes there now, but the capture read them as the kernel
        # was launched: the library's locals then (cuBLASLt's split-K alpha and beta).
        # Those become the copy; the verification, against the callable, judges them.
        what = "read"
    if what is None:
        problems.append(f"node {i} ({cap.nodes[i]['name'][:80]}): " + ", ".join(
            f"bytes {a}..{a + 8} (0x{addr:x}, host memory of this process)" for a, addr, _ in found) +
            ": replaying with them pointed at device copies of the bytes there, at addresses with the same low 32 "
            "bits, changes the results: the kernel takes them neither as addresses of what is there nor as values"
            + library_hint(cap.nodes[i]["name"]))
    elif what == "value":
        keep_as_captured(i, found, blob, node, k, kept)
    else:
        for a, addr, size in found:
            data = at_launch[addr] if at_launch is not None else C.string_at(addr, size)
            if at_launch is not None and launched is not None:
                launched.append((i, a, addr, data))
            key = (addr, data) if at_launch is not None else addr  # (one address, other bytes at each launch)
            b = done.get(key)
            if b is None:
                b = done[key] = bufs.add(name=f"h{len(done)}", size=len(data), role="weight", static=True,
                                         host=data, tensor=f"__host_{len(done)}",
                                         ranges={c: addr for c in range(3)})
            for p, (off, size_) in enumerate(k.layout):
                if off <= a < off + size_:
                    arg = node.args[p]
                    if arg[0] == "value" and size_ == 8:
                        node.args[p] = ("ptr", b, 0)
                    else:
                        raw = arg[1] if arg[0] != "ptr" else bytes(size_)
                        ptrs = list(arg[2]) if arg[0] == "bytes" else []
                        node.args[p] = ("bytes", raw, sorted(ptrs + [Relocation(a - off, b, 0, "abs64")],
                                                                key=lambda r: r[0]))
                    k.ptr_words.add(PtrWord(off, a - off, "abs64"))
    return True


def keep_as_captured(i, found, blob, node, k, kept):
    """Node i's words at found [(offset, address, size)] written back as capture A had
    them (the relocator zeroed them: it never writes this process's addresses), each
    listed in kept [(node, offset, word)]."""
    for a, addr, _ in found:
        for p, (off, size_) in enumerate(k.layout):
            if off <= a < off + size_ and node.args[p][0] in ("value", "bytes"):
                arg = node.args[p]
                raw = bytearray(arg[1])
                raw[a - off:a - off + 8] = blob[a:a + 8]
                node.args[p] = (arg[0], bytes(raw)) + tuple(arg[2:])
        kept.append((i, a, addr))


def device_values(i, ranges, cap, nodes, kernels, check, span_of, kept):
    """Those of node i's ranges that are constant words into device memory the export
    does not own (FOREIGN: a library's own allocation, in this process only) which check
    (host_copy_check, device=True) proves values -- an int beside stale bytes of an old
    pointer, as CUTLASS's split-K reduction's partition count (0x00007f19_00000001),
    where the stale half happened to fall in such an allocation -- kept as captured
    (keep_as_captured, into kept).  Returns the ranges proven so.  span_of(address):
    (base, size) of its allocation, or None."""
    blob, proven = cap.nodes[i]["bytes"], []
    for r in ranges:
        a, n, why = r
        addr = u64(blob, a) if n == 8 and why == FOREIGN else 0
        span = span_of(addr) if addr else None
        if span is None:
            continue
        found = [(a, addr, max(1, min(HOST_WINDOW, span[0] + span[1] - addr)))]
        if check(i, found, device=True) == "value":
            keep_as_captured(i, found, blob, next(x for x in nodes if x.index == i), kernels[cap.nodes[i]["func"]],
                             kept)
            proven.append(r)
    return proven


def host_found(blob, ranges, maps):
    """[(offset, host address, bytes to copy)] of ranges [(offset, length, why)] of a
    parameter blob where every one is an 8-byte word pointing into host memory (maps:
    [(low, high, name)], module_watch.host_maps), else None."""
    found = []
    for a, n, _ in ranges:
        addr = u64(blob, a) if n == 8 and a % 4 == 0 else 0
        where = next(((lo, hi) for lo, hi, _ in maps if lo <= addr < hi), None)
        if where is None:
            return None
        found.append((a, addr, min(HOST_WINDOW, where[1] - addr)))
    return found or None


def values_together(check, i, found):
    """Whether check proves node i's several host words (found, as host_found gives)
    values all at once.  Where it does not, they are judged word by word (read_host): a
    group that is not all values says nothing of any one word.  (Not several nodes' at
    once: a node whose host bytes must be fixed as launched -- cuBLASLt's split-K alpha --
    changes what later nodes compute, and a reference made before that fix can hide
    what a word does.)"""
    copies = len({addr for _, addr, _ in found})  # (each a copy of 4 MiB or more, in 4 GiB of address space)
    return len(found) > 1 and copies <= MANY_COPIES and check(i, found) == "value"


def launch_time_bytes(cap, i, found):
    """{address: bytes} that node i's host words found [(offset, address, size)] pointed
    at when capture A launched it (cap.host_seen: {address: [bytes per launch]}), or None
    where any is unknown.  Bytes that were the same at every launch of the capture are
    the node's; otherwise the k-th node that holds the address gets the k-th launch's,
    where the launches and the nodes are as many."""
    seen = getattr(cap, "host_seen", None) or {}
    out = {}
    for _, addr, _ in found:
        got = seen.get(addr)
        if not got:
            return None
        if all(g == got[0] for g in got):
            out[addr] = got[0]
            continue
        holders = [j for j, n in enumerate(cap.nodes) if "bytes" in n and holds_word(n["bytes"], addr)]
        if len(holders) != len(got) or i not in holders:
            return None
        out[addr] = got[holders.index(i)]
    return out


def holds_word(blob, addr):
    """Whether blob has addr as an 8-byte-aligned little-endian word."""
    w = addr.to_bytes(8, "little")
    return any(blob[at:at + 8] == w for at in range(0, len(blob) - 7, 8))


def words_hex(blob, at, n):
    """Bytes at..at+n of a parameter blob as little-endian words of up to 8 bytes, in hex
    (0x7f12...: what a host address looks like), for messages."""
    return ",".join("0x" + blob[k:min(k + 8, at + n)][::-1].hex() for k in range(at, at + n, 8))
