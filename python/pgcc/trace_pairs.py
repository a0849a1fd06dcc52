"""The other path of a branch moved onto this path's memory allocation by allocation,
through the two captures' allocator traces, where no shift of whole buffers does it
(branches.shifted).

Before the read both paths run the same code, so their captures make the same
allocations and frees of the same sizes in the same order, and yet they can place a
tensor in different segments (seen: a ViT step under a GradScaler, whose captures' traces
agree event for event but for two 8-byte allocations at the start of one -- by their
size and place, the seed and offset tensors PyTorch's generator allocates when a graph
first registers with it, outside the capture's pool).  The likely cause: the caching
allocator breaks best-fit ties between free blocks by address, and the addresses its
segments get depend on what the process freed before.  Here each allocation the other
path's capture made before its read is paired with the one this path's made at the same
place of the aligned traces; a place the other path's nodes use after the read is moved
to where this path's capture put that tensor, and memory the other path took only after
the read gets a buffer of its own.  Every place the two paths' nodes before the read point at must agree with
the pairing (the proof that it pairs the same tensors), and a tensor live at the read
whose bytes the other path allocates again after it is refused (its places would be two
tensors' at once).

Pure: a trace is [(action, address, size)] (capture.record_allocations), a read's
clock (allocations, frees requested) since its capture began (Capture.read_clock).
"""
import bisect
import difflib

__all__ = ["Pairing", "read_index"]


def read_index(trace, clock):
    """How many of trace's events came before the read whose counts were clock."""
    allocs, frees = clock
    n_alloc = n_free = 0
    for i, (act, _addr, _size) in enumerate(trace):
        if n_alloc >= allocs and n_free >= frees:
            return i
        n_alloc += act == "alloc"
        n_free += act == "free_requested"
    if n_alloc >= allocs and n_free >= frees:
        return len(trace)
    raise ValueError(f"the trace holds {n_alloc} allocations and {n_free} frees, fewer than the read's {clock}")


def _live(events):
    """{address: event index} of the allocations events leaves live."""
    live = {}
    for j, (act, addr, _size) in enumerate(events):
        if act == "alloc":
            live[addr] = j
        elif act == "free_requested":
            live.pop(addr, None)
    return live


class Pairing:
    """This path's capture trace ta read at event ia, the other's tb at ib: which of the
    other's allocations before the read are which of this one's."""

    def __init__(self, ta, ia, tb, ib):
        ea = [(act, size) for act, _addr, size in ta[:ia]]
        eb = [(act, size) for act, _addr, size in tb[:ib]]
        pair = {}  # the other's event index -> this one's
        for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, ea, eb, autojunk=False).get_opcodes():
            if tag == "equal":
                pair.update((j1 + d, i1 + d) for d in range(i2 - i1))
        # every allocation before the read, paired or not: (start, end, this path's start or None)
        self.spans = sorted((addr, addr + size, ta[pair[j]][1] if j in pair else None)
                            for j, (act, addr, size) in enumerate(tb[:ib]) if act == "alloc")
        live_a = set(_live(ta[:ia]).values())
        self.live = sorted((tb[j][1], tb[j][1] + tb[j][2],
                            ta[pair[j]][1] if j in pair and pair[j] in live_a else None)
                           for j in _live(tb[:ib]).values())
        self.starts = [s for s, _e, _a in self.live]
        # the other path's allocations after its read: a live tensor's bytes taken again
        self.after = [(addr, addr + size) for act, addr, size in tb[ib:] if act == "alloc"]

    def agrees(self, pb, pa):
        """Whether the other path's address pb before the read is this path's pa: some
        paired allocation holds pb at the offset its counterpart holds pa."""
        return any(s <= pb < e and a is not None and a + (pb - s) == pa for s, e, a in self.spans)

    def at_read(self, pb):
        """Where the other path's address pb, used after the read, is in this path's
        capture: ("moved", address) for a tensor live at the read, ("own", None) for memory
        no tensor live at the read holds.  Raises ValueError for a live tensor with no
        counterpart, or one whose bytes the other path allocates again after the read."""
        k = bisect.bisect_right(self.starts, pb) - 1
        if k < 0 or not self.live[k][0] <= pb < self.live[k][1]:
            return "own", None
        s, e, a = self.live[k]
        if a is None:
            raise ValueError(f"the other path's tensor at its capture's 0x{s:x} ({e - s} bytes), live at the read, "
                             "has no counterpart in this path's capture")
        if any(x < e and s < y for x, y in self.after):
            raise ValueError(f"the other path's tensor at 0x{s:x} ({e - s} bytes), live at the read, has its bytes "
                             "allocated again after the read: its places would be two tensors'")
        return "moved", a + (pb - s)
