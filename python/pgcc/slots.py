"""Capture regions split into the allocations the program made in them, so that pgcc's
memory plan packs them by when the nodes use them.

An intermediate of an export is a region of capture A's private pool: a segment of the
caching allocator, holding the capture's tensors where the allocator put them, holes
and all (blocks under 1 MiB and larger ones live in segments of their own, and a freed
block is reused only by an allocation that fits it).  Held whole, the regions make an
arena larger than what the program ever has live at once.  The allocator's trace says
where each allocation was and when: made at one event, freed at a later one.  A place a
node points at is then in the allocation that held it when the node was captured.

When a node was captured, the trace does not say.  Where a ModuleWatch was there,
capture A counted the allocator's allocations and frees as each node's launch began
(Capture.node_clock): that is the node's place in the trace (clock_times), and each of
its places is the allocation live there, one slot per allocation.  Where it saw more
calls than the capture has nodes (a call that made none), the nodes are matched to the
calls by kind, and a node takes the time every matching gives it (matched_times).
Otherwise the order of a capture that is one chain tells what it can: the nodes were
captured in the chain's order and the trace's events come in the host's order, so node k
was captured after t_k of the events, t_1 <= t_2 <= ..., with every place it points at
in an allocation live then.  Taking every node as early as that allows, then as late,
bounds each t_k; the allocations that cover one of its places and are live somewhere
within the bounds are that place's candidates, and where there are several they are
taken together, as one slot.  That is weak where memory is reused at once: a kernel's
input, freed after it, and the next kernel's output, made in its place, are both
candidates for the first kernel's pointer (nothing bounds it before the next
allocation): a simulated Inductor-like chain of 400 allocations gives 49 slots by the
order alone and 400 with the times (tests/python/test_slots.py, inductor_like).  A slot
becomes a buffer of its own, its bytes laid out as the capture had them, and pgcc's
memory plan (memplan.c) gives it bytes for as long as nodes use it.

A place the trace cannot explain -- in no allocation, or a copy running past one --
leaves its region whole, and a trace whose order contradicts the nodes' leaves every
region whole.  A kernel's pointer is taken to be in the allocation it lies in; only
where none holds it is it taken as the end of one (a pointer one past a tensor).

Pure: plain data in and out; no torch, no CUDA.
"""
import bisect

__all__ = ["chain_order", "clock_times", "lifetimes", "matched_times", "ROUND", "split", "up"]

ROUND = 512  # the caching allocator's block size granularity


def up(n):
    return -(-n // ROUND) * ROUND


def lifetimes(trace):
    """The allocations of an allocator trace [(action, address, size)], in the order made:
    [address, size, made, freed], made and freed the indices of the events that made and
    freed it (freed: the "free_requested" event, else "free_completed"; len(trace) for one
    the trace never frees)."""
    out, live = [], {}
    for t, (action, addr, size) in enumerate(trace):
        if action == "alloc":
            if addr in live:  # (a free the trace lost: the place was free again by now)
                out[live[addr]][3] = t
            live[addr] = len(out)
            out.append([addr, size, t, len(trace)])
        elif action in ("free_requested", "free_completed") and addr in live:
            out[live.pop(addr)][3] = t
    return out


def clock_times(trace, clocks):
    """Where in the trace each node was captured: clocks, the allocator's counts of
    allocations and frees made since the trace began, (allocations, frees), read as each
    node's launch began (Capture.node_clock); returns for each how many of the trace's
    events came before it (its "alloc" and "free_requested" events are what the counts
    count).  None without clocks, or where a clock is no point of the trace (the trace
    was cut short, or the counts are not its)."""
    if clocks is None:
        return None
    first, a, f = {(0, 0): 0}, 0, 0
    for i, (action, _, _) in enumerate(trace):
        if action == "alloc":
            a += 1
        elif action == "free_requested":
            f += 1
        else:
            continue
        first.setdefault((a, f), i + 1)
    out = [first.get(tuple(c)) for c in clocks]
    return None if None in out else out


def matched_times(seen, seen_kinds, kinds):
    """The times of the nodes of a chain where capture A saw more node-making calls than
    the chain has nodes (a call that made no node: seen in the zoo; which calls those were
    was not found).  seen: the calls' clock_times, in order; seen_kinds: the kind of node each
    makes (node_made_by); kinds: each node's, in the chain's order (None for a node no
    such call makes: an event's record or wait).  Every node made by a call is one of the
    calls seen, in order and kind for kind: matched as early as that allows and as late,
    a node lies between the two calls, and the times seen never fall, so where both
    calls' times agree every matching gives the node that time.  Returns each node's
    time, None where matchings disagree (split() bounds those by their neighbours, as it
    does without times), or None where no matching exists."""
    if seen is None or seen_kinds is None or len(seen) != len(seen_kinds):
        return None
    made = [k for k, kind in enumerate(kinds) if kind is not None]

    def match(ks, calls):  # each node of ks, in order, to the first call of its kind after the last one's
        out, it = [], iter(calls)
        for k in ks:
            j = next((j for j in it if seen_kinds[j] == kinds[k]), None)
            if j is None:
                return None
            out.append(j)
        return out
    early = match(made, range(len(seen)))
    late = match(made[::-1], range(len(seen) - 1, -1, -1))
    if early is None or late is None:
        return None
    out = [None] * len(kinds)
    for k, a, b in zip(made, early, late[::-1]):
        if seen[a] == seen[b]:
            out[k] = seen[a]
    return out


def chain_order(n, edges):
    """Nodes 0..n-1 in the order of the one chain the edges make, or None if they make
    none (a node with two successors or two predecessors, or more than one piece)."""
    succ, pred = {}, {}
    for a, b in edges:
        if a in succ or b in pred:
            return None
        succ[a], pred[b] = b, a
    roots = [i for i in range(n) if i not in pred]
    if len(roots) != (1 if n else 0):
        return None
    order = roots[:]
    while order and order[-1] in succ and len(order) <= n:
        order.append(succ[order[-1]])
    return order if len(order) == n else None


class _Place:
    """The allocations that may hold one place, and when each was live (.live: closed
    intervals of event counts, sorted; they cannot overlap: two allocations live at once
    never share a byte)."""

    def __init__(self, cands, lives):
        self.cands = sorted(cands, key=lambda i: lives[i][2])
        # live after the event that made it, up to the one that freed it
        self.live = [(lives[i][2] + 1, lives[i][3]) for i in self.cands]
        self.los = [lo for lo, _ in self.live]
        self.his = [hi for _, hi in self.live]
        self.sound = all(a[1] < b[0] for a, b in zip(self.live, self.live[1:]))

    def first(self, t):
        """The first time at or after t that the place is live, or None."""
        j = bisect.bisect_left(self.his, t)
        return None if j == len(self.his) else max(self.los[j], t)

    def last(self, t):
        """The last time at or before t that the place is live, or None."""
        j = bisect.bisect_right(self.los, t) - 1
        return None if j < 0 else min(self.his[j], t)

    def within(self, lo, hi):
        """(allocation, live interval) of those live somewhere in [lo, hi]."""
        j = bisect.bisect_left(self.his, lo)
        while j < len(self.los) and self.los[j] <= hi:
            yield self.cands[j], self.live[j]
            j += 1


class _Region:
    """One region's allocations, found by address: each listed under every page of the
    region it reaches into (at most 65,536 pages, of 4 KiB or more)."""

    def __init__(self, base, size, lives):
        self.base, self.size = base, size
        self.page = max(4096, -(-size // 65536))
        self.pages = {}
        for i, (a, s, _, _) in enumerate(lives):
            if a < base + size and base < a + up(s):
                lo, hi = max(a, base) - base, min(a + up(s), base + size) - base
                for pg in range(lo // self.page, (hi - 1) // self.page + 1):
                    self.pages.setdefault(pg, []).append(i)
        self.lives = lives
        self.cache = {}

    def place(self, off, width):
        """The _Place of offset off: for a copy or memset of width bytes, the allocations that
        cover them all; for a pointer (width 0), those it lies in, else those it is at the
        end of (or in the slack the allocator rounds up to).  None where none does."""
        key = (off, width)
        if key not in self.cache:
            p = self.base + off
            inside, ends = [], []
            pg = off // self.page
            near = self.pages.get(pg, []) + (self.pages.get(pg - 1, []) if off % self.page == 0 else [])
            for i in sorted(set(near)):
                a, s = self.lives[i][0], self.lives[i][1]
                if a > p:
                    continue
                if width and p + width <= a + up(s):
                    inside.append(i)
                elif not width and p < a + max(s, 1):
                    inside.append(i)
                elif not width and p <= a + up(s):
                    ends.append(i)
            cands = inside or ends
            self.cache[key] = _Place(cands, self.lives) if cands else None
        return self.cache[key]


def _intersect(xs, ys):
    """Two sorted lists of disjoint closed intervals, intersected."""
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def _earliest(places, t):
    """The first time at or after t when every place is live, or None."""
    while True:
        moved = False
        for pl in places:
            u = pl.first(t)
            if u is None:
                return None
            if u > t:
                t, moved = u, True
        if not moved:
            return t


def _latest(places, t):
    """The last time at or before t when every place is live (there is one: _earliest
    found a later one for every node)."""
    while True:
        moved = False
        for pl in places:
            u = pl.last(t)
            if u < t:
                t, moved = u, True
        if not moved:
            return t


def split(regions, lives, uses, end, labels=None, times=None, made_of=None):
    """The slots of each region.  regions: {key: (base, size)} of the intermediates, in
    capture A's addresses; lives: lifetimes() of capture A's trace; uses: for each node
    in the order captured, its places in the regions, [(key, offset, width)] (width: the
    bytes a memset or copy covers, 0 for a pointer); end: the trace's length; times: for
    each node, how many of the trace's events came before it was captured, where that
    was seen (clock_times), else None.  A node's time, where given, is taken as it is:
    its places are what was live then.  If they were not all live then, or the times
    run backwards, the times are wrong, and every node's is inferred.

    Returns (slots, at, whole, how): slots {key: [(start, size)]} of each region split,
    by start; at {(node, j): (slot index, offset in the slot)} for place j of node (its
    position in uses) in such a region; whole {key: why} of the regions left whole, which
    names node k as labels[k] (default: k); how: "seen" where the times given were used,
    else "inferred" (with why the times were not used, where some were given).  made_of,
    a dict, gets {key: [[allocation, ...] of each slot]}: the lives() indices each slot
    of a region split is made of, in the slots' order."""
    label = (lambda k: labels[k]) if labels else (lambda k: k)
    idx = {key: _Region(base, size, lives) for key, (base, size) in regions.items()}
    whole = {}
    for k, places in enumerate(uses):
        for key, off, width in places:
            pl = idx[key].place(off, width) if key not in whole else None
            if key not in whole and (pl is None or not pl.sound):
                whole[key] = (f"node {label(k)} points at offset {off}" + (f" ({width} bytes)" if width else "") +
                              (", which no allocation of the trace holds" if pl is None else
                               ", which allocations of the trace hold at overlapping times"))
    mine = [[idx[key].place(off, width) for key, off, width in places if key not in whole] for places in uses]

    how = "inferred"
    if times is not None and any(x is not None for x in times):
        last, how = 0, "seen"
        for k, places in enumerate(mine):
            if times[k] is None:
                continue
            if times[k] < last or any(pl.first(times[k]) != times[k] for pl in places):
                how = (f"inferred: node {label(k)}'s places were not all live when it was seen captured, or the "
                       "times seen run backwards")
                times = None
                break
            last = times[k]
    seen = (lambda k: times[k]) if how == "seen" else (lambda k: None)

    # when each node may have been captured: after early[k] events at the earliest, late[k] at the latest
    early, t = [], 0
    for k, places in enumerate(mine):
        if seen(k) is not None and seen(k) < t:  # (a node inferred later than the next one seen)
            return split(regions, lives, uses, end, labels, made_of=made_of)[:3] + (
                f"inferred: node {label(k)} was seen captured before the nodes before it could have been",)
        t = seen(k) if seen(k) is not None else _earliest(places, t)
        if t is None:
            why = (f"node {label(k)}'s places are not all live at any point of the allocator's trace" +
                   (f" after node {label(k - 1)}'s: the trace's order is not the nodes'"
                    if _earliest(places, 0) is not None else ""))
            return {}, {}, {**whole, **{key: why for key in regions if key not in whole}}, how
        early.append(t)
    late, t = [0] * len(mine), end
    for k in range(len(mine) - 1, -1, -1):
        t = late[k] = seen(k) if seen(k) is not None else _latest(mine[k], t)

    # each place's candidates: the allocations live while every place of the node is, taken together
    parent = {}

    def find(i):
        while parent.setdefault(i, i) != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    held = {}
    for k, places in enumerate(uses):
        inner = [list(pl.within(early[k], late[k])) for pl in mine[k]]
        when = [(early[k], late[k])]
        for got in inner:
            when = _intersect(when, [(max(lo, early[k]), min(hi, late[k])) for _, (lo, hi) in got])
        got = iter(inner)
        for j, (key, off, width) in enumerate(places):
            if key in whole:
                continue
            cands = [i for i, live in next(got) if _intersect([live], when)]
            for i in cands[1:]:
                parent[find(i)] = find(cands[0])
            held[k, j] = cands[0]

    region_of = {find(i): uses[k][j][0] for (k, j), i in held.items()}
    groups = {}
    for i in parent:
        if find(i) in region_of:
            groups.setdefault(find(i), []).append(i)
    slots, slot_of = {key: [] for key in regions if key not in whole}, {}
    for root, members in groups.items():
        base, size = regions[region_of[root]]
        lo = max(min(lives[i][0] for i in members) - base, 0)
        hi = min(max(lives[i][0] + up(lives[i][1]) for i in members) - base, size)
        slots[region_of[root]].append((lo, hi - lo, root))
    for key, parts in slots.items():
        parts.sort()
        slot_of.update({root: (n, lo) for n, (lo, _, root) in enumerate(parts)})
        if made_of is not None:
            made_of[key] = [sorted(groups[root]) for _, _, root in parts]
        slots[key] = [(lo, size) for lo, size, _ in parts]
    at = {}
    for (k, j), i in held.items():
        key, off, _ = uses[k][j]
        n, lo = slot_of[find(i)]
        at[k, j] = (n, off - lo)
    return slots, at, whole, how
