"""Pointer words to (buffer, offset): the solving at the heart of the export.

A program is captured several times with its inputs (and so its intermediates) at
different addresses.  An 8-byte-aligned word of a kernel's parameters (or a memset's
or memcpy's address) is a pointer when it lies in a buffer known by its tensors
(inputs, outputs, weights), when it differs between the captures, or when it points
into a block the caching allocator handed out; it then maps to the buffer and offset
every capture must agree on.  Memory of the captures (their private pools) becomes
one intermediate buffer per region; memory from outside them that the same word
reaches in every capture becomes a static block, kept with its bytes.  A word that
differs but points nowhere, or captures that disagree, are problems: reported, never
guessed.

Relocations have a kind, as a linker's have: a whole 8-byte address ("abs64") at
any 4-byte-aligned offset, or the low or the high 32 bits of one ("lo32", "hi32":
cuDNN's layout kernels carry a truncated copy of an address).  A truncated address
is only believed when every capture agrees on its buffer and offset, which takes
captures whose buffers differ in their low and their high address bits
(capture_set.py makes three: A, B, and C in memory of its own far from theirs); a high
half is only believed beside the low half or the whole address of the same place.
Bytes that change between the captures and that no relocation explains -- and
constant words that are addresses this process owns but the export does not -- are
"suspects": host_words.prove_suspects replays the graph with them zeroed and
poisoned, and writes them as don't-care only if every output stays the same bit for
bit.

Pure: captures are numbered 0, 1, ... and described by plain data (the address
ranges of the known buffers, the allocator's blocks and the captures' regions as
sorted (address, size) lists, the parameter bytes); the one question about the
process -- what a constant word that is no buffer points at -- is a callable given
in (`foreign`).  No torch, no CUDA.
"""
import bisect
import difflib
import struct

from .model import Buffer, PtrWord, Relocation

__all__ = ["FOREIGN", "Allocations", "block_of", "BufferIndex", "Buffers", "Relocator", "Spans", "u32", "u64",
           "used_extent"]

FOREIGN = "an address this process owns, not the export's"  # (a suspect's why: host_words judges such words)


class Buffers:
    """The buffers of the export (model.Buffer), and for each capture the address ranges
    that are theirs."""

    def __init__(self):
        self.list = []  # model.Buffer: name, size, role, ranges {capture: addr}, dtype, shape, tensor, ...

    def add(self, **kw):
        """A new model.Buffer of the fields kw, appended to the list."""
        b = Buffer(**kw)
        self.list.append(b)
        return b

    def find(self, cap, addr):
        """(buffer, offset) of the first buffer whose bytes in capture cap hold addr, or
        (None, 0).  Skipped: aliased outputs (whose memory held other tensors first:
        node_mapping.py); a buffer with places (bytes apart: the random-number state)
        holds only the addresses listed there."""
        return _find_in(self.list, cap, addr)


class BufferIndex:
    """Buffers.find by bisection, for the Relocator, which asks it for every word of every
    node (a linear search made a training step's mapping take tens of seconds).  Each
    capture's address space is cut at every buffer's ends into pieces, each with the
    buffers that cover it in list order; a lookup tests only those, with find's own test,
    so it gives what find gives.  Buffers added since the index was built (the
    Relocator's intermediates and static blocks) are searched one by one after it, and
    the index is built again once there are many of them.  Valid while no buffer's size,
    ranges or places change (none does while the Relocator maps nodes)."""

    REBUILD = 64  # buffers added since the index was built, searched one by one

    def __init__(self, bufs):
        self.bufs, self.built, self.pieces = bufs, 0, {}

    def _piece(self, cap):
        if cap not in self.pieces:
            spans = []
            for b in self.bufs.list[:self.built]:
                if b.places is not None:
                    spans += [(a, a + 1, b) for a in b.places.get(cap, {})]
                elif b.ranges.get(cap) is not None and b.size > 0:
                    spans.append((b.ranges[cap], b.ranges[cap] + b.size, b))
            cuts = sorted({x for lo, hi, _ in spans for x in (lo, hi)})
            starts, ends = {}, {}
            for k, (lo, hi, _) in enumerate(spans):
                starts.setdefault(lo, []).append(k)
                ends.setdefault(hi, []).append(k)
            active, covering = set(), []
            for x in cuts:
                active.difference_update(ends.get(x, ()))
                active.update(starts.get(x, ()))
                covering.append([spans[k][2] for k in sorted(active)])
            self.pieces[cap] = (cuts, covering)
        return self.pieces[cap]

    def find(self, cap, addr):
        if len(self.bufs.list) - self.built > self.REBUILD or len(self.bufs.list) < self.built:
            self.built, self.pieces = len(self.bufs.list), {}
        cuts, covering = self._piece(cap)
        k = bisect.bisect_right(cuts, addr) - 1
        for part in (covering[k] if k >= 0 else (), self.bufs.list[self.built:]):
            b, off = _find_in(part, cap, addr)
            if b is not None:
                return b, off
        return None, 0


def _find_in(buffers, cap, addr):
    """Buffers.find over the buffers given."""
    for b in buffers:
        if b.aliased:
            continue
        if b.places is not None:
            off = b.places.get(cap, {}).get(addr)
            if off is not None:
                return b, off
            continue
        base = b.ranges.get(cap)
        if base is not None and base <= addr < base + b.size:
            return b, addr - base
    return None, 0


def used_extent(base, size, allocs, refs):
    """How many bytes of an intermediate -- a capture's region, size bytes at base -- the
    program uses: up to the end of the last allocation the capture made that a reference
    points into, or the end of what a memset or copy covers, rounded up to 512 bytes as
    the caching allocator rounds, never more than size.  refs: (offset, bytes) pairs
    (bytes 0 for a kernel's pointer: its allocation is its reach); allocs: the capture's
    allocations, (address, size).  A pointer one past an allocation's end counts as in
    it.  Nothing is cut (size) where a reference lies in no allocation, or where there is
    no reference at all: what the trace does not explain is kept."""
    if not refs:
        return size
    inside = [(a, s) for a, s in allocs if a < base + size and base < a + s]
    end = 0
    for off, n in refs:
        at = base + off
        hits = [a + s for a, s in inside if a <= at <= a + s]
        if not hits:
            return size
        end = max(end, max(hits) - base, off + n)
    return min(size, -(-end // 512) * 512)


def block_of(blocks, addr):
    """The (address, size) of blocks (sorted (address, size) pairs) that holds addr, or None."""
    for a, s in blocks:
        if a <= addr < a + s:
            return a, s
    return None


class Spans:
    """block_of by bisection over a fixed sorted list of (address, size): the first pair
    (in the list's order) that holds an address.  The end of the longest reach so far
    (ends[k]: the furthest a + s among the first k + 1) rises past addr first at the
    first pair reaching beyond it; that pair holds addr if it starts at or below it."""

    def __init__(self, blocks):
        self.blocks = list(blocks)
        self.starts = [a for a, _ in self.blocks]
        self.ends, reach = [], None
        for a, s in self.blocks:
            reach = a + s if reach is None else max(reach, a + s)
            self.ends.append(reach)

    def holding(self, addr):
        k = bisect.bisect_right(self.ends, addr)  # (the first whose reach is beyond addr)
        if k < len(self.blocks) and self.starts[k] <= addr:
            return self.blocks[k]
        return None


def u32(blob, at):
    return struct.unpack_from("<I", blob, at)[0]


def u64(blob, at):
    return struct.unpack_from("<Q", blob, at)[0]


def _label(c):
    return chr(ord("A") + c) if c < 26 else str(c)


class Allocations:
    """One capture's allocations, in the order the program made them, paired with capture
    0's by that order: the same program makes the same allocations, of the same sizes,
    wherever (and however packed) its memory is.  The two lists are aligned by their
    sizes (a longest-matching alignment: seen on an H100, capture A's trace held two
    allocations more than C's, for every model), and only aligned ones are paired; a
    word in an allocation left unpaired fails the check, it is never guessed.  Maps an
    address of this capture to the addresses it may be in capture 0 and back: several
    where one place held several allocations in turn (the allocator reuses freed
    blocks).  An address at an allocation's end counts as in it (a kernel's end
    pointer)."""

    def __init__(self, mine, first):
        sm = difflib.SequenceMatcher(None, [s for _, s in mine], [s for _, s in first], autojunk=False)
        # ((address, size) here, (address, size) in capture 0)
        self.pairs = [(mine[i + k], first[j + k]) for i, j, n in sm.get_matching_blocks() for k in range(n)]
        self.unpaired = len(mine) - len(self.pairs)
        # by start address on each side, and the largest size: the pairs that can hold an
        # address start no further below it than that
        self.side = [self._sorted(0), self._sorted(1)]

    def _sorted(self, side):
        pairs = sorted(self.pairs, key=lambda p: p[side][0])
        return [p[side][0] for p in pairs], pairs, max((p[side][1] for p in pairs), default=0)

    def _holding(self, side, v):
        starts, pairs, longest = self.side[side]
        lo, hi = bisect.bisect_left(starts, v - longest), bisect.bisect_right(starts, v)
        return [p for p in pairs[lo:hi] if p[side][0] <= v <= p[side][0] + p[side][1]]

    @staticmethod
    def pairable(mine, first):
        """Whether an alignment can pair all but a few (a tenth) of this capture's allocations."""
        return mine is not None and first is not None and len(Allocations(mine, first).pairs) >= 0.9 * len(mine)

    def to_first(self, v):
        return {f[0] + (v - m[0]) for m, f in self._holding(0, v)}

    def from_first(self, a):
        return {m[0] + (a - f[0]) for m, f in self._holding(1, a)}


class Relocator:
    """Resolves the words of several captures against the buffers.

    bufs: Buffers whose ranges are keyed by capture number; blocks: for each capture,
    the blocks the caching allocator had handed out; regions: for each capture, the
    memory it allocated (Capture.regions), or None where the allocator's trace was not
    available (then an intermediate is the allocator block it is in); foreign(addr): a
    description of what a constant word that is no buffer points at in this process,
    or None (its word is then a constant); paired: {capture: Allocations} for captures
    whose memory is laid out otherwise than capture 0's (capture C, in memory of its
    own): their words are checked against capture 0's through the allocations, not
    through regions.  Problems and foreign words are collected in .problems and
    .foreign_words; intermediates and static blocks are added to bufs as t0, t1, ...
    in the order they are first met."""

    def __init__(self, bufs, blocks, regions=None, foreign=None, paired=None):
        self.bufs, self.blocks = bufs, [Spans(b) for b in blocks]
        self.index = BufferIndex(bufs)
        self.paired = dict(paired or {})
        self.direct = [c for c in range(len(self.blocks)) if c not in self.paired]
        regions = None if regions is None else [regions[c] for c in self.direct]
        self.regions = None if regions is None or any(r is None for r in regions) else [Spans(r) for r in regions]
        self.foreign = foreign or (lambda addr: None)
        self.pairs = {}  # ("region" or "static", address in capture 0) -> buffer, checked against the others
        self.problems, self.foreign_words = [], []

    def at(self, c, b, o):
        """The addresses place (b, o) may have in capture c: its own range there (a known
        buffer), and, in a paired capture, wherever the allocations put it."""
        out = {b.ranges[c] + o} if c in b.ranges else set()
        if b.places is not None:
            return {a for a, off in b.places.get(c, {}).items() if off == o}
        if c in self.paired and 0 in b.ranges:
            out |= self.paired[c].from_first(b.ranges[0] + o)
        return out

    def resolve(self, vals, where, nowhere=True):
        """A word seen as vals[c] in capture c: (buffer, offset), or None if not a pointer.
        nowhere=False: a word that no place explains in every capture -- it changes but
        points nowhere, or the captures disagree on where it points (stale stack bytes in
        the unused slots of ATen's multi-tensor metadata looked like an address in one
        capture and not in the others) -- is no problem of its own: the caller treats
        it as a suspect, to be proven irrelevant by replay."""
        vals = list(vals)
        d = self.direct
        found = {c: self.index.find(c, vals[c]) for c in d}
        words = " / ".join(f"0x{v:x}" for v in vals)
        same = all(v == vals[0] for v in vals)
        if same and found[0][0] and found[0][0].role == "intermediate":
            # The same address in every capture is no capture's own memory, even where it lies
            # in capture A's region: a library's allocation made while A was captured (its
            # workspace, kept for later calls) that B and C use again.  Static memory.
            found = {c: (None, 0) for c in d}
        if any(b for b, _ in found.values()):
            b0, o0 = found[0]
            bad = [c for c in d if found[c][0] is not b0 or found[c][1] != o0]
            bad += [c for c in self.paired if not b0 or vals[c] not in self.at(c, b0, o0)]
            if bad and not nowhere:
                return None  # no pointer every capture agrees on: a suspect for the caller
            if bad:
                self.problems.append(f"{where}: the captures disagree: a pointer into " + ", ".join(
                    f"{b.name if b else '?'}+{o} in capture {_label(c)}" for c, (b, o) in found.items())
                    + "".join(f", 0x{vals[c]:x} in capture {_label(c)}" for c in self.paired))
                return None
            return b0, o0
        bl = {c: self.blocks[c].holding(vals[c]) for c in d}
        if same and not bl[0]:
            m = self.foreign(vals[0])
            if m:  # a kernel that reads it would read something else, or nothing, at run time
                self.foreign_words.append(f"{where}: 0x{vals[0]:x}, {m}")
            return None  # the same in every capture and no device memory: a constant
        if not all(bl.values()):
            if nowhere:
                self.problems.append(f"{where}: {words} changes between captures but points into no allocation"
                                     " the caching allocator knows (memory it does not own, or not a pointer)")
            return None
        static = same  # memory from outside the captures (a workspace, a constant): its bytes are kept
        if not static and self.regions is not None:  # memory of the captures: the region of allocations it is in
            bl = {c: r.holding(vals[c]) for c, r in zip(d, self.regions)}
            if (not all(bl.values()) or any(b[1] != bl[0][1] for b in bl.values())) and not nowhere:
                return None
            if not all(bl.values()) or any(b[1] != bl[0][1] for b in bl.values()):
                self.problems.append(f"{where}: {words} is in no allocation the captures made, or in "
                                     "regions of different sizes")
                return None
        if not static:
            off_c = [c for c in self.paired if vals[0] not in self.paired[c].to_first(vals[c])]
            if off_c and not nowhere:
                return None
            if off_c:
                self.problems.append(f"{where}: {words}: capture {_label(off_c[0])}'s word is not in the allocation "
                                     "capture A's is in, at the same offset")
                return None
        off = vals[0] - bl[0][0]
        key = ("static" if static else "region", bl[0][0])  # a region may start where a static block does
        if key in self.pairs:
            b = self.pairs[key]
            if any(b.ranges[c] != bl[c][0] or vals[c] - bl[c][0] != off for c in d[1:]) and not nowhere:
                return None
            if any(b.ranges[c] != bl[c][0] or vals[c] - bl[c][0] != off for c in d[1:]):
                self.problems.append(f"{where}: the captures disagree on where {b.name} is")
                return None
            return b, off
        ranges = {c: bl[c][0] for c in d}
        if static:  # the same everywhere
            ranges.update({c: bl[0][0] for c in self.paired})
        b = self.bufs.add(name=f"t{len(self.pairs)}", size=bl[0][1], role="weight" if static else "intermediate",
                          ranges=ranges, static=static)
        if static:
            b.tensor = f"__static_{len(self.pairs)}"
        self.pairs[key] = b
        return b, off

    def probe(self, vals):  # (bufs.find skips aliased outputs)
        """(buffer, offset) if every capture's word is the same place of one buffer the
        export already knows, else None; silent (a window across two fields may hit a
        buffer by chance in one capture: that is no problem, only not an address)."""
        b0, o0 = self.index.find(0, vals[0])
        if b0 and all(vals[c] in self.at(c, b0, o0) for c in range(1, len(vals))):
            return b0, o0
        return None

    def truncated(self, vals, kind, pairs=()):
        """(buffer, offset) whose address, cut as kind says, is vals[c] in every capture c, or
        None.  lo32: any buffer, if exactly one place inside it fits every capture; hi32:
        only the places in pairs (the same parameter's other relocations)."""
        n = len(vals)
        if kind == "lo32":
            hits = []
            for b in self.bufs.list:
                if 0 not in b.ranges or b.aliased:
                    continue
                o = (vals[0] - b.ranges[0]) & 0xFFFFFFFF
                if o < b.size and all(any(a & 0xFFFFFFFF == vals[c] for a in self.at(c, b, o))
                                         for c in range(1, n)):
                    hits.append((b, o))
            return hits[0] if len(hits) == 1 else None
        for b, o in pairs:
            if all(any(a >> 32 == vals[c] for a in self.at(c, b, o)) for c in range(n)):
                return b, o
        return None

    def kernel_args(self, layout, blobs, where, ptr_words, suspects=None, values=()):
        """One kernel node's arguments.  layout: its parameters' (offset, size); blobs: its
        parameter bytes in each capture.  Returns, one per parameter, ("ptr", buffer, offset)
        for an 8-byte parameter that is one whole address, ("bytes", raw, [model.Relocation
        (at, buffer, offset, kind)]) for one with relocations inside, or ("value", raw);
        adds to ptr_words the model.PtrWord (parameter offset, offset inside it, kind) of
        each relocation.
        suspects, a list, gets (offset, length, why) for the bytes that change between the
        captures but no relocation explains, and for constant words that are addresses this
        process owns but the export does not; their bytes are zero in raw.  Without it (the
        two-capture behaviour) those are problems, and foreign words are written as null.
        values: byte ranges [(from, to)] that hold no address (library_structs.value_ranges):
        no word overlapping one is taken for an address, however it reads."""
        args = []
        blob = bytearray(blobs[0])

        def free(w, n):  # (no byte of w..w+n in a range of values)
            return not any(lo < w + n and w < hi for lo, hi in values)
        for off, size in layout:
            end = off + size
            relocs = {}  # at (from the blob's start) -> (buffer, offset, kind)
            covered = set()  # bytes that relocations explain

            def take(w, r, kind, width):
                relocs[w] = (r[0], r[1], kind)
                covered.update(range(w, w + width))

            changed = {i for i in range(off, end) if any(b[i] != blobs[0][i] for b in blobs[1:])}
            # whole addresses at 8-byte-aligned words: pointers, constants, foreign words
            for w in range(off + (-off % 8), end - 7, 8):
                if not free(w, 8):
                    continue
                vals = [u64(b, w) for b in blobs]
                seen = len(self.foreign_words)
                r = self.resolve(vals, f"{where}, parameter bytes {w}..{w + 8}", nowhere=suspects is None)
                if r:
                    take(w, r, "abs64", 8)
                elif len(self.foreign_words) > seen:
                    struct.pack_into("<Q", blob, w, 0)  # never the process's own address
                    if suspects is not None:
                        suspects.append((w, 8, FOREIGN))
                        covered.update(range(w, w + 8))
            if suspects is not None:
                # whole addresses at 4-byte-aligned words, then truncated ones, where bytes change
                for w in range(off + (-off % 4), end - 7, 4):
                    if w % 8 and free(w, 8) and not covered & set(range(w, w + 8)) and changed & set(range(w, w + 8)):
                        r = self.probe([u64(b, w) for b in blobs])
                        if r:
                            take(w, r, "abs64", 8)
                for kind in ("lo32", "hi32"):
                    pairs = [(b, o) for b, o, _ in relocs.values()]
                    for w in range(off + (-off % 4), end - 3, 4):
                        if free(w, 4) and not covered & set(range(w, w + 4)) and changed & set(range(w, w + 4)):
                            r = self.truncated([u32(b, w) for b in blobs], kind, pairs)
                            if r:
                                take(w, r, kind, 4)
                # what nothing explains: the bytes that change, in runs.  Not their whole words:
                # a word can hold a constant field beside bytes nobody wrote (a struct's
                # padding, left as the host's stack had it: ATen's reduce and multi-tensor
                # kernels), and the constant byte must keep its value, in the replays that
                # prove the others irrelevant and in the export
                left = sorted(changed - covered)
                while left:  # what nothing explains, in runs of bytes
                    a = b = left.pop(0)
                    while left and left[0] == b + 1:
                        b = left.pop(0)
                    suspects.append((a, b + 1 - a, "changes between the captures and is no address of the export's"))
                    blob[a:b + 1] = bytes(b + 1 - a)
            if size == 8 and list(relocs) == [off] and relocs[off][2] == "abs64":
                ptr_words.add(PtrWord(off, 0, "abs64"))
                args.append(("ptr", relocs[off][0], relocs[off][1]))
            elif relocs:
                ptrs = []
                for w, (b, o, kind) in sorted(relocs.items()):
                    ptr_words.add(PtrWord(off, w - off, kind))
                    ptrs.append(Relocation(w - off, b, o, kind))
                args.append(("bytes", bytes(blob[off:end]), ptrs))
            else:
                if suspects is None and changed:
                    self.problems.append(f"{where}: parameter at {off} ({size} bytes) differs between the captures "
                                         "and holds no pointer (a seed or a counter?)")
                args.append(("value", bytes(blob[off:end])))
        return args
