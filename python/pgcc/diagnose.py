"""Where an export goes wrong, node by node (pgcc.export(..., diagnose=True), or
PGCC_DIAGNOSE=1 in the environment).

The captured program is run in this process one node at a time, in the capture's
order, twice side by side: as captured (capture A's own parameter bytes, at capture
A's addresses) and as exported (the arguments the .graph holds, relocated to fresh
copies of every buffer).  Both start from the same state -- intermediates, workspaces
and outputs zeroed, weights and inputs equal -- so after each node the buffers it
names must be equal byte for byte.  Where they are not, the node's captured launch is
run again from the same state: a kernel that is not deterministic (atomics) gives
other bytes itself, is listed, and its bytes are taken over by the exported side.  The
first other node after which they differ is where the export is wrong: its arguments,
or an earlier node's write that no argument names.

A second pass runs the exported program twice, its intermediates zeroed in one copy
and poisoned in the other, and names the first node whose written bytes differ: a
kernel that reads memory nothing wrote in this call (a padded read, a counter it
expects to find zeroed), which a captured graph gets away with only as long as its
private pool happens to hold harmless bytes there.

Both passes launch kernels through the functions the libraries loaded in this
process, not the code the export wrote: a divergence there is in the exported
arguments or buffers.  A third pass (given the export loaded by loader.py) runs the
first again with the functions libpgrt loaded from the export (pgrt_debug_node): a
divergence only there is in a kernel's code.  Harness, the first pass on its own, is
also how kernel_code.prove_code proves the library code the export found.  Assumes a GPU and
PyTorch; the captured graph and its nodes as the analysis (model.Analysis) holds them.
"""
import ctypes as C
import heapq
import re
import struct

from .cuda import (ATTR_CLUSTER_DIMENSION, FUNC_MAX_DYNAMIC_SHARED_SIZE, FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                   FUNC_REQUIRED_CLUSTER_WIDTH, LaunchAttribute, LaunchConfig, check, cu, device_bytes, kernel_argv)
from .capture import host_maps
from .graphfile import node_buffers
from .model import Relocation
from .relocate import block_of, u64

__all__ = ["as_captured", "describe_node", "diagnose", "exported_bytes", "Harness", "launch", "memset", "order",
           "POISON", "program_functions", "Side"]

POISON = 0xA5


def launch(node, blob, func=None):
    """One kernel launch of a captured node (its function, or func) with parameter bytes blob."""
    d = cu()
    if func and node["smem"] > 48 << 10:  # a function of our own: allowed what the library allowed its own
        check(d.FuncSetAttribute(C.c_void_p(func), FUNC_MAX_DYNAMIC_SHARED_SIZE, node["smem"]), "cuFuncSetAttribute")
    func = func or node["func"]
    argv, _vals = kernel_argv(node["layout"], blob)
    cfg = LaunchConfig()
    cfg.grid[:], cfg.block[:], cfg.smem = node["grid"], node["block"], node["smem"]
    attr = LaunchAttribute()
    cl = node.get("cluster")
    compiled = C.c_int(0)
    if cl and d.FuncGetAttribute(C.byref(compiled), FUNC_REQUIRED_CLUSTER_WIDTH, C.c_void_p(func)) == 0 \
            and compiled.value == 0:
        attr.id = ATTR_CLUSTER_DIMENSION
        struct.pack_into("<3I", attr.value, 0, *cl)
        if cl[0] * cl[1] * cl[2] > 8:
            check(d.FuncSetAttribute(C.c_void_p(func), FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                  "cuFuncSetAttribute")
        cfg.attrs, cfg.numAttrs = C.cast(C.pointer(attr), C.c_void_p), 1
    check(d.LaunchKernelEx(C.byref(cfg), C.c_void_p(func), argv, None), "cuLaunchKernelEx")


def memset(addr, value, elem, width):
    d = cu()
    if elem == 1:
        check(d.MemsetD8(addr, value & 0xFF, width), "cuMemsetD8")
    elif elem == 2:
        check(d.MemsetD16(addr, value & 0xFFFF, width), "cuMemsetD16")
    else:
        check(d.MemsetD32(addr, value, width), "cuMemsetD32")


def exported_bytes(layout, args, addr):
    """A kernel node's parameter bytes as the .graph gives them, its relocations patched
    with addr(buffer) + offset."""
    blob = bytearray(max((o + s for o, s in layout), default=0))
    for (off, size), a in zip(layout, args):
        if a[0] == "ptr":
            struct.pack_into("<Q", blob, off, addr(a[1]) + a[2])
            continue
        blob[off:off + size] = a[1]
        for at, b, o, kind in (a[2] if a[0] == "bytes" else ()):
            v = addr(b) + o
            if kind == "abs64":
                struct.pack_into("<Q", blob, off + at, v)
            else:
                struct.pack_into("<I", blob, off + at, v & 0xFFFFFFFF if kind == "lo32" else v >> 32)
    return bytes(blob)


def order(n, edges):
    """The nodes 0..n-1 in an order that keeps every edge (capture order when it does)."""
    if all(a < b for a, b in edges):
        return list(range(n))
    deps, succ = [0] * n, [[] for _ in range(n)]
    for a, b in edges:
        deps[b] += 1
        succ[a].append(b)
    ready = [i for i in range(n) if not deps[i]]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(i)
        for j in succ[i]:
            deps[j] -= 1
            if not deps[j]:
                heapq.heappush(ready, j)
    return out


class Side:
    """One run of the program: each buffer's address, and how a node's parameters are made."""

    def __init__(self, torch, bufs, fill, own, funcs=None):
        """own: fresh copies of every buffer (the exported program); else capture A's memory.
        funcs: {capture node index: function} to launch instead of the captured ones."""
        self.torch, self.own, self.keep, self.at, self.funcs = torch, own, [], {}, funcs or {}
        for b in bufs:
            if b.places is not None:  # the random-number state: its bytes gathered (as captured, the nodes' own words)
                t = torch.empty(b.size, dtype=torch.uint8, device="cuda")
                for a, off in b.places[0].items():
                    device_bytes(torch, t.data_ptr() + off, 8).copy_(device_bytes(torch, a, 8))
                self.keep.append(t)
                self.at[id(b)] = t.data_ptr()
                continue
            if own:
                t = torch.empty(max(b.size, 1), dtype=torch.uint8, device="cuda")
                self.keep.append(t)
                self.at[id(b)] = t.data_ptr()
            else:
                self.at[id(b)] = b.ranges[0]
            if b.host:
                if own:
                    self.keep[-1][:len(b.host)].copy_(torch.frombuffer(bytearray(b.host), dtype=torch.uint8))
            elif b.role in ("intermediate", "workspace", "output"):
                device_bytes(torch, self.at[id(b)], b.size).fill_(fill)
            elif own:
                device_bytes(torch, self.at[id(b)], b.size).copy_(device_bytes(torch, b.ranges[0], b.size))

    def addr(self, b):
        return self.at[id(b)]

    def run(self, exported, captured):
        """Launches one node: exported (the analysis's model.Node) and captured (capture A's
        record, a dict)."""
        k = exported.kind
        if k == "kernel":
            blob = exported_bytes(captured["layout"], exported.args, self.addr) if self.own else captured["bytes"]
            launch(captured, blob, self.funcs.get(exported.index))
        elif k == "memset":
            b, o = exported.dst
            memset(self.addr(b) + o if self.own else captured["dst"], exported.value, exported.elem,
                   exported.width)
        elif k == "memcpy":
            (sb, so), (db, do) = exported.src, exported.dst
            src, dst = (self.addr(sb) + so, self.addr(db) + do) if self.own else (captured["src"], captured["dst"])
            check(cu().MemcpyDtoD(dst, src, exported.width), "cuMemcpyDtoD")

    def bytes_of(self, b):
        return device_bytes(self.torch, self.addr(b), b.size)


def _where(n, cap_node):
    return f"node {n.index} ({n.kind}{': ' + cap_node['name'][:90] if n.kind == 'kernel' else ''})"


def _differ(x, y):
    ne = (x != y).nonzero()
    return int(ne[0]) if ne.numel() else None, int(ne.numel())


def describe_node(n, cap_node, bufs, blocks):
    """A kernel node's parameters as captured and as exported: each relocation and what
    capture A's word there points at, and every word of capture A's bytes that is an
    address of a buffer or an allocator block but is no relocation (a pointer missed)."""
    if n.kind != "kernel":
        return []
    blob, lines, covered = cap_node["bytes"], [], set()
    for (off, size), a in zip(cap_node["layout"], n.args):
        relocs = [Relocation(0, a[1], a[2], "abs64")] if a[0] == "ptr" else (a[2] if a[0] == "bytes" else [])
        for at, b, o, kind in relocs:
            covered.update(range(off + at, off + at + (8 if kind == "abs64" else 4)))
            was = u64(blob, off + at) if kind == "abs64" else int.from_bytes(blob[off + at:off + at + 4], "little")
            lines.append(f"param {off}+{at} {kind} -> {b.name}+{o} ({b.role}{f', {b.size} bytes' if b.size else ''}); "
                         f"captured 0x{was:x}")
            if b.host:  # host memory the kernel reads: the export's copy against what is there now
                shown = min(len(b.host), 32)
                mapped = any(lo <= b.ranges[0] and b.ranges[0] + shown <= hi for lo, hi, _ in host_maps())
                now = C.string_at(b.ranges[0], shown).hex() if mapped else "unmapped"
                lo = max(0, off + at - 16)
                lines.append(f"  host memory at 0x{b.ranges[0]:x}: copied at export {b.host[:32].hex()}, "
                             f"now {now}; parameter bytes {lo}..{off + at + 24}: {blob[lo:off + at + 24].hex()}")
        if a[0] == "value" and bytes(a[1]) != blob[off:off + size]:
            lines.append(f"param {off} ({size} bytes): exported {bytes(a[1]).hex()[:64]}, captured "
                         f"{blob[off:off + size].hex()[:64]}")
        if a[0] == "bytes":
            raw = bytes(a[1])
            diff = [i for i in range(size) if raw[i] != blob[off + i] and off + i not in covered]
            if diff:
                lines.append(f"param {off}: {len(diff)} bytes not relocated differ from the capture's, at "
                             f"{diff[:8]} (don't-care or zeroed)")
    for w in range(0, len(blob) - 7, 4):
        if covered & set(range(w, w + 8)):
            continue
        v = u64(blob, w)
        b, o = bufs.find(0, v)
        bl = block_of(blocks, v) if v >> 32 else None
        if b or bl:
            lines.append(f"byte {w}: 0x{v:x} is " + (f"{b.name}+{o} ({b.role})" if b else
                                                     f"in allocator block 0x{bl[0]:x} ({bl[1]} bytes)")
                         + " in capture A, but no relocation")
    return lines


def as_captured(n):
    """A node the export added (an output's copy out of its region) as capture A would
    have had it: at capture A's addresses."""
    if n.kind == "memcpy":
        return {"src": n.src[0].ranges[0] + n.src[1], "dst": n.dst[0].ranges[0] + n.dst[1]}
    raise ValueError(f"node {n.index}: a {n.kind} node that no capture made")


class Harness:
    """The nodes of an export and capture A's, ready to run one by one side by side."""

    def __init__(self, torch, cap, bufs, nodes, edges):
        self.torch, self.cap, self.bufs, self.running = torch, cap, bufs, None
        # (a host read's copy and sync are left out: the values read are capture A's, baked
        # in; so is a collective, which no capture ran)
        self.by_index = {n.index: n for n in nodes if n.kind in ("kernel", "memset", "memcpy")}
        count = max([len(cap.nodes)] + [i + 1 for e in edges for i in e] + [i + 1 for i in self.by_index])
        self.seq = [i for i in order(count, edges) if i in self.by_index]
        self.captured = {i: cap.nodes[i] if i < len(cap.nodes) else as_captured(self.by_index[i])
                         for i in self.by_index}
        used = {}
        for n in self.by_index.values():
            for b in node_buffers(n):
                used[id(b)] = b
        for b in bufs.list:
            if b.role in ("input", "output"):
                used[id(b)] = b
        self.blist = list(used.values())
        # Capture A's outputs lie inside its regions; the exported program writes them
        # apart from its copy of the region, whose bytes there are left out of comparisons.
        self.masks = {}
        for b in self.blist:
            if b.role == "intermediate":
                base = b.ranges[0]
                for o in self.blist:
                    if o.role == "output" and base <= o.ranges[0] < base + b.size:
                        m = self.masks.setdefault(id(b), torch.ones(b.size, dtype=torch.bool, device="cuda"))
                        m[o.ranges[0] - base:o.ranges[0] - base + o.size] = False

    def compare(self, funcs=None):
        """As captured against as exported (with funcs, {node index: function}: launching
        those): (None or (node index, what differs), whether the outputs are equal).
        Where a node's bytes differ, its captured launch is run again from the same
        state: a kernel that gives other bytes itself (atomics, a race) cannot be judged
        bit for bit, so the exported side takes the captured side's bytes and the
        comparison goes on; such nodes are listed in self.unsteady ({index: what})."""
        torch, captured = self.torch, self.captured
        ref = Side(torch, self.blist, 0, own=False)
        exp = Side(torch, self.blist, 0, own=True, funcs=funcs)
        self.unsteady = {}
        torch.cuda.synchronize()
        first = None
        for i in self.seq:
            self.running = i  # (the node a fault stopped at: kernel_code.prove_code describes it)
            n = self.by_index[i]
            mine = list({id(b): b for b in node_buffers(n) if not b.host}.values())
            before = [ref.bytes_of(b).clone() for b in mine]
            ref.run(n, captured[i])
            check(cu().CtxSynchronize(), _where(n, captured[i]) + ", as captured")  # (a fault: which side)
            exp.run(n, captured[i])
            check(cu().CtxSynchronize(), _where(n, captured[i]) + ", as exported")
            for b in mine:
                x, y = ref.bytes_of(b), exp.bytes_of(b)
                if id(b) in self.masks:
                    x, y = x * self.masks[id(b)], y * self.masks[id(b)]
                at, count = _differ(x, y)
                if at is None:
                    continue
                once = x.clone()
                for t, was in zip(mine, before):
                    ref.bytes_of(t).copy_(was)
                ref.run(n, captured[i])
                check(cu().CtxSynchronize(), _where(n, captured[i]))
                twice = ref.bytes_of(b) * self.masks[id(b)] if id(b) in self.masks else ref.bytes_of(b)
                _, itself = _differ(once, twice)
                if itself:
                    self.unsteady[i] = (f"{_where(n, captured[i])}: run twice as captured, {b.name} differs in "
                                        f"{itself} bytes (against the exported run: {count})")
                    for t in mine:
                        exp.bytes_of(t).copy_(ref.bytes_of(t))
                    break
                first = (i, f"{_where(n, captured[i])}: after it, {b.name} ({b.role}, {b.size} bytes) "
                            f"differs in {count} bytes, the first at byte {at} "
                            f"({_words(x, y, at)}; run again as captured, the same bytes)")
                break
            if first:
                break
        self.running = None
        equal = all(torch.equal(ref.bytes_of(b), exp.bytes_of(b)) for b in self.blist if b.role == "output")
        return first, equal


def _words(x, y, at):
    """The 4-byte words at the first difference, as captured and as exported (hex, and as float32)."""
    lo = at - at % 4
    a, b = bytes(x[lo:lo + 16].cpu().tolist()), bytes(y[lo:lo + 16].cpu().tolist())
    f = lambda raw: ", ".join(f"{v:.6g}" for v in struct.unpack(f"<{len(raw) // 4}f", raw[:len(raw) // 4 * 4]))
    return f"from byte {lo}: captured {a.hex()} [{f(a)}], exported {b.hex()} [{f(b)}]"


def program_functions(program):
    """{capture node index: function} of a loaded Program (loader.py), from libpgrt's
    pgrt_debug_node; node names are n<index>, as graphfile.py writes them."""
    fn = program.lib.pgrt_debug_node
    fn.argtypes = [C.c_void_p, C.c_int, C.POINTER(C.c_char_p), C.POINTER(C.c_void_p)]
    out, i = {}, 0
    while True:
        origin, func = C.c_char_p(), C.c_void_p()
        if fn(program.ctx, i, C.byref(origin), C.byref(func)) != 0:
            return out
        m = re.search(r"n(\d+)$", (origin.value or b"").decode())
        if m and func.value:
            out[int(m.group(1))] = func.value
        i += 1


def diagnose(torch, cap, bufs, nodes, edges, replayer, log, program=None):
    """Runs the passes; returns {"first_difference", "outputs_equal", "details",
    "reads_unwritten", and with program (the export loaded by loader.py) "with_pgcc_code":
    pass 1 again launching the functions libpgrt loaded}, and logs them.  replayer
    (replay.py) restores the weights and inputs between passes."""
    h = Harness(torch, cap, bufs, nodes, edges)
    by_index, seq, captured, blist = h.by_index, h.seq, h.captured, h.blist
    out = {"first_difference": None, "outputs_equal": None, "details": [], "reads_unwritten": None}

    # pass 1: as captured against as exported
    replayer.restore()
    first, out["outputs_equal"] = h.compare()
    out["unsteady"] = list(h.unsteady.values())
    if first:
        out["first_difference"] = first[1]
        out["details"] = describe_node(by_index[first[0]], captured[first[0]], bufs, cap.blocks())

    # pass 2: the exported program over zeroed and over poisoned memory
    replayer.restore()
    zero = Side(torch, blist, 0, own=True)
    poison = Side(torch, blist, POISON, own=True)
    torch.cuda.synchronize()
    for i in seq:
        n = by_index[i]
        mine = [b for b in {id(b): b for b in node_buffers(n)}.values() if b.role in ("intermediate", "workspace",
                                                                                       "output")]
        before = [(zero.bytes_of(b).clone(), poison.bytes_of(b).clone()) for b in mine]
        zero.run(n, captured[i])
        poison.run(n, captured[i])
        check(cu().CtxSynchronize(), _where(n, captured[i]))
        for b, (z0, p0) in zip(mine, before):
            z1, p1 = zero.bytes_of(b), poison.bytes_of(b)
            bad = ((z0 != z1) | (p0 != p1)) & (z1 != p1)
            if bool(bad.any()):
                out["reads_unwritten"] = (f"{_where(n, captured[i])}: what it writes into {b.name} depends on "
                                          f"memory nothing wrote in this call ({int(bad.sum())} bytes differ between "
                                          f"zeroed and poisoned memory, the first at byte {int(bad.nonzero()[0])})")
                break
        if out["reads_unwritten"]:
            break
    del zero, poison

    # pass 3: pass 1 with the code libpgrt loaded from the export
    if program is not None:
        replayer.restore()
        funcs = program_functions(program)
        first3, equal3 = h.compare(funcs)
        out["with_pgcc_code"] = {"functions": len(funcs), "first_difference": first3[1] if first3 else None,
                                 "outputs_equal": equal3}
    torch.cuda.synchronize()
    replayer.restore()
    log("  diagnosis, node by node in this process:")
    log("    as captured against as exported: " + (out["first_difference"] or
        f"every node's buffers equal ({len(seq)} nodes); outputs {'equal' if out['outputs_equal'] else 'DIFFER'}"))
    for line in out["details"]:
        log("      " + line)
    for line in out["unsteady"]:
        log("    not deterministic as captured (its bytes taken over by the exported side): " + line)
    log("    zeroed against poisoned memory: " + (out["reads_unwritten"] or "no node reads memory nothing wrote"))
    if "with_pgcc_code" in out:
        w = out["with_pgcc_code"]
        log("    as exported, with the code libpgrt loaded: " + (w["first_difference"] or
            f"every node's buffers equal; outputs {'equal' if w['outputs_equal'] else 'DIFFER'}"))
    return out
