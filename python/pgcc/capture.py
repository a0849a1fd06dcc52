"""Capturing a callable with torch.cuda.graph and walking the captured graph through
the driver: each node's kind, a kernel's launch and parameter bytes (given as
kernelParams or packed in `extra`, as cuBLASLt's Hopper kernels give them), memset and memcpy
parameters, the edges; with the caching allocator's trace of what the capture
allocated and freed (its private pool's segments, cut at the last allocation), the
blocks it had handed out, and, where a ModuleWatch is given, where in that trace each
node was captured (node_clock: the allocator's counts read at each launch).  Also what a constant parameter word points at in this process
(host memory, device memory the allocator does not own).

Assumes PyTorch with CUDA (passed in as `torch`, so importing this module needs
neither torch nor a GPU) and a driver with cuGraphKernelNodeGetParams_v2,
cuFuncGetParamInfo and cuGraphGetEdges_v2 (CUDA 12.4 or later).
"""
import contextlib
import ctypes as C
import difflib
import gc
import os
import traceback

from .cuda import (ATTR_CLUSTER_DIMENSION, ATTR_COOPERATIVE, ATTR_PRIORITY, ATTR_VALUE_BYTES, LAUNCH_PARAM_BUFFER_POINTER, LAUNCH_PARAM_BUFFER_SIZE, LAUNCH_PARAM_END, NODE_KERNEL,
                   NODE_MEMCPY, NODE_MEMSET, KernelNodeParams, Memcpy3D, MemsetParams, check, cu, read_device)
from .errors import ExportError
from .hostreads import HostReads, flipped, user_line
from .kernel_search import func_attrs
from .weights import dtype_of

__all__ = ["allocator_blocks", "allocator_counts", "Capture", "capture_failed", "edge_kind", "EDGE_PORTS",
           "foreign_memory", "host_maps", "HOST_SYNC", "launch_attributes", "packed_arguments", "pool_regions",
           "record_allocations", "tensor_span", "trace_events"]


class Capture:
    """A captured graph's nodes: kind, kernel launch, parameter bytes, edges."""

    def __init__(self, torch, fn, inputs, far=None, split=False, force=None, watch=None):
        """far: a context manager under which the capture runs (farmem.far, pool=False:
        the capture's private pool is then made far away).  split: cut the capture at
        every host read (hostreads.py) into stretches, each its own graph on one pool;
        each stretch is replayed when the read comes, so that the value read is real
        (the call then runs for real, once).  Without it a host read fails the capture.
        force: {read index: True}: the program gets those reads' values flipped
        (hostreads.flipped), to take the other side of a branch.  watch: a ModuleWatch,
        whose node_clock then counts the allocator's allocations and frees as each node's
        launch begins (node_clock: where each node came in the allocator's trace, for
        slots.py; None without it, or for a capture in stretches; node_clock_kinds: the
        kind of node each of those calls made)."""
        self.graph = torch.cuda.CUDAGraph(keep_graph=True)
        # set by capture_set.take_captures: the collectives recorded (collectives.Recorder, alive as
        # long as the capture) and the memory capture C's inputs live in (farmem.far)
        self.recorder, self.collectives, self.inputs_memory = None, [], None
        self.segments, self.reads, self.stream = [self.graph], [], None
        torch.cuda.synchronize()
        traced = record_allocations(torch, True)
        counts = allocator_counts(torch)
        at_start = counts()
        # at each read of a capture in stretches: the allocator's counts since the capture began
        # (allocations, frees), where its trace reached (trace_pairs.read_index)
        self.read_clock = []
        clocked = watch.node_clock(counts, host_maps()) if watch is not None and traced and not split else None
        pool = torch.cuda.graph_pool_handle()  # (a pool of its own, as by default, but known if the capture fails)
        try:
            with far() if far else contextlib.nullcontext(), clocked or contextlib.nullcontext() as seen:
                if split:
                    out = self.capture_split(torch, fn, inputs, pool, force,
                                             clock=lambda: tuple(x - y for x, y in zip(counts(), at_start)))
                else:
                    with torch.cuda.graph(self.graph, pool=pool):
                        out = fn(*inputs)
        except Exception as e:
            if traced:
                record_allocations(torch, False)
            raise capture_failed(torch, self.segments, pool, e, self.stream) from e
        torch.cuda.synchronize()
        # the allocator's trace: allocations and frees, in order (slots.py); allocs the allocations'
        # (address, size), in the order made
        # (PGCC_TRACE_STACKS=1: where each event was made, for first_trace_difference's words)
        self.trace_where = [] if traced and STACKS else None
        self.trace = record_allocations(torch, False, self.trace_where) if traced else None
        self.allocs = None if self.trace is None else [(a, s) for act, a, s in self.trace if act == "alloc"]
        self.node_clock = None if seen is None else [(a - at_start[0], f - at_start[1]) for (a, f), _ in seen]
        self.node_clock_kinds = None if seen is None else [kind for _, kind in seen]
        # the host bytes the kernels' parameter words pointed at as each was launched
        # (ModuleWatch.node_clock): {address: [bytes, per launch]}
        self.host_seen = dict(watch.host_seen) if seen is not None else {}
        self.outputs = list(out) if isinstance(out, (tuple, list)) else [out]
        self.inputs = inputs
        self.snapshot = torch.cuda.memory_snapshot()
        self.walk_all()

    def capture_split(self, torch, fn, inputs, pool, force=None, clock=None):
        """fn(*inputs) captured in stretches between its host reads (self.segments), the
        reads in self.reads: where each read (its address, bytes, dtype), the bytes it
        read, the operation and the user's line."""

        def at_read(t, op, where):
            if clock is not None:
                self.read_clock.append(clock())
            self.segments[-1].capture_end()
            self.segments[-1].replay()
            torch.cuda.current_stream().synchronize()
            addr, size = t.data_ptr(), t.element_size()
            self.reads.append({"src": addr, "width": size, "dtype": dtype_of(t), "value": read_device(addr, size),
                               "op": op, "where": where})

            def capture_on(value):  # (after the read, which is made eagerly)
                self.segments.append(torch.cuda.CUDAGraph(keep_graph=True))
                self.segments[-1].capture_begin(pool=pool)
                if force and force.get(len(self.reads) - 1) and value is not None:
                    self.reads[-1]["forced"] = True
                    return flipped(value)
                return value
            return capture_on
        gc.collect()
        # On the one side stream torch.cuda.graph captures on: libraries keep workspaces
        # per stream (cuBLAS's is 32 MiB), made at the first capture on it.  With a new
        # stream per capture, some captures made them and others did not (seen: a 32 MiB
        # and a 1 MiB allocation in one capture A only), which shifted later allocations
        # (a tensor of the GradScaler step by exactly 1 MiB: its two paths then could not
        # be joined).
        cls = torch.cuda.graphs.graph
        if getattr(cls, "default_capture_stream", None) is None:
            cls.default_capture_stream = torch.cuda.Stream()
        self.stream = cls.default_capture_stream
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            self.graph.capture_begin(pool=pool)
            with HostReads(at_read):
                out = fn(*inputs)
            self.segments[-1].capture_end()
        torch.cuda.current_stream().wait_stream(self.stream)
        return out

    def replay(self):
        """Replays the captured call: its stretches in order (the values read are capture
        time's, baked in)."""
        for g in self.segments:
            g.replay()

    def reset(self):
        for g in self.segments:
            g.reset()

    def walk_all(self):
        """The nodes and edges of every stretch, one list: a stretch's nodes, then for the
        read after it a "read" node (the copy of the value to the host) and a "sync" node
        (the host waits for it); every node of the next stretch that waits for nothing
        waits for the sync, and the read for every node of the stretch before that nothing
        waits for.  handles[i] is node i's handle in its stretch's graph (None for reads
        and syncs), segment_of[i] its stretch."""
        self.nodes, self.edges, self.handles, self.segment_of, self.special_edges = [], [], [], [], 0
        self.edge_kinds = {}  # (a, b): "programmatic" or "launch_order", the edges that are not full ones
        tail = []  # what the next stretch waits for
        for k, g in enumerate(self.segments):
            handles, edges, special, nodes, kinds = self.walk(g.raw_cuda_graph())
            base = len(self.nodes)
            self.nodes += nodes
            self.handles += handles
            self.segment_of += [k] * len(nodes)
            self.special_edges += special
            self.edges += [(base + a, base + b) for a, b in edges]
            self.edge_kinds.update({(base + a, base + b): kind for (a, b), kind in kinds.items()})
            if nodes:
                waits, waited = {b for _, b in edges}, {a for a, _ in edges}
                self.edges += [(t, base + j) for t in tail for j in range(len(nodes)) if j not in waits]
                tail = [base + j for j in range(len(nodes)) if j not in waited]
            if k < len(self.reads):
                i = len(self.nodes)
                self.nodes += [{"type": "read", "read": k, **self.reads[k]}, {"type": "sync", "read": k}]
                self.handles += [None, None]
                self.segment_of += [None, None]
                self.edges += [(t, i) for t in tail] + [(i, i + 1)]
                tail = [i + 1]
        self.edges.sort()

    def walk(self, g):
        """One graph's (node handles, edges as index pairs, how many edges are not full
        dependencies and of no kind known, nodes, {edge: kind} of those of a known kind).
        The kinds known are programmatic dependent launch's, as a kernel launched with
        programmatic stream serialization is captured (Inductor's Triton kernels with
        torch._inductor.config.triton.enable_pdl): type programmatic, from the earlier
        kernel's programmatic port ("programmatic") or launch-order port
        ("launch_order"), to port 0."""
        d = cu()
        g = C.c_void_p(g)
        n = C.c_size_t(0)
        check(d.GraphGetNodes(g, None, C.byref(n)), "cuGraphGetNodes")
        if n.value == 0:  # (an empty stretch: two reads in a row)
            return [], [], 0, [], {}
        arr = (C.c_void_p * n.value)()
        check(d.GraphGetNodes(g, arr, C.byref(n)), "cuGraphGetNodes")
        handles = [arr[i] for i in range(n.value)]
        index = {h: i for i, h in enumerate(handles)}
        e = C.c_size_t(0)
        check(d.GraphGetEdges(g, None, None, None, C.byref(e)), "cuGraphGetEdges")
        edges, special, kinds = [], 0, {}
        if e.value:
            fr, to = (C.c_void_p * e.value)(), (C.c_void_p * e.value)()
            data = (C.c_ubyte * (8 * e.value))()  # CUgraphEdgeData: from_port, to_port, type, ...
            check(d.GraphGetEdges(g, fr, to, data, C.byref(e)), "cuGraphGetEdges")
            edges = sorted((index[fr[i]], index[to[i]]) for i in range(e.value))
            for i in range(e.value):
                kind = edge_kind(bytes(data[8 * i:8 * i + 8]))
                if kind:
                    kinds[index[fr[i]], index[to[i]]] = kind
                elif kind is None:  # (exported as a full dependency: counted, so that the export can say so)
                    special += 1
        return handles, edges, special, [self.node(h) for h in handles], kinds

    def node(self, h):
        d = cu()
        t = C.c_int()
        check(d.GraphNodeGetType(h, C.byref(t)), "cuGraphNodeGetType")
        node = {"type": t.value}
        if t.value == NODE_KERNEL:
            p = KernelNodeParams()
            check(d.KernelNodeGetParams(h, C.byref(p)), "cuGraphKernelNodeGetParams")
            name = C.c_char_p()
            check(d.FuncGetName(C.byref(name), p.func), "cuFuncGetName")
            layout, i = [], 0
            while True:
                off, size = C.c_size_t(), C.c_size_t()
                if d.FuncGetParamInfo(p.func, i, C.byref(off), C.byref(size)) != 0:
                    break
                layout.append((off.value, size.value))
                i += 1
            argv = C.cast(p.kernelParams, C.POINTER(C.c_void_p)) if p.kernelParams else None
            blob = bytearray(max((o + s for o, s in layout), default=0))
            if argv:
                for k, (o, s) in enumerate(layout):
                    blob[o:o + s] = C.string_at(argv[k], s)
            elif p.extra:  # the arguments packed in one buffer, laid out as the parameters are
                packed, why = packed_arguments(p.extra)
                if packed is None or len(packed) < len(blob):
                    node["problem"] = why or (f"its packed arguments (extra) hold {len(packed)} bytes, its parameters "
                                              f"take {len(blob)}")
                else:
                    blob[:] = packed[:len(blob)]
                    node["packed"] = True
            attrs = func_attrs(p.func)
            node.update(launch_attributes(h))
            node.update(func=p.func, name=name.value.decode(), grid=list(p.grid), block=list(p.block), smem=p.smem,
                        layout=layout, bytes=bytes(blob), attrs=attrs)
        elif t.value == NODE_MEMSET:
            p = MemsetParams()
            check(d.MemsetNodeGetParams(h, C.byref(p)), "cuGraphMemsetNodeGetParams")
            node.update(dst=p.dst, pitch=p.pitch, value=p.value, elem=p.elementSize, width=p.width, height=p.height)
        elif t.value == NODE_MEMCPY:
            p = Memcpy3D()
            check(d.MemcpyNodeGetParams(h, C.byref(p)), "cuGraphMemcpyNodeGetParams")
            node.update(src=p.srcDevice + p.srcXInBytes, dst=p.dstDevice + p.dstXInBytes, width=p.WidthInBytes,
                        src_type=p.srcMemoryType, dst_type=p.dstMemoryType, height=p.Height, depth=p.Depth)
        return node

    def regions(self):
        """The memory the capture allocated, by segment of its private pool: each segment from
        its start up to the end of the last allocation the capture made in it (rounded up as
        the allocator rounds).  A whole segment keeps the capture's layout, so pointers that
        kernels derive past a tensor's end stay right; cutting at the last allocation leaves
        out what the allocator reserved but the capture never used.  (address, size), sorted;
        None where the allocator's trace was not available."""
        if self.allocs is None:
            return None
        return pool_regions(self.snapshot, self.allocs)

    def blocks(self):
        """Every block the caching allocator has handed out: (address, size), sorted."""
        return allocator_blocks(self.snapshot)


EDGE_PORTS = {1: "programmatic", 2: "launch_order"}  # CU_GRAPH_KERNEL_NODE_PORT_*, the .graph's edge kinds


def edge_kind(data):
    """An edge's kind from its CUgraphEdgeData (from_port, to_port, type, 5 reserved
    bytes): "" for a full dependency, "programmatic" or "launch_order" for programmatic
    dependent launch's (type 1, CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC), None for any other."""
    from_port, to_port, kind = data[0], data[1], data[2]
    if kind == 0 and from_port == 0 and to_port == 0:
        return ""
    if kind == 1 and to_port == 0 and from_port in EDGE_PORTS:
        return EDGE_PORTS[from_port]
    return None


HOST_SYNC = ("operation not permitted when stream is capturing", "StreamCaptureUnsupported",
             "between CPU and CUDA tensors during CUDA graph capture",
             "capture_unsupported", "StreamCaptureInvalidated", "operation failed due to a previous error during capture")


def capture_failed(torch, graphs, pool, e, stream=None):
    """After a capture that raised (graphs: its graph, or its stretches' graphs; stream: the
    stream it captured on, where not torch.cuda.graph's): the capture ended, PyTorch's state put back (a capture
    that fails half-way leaves the CUDA generator believing one is under way: every later
    torch.randn failed with "Offset increment outside graph capture"), and an
    ExportError saying what stands in the way, with the user's line that did it."""
    s = C.c_void_p(torch.cuda.current_stream().cuda_stream)
    status = C.c_int()
    for st in (s, C.c_void_p(torch.cuda.graphs.graph.default_capture_stream.cuda_stream)
               if getattr(torch.cuda.graphs.graph, "default_capture_stream", None) else None,
               C.c_void_p(stream.cuda_stream) if stream is not None else None):
        if st is not None and cu().StreamIsCapturing(st, C.byref(status)) == 0 and status.value:
            g = C.c_void_p()
            cu().StreamEndCapture(st, C.byref(g))
            if g.value:
                cu().GraphDestroy(g)
    # The caching allocator still routes this capture's allocations to its private pool
    # (CUDAGraph.capture_end ends that only after the stream's capture ended well): every
    # later synchronising call then aborted the process (captures_underway.empty()).
    try:
        dev = torch.cuda.current_device()
        torch._C._cuda_endAllocateToPool(dev, pool)
        torch._C._cuda_releasePool(dev, pool)
    except (AttributeError, RuntimeError):
        pass
    for graph in graphs if isinstance(graphs, list) else [graphs]:
        try:
            graph.reset()
        except RuntimeError:
            pass
    healthy = True
    try:  # a capture that succeeds ends the generators' capture bookkeeping
        torch.cuda.synchronize()
        probe = torch.cuda.CUDAGraph()
        with torch.cuda.graph(probe):
            torch.randn(1, device="cuda")
        probe.reset()
        torch.randn(1, device="cuda")
        torch.cuda.synchronize()
    except RuntimeError:
        healthy = False
    chain = [e]  # the error inside the callable, and what ending the capture raised over it
    while (chain[-1].__context__ or chain[-1].__cause__) is not None and len(chain) < 8:
        chain.append(chain[-1].__context__ or chain[-1].__cause__)
    where = ""
    for x in reversed(chain):  # the innermost error's line in the user's code
        line = user_line(traceback.extract_tb(x.__traceback__))
        if line:
            where = f" (at {line})"
            break
    text = str(chain[-1]).strip().splitlines()[0] if str(chain[-1]).strip() else type(chain[-1]).__name__
    if any(h in str(x) for x in chain for h in HOST_SYNC[:4]):
        why = ("the callable waits for the GPU during the call" + where + ": a host read pgcc-export does not "
               "split the capture at (it splits at .item(), bool(), int(), float() and index of a one-element "
               "tensor; not at .tolist(), .cpu(), a print or a data-dependent shape) or a synchronisation")
    else:
        why = f"capturing the callable failed{where}: {text}"
    if not healthy:
        why += (" (and PyTorch's CUDA state could not be put back: this process should not run more CUDA work)")
    return ExportError(f"cannot export: {why}")


def launch_attributes(h):
    """A kernel node's launch attributes that change how it must be launched again:
    {"cluster": [x, y, z]} where it runs in thread block clusters (Hopper's cuBLASLt
    and cuDNN kernels), {"cooperative": True}, {"priority": n}."""
    out = {}
    v = (C.c_ubyte * ATTR_VALUE_BYTES)()
    if cu().GraphKernelNodeGetAttribute(h, ATTR_CLUSTER_DIMENSION, v) == 0:
        dims = list(C.cast(v, C.POINTER(C.c_uint))[0:3])
        if dims[0] * dims[1] * dims[2] > 1:
            out["cluster"] = dims
    for attr, key in ((ATTR_COOPERATIVE, "cooperative"), (ATTR_PRIORITY, "priority")):
        C.memset(v, 0, ATTR_VALUE_BYTES)
        if cu().GraphKernelNodeGetAttribute(h, attr, v) == 0 and C.cast(v, C.POINTER(C.c_int))[0]:
            out[key] = C.cast(v, C.POINTER(C.c_int))[0]
    return out


def packed_arguments(extra):
    """The bytes of a launch's `extra` array (CU_LAUNCH_PARAM_BUFFER_POINTER, the buffer,
    CU_LAUNCH_PARAM_BUFFER_SIZE, a pointer to its size, CU_LAUNCH_PARAM_END): (bytes,
    None), or (None, why) for an array of another shape."""
    ex = C.cast(extra, C.POINTER(C.c_void_p))
    buf = size = None
    for i in range(0, 16, 2):
        key = ex[i] or 0
        if key == LAUNCH_PARAM_END:
            break
        if key == LAUNCH_PARAM_BUFFER_POINTER:
            buf = ex[i + 1]
        elif key == LAUNCH_PARAM_BUFFER_SIZE:
            size = C.cast(ex[i + 1], C.POINTER(C.c_size_t))[0] if ex[i + 1] else None
        else:
            return None, f"its packed arguments (extra) hold a key 0x{key:x} pgcc-export does not know"
    if not buf or size is None:
        return None, "its packed arguments (extra) give no buffer or no size"
    return C.string_at(buf, size), None


def pool_regions(snapshot, allocs):
    """Capture.regions over plain data: snapshot as torch.cuda.memory_snapshot() gives it,
    allocs the (address, size) of the capture's allocations."""
    out = []
    for seg in snapshot:
        if tuple(seg.get("segment_pool_id") or (0, 0)) == (0, 0):  # not a private pool
            continue
        lo, hi = seg["address"], seg["address"] + seg["total_size"]
        ends = [a + -(-size // 512) * 512 for a, size in allocs if lo <= a < hi]
        if ends:
            out.append((lo, min(max(ends), hi) - lo))
    return sorted(out)


def allocator_blocks(snapshot):
    """Capture.blocks over plain data (a memory snapshot)."""
    out = []
    for seg in snapshot:
        addr = seg["address"]
        for b in seg.get("blocks", []):
            a = b.get("address", addr)
            out.append((a, b["size"]))
            addr = a + b["size"]
    return sorted(out)


def first_trace_difference(a, b, limit=4):
    """Where two captures' allocator traces (Capture.trace) differ, in words: the first
    `limit` stretches of events (action, size) one has and the other has not, or has
    otherwise, each with its event indices, as difflib aligns them; the addresses are left
    out (they differ between any two captures)."""
    if a.trace is None or b.trace is None:
        return "allocator traces: not recorded"
    ea, eb = [(act, size) for act, _addr, size in a.trace], [(act, size) for act, _addr, size in b.trace]
    ops = [op for op in difflib.SequenceMatcher(None, ea, eb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return f"allocator traces: the same {len(ea)} events (actions and sizes)"

    def show(cap, events, first):
        where = getattr(cap, "trace_where", None)  # (PGCC_TRACE_STACKS=1: where each was made)
        at = [f" at {where[first + k]}" if where and first + k < len(where) and where[first + k] else ""
              for k in range(min(3, len(events)))]
        return ", ".join(f"{act} {size}{w}" for (act, size), w in zip(events, at)) + (
            f", ... ({len(events)})" if len(events) > 3 else "")
    said = "; ".join(f"{tag} at {i1}/{j1}: [{show(a, ea[i1:i2], i1)}] against [{show(b, eb[j1:j2], j1)}]"
                     for tag, i1, i2, j1, j2 in ops[:limit])
    return (f"allocator traces ({len(ea)} and {len(eb)} events) differ in {len(ops)} places: {said}"
            + ("; ..." if len(ops) > limit else ""))


def record_allocations(torch, start, where=None):
    """The caching allocator's trace around a capture: start=True turns it on (False if this
    torch cannot; with the Python stack of each event where PGCC_TRACE_STACKS=1); start=False
    turns it off and returns what was allocated and freed since, in order: (action, address,
    size), action "alloc", "free_requested" or "free_completed" -- and, where `where` is a
    list, extends it with each event's place (trace_where)."""
    mem = torch.cuda.memory
    if start:
        try:
            mem._record_memory_history(enabled="all", context="all" if STACKS else None, stacks="python",
                                       max_entries=1 << 20, clear_history=True)
            return True
        except (AttributeError, TypeError, RuntimeError):
            return False
    snap = mem._snapshot()
    mem._record_memory_history(enabled=None)
    entries = snap.get("device_traces", [[]])[torch.cuda.current_device()]
    if where is not None:
        where.extend(trace_where(entries))
    return trace_events(entries)


def allocator_counts(torch):
    """A function that gives the caching allocator's counts of allocations and of frees
    made on the current device so far, (allocations, frees): each is an "alloc" or a
    "free_requested" event of its trace (record_allocations)."""
    dev = torch.cuda.current_device()
    stats = torch.cuda.memory.memory_stats_as_nested_dict

    def counts():
        a = stats(dev)["allocation"]["all"]
        return a["allocated"], a["freed"]
    return counts


TRACE_KEPT = ("alloc", "free_requested", "free_completed")
STACKS = os.environ.get("PGCC_TRACE_STACKS") == "1"


def trace_events(entries):
    """record_allocations over plain data: the entries of a snapshot's device trace."""
    return [(e["action"], e["addr"], e["size"]) for e in entries if e["action"] in TRACE_KEPT]


def trace_where(entries):
    """Where each event trace_events keeps was made, from the entry's Python frames
    (innermost first): `file:line` of the innermost frame, and of the innermost outside
    torch's own files where that is another (Inductor's generated code and the user's are
    outside); None where the entry has no frames."""
    def place(f):
        return f"{os.path.basename(f.get('filename', '?'))}:{f.get('line', '?')}"
    out = []
    for e in entries:
        if e["action"] not in TRACE_KEPT:
            continue
        frames = e.get("frames") or []
        outside = next((f for f in frames if f"{os.sep}torch{os.sep}" not in f.get("filename", "")), None)
        out.append(None if not frames else place(frames[0]) if outside in (None, frames[0])
                   else f"{place(frames[0])} < {place(outside)}")
    return out


def host_maps():
    """This process's host mappings, (start, end, name), from /proc/self/maps (empty elsewhere)."""
    out = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                if parts[1].startswith("r"):  # (CUDA reserves address space it has not mapped: ---p)
                    out.append((lo, hi, parts[5] if len(parts) > 5 else "anonymous"))
    except OSError:
        pass
    return out


def foreign_memory(maps, addr):
    """What a constant parameter word points into, if it is an address this process owns
    that the export does not: device memory the caching allocator did not hand out (a
    library's own allocation), or host memory (which kernels can read through HMM)."""
    if not 1 << 32 <= addr < 1 << 48:  # (below 4 GiB: more likely two 32-bit values than an address)
        return None
    t = C.c_uint()
    if cu().PointerGetAttribute(C.byref(t), 2, C.c_uint64(addr)) == 0 and t.value == 2:  # MEMORY_TYPE, DEVICE
        return "device memory the caching allocator did not hand out (it will not exist in another process)"
    for lo, hi, name in maps:
        if lo <= addr < hi:
            return f"host memory of this process ({name})"
    return None


def tensor_span(t):
    """The bytes a tensor's view covers: (address, size)."""
    if t.numel() == 0:
        return t.data_ptr(), 0
    hi = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.data_ptr(), (hi + 1) * t.element_size()
