"""Proofs by replay: what the captured graph's results do not depend on.

Two questions are answered by replaying capture A and comparing every output, and
every weight (a training step updates its state in place), bit for bit with a plain
replay:
- scratch_blocks: which blocks from outside the captures are a library's workspace
  (replays with the block filled with 0xff, then 0x00);
- prove_irrelevant: which parameter bytes that change between the captures but are no
  address of the export's -- stack bytes in a field a kernel does not read, an address
  of memory the export does not own -- the kernels ignore (replays with them zeroed,
  then poisoned; where the graph's replays are not deterministic, the node run alone
  decides: alone.py).  (Words that point into host memory are told apart before, with
  copies placed at their low 32 bits: host_words.host_copy_check.)

Each replay starts from the same state: the weights, the inputs and the static blocks
are saved once and written back before every replay and at the end, so the caller's
model is as it was; and it draws the same random numbers: PyTorch's generator is set
back to its offset before each replay of torch's executable (whose replay writes the
generator's seed and offset where the graph's random kernels read them, and advances
the offset), and at the end.  Without that every replay of a graph with dropout gives
other results, and nothing can be proven by replaying it.  Parameter changes are made
on an executable graph of our own, instantiated from capture A's graph (one per stretch
between host reads: hostreads.py), through cuGraphExecKernelNodeSetParams; torch's own
executable is not touched.

A kernel that dereferences a poisoned word as an address faults, and a fault leaves
the process's CUDA context unusable.  The bytes replayed here are only those that no
place explains in every capture -- words that point into no allocation, stale bytes
that looked like an address in one capture only, host addresses -- so a kernel that
faults on them reads memory it was never consistently given; the export then fails
saying so, and says that the process's CUDA context may be unusable.
"""
import contextlib
import ctypes as C

from .capture import tensor_span
from .cuda import KernelNodeParams, check, cu, kernel_argv, read_device, stuck_error
from .errors import ExportError
from .graphfile import node_refs
from .random_state import philox_generator
from .snapshots import Snapshot

__all__ = ["close_unless_stuck", "mark_dontcare", "narrow", "POISON", "prove_irrelevant", "Replayer", "scratch_blocks"]

POISON = 0xA5


class Replayer:
    """Capture A, replayed from a saved state; its outputs and weights read back as bytes."""

    def __init__(self, torch, cap, bufs):
        self.torch, self.cap = torch, cap
        state = [(b.ranges[0], b.size) for b in bufs.list if b.role == "weight" and not b.host]
        state += [tensor_span(x) for x in cap.inputs]
        self.saved = Snapshot.take(torch, state)  # (on the device where it has room: snapshots.py)
        self.watched = [tensor_span(o) for o in cap.outputs]
        self.watched += [(b.ranges[0], b.size) for b in bufs.list if b.role == "weight" and not b.static]
        self.labels = [f"output {k}" for k in range(len(cap.outputs))]  # what each result is, for messages
        self.labels += [f"weight {b.tensor if b.tensor is not None else b.name}" for b in bufs.list
                        if b.role == "weight" and not b.static]
        self.execs = None
        # {node index: parameter bytes} every replay of our own executable runs with
        # (fix): host words pointed at copies of what the kernel read at its launch
        self.fixed = {}
        self._held = contextlib.ExitStack()  # (hold: what fixed bytes point at, until close)
        self.generator = philox_generator(torch)
        self.offset = self.generator.get_offset()  # (the generator's, before any replay: set back to it)
        self.primed = False  # (torch's executable replayed once: the graph's seed and offset written)

    def rewind(self):
        """PyTorch's generator back to its offset before the first replay."""
        self.generator.set_offset(self.offset)

    def torch_replay(self):
        """Capture A replayed by torch's executable, drawing the same random numbers as
        every replay before it."""
        self.rewind()
        self.cap.replay()
        self.primed = True

    def hold(self, context):
        """Enters context (cuda.placed: a device copy) until close; returns what it gives."""
        return self._held.enter_context(context)

    def base(self, i):
        """Node i's parameter bytes as our replays run it: fixed, or capture A's."""
        return self.fixed.get(i, self.cap.nodes[i]["bytes"])

    def fix(self, i, blob):
        """Node i runs with these parameter bytes in every later replay (ours: replay too
        then runs our executable, not torch's)."""
        self.fixed[i] = blob
        if self.execs is not None:
            self.set_params(self.execs[self.cap.segment_of[i]], i, blob)

    def restore(self):
        self.saved.restore()

    def results(self):
        """The outputs' and the weights' bytes now: a snapshots.Snapshot, compared with
        another replay's range by range."""
        return Snapshot.take(self.torch, self.watched)

    def replay(self, before=None):
        """Replays torch's own executable graph (ours where nodes are fixed) after before()
        (a change to make first)."""
        if self.fixed:
            return self.replay_params({}, before)
        self.restore()
        if before:
            before()
        self.torch_replay()
        return self.results()

    def own_execs(self):
        """Executable graphs of our own from capture A's graphs (one per stretch between host
        reads), for changed parameters."""
        if self.execs is None:
            self.execs = []
            for g in self.cap.segments:
                e = C.c_void_p()
                check(cu().GraphInstantiate(C.byref(e), C.c_void_p(g.raw_cuda_graph()), 0),
                      "cuGraphInstantiateWithFlags")
                self.execs.append(e)
            for i, blob in self.fixed.items():
                self.set_params(self.execs[self.cap.segment_of[i]], i, blob)
        return self.execs

    def replay_params(self, changed, before=None):
        """Replays our executable with the kernel nodes in changed ({node index: parameter
        bytes}) set to those bytes, then sets them back to capture A's (or fixed)."""
        execs, stream = self.own_execs(), C.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        if not self.primed:  # (our executable reads the seed and offset torch's replay writes: written once first)
            self.torch_replay()
        self.restore()
        if before:
            before()
        try:
            for i, blob in changed.items():
                self.set_params(execs[self.cap.segment_of[i]], i, blob)
            for e in execs:
                check(cu().GraphLaunch(e, stream), "cuGraphLaunch")
            check(cu().StreamSynchronize(stream), "cuStreamSynchronize")
            return self.results()
        finally:
            for i in changed:
                self.set_params(execs[self.cap.segment_of[i]], i, self.base(i))

    def set_params(self, e, i, blob):
        n = self.cap.nodes[i]
        argv, _vals = kernel_argv(n["layout"], blob)
        p = KernelNodeParams(func=n["func"], smem=n["smem"], kernelParams=C.cast(argv, C.c_void_p))
        p.grid[:], p.block[:] = n["grid"], n["block"]
        check(cu().GraphExecKernelNodeSetParams(e, C.c_void_p(self.cap.handles[i]), C.byref(p)),
              "cuGraphExecKernelNodeSetParams")

    def close(self):
        self.restore()
        self.rewind()
        self.torch.cuda.synchronize()
        for e in self.execs or []:
            check(cu().GraphExecDestroy(e), "cuGraphExecDestroy")
        self.execs = None
        self._held.close()


def close_unless_stuck(replayer, stuck=stuck_error):
    """Closes the replayer -- the caller's state written back -- unless the CUDA context is
    stuck in an error (stuck(): a kernel faulted).  Then nothing can be written back, and
    closing would only raise that error (at its first copy, "cuMemcpyHtoD: CUDA error 700")
    in place of the exception that says what faulted.  Returns the stuck error, or None."""
    err = stuck()
    if err is None:
        replayer.close()
    return err


def _filled(blob, ranges, fill):
    out = bytearray(blob)
    for at, n, _ in ranges:
        out[at:at + n] = bytes([fill]) * n
    return bytes(out)


def narrow(replayer, i, ranges, fill, reference):
    """The fewest of node i's ranges whose filling with fill alone changes the results,
    found by halving (what a message names: of 200 stale words in a multi-tensor table,
    the two a kernel reads).  Where neither half alone changes them, both are kept."""
    blob = replayer.base(i)

    def differs(rs):
        return replayer.replay_params({i: _filled(blob, rs, fill)}) != reference

    while len(ranges) > 1:
        half = len(ranges) // 2
        if differs(ranges[:half]):
            ranges = ranges[:half]
        elif differs(ranges[half:]):
            ranges = ranges[half:]
        else:
            break
    return ranges


NOISY = "noisy"  # changes(): the graph's replays differ among themselves


def prove_irrelevant(replayer, suspects, name_of, words=None, alone=None):
    """suspects: {node index: [(byte offset in its parameters, length, why)]}.  Replays with
    all of them zeroed, then poisoned; where an output or weight changes, node by node to
    say which.  words(i, at, n): the bytes at a range in every capture, for messages.
    A replay that differs is made again: a change the second replay does not repeat is
    the graph's own noise (a kernel that is not deterministic, as atomic adds make), and
    where the graph is noisy a node's bytes are judged by running it alone (alone:
    alone.Alone; without it, such bytes are problems).  Returns the problems (empty: every
    suspect is proven irrelevant); a problem names the fewest ranges that change the
    results (narrow)."""
    if not suspects:
        return []
    shown = (lambda i, at, n: f" [{words(i, at, n)}]") if words else (lambda i, at, n: "")
    base = {i: replayer.base(i) for i in suspects}
    fills = {"zeroed": 0x00, "poisoned": POISON}
    filled = {how: {i: _filled(base[i], r, fill) for i, r in suspects.items()} for how, fill in fills.items()}

    def spans(i, r):
        return ", ".join(f"bytes {a}..{a + n} ({why}){shown(i, a, n)}" for a, n, why in r[:8]) + \
            (f", and {len(r) - 8} more" if len(r) > 8 else "")

    def judged_alone(i):
        why = alone.problem(i, base[i], {how: blobs[i] for how, blobs in filled.items()}, name_of(i)) if alone \
            else "no node can be run alone here to judge them"
        return None if why is None else f"node {i} ({name_of(i)}): {spans(i, suspects[i])}: the graph's replays " \
            f"are not deterministic, and {why}"

    try:
        reference = replayer.replay_params({})

        def changes(changed):
            """None where a replay with changed gives the reference (a first replay that
            differs and a second that does not: the first was noise); NOISY where two replays
            differ from it and from each other; else the first result that changed."""
            got = replayer.replay_params(changed)
            if got == reference:
                return None
            again = replayer.replay_params(changed)
            if again == reference:
                return None
            if again != got:
                return NOISY
            return next(k for k, (g, want) in enumerate(zip(got, reference)) if g != want)

        if replayer.replay_params({}) != reference:
            if alone is None:
                return [f"{len(suspects)} kernel nodes have parameter bytes that change between the captures and are "
                        "no address, but two plain replays of the graph already differ (a kernel that is not "
                        "deterministic: atomic adds, as scatter_add and index_add make, or a library's reduction): "
                        "they cannot be proven irrelevant; torch.use_deterministic_algorithms(True) before the "
                        "callable first runs may make its replays agree (not tried by pgcc)"]
            return [p for p in map(judged_alone, suspects) if p]
        bad = []
        for how, together in filled.items():
            seen = changes(together)
            if seen is None:
                continue
            for i, r in suspects.items():  # which nodes: one at a time
                which = changes({i: together[i]})
                if which is None:
                    continue
                if which == NOISY:
                    if (p := judged_alone(i)):
                        bad.append(p)
                    continue
                few = narrow(replayer, i, r, fills[how], reference)
                more = f" (of its {len(r)} such ranges; the others alone change nothing)" if len(few) < len(r) else ""
                bad.append(f"node {i} ({name_of(i)}): {spans(i, few)}{more}: replaying with them {how} changes "
                           f"result {which} ({replayer.labels[which]}): the kernel reads them")
            if not bad and seen != NOISY:
                bad.append(f"replaying with the suspect bytes of {len(suspects)} nodes {how} together changes the "
                           "results, with any one node's alone it does not: " + ", ".join(
                               f"node {i} ({name_of(i)[:50]})" for i in list(suspects)[:8]))
            if bad:
                return bad
        return []
    except RuntimeError as e:  # a CUDA error: a kernel read what a suspect pointed at
        raise ExportError(f"replaying with parameter bytes that are no address of the export's zeroed or poisoned "
                          f"failed ({e}): a kernel reads memory it was not given (this process's CUDA context may "
                          "now be unusable); the suspects were " + "; ".join(
                              f"node {i} ({name_of(i)[:50]}) bytes " + ", ".join(
                                  f"{a}..{a + n}{shown(i, a, n)}" for a, n, _ in r[:8]) + (", ..." if len(r) > 8 else "")
                              for i, r in suspects.items())) from e


def scratch_blocks(replayer, bufs, nodes, log, alone=None, name_of=str):
    """Static blocks (memory from outside the captures, kept with their bytes) whose
    contents the graph does not depend on: a library's workspace (cuBLASLt's is 32 MiB).
    Each is tried by replaying capture A with the block filled with 0x00, then with 0xff
    (where zeros changed nothing: a block of indices -- a graph's edges -- filled with
    0xff would fail a bounds check, which leaves the process's CUDA context unusable):
    if the outputs are bit for bit those of a replay on its own bytes, what it holds does
    not matter, and it becomes a workspace in the arena, as large as the replays wrote
    into it (and its pointers reach), instead of a weight read from the file.  Where two
    plain replays differ (atomic adds: a GCN's scatter), whole replays prove nothing:
    the kernels that point into the block are run alone instead, one after another
    (alone: alone.Alone's block_ignored; without it, where a copy or memset points into
    it, or where they read it, it stays a weight).
    name_of(i): node i's kernel, for messages."""
    reach = {}  # block id -> the furthest byte its pointers reach
    for n in nodes:
        if n.kind == "kernel":
            refs = [(a[1], a[2]) for a in n.args if a[0] == "ptr"]
            refs += [(r[1], r[2]) for a in n.args if a[0] == "bytes" for r in a[2]]
        elif n.kind == "memset":
            refs = [n.dst]
        else:
            refs = [n.src, n.dst] if n.kind == "memcpy" else [n.src] if n.kind == "read" else []
        for b, o in refs:
            reach[id(b)] = max(reach.get(id(b), 0), o + 1)
    reference = replayer.replay()
    outputs = len(replayer.cap.outputs)
    noisy = replayer.replay()[:outputs] != reference[:outputs]  # (the graph's own noise: atomic adds)

    def by_replays(b):
        """(whether no output changed, the bytes the replays wrote into b)."""
        wrote = 0
        for fill in (0x00, 0xFF):  # (zeros first: a block of indices filled with 0xff fails a bounds check)
            def fill_block(fill=fill):
                check(cu().MemsetD8(b.ranges[0], fill, b.size), "cuMemsetD8")
            same = replayer.replay(fill_block)[:outputs] == reference[:outputs]
            wrote = max(wrote, len(read_device(b.ranges[0], b.size).rstrip(bytes([fill]))))
            if not same:
                return False, wrote
        return True, wrote

    def by_nodes(b):
        """The same, the kernels that point into b run alone, in the graph's order."""
        using = [n for n in nodes if any(x is b for x, _o, _w in node_refs(n))]
        if alone is None or not using or any(n.kind != "kernel" for n in using):
            return False, 0
        why, wrote = alone.block_ignored([n.index for n in using], (b.ranges[0], b.size), name_of)
        return why is None, wrote
    for b in [b for b in bufs.list if b.static and not b.host]:
        same, wrote = by_nodes(b) if noisy else by_replays(b)
        if not same:
            continue
        size = max(wrote, reach.get(id(b), 0), 1)
        size = min(b.size, -(-size // 256) * 256)
        log(f"  {b.name}: {b.size} bytes from outside the captures that no result depends on "
            f"(a workspace): {size} bytes of it in the arena")
        b.role, b.size, b.static = "workspace", size, False
        b.tensor = None


def mark_dontcare(k, ranges):
    """Adds a node's proven-irrelevant byte ranges (offsets in its parameter bytes) to its
    kernel's layout, as (parameter offset, offset inside, length)."""
    dc = k.dontcare
    for a, n, _ in ranges:
        for off, size in k.layout:
            lo, hi = max(a, off), min(a + n, off + size)
            if lo < hi:
                dc.add((off, lo - off, hi - lo))
