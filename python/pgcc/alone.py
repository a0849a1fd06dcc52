"""Proofs by one node run alone: whether a kernel reads some of its parameter bytes,
told from what it writes when it is launched by itself, outside any graph.

replay.prove_irrelevant asks the whole graph: replayed with the bytes zeroed, then
poisoned, are its outputs and weights those of a plain replay, bit for bit?  A graph
with a kernel that is not deterministic -- atomic adds, as an embedding's backward or
torch_geometric's scatter make -- gives other bits on some replays whatever the bytes,
so that question has no answer there.  One node alone usually is deterministic: run
from the same bytes in every buffer its pointers point into, with capture A's
parameters twice and with the changed ones, it writes the same bytes into them or it
does not.  A node whose runs with the same parameters already differ is not judged.

    Alone(Device(capA, ALONE), nodes, kernels).problem(i, base, {"zeroed": blob, ...}, name)

The same runs judge a block of memory from outside the captures where the graph's replays
are not deterministic (block_ignored: replay.scratch_blocks' workspaces): the nodes that
point into it, run one after another with the block as it is, with its bytes all 0x00 and
then all 0xff, write the same.

The buffers' bytes are saved before and written back after.  Pure but for the device
(access_probe.Device: launch, read, write), which tests stand in for.
"""
import hashlib

from .access_probe import pointers
from .errors import ExportError

__all__ = ["Alone", "ALONE", "LIMIT", "merged", "outside"]

LIMIT = 512 << 20  # a node's buffers, at most (each run reads them all back)
ALONE = ("run alone with some of its parameter bytes changed, to learn whether it reads them",
         "the buffers it points into may hold what it wrote, and this process's CUDA context may be unusable from "
         "here (restart it)")


def merged(spans):
    """[(address, bytes)] with overlapping or touching spans joined, sorted."""
    out = []
    for a, n in sorted(spans):
        if out and a <= out[-1][0] + out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], a + n - out[-1][0]))
        else:
            out.append((a, n))
    return out


def outside(spans, at, size):
    """[(address, bytes)]: the parts of spans outside the size bytes at `at`."""
    out = []
    for a, n in spans:
        out += [p for p in ((a, min(n, at - a)), (max(a, at + size), a + n - max(a, at + size))) if p[1] > 0]
    return out


class Alone:
    """Capture A's kernel nodes, each run alone on the buffers its pointers point into."""

    def __init__(self, device, nodes, kernels):
        self.device, self.kernels = device, kernels
        self.proven = []  # the nodes whose bytes problem() found irrelevant
        self.nodes = {n.index: n for n in nodes if n.kind == "kernel" and isinstance(n.index, int)}

    def spans(self, i):
        """[(address, bytes)] node i's pointers point into in capture A, or why it cannot be
        run alone.  Words into host memory are left out: those a suspect is are stale stack
        bytes that looked like an address in capture A (an ATen lambda's padding), and
        what a kernel would write through one is not compared.  A pointer into the
        random-number state (random_state.rng_buffer) is one of the two 8-byte tensors
        capture A's kernels read the generator's seed and offset from."""
        n = self.nodes.get(i)
        k = self.kernels.get(n.func) if n is not None else None
        if k is None:
            return "no kernel node of the captures"
        out = []
        for _key, b, off in pointers(n, k.layout):
            if b.host is not None:
                continue  # (a word that looked like a host address in capture A: stale stack bytes, mostly)
            if b.role == "rng" and (at := [a for a, o in ((b.places or {}).get(0) or {}).items() if o == off]):
                out.append((at[0], 8))  # (the generator's seed or offset tensor, which capture A's kernels read)
                continue
            if 0 not in (b.ranges or {}):
                return f"a pointer into {b.name}, no memory of capture A"
            out.append((b.ranges[0], b.size))
        out = merged(out)
        if sum(n for _a, n in out) > LIMIT:
            return f"its buffers are over {LIMIT >> 20} MiB"
        return out

    def writes(self, i, spans, blobs, name):
        """A digest of the buffers' bytes after node i run once with each of blobs, every run
        from the bytes they held before; those written back after."""
        saved = [self.device.read(a, n) for a, n in spans]
        out, hung = [], False
        try:
            for blob in blobs:
                for (a, _n), data in zip(spans, saved):
                    self.device.write(a, data)
                self.device.launch(i, name, blob)
                h = hashlib.sha256()
                for a, n in spans:
                    h.update(self.device.read(a, n))
                out.append(h.digest())
        except ExportError:  # (a launch that never finished: a copy would wait behind it for ever)
            hung = True
            raise
        finally:
            if not hung:
                for (a, _n), data in zip(spans, saved):
                    self.device.write(a, data)
        return out

    def block_ignored(self, order, block, name_of):
        """(None, bytes written) where the nodes of `order` (indices, in the graph's order:
        those that point into block), run alone one after another with block (address,
        size: memory from outside the captures) as it is, again, then with its bytes all
        0x00, then all 0xff, write the same into the other memory they point into each
        time -- what they write into the block itself is not compared: a workspace one
        fills and it or a later one reads back (cuBLASLt's split-K partial sums, written by
        the GEMM and summed by its reduction kernel) -- and the furthest byte written
        there; else (why, 0).  Zeros first: where they change what is written, the nodes
        are not run on 0xff (a block of indices would send them out of bounds).  The
        buffers' bytes are written back after.  name_of(i): node i's kernel."""
        spans = []
        for i in order:
            got = self.spans(i)
            if isinstance(got, str):
                return f"node {i} cannot be run alone ({got})", 0
            spans += got
        spans = merged(spans)
        if sum(n for _a, n in spans) > LIMIT:
            return f"the nodes' buffers are over {LIMIT >> 20} MiB", 0
        at, size = block
        others = outside(spans, at, size)
        saved = [self.device.read(a, n) for a, n in spans]
        got, wrote = [], 0
        try:
            for fill in (None, None, 0x00, 0xFF):
                for (a, _n), data in zip(spans, saved):
                    self.device.write(a, data)
                if fill is not None:
                    self.device.write(at, bytes([fill]) * size)
                for i in order:
                    self.device.launch(i, name_of(i))
                h = hashlib.sha256()
                for a, n in others:
                    h.update(self.device.read(a, n))
                got.append(h.digest())
                if fill is not None:
                    wrote = max(wrote, len(self.device.read(at, size).rstrip(bytes([fill]))))
                if len(got) == 2 and got[1] != got[0]:
                    return "run alone twice on the same bytes, they write different bytes (not deterministic)", 0
                if fill is not None and got[-1] != got[0]:
                    return f"run alone with the block's bytes all 0x{fill:02x}, they write other bytes: they read them", 0
        finally:
            for (a, _n), data in zip(spans, saved):
                self.device.write(a, data)
        return None, wrote

    def problem(self, i, base, changed, name):
        """None where node i, run alone with each of changed ({how: parameter bytes}) in
        place of base, writes what it writes with base; else what stands in the way."""
        spans = self.spans(i)
        if isinstance(spans, str):
            return f"it cannot be run alone ({spans})"
        got = self.writes(i, spans, [base, base] + list(changed.values()), name)
        if got[0] != got[1]:
            return "run alone twice with the same parameters, it writes different bytes (it is not deterministic)"
        for how, g in zip(changed, got[2:]):
            if g != got[0]:
                return f"run alone with them {how}, it writes other bytes: the kernel reads them"
        self.proven.append(i)
        return None
