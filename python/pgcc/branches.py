"""Branches: a value read back that only chose the path the program took (a guarded
read, hostvalues.py) becomes a CUDA conditional node, so that the call holds both paths
and the device picks one, with no host round trip.

The other path is exported too: export.analyse runs again with the program given the
read's value flipped (hostreads.flipped: `not v` for a bool, 1 for a zero flag such as
GradScaler's found_inf), and join() merges the two analyses.  Before the read, both must
have run the same nodes on the same buffers: captures on fresh private pools, on one
side stream, lay out the same allocations the same way; join checks it node by node
(kernels, launch shapes, buffers and offsets; constants are not compared, as both
paths ran the same code there).  Where the other path's allocations before the read lie
elsewhere in its pool (the same tensors, other blocks or offsets: seen with a ViT step
under a GradScaler), each of its intermediate buffers that the nodes before the read use
is moved onto this path's memory by the one shift those nodes agree on (shifted), and
its intermediates used only after the read get buffers of their own; where no such
shift exists, the two captures' allocator traces pair their allocations before the read
one by one (trace_pairs.py: by_traces; the ViT step's two paths, whose traces differ by
two 8-byte allocations at the start of one, join this way; PGCC_JOIN_BY_TRACE=0 turns it
off), else the paths differ.  The read's copy, sync and guard are replaced by a
small kernel that compares the value on the device with the one read at export and
sets the condition, and an IF/ELSE node whose bodies are what each path ran after the
read.  Buffers only the other path uses keep their own names (`f_`).

A loop that reads after every pass whether to go on (join_loop: every read guarded, the
same value until the last, every pass after the first the same nodes on the same
buffers) becomes a WHILE node whose body is one pass and ends with the condition kernel.

Supported: one guarded read, the last of the call, or a loop of them; of a bool or of a
number that read zero (two_sided), so that comparing with the value read at export
splits every value into the two sides for a program that branches on the value's truth,
as `if t:`, `torch.cond` and GradScaler's `if not found_inf` do.  A threshold on a
number that happened to read zero at export would be taken for its truth.  Anything else
stays guarded, with a warning saying why.

join() and join_loop() are pure over the analyses' plain data; export.join_other_path
drives them (branch_to_export, warm_other_path: torch, passed in or imported when called).

    join(a, b, k, "out")     # b: the analysis with read k's value flipped, joined into a
"""
import bisect
import hashlib
import os
from dataclasses import replace

from .errors import ExportError
from .graphfile import map_places, node_refs
from .hostreads import FlipRead, HostReads, perturbed
from .model import Buffer, Kernel, Node, PtrWord
from .trace_pairs import Pairing, read_index
from .warmup import restore_state, saved_state

__all__ = ["COND_SOURCE", "COND_SYMBOL", "branch_to_export", "cond_kernel", "join", "join_loop", "set_condition",
           "two_sided", "warm_other_path"]

COND_SYMBOL = "pgcc_cond_equal"
# Compiled by libpgrt with NVRTC at init (module kind `cuda`).  NVRTC does not declare
# the device runtime: this is cuda_device_runtime_api.h's declaration (nothing is linked).
COND_SOURCE = r"""// pgcc-export: sets a conditional node's condition on the device: 1 when the n bytes
// at v equal `expect` (little-endian), else 0.  The value the program read back on the
// host when it was exported chose the then-body; any other value, the else-body.
#ifdef __CUDACC_RTC__
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(unsigned long long handle,
                                                                                    unsigned int value);
#endif
extern "C" __global__ void pgcc_cond_equal(unsigned long long cond, const unsigned char *v, unsigned long long expect,
                                           unsigned int n) {
  unsigned long long x = 0;
  for (unsigned int i = 0; i < n && i < 8; i++) x |= (unsigned long long)v[i] << (8 * i);
  cudaGraphSetConditional(cond, x == expect ? 1u : 0u);
}
"""


def branch_to_export(a, out_dir, prog):
    """What to make of analysis `a`'s guarded reads (hostvalues.host_values): a loop of
    them is joined here (join_loop) into a WHILE node; one guarded read, the call's last,
    of a value two_sided accepts gives (read index, where it was read), for export.py to
    export the other path (warm_other_path, an analysis with the value flipped) and
    join() it; anything else stays guarded, with a warning.  Returns None but in the
    second case."""
    guarded = [n for n in a.nodes if n.kind == "sync" and n.guard is not None]
    if not guarded:
        return None
    k = guarded[0].read
    where = guarded[0].where
    if len(guarded) >= 3 and len(guarded) == len(a.capA.reads):
        try:
            iterations = join_loop(a, out_dir)
        except ExportError as e:
            prog.warn(f"the reads at {where} and after did not make a loop: they stay guarded", str(e))
            return None
        a.write_report()
        prog.log(f"  the value read at {where} ended a loop that ran {iterations} times after its first pass: a "
                 "WHILE node, its condition set on the device")
        return None
    if len(guarded) > 1 or k != len(a.capA.reads) - 1:
        prog.warn("a read that chose the path stays guarded: only one such read, the last of the call, becomes a "
                  "conditional node", f"{len(guarded)} guarded reads of {len(a.capA.reads)}")
        return None
    why = two_sided(a.capA.reads[k])
    if why:
        prog.warn(f"the read at {where} stays guarded", why)
        return None
    return k, where


def two_sided(read):
    """None if comparing a value with the one `read` (capture.py's read record) got at
    export tells the two sides of a branch on the value's truth apart exactly: a bool
    (the other side is the other value), or a number that read zero (every other value
    is true; -0.0 excepted, whose bytes are not zero).  Else why not: a value that read
    0.73 may have been compared with 0.5, and 0.9 would take the same side, which no
    comparison with 0.73 tells."""
    if read["dtype"] == "bool" or not any(read["value"]):
        return None
    return (f"the value read ({read['dtype']}, bytes {read['value'].hex()}) is neither a bool nor zero: which "
            "other values take which side of the branch cannot be told")


def warm_other_path(fn, inputs, weights, k):
    """Runs fn with read k's value flipped, on the inputs and on other values of them, so
    that torch.compile has compiled what runs after the read on that path before it is
    captured (compiling inside a capture fails); the state is put back."""
    import torch
    state = saved_state(torch, weights)
    try:
        for xs in (inputs, perturbed(torch, inputs, 1.25), perturbed(torch, inputs, 1.5), inputs):
            with HostReads(FlipRead(k)):
                fn(*xs)
        torch.cuda.synchronize()
    finally:
        restore_state(state)


def cond_kernel(out_dir):
    """The kernel that sets a condition from a value on the device (its source written
    under out_dir/kernels), a model.Kernel."""
    path = os.path.join("kernels", "pgcc_cond.cu")
    with open(os.path.join(out_dir, path), "w") as f:
        f.write(COND_SOURCE)
    return Kernel(symbol=COND_SYMBOL, layout=[(0, 8), (8, 8), (16, 8), (24, 4)], attrs=None,
                  ptr_words={PtrWord(8, 0, "abs64")}, module={"name": "pgcc_cond", "kind": "cuda", "file": path,
                                                       "sha256": hashlib.sha256(COND_SOURCE.encode()).hexdigest()})


def set_condition(index, cond, read, expect):
    """A launch of the condition kernel (a model.Node): cond = (the bytes the read node
    `read` copied == expect)."""
    expect = bytes(expect) + bytes(8 - len(expect))
    return Node(kind="kernel", func="pgcc_cond", grid=[1, 1, 1], block=[1, 1, 1], smem=0, index=index,
                args=[("cond", cond), ("ptr", read.src[0], read.src[1]), ("value", expect),
                      ("value", read.width.to_bytes(4, "little"))])


def join_loop(a, out_dir):
    """A loop whose every pass ends with a read that says whether to go on (all reads
    guarded: the first N-1 read one value, the last another) becomes a WHILE node, in
    place in analysis a.  The stretch before the first read is the prologue and the
    loop's first pass; every later stretch but the last must be the same nodes on the
    same buffers (a loop whose state lives in the same memory from pass to pass), and is
    the body, which ends with the condition kernel; the last stretch follows the loop.
    Returns how many passes the body made at export; raises ExportError where the reads
    do not make such a loop."""
    cap = a.capA
    n = len(cap.reads)
    syncs = sorted((x for x in a.nodes if x.kind == "sync"), key=lambda x: x.read)
    reads = sorted((x for x in a.nodes if x.kind == "read"), key=lambda x: x.read)
    if len(syncs) != n or len(reads) != n or any(x.guard is None for x in syncs):
        raise ExportError("not every read is guarded")
    go = syncs[0].guard
    if any(x.guard != go for x in syncs[:-1]) or syncs[-1].guard == go:
        raise ExportError("the reads do not read one value until the last")
    if two_sided(cap.reads[0]):
        raise ExportError(two_sided(cap.reads[0]))
    stretch = {}
    for x in a.nodes:
        if x.kind in ("read", "sync"):
            continue
        i = x.index
        stretch.setdefault(cap.segment_of[i] if isinstance(i, int) and i < len(cap.nodes) else n, []).append(x)
    body = stretch.get(1, [])
    key = lambda x: (x.kind, x.func, x.grid, x.block, x.smem,
                     [(g[0], id(g[1]), g[2]) if g[0] == "ptr" else (g[0], g[1]) if g[0] == "value" else
                      (g[0], [(r[0], id(r[1]), r[2], r[3]) for r in g[2]]) if g[0] == "bytes" else g
                      for g in x.args or ()],
                     tuple((id(p[0]), p[1]) for p in (x.src, x.dst) if p is not None), x.width)
    if not body:
        raise ExportError("the loop's second pass ran nothing")
    for j in range(2, n):
        if [key(x) for x in stretch.get(j, [])] != [key(x) for x in body]:
            raise ExportError(f"pass {j + 1} of the loop differs from pass 2 (its state is not in the same "
                              "memory from pass to pass)")
    if any((id(r.src[0]), r.src[1]) != (id(reads[1].src[0]), reads[1].src[1]) for r in reads[1:]):
        raise ExportError("the loop's passes read their value from different places")
    cond = {"name": "c0"}
    a.kernels["pgcc_cond"] = cond_kernel(out_dir)
    first, after = set_condition("c0", cond, reads[0], go), set_condition("cb", cond, reads[1], go)
    ids = {x.index for x in body}
    renamed = [replace(x, index=f"w{x.index}") for x in body]
    body_edges = [(f"w{x}", f"w{y}") for x, y in a.edges if x in ids and y in ids]
    body_edges += [(f"w{x}", "cb") for x, y in a.edges if y == reads[1].index and x in ids]
    loop = Node(kind="while", index="loop0", condition=cond, where=reads[0].where,
                bodies=[("loop0_body", renamed + [after], body_edges)])
    pro, epi = stretch.get(0, []), stretch.get(n, [])
    pro_ids, epi_ids = {x.index for x in pro}, {x.index for x in epi}
    edges = [(x, y) for x, y in a.edges if x in pro_ids and y in pro_ids]
    edges += [(x, "c0") for x, y in a.edges if y == reads[0].index and x in pro_ids] + [("c0", "loop0")]
    edges += [(x, y) for x, y in a.edges if x in epi_ids and y in epi_ids]
    edges += [("loop0", y) for y in epi_ids if not any(x in epi_ids for x, z in a.edges if z == y)]
    a.nodes, a.edges = pro + [first, loop] + epi, edges
    a.conditions = [cond]
    for r in a.report.get("host_reads", []):
        r.update(guarded=False, loop=True)
    return n - 1


def _same_arg(at, af, fmap):
    """Whether argument af (the other path's) is argument at before the read: the same
    kind, the same buffers (mapped by fmap, id -> buffer) at the same offsets, the same
    scalars."""
    if at[0] != af[0]:
        return False
    if at[0] == "ptr":
        return fmap.get(id(af[1])) is at[1] and at[2] == af[2]
    if at[0] == "bytes":  # (a word pointed at a copy of host memory is a constant: see below)
        rt = [(r[0], r[1].name, r[2], r[3]) for r in at[2] if not r[1].host]
        rf = [(r[0], fmap[id(r[1])].name if id(r[1]) in fmap else None, r[2], r[3]) for r in af[2]
              if not r[1].host]
        return rt == rf
    if at[0] == "scalar":
        return at[2]["name"] == af[2]["name"]
    # A constant: before the read both paths ran the same code on the same inputs and
    # state, so constants that differ are bytes no capture pins down -- a struct's
    # uninitialised padding that agreed within each path's captures by chance, once
    # not between the paths; a stale word that held a host address in one path's
    # captures (pointed at a copy of the bytes there) and not in the other's, in
    # GradScaler's unscale kernel -- and the joined program uses this path's.
    return True


def _same_node(nt, nf, fmap, kernels):
    if nt.kind != nf.kind:
        return False
    if nt.kind == "kernel":
        if (nt.func, nt.grid, nt.block, nt.smem) != (nf.func, nf.grid, nf.block, nf.smem):
            return False
        return all(_same_arg(at, af, fmap) for at, af in zip(nt.args, nf.args))
    pairs = [(t, f) for t, f in ((nt.src, nf.src), (nt.dst, nf.dst)) if t is not None]
    return all(fmap.get(id(f[0])) is t[0] and f[1] == t[1] for t, f in pairs) and nt.width == nf.width


def _difference(nt, nf, fmap, kernels):
    """What differs between two nodes _same_node finds different, in words."""
    if nt.kind != "kernel" or nf.kind != "kernel":
        return f"{nt.kind} against {nf.kind}"
    if (nt.func, nt.grid, nt.block, nt.smem) != (nf.func, nf.grid, nf.block, nf.smem):
        return "another kernel or launch shape"
    show = lambda a: (a[0], a[1].name, a[2]) if a[0] == "ptr" else (a[0], a[1].hex()[:48]) if a[0] == "value" \
        else (a[0], [(r[0], r[1].name, r[2]) for r in a[2]]) if a[0] == "bytes" else a[0]
    for p, (at, af) in enumerate(zip(nt.args, nf.args)):
        if not _same_arg(at, af, fmap):
            return f"parameter {p}: {show(at)} against the other path's {show(af)}"
    return "?"


def _place_pairs(pre_a, pre_b):
    """(node index, this path's buffer and offset, the other's) for every place each pair
    of nodes (pre_a, pre_b) points at, in order; or a string naming a pair of nodes that
    point at different numbers of places."""
    out = []
    for nt, nf in zip(pre_a, pre_b):
        ra, rb = node_refs(nt), node_refs(nf)
        if len(ra) != len(rb):
            return f"node {nt.index} points at {len(ra)} and {len(rb)} places"
        out += [(nt.index, xa, oa, xb, ob) for (xa, oa, _), (xb, ob, _) in zip(ra, rb)]
    return out


def shifted(pre_a, pre_b, nodes_b, fmap, bufs):
    """The other path's places moved onto this one's where its allocations before the read
    lie elsewhere: a function (buffer, offset, bytes) -> (buffer, offset) for map_places,
    or a string saying why there is no such move.  Each of the other path's intermediate buffers
    that pre_b (its nodes up to the read) points into goes to the one buffer of this path,
    at the one shift, that the pairs of nodes (pre_a, pre_b) point at in the same places;
    the shifted buffers must not overlap one another in a buffer of this path, nor start
    before it (this path's buffer grows where one ends after it).  Its intermediates used
    only after the read get buffers of their own: new in bufs where fmap had matched them
    to one of this path's by name (an `f_` name; a match by name holds only where the two
    layouts are the same).  Other buffers go as fmap says."""
    shifts = {}
    places = _place_pairs(pre_a, pre_b)
    if isinstance(places, str):
        return places
    for i, ta, oa, tb, ob in places:
        if tb.role != "intermediate":
            continue
        if ta.role != "intermediate":
            return f"node {i}: the other path's {tb.name} is this path's {ta.role} {ta.name}"
        got = shifts.setdefault(id(tb), (ta, oa - ob))
        if got != (ta, oa - ob):
            return (f"node {i}: the other path's {tb.name} + {ob} is this path's {ta.name} + {oa}, where an "
                    f"earlier node had it {got[0].name} + {ob + got[1]}")
    lowest = {}  # the other path's intermediates: the lowest offset any of its nodes uses
    for n in nodes_b:
        for x, off, _w in node_refs(n):
            if x.role == "intermediate":
                lowest[id(x)] = min(off, lowest.get(id(x), off))
    spans = {}  # this path's buffer -> [(start, end)] of the other path's shifted onto it
    for xb in {id(x): x for n in nodes_b for x, _o, _w in node_refs(n) if id(x) in shifts}.values():
        ta, d = shifts[id(xb)]
        start, end = d + lowest.get(id(xb), 0), d + xb.size
        if start < 0:
            return f"the other path's {xb.name} moved onto {ta.name} would start {-start} bytes before it"
        spans.setdefault(id(ta), []).append((start, end))
        ta.size = max(ta.size, end)
    for got in spans.values():
        got.sort()
        if any(s2 < e1 for (_s1, e1), (s2, _e2) in zip(got, got[1:])):
            return "two of the other path's buffers would overlap, moved onto one of this path's"
    own = {}
    for n in nodes_b:
        for x, _o, _w in node_refs(n):
            if x.role == "intermediate" and id(x) in fmap and id(x) not in shifts and id(x) not in own:
                own[id(x)] = bufs.add(name=f"f_{x.name}", size=x.size, role="intermediate", ranges=dict(x.ranges or {}))

    def move(x, off, _w):
        if id(x) in shifts:
            ta, d = shifts[id(x)]
            return ta, off + d
        if id(x) in own:
            return own[id(x)], off
        return fmap.get(id(x), x), off
    return move


def by_traces(a, b, k, pre_a, pre_b, fmap):
    """The other path's places moved onto this one's allocation by allocation
    (trace_pairs.Pairing over the two captures A's allocator traces, cut at read k): a
    function (buffer, offset, bytes) -> (buffer, offset) for map_places, with `.own` the
    buffers of their own it made (for memory the other path took only after the read,
    named `f_`; not yet in a.bufs), or a string saying why not.  Every place pre_b (the
    other path's nodes up to the read) points at must be pre_a's under the pairing; the
    function raises ValueError for a place after the read the pairing cannot move."""
    ca, cb = a.capA, b.capA
    try:
        pairing = Pairing(ca.trace, read_index(ca.trace, ca.read_clock[k]),
                          cb.trace, read_index(cb.trace, cb.read_clock[k]))
    except (AttributeError, IndexError, TypeError, ValueError) as e:
        return f"no allocator traces to pair ({e})"
    places = _place_pairs(pre_a, pre_b)
    if isinstance(places, str):
        return places
    for i, xa, oa, xb, ob in places:
        if xb.role != "intermediate":
            if fmap.get(id(xb)) is not xa or oa != ob:
                return f"node {i}: the other path's {xb.name} + {ob} is this path's {xa.name} + {oa}"
        elif xa.role != "intermediate" or not pairing.agrees(xb.ranges[0] + ob, xa.ranges[0] + oa):
            return (f"node {i}: the other path's {xb.name} + {ob} is no allocation the traces pair with "
                    f"this path's {xa.name} + {oa}")
    inter = sorted((x for x in a.bufs.list if x.role == "intermediate" and x.ranges.get(0) is not None),
                   key=lambda x: x.ranges[0])
    starts = [x.ranges[0] for x in inter]
    own = {}

    def move(x, off, _w):
        if x.role != "intermediate":
            return fmap.get(id(x), x), off
        how, pa = pairing.at_read(x.ranges[0] + off)
        if how == "own":
            if id(x) not in own:
                own[id(x)] = Buffer(name=f"f_{x.name}", size=x.size, role="intermediate", ranges=dict(x.ranges or {}))
            return own[id(x)], off
        i = bisect.bisect_right(starts, pa) - 1
        if i < 0 or pa >= starts[i] + inter[i].size:
            raise ValueError(f"the other path's {x.name} + {off} is moved to 0x{pa:x}, in no buffer of this path")
        return inter[i], pa - starts[i]
    move.own = own
    return move


def join(a, b, k, out_dir):
    """Joins analysis b (the program given read k's value flipped) into analysis a (the
    path the example inputs took) as a conditional node, in place: a.nodes, a.edges,
    a.bufs, a.kernels, a.scalars, a.conditions, a.report.  Raises ExportError where the
    two paths differ before the read, or the read is not where join expects it.  Writes
    the condition kernel's source under out_dir/kernels.  Returns how the other path's
    memory was put on this one's: "as captured", "by one shift of whole buffers" or
    "allocation by allocation through the captures' allocator traces"."""
    def read_at(x):
        i = next((n.index for n in x.nodes if n.kind == "read" and n.read == k), None)
        if i is None:
            raise ExportError(f"read {k} is not among the nodes")
        return i
    ra, rb = read_at(a), read_at(b)
    if b.capA.reads[k].get("forced") is not True:
        raise ExportError("the other path's capture did not flip the value read")
    if two_sided(a.capA.reads[k]):
        raise ExportError(two_sided(a.capA.reads[k]))
    pre_a = [n for n in a.nodes if isinstance(n.index, int) and n.index < ra]
    pre_b = [n for n in b.nodes if isinstance(n.index, int) and n.index < rb]
    # the read's copy and sync (indices ra, ra + 1) go: the condition kernel reads the value
    post_a = [n for n in a.nodes if n.index not in {x.index for x in pre_a} | {ra, ra + 1}]
    post_b = [n for n in b.nodes if n.index not in {x.index for x in pre_b} | {rb, rb + 1}]
    if any(n.kind in ("read", "sync") for n in post_a + post_b):
        raise ExportError("a value is read back after the branch")

    # buffers: the other path's, mapped to this one's by name where they are the same thing;
    # the others join this path's, named apart, once the paths are found to join (a join that
    # fails leaves b as it was: it may be tried again against this path captured again)
    byname = {x.name: x for x in a.bufs.list}
    fmap, others = {}, []
    for fb in b.bufs.list:
        tb = byname.get(fb.name)
        same = tb is not None and tb.role == fb.role and (
            fb.role in ("input", "output", "intermediate", "host") or
            (tb.ranges.get(0) == fb.ranges.get(0) and tb.size == fb.size))
        if same:
            fmap[id(fb)] = tb
            if fb.role == "intermediate" and fb.size > tb.size:
                tb.size = fb.size
        else:
            others.append(fb)
    kernels = dict(a.kernels)
    for func, kf in b.kernels.items():
        kt = kernels.setdefault(func, kf)
        if kt is not kf:
            kt.ptr_words = set(kt.ptr_words) | set(kf.ptr_words)
            kt.dontcare = set(kt.dontcare) | set(kf.dontcare)
            kt.scalar_types.update(kf.scalar_types)
    if len(pre_a) != len(pre_b):
        raise ExportError(f"before the read the paths ran {len(pre_a)} and {len(pre_b)} nodes")
    move = lambda x, off, _w: (fmap.get(id(x), x), off)  # noqa: E731 -- the other path's places in this one's
    differ = next(((nt, nf) for nt, nf in zip(pre_a, pre_b) if not _same_node(nt, nf, fmap, kernels)), None)
    how = "as captured"
    if differ is not None:
        how = "by one shift of whole buffers"
        reads = [next(n for n in x.nodes if n.index == r) for x, r in ((a, ra), (b, rb))]
        move = shifted(pre_a + reads[:1], pre_b + reads[1:], [n for n in b.nodes if n.index not in (rb, rb + 1)],
                       fmap, a.bufs)
        same = {id(x): x for x in a.bufs.list}
        if isinstance(move, str) or not all(_same_node(nt, map_places(nf, move), same, kernels)
                                            for nt, nf in zip(pre_a + reads[:1], pre_b + reads[1:])):
            nt, nf = differ
            why = (f"before the read the paths differ at node {nt.index} ({nt.kind}"
                   f"{': ' + kernels[nt.func].symbol[:60] if nt.kind == 'kernel' else ''}): "
                   f"{_difference(nt, nf, fmap, kernels)}; nor are they the same moved ("
                   f"{move if isinstance(move, str) else 'moved, their nodes still differ'})")
            if os.environ.get("PGCC_JOIN_BY_TRACE") == "0":
                raise ExportError(why)
            how = "allocation by allocation through the captures' allocator traces"
            move = by_traces(a, b, k, pre_a + reads[:1], pre_b + reads[1:], fmap)
            try:
                if not isinstance(move, str):
                    for n in post_b:  # (every place after the read moved, before anything is changed)
                        map_places(n, move)
            except ValueError as e:
                move = str(e)
            if isinstance(move, str):
                raise ExportError(f"{why}; nor paired by their allocator traces ({move})")
            a.bufs.list.extend(move.own.values())

    for fb in others:
        fb.name = "f_" + fb.name
        if fb.tensor is not None:
            fb.tensor = "__f_" + fb.tensor
        a.bufs.list.append(fb)

    # the condition, the kernel that sets it, the IF/ELSE node
    read = next(n for n in a.nodes if n.index == ra)
    sync = next(n for n in a.nodes if n.index == ra + 1)
    expect = bytes(sync.guard) + bytes(8 - len(sync.guard))
    cond = {"name": f"c{k}"}
    kernels["pgcc_cond"] = cond_kernel(out_dir)
    setter = set_condition(f"c{k}", cond, read, expect)
    then_ids = {n.index for n in post_a}
    else_nodes = [map_places(replace(n, index=f"f{n.index}"), move) for n in post_b]
    else_ids = {n.index for n in post_b}
    branch = Node(kind="if", index=f"if{k}", condition=cond, where=read.where,
                  bodies=[(f"then{k}", post_a, [(x, y) for x, y in a.edges if x in then_ids and y in then_ids]),
                          (f"else{k}", else_nodes, [(f"f{x}", f"f{y}") for x, y in b.edges
                                                    if x in else_ids and y in else_ids])])
    before = [x for x, y in a.edges if y == ra]
    pre_ids = {n.index for n in pre_a}
    a.edges = [(x, y) for x, y in a.edges if x in pre_ids and y in pre_ids] + \
        [(x, f"c{k}") for x in before] + [(f"c{k}", f"if{k}")]
    a.nodes = pre_a + [setter, branch]
    a.kernels.clear()
    a.kernels.update(kernels)
    names = {s["name"] for s in a.scalars}
    a.scalars += [s for s in b.scalars if s["name"] not in names]
    a.conditions = [cond]
    if k < len(a.report.get("host_reads", [])):
        a.report["host_reads"][k].update(guarded=False, conditional=True, joined=how)
    return how
