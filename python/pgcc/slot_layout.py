"""The intermediates' layout: capture A's memory regions made as small as the allocator's
trace lets (place_intermediates: each region split into its slots, slots.py, or cut
after the last allocation a node points into), kept so only where pgcc packs them
smaller (keep_smaller_layout), and put back whole (whole_regions) where an export
fails verification with them split.

    nodes, report["intermediates"] = place_intermediates(bufs, nodes, capA, log)
    keep_smaller_layout(a, "out", "mlp", log)

Pure but for keep_smaller_layout, which writes a trial .graph and runs pgcc on it.
"""
import json
import os
import subprocess
from dataclasses import replace

from . import slots
from .cuda import NODE_NAMES
from .export_files import graph_of
from .graphfile import map_places, node_refs
from .module_watch import CALL_NODE_KINDS
from .relocate import used_extent
from .toolchain import find_pgcc

__all__ = ["arena_bytes", "keep_smaller_layout", "place_intermediates", "whole_regions"]


def place_intermediates(bufs, nodes, capA, log, split=True):
    """The intermediates (regions of capture A's memory) made as small as the trace lets:
    with split, each region becomes its slots (slots.py: the allocations its nodes point
    into, each a buffer of its own, which pgcc's memory plan packs by when they are
    used), nodes rewritten to point into them; a region that is not split is cut after
    the last allocation a node points into (relocate.used_extent).  A region runs to the
    end of the last allocation the capture made in it, which can be one no node points
    into -- for one, a library's workspace made while capture A ran, which captures B
    and C find made and the export keeps as a static block of its own
    (relocate.Relocator.resolve).  The committed item_mlp export's region is 1,065,984
    bytes, and its nodes point at offsets 0 and 8,192 of it only.

    Returns (nodes, report): report {"split": {region: [bytes, slots, slots' bytes]},
    "whole": {region: why not split}, "cut": {region: [bytes before, after]}, "timed":
    how the nodes were timed against the trace (slots.split's how)}."""
    report = {"split": {}, "whole": {}, "cut": {}, "timed": None}
    if capA.allocs is None:
        return nodes, report
    regions = {id(b): b for b in bufs.list if b.role == "intermediate" and 0 in b.ranges}
    if split and regions:
        nodes, report["split"], report["whole"], report["timed"] = _split_regions(bufs, nodes, capA, regions)
    refs = {}
    for n in nodes:
        for b, off, width in node_refs(n):
            if id(b) in regions:
                refs.setdefault(id(b), []).append((off, width))
    for key, b in regions.items():
        if b.name in report["split"]:
            continue
        used = used_extent(b.ranges[0], b.size, capA.allocs, refs.get(key, []))
        if used < b.size:
            report["cut"][b.name] = [b.size, used]
            b.size = used
    placed = [b.name for b in bufs.list if b.role == "output" and b.in_place]
    if placed:
        report["in_place"] = placed
        log(f"  written in place, not copied out at the end: {', '.join(placed)} (the only allocations in their "
            "slots are theirs and, before them, tensors the allocator gave the same bytes and no more)")
    if report["split"]:
        before, after = (sum(x[i] for x in report["split"].values()) for i in (0, 2))
        log(f"  {len(report['split'])} intermediates split into the {sum(x[1] for x in report['split'].values())} "
            f"allocations their nodes use ({before} bytes of regions, {after} of slots, packed by pgcc's memory plan)")
    for name, why in report["whole"].items():
        log(f"  {name} kept whole: {why}")
    if report["cut"]:
        log("  intermediates cut after the last allocation a node points into: " + ", ".join(
            f"{n} {a} -> {u} bytes" for n, (a, u) in report["cut"].items()))
    return nodes, report


def whole_regions(a, why):
    """Analysis a with every region as capture A had it, whole and uncut, as
    place_intermediates found them (a.whole): for an export whose verification failed
    with its regions split or cut.  The report's intermediates say why (`undone`).
    Returns whether there was anything to undo."""
    done = a.report.get("intermediates") or {}
    if not done.get("split") and not done.get("cut"):
        return False
    if done.get("split"):  # (only analyses that join no other path are split: a.nodes are still theirs)
        a.nodes = list(a.whole.nodes)
        a.bufs.list[:] = a.whole.bufs
        for b in a.bufs.list:  # (the copies out at the end are back among the nodes)
            b.in_place = False
    for b in a.bufs.list:
        if id(b) in a.whole.sizes:
            b.size = a.whole.sizes[id(b)]
    for k in a.kernels.values():  # (an overwrite was measured on a slot, not on its whole region)
        k.access = {key: "rw" if how == "o" else how for key, how in k.access.items()}
    a.report["intermediates"] = {"split": {}, "whole": {}, "cut": {}, "undone": why}
    a.write_report()
    return True


def _split_regions(bufs, nodes, capA, regions):
    """place_intermediates' split: (nodes, split, whole, timed) as it reports them; the
    regions split are replaced in bufs by their slots."""
    why = "the capture is not one chain: the nodes' order is not the order they were captured in"
    order = slots.chain_order(len(capA.nodes), capA.edges)
    if order is None or getattr(capA, "trace", None) is None:
        return nodes, {}, {b.name: why if order is None else "no allocator trace" for b in regions.values()}, None
    rank = {i: r for r, i in enumerate(order)}
    # (nodes the export added, an aliased output's copy, come after the capture's)
    timed = sorted(range(len(nodes)), key=lambda k: (rank.get(nodes[k].index, len(order)), nodes[k].index))
    uses = [[(id(b), off, width) for b, off, width in node_refs(nodes[k]) if id(b) in regions] for k in timed]
    # when each node was captured, where capture A saw it (Capture.node_clock): by chain position
    seen = slots.clock_times(capA.trace, getattr(capA, "node_clock", None))
    # One call per node, in order: the times as seen (what ran on the GPU; split() still checks
    # each against the trace).  Otherwise the calls are matched to the nodes kind for kind.
    by_rank = seen
    if seen is not None and len(seen) != len(order):
        kinds = [NODE_NAMES.get(capA.nodes[i]["type"]) for i in order]
        by_rank = slots.matched_times(seen, getattr(capA, "node_clock_kinds", None),
                                      [k if k in CALL_NODE_KINDS else None for k in kinds])
    times = None
    if by_rank is not None:
        times = [by_rank[rank[nodes[k].index]] if nodes[k].index in rank else None for k in timed]
    members, lives = {}, slots.lifetimes(capA.trace)
    found, at, whole, how = slots.split({key: (b.ranges[0], b.size) for key, b in regions.items()},
                                        lives, uses, len(capA.trace),
                                        [nodes[k].index for k in timed], times, made_of=members)
    if seen is not None and len(seen) != len(order):
        how += (f" for {sum(t is not None for t in by_rank)} of {len(order)} nodes ({len(seen)} node-making calls "
                f"seen, matched by kind)" if by_rank is not None and how == "seen" else
                f" ({len(seen)} launches seen for {len(order)} nodes)")
    made = {}
    for key, parts in found.items():
        b = regions[key]
        made[key] = [replace(b, name=f"{b.name}_{n}", size=size, ranges={c: a + lo for c, a in b.ranges.items()})
                     for n, (lo, size) in enumerate(parts)]
    bufs.list[:] = [s for b in bufs.list for s in made.get(id(b), [b])]
    out = list(nodes)
    for pos, k in enumerate(timed):
        count = iter(range(len(uses[pos])))

        def place(b, off, width, pos=pos, count=count):
            if id(b) not in regions:
                return b, off
            j = next(count)  # (place j of the node in a region, as uses lists them)
            if (pos, j) not in at:
                return b, off  # (a region kept whole)
            n, o = at[pos, j]
            return made[id(b)][n], o
        out[k] = map_places(nodes[k], place)
    slot_members = {id(made[key][n]): m for key, ms in members.items() for n, m in enumerate(ms)}
    out = outputs_in_place(bufs, out, slot_members, lives, len(capA.trace))
    split = {regions[key].name: [regions[key].size, len(parts), sum(size for _, size in parts)]
             for key, parts in found.items()}
    return out, split, {regions[key].name: w for key, w in whole.items()}, how


def outputs_in_place(bufs, nodes, slot_members, lives, end):
    """The nodes with each output that capture A made in memory its earlier tensors had
    held (an "aliased" output that is no view: node_mapping.py) written in place where the
    slots tell its allocation apart: the copy the export appended (a slot to the output,
    at the end) is dropped and the slot's places become the output's, where every
    allocation of the slot (slots.split's members, lives() indices) begins where the
    output does and asked for no more bytes than the output has, and one of them is never
    freed (the output's own).  Those allocations, the output's and any earlier tensor's
    the allocator gave the same bytes, are then the output's bytes, as capture A had
    them.  slot_members: {id(slot buffer): [allocation, ...]}; lives: slots.lifetimes of
    capture A's trace, whose length is end.  Marks each such output in_place (for the
    report) and drops its slot from bufs."""
    merged = {}
    for k, n in enumerate(nodes):
        if n.kind != "memcpy" or not n.dst or n.dst[1] != 0 or not n.src or n.src[1] != 0:
            continue
        b, slot = n.dst[0], n.src[0]
        mine = slot_members.get(id(slot))
        if (b.role != "output" or not b.aliased or b.view_of or 0 not in b.ranges or not mine or
                n.width != b.size or id(slot) in merged):
            continue
        if all(lives[i][0] == b.ranges[0] and lives[i][1] <= b.size for i in mine) and \
                any(lives[i][3] == end for i in mine):
            merged[id(slot)] = (b, k)
    if not merged:
        return nodes
    drop = {k for _, k in merged.values()}

    def place(buf, off, width):
        hit = merged.get(id(buf))
        return (hit[0], off) if hit else (buf, off)
    out = [map_places(n, place) for k, n in enumerate(nodes) if k not in drop]
    bufs.list[:] = [x for x in bufs.list if id(x) not in merged]
    for b, _ in merged.values():
        b.in_place = True
    return out


def arena_bytes(graph):
    """The arena pgcc's memory plan gives a .graph on its serial order (pgcc --report=json;
    a widened graph's plan of its own is widening's choice, not the layout's), or None
    where pgcc does not read it."""
    r = subprocess.run([find_pgcc(), "--report=json", graph], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    rep = json.loads(r.stdout)
    return (rep.get("widen") or {}).get("serial_arena_bytes", rep.get("arena_bytes"))


def keep_smaller_layout(a, out_dir, name, log, write=graph_of, arena=arena_bytes):
    """Regions split into slots stay split only where pgcc packs the slots into a smaller
    arena than the regions whole.  A slot lives from the first node that uses it to the
    last, as the allocator's trace and the node clock place them; where those are
    inferred (more launches seen than the capture has nodes), a slot can span uses that
    the region's own reuse kept apart, and the split came out larger (vit bf16: a 3.64 MB
    arena against a 1.98 MB region).  A region made whole takes back every kernel's `o`
    (access_probe.py measured the overwrite on a slot): a pointer that overwrote a slot
    writes part of its region.  Written beside the export as NAME.whole.graph,
    planned, and kept in its place where smaller; the report's intermediates then say
    why each region is whole.  Returns whether the regions were made whole."""
    done = a.report.get("intermediates") or {}
    if not done.get("split"):
        return False
    graph, trial = os.path.join(out_dir, name + ".graph"), os.path.join(out_dir, name + ".whole.graph")
    split_bytes = arena(graph)
    saved = list(a.nodes), list(a.bufs.list), {id(b): b.size for b in a.bufs.list}, done
    access = {id(k): k.access for k in a.kernels.values()}
    in_place = [b for b in a.bufs.list if b.in_place]
    whole_regions(a, None)
    try:
        write(a, trial, name)
        whole_bytes = arena(trial)
        if split_bytes is not None and whole_bytes is not None and whole_bytes < split_bytes:
            os.replace(trial, graph)
            why = f"pgcc's arena is {whole_bytes} bytes with the regions whole, {split_bytes} with them split"
            a.report["intermediates"] = {"split": {}, "whole": {r: why for r in done["split"]}, "cut": {},
                                         "timed": done.get("timed")}
            a.write_report()
            log(f"  regions kept whole: {why}")
            return True
    finally:
        if os.path.exists(trial):
            os.remove(trial)
    a.nodes = saved[0]
    a.bufs.list[:] = saved[1]
    for b in a.bufs.list:
        b.size = saved[2].get(id(b), b.size)
    for b in in_place:
        b.in_place = True
    for k in a.kernels.values():
        k.access = access.get(id(k), k.access)
    a.report["intermediates"] = saved[3]
    a.write_report()
    return False
