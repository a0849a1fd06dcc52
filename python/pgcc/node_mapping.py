"""Capture A's nodes as the export holds them, each pointer word mapped to a buffer and
offset (relocate.Relocator): the buffers known by tensor (tensor_buffers: inputs,
outputs, weights), the Relocator over the three captures (relocator), the nodes and
their kernels (map_nodes), and the copies of outputs whose memory held other tensors
first or is an input's, a weight's or another output's (mark_views, copy_aliased_outputs).

    bufs = tensor_buffers(inputs, caps, weights)
    rel, paired = relocator(caps, bufs, host_maps())
    nodes, kernels, comms = map_nodes(torch, caps, rel, bufs, suspects={})

A node is a model.Node with its kind (kernel, memset, memcpy, read, sync, empty,
libcall) and index (capture A's); a kernel node's args are relocate.Relocator.kernel_args'.
A kernel is a model.Kernel: map_nodes gives its symbol, layout, attrs, ptr_words (the
relocations its launches need) and packed; kernel_code.py adds where its code is
(module, entry, image), the proofs its don't-care bytes, hostvalues.py its
scalar_types.  Assumes PyTorch (passed in as `torch`) for map_nodes' collectives only.
"""
from .capture import foreign_memory, tensor_span
from .collectives import kernel_collective, libcall
from .cuda import NODE_EMPTY, NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, NODE_NAMES
from .errors import CapturesDiffer, ExportError
from .graphfile import ident
from .library_structs import value_ranges
from .model import Kernel, Node
from .relocate import Allocations, Buffers, Relocator
from .weights import dtype_of

__all__ = ["address_spread", "copy_aliased_outputs", "flat_groups", "map_nodes", "mark_views", "relocation_counts",
           "relocator", "reused", "tensor_buffers"]


def tensor_buffers(inputs, captures, weights, storages=True):
    """The buffers known by tensor (relocate.Buffers): inputs in0.., outputs out0.. (an
    output whose memory held other tensors earlier in capture A is "aliased"), and the
    weights w_NAME (tied weights once), each with its address in captures 0 (A), 1 (B)
    and 2 (C).  storages: weights that are views of one storage (flat_groups) are one
    static block over all of them, w_FIRST_flat, their layout kept."""
    capA, caps = captures.capA, captures.caps
    inputs_b, inputs_c = captures.inputs_b, captures.inputs_c
    # buffers known by tensor: inputs, outputs, weights (captures: 0 is A, 1 is B, 2 is C)
    bufs = Buffers()
    for i, xs in enumerate(zip(inputs, inputs_b, inputs_c)):
        a, size = tensor_span(xs[0])
        bufs.add(name=f"in{i}", size=size, role="input", dtype=dtype_of(xs[0]), shape=list(xs[0].shape),
                 ranges={c: x.data_ptr() for c, x in enumerate(xs)})
    for i, os_ in enumerate(zip(*(cap.outputs for cap in caps))):
        a, size = tensor_span(os_[0])
        bufs.add(name=f"out{i}", size=size, role="output", dtype=dtype_of(os_[0]),
                 shape=list(os_[0].shape), ranges={c: o.data_ptr() for c, o in enumerate(os_)})
    seen_w = set()
    for k, (first, lo, hi, members) in enumerate(flat_groups(weights) if storages else []):
        bufs.add(name="w_" + ident(first) + "_flat", size=hi - lo, role="weight", static=True,
                 tensor=f"__flat_{k}", ranges={c: lo for c in range(len(caps))})
        seen_w.update(members)
    for wname, t in weights.items():
        a, size = tensor_span(t)
        if a in seen_w or size == 0:
            continue  # tied weights: one buffer (or in a flat block)
        seen_w.add(a)
        bufs.add(name="w_" + ident(wname), size=size, role="weight", dtype=dtype_of(t),
                 shape=list(t.shape), tensor=wname, value=t, ranges={c: a for c in range(len(caps))})
    for b in bufs.list:
        if b.role == "output" and reused(capA.allocs, b.ranges[0], b.size):
            b.aliased = True
    mark_views(bufs.list)
    return bufs


def flat_groups(weights):
    """[(first name, low address, high address, {addresses})]: the weights that are views
    of one storage at two or more places, as cuDNN's RNN weights are (PyTorch's
    flatten_parameters packs an LSTM's into one buffer, and cuDNN's persistent kernels
    take one pointer and read its neighbours: the bias b_hh right after b_ih).  Apart,
    each in a buffer of its own, the export would break that layout; a group is kept as
    one block, from its lowest weight's first byte to its highest's last."""
    by_storage = {}
    for wname, t in weights.items():
        a, size = tensor_span(t)
        if size:
            by_storage.setdefault(t.untyped_storage().data_ptr(), []).append((wname, a, size))
    out = []
    for members in by_storage.values():
        if len({a for _, a, _ in members}) < 2:
            continue
        out.append((members[0][0], min(a for _, a, _ in members), max(a + n for _, a, n in members),
                    {a for _, a, _ in members}))
    return out


def mark_views(buffers):
    """Marks aliased each output whose bytes in capture A lie inside an input's, a
    weight's or an earlier (not aliased) output's -- an output that is an input or a view
    of one, a view of a parameter (self.lin.weight.t()), a result returned twice or a view
    of an earlier one -- with view_of naming that buffer: the words pointing there are
    that buffer's, not the output's (the output's own buffer, first in the search, took a
    kernel's pointer to the weight it is a view of), and the program copies the output
    out of it at the end (copy_aliased_outputs).  Returns the outputs marked."""
    marked = []
    for i, b in enumerate(buffers):
        if b.role != "output" or b.aliased or not b.size or 0 not in b.ranges:
            continue
        lo, hi = b.ranges[0], b.ranges[0] + b.size
        for o in buffers:
            if o is b or o.role not in ("input", "weight", "output") or o.aliased or 0 not in o.ranges:
                continue
            if o.role == "output" and buffers.index(o) > i:
                continue
            if o.ranges[0] <= lo and hi <= o.ranges[0] + o.size:
                b.aliased, b.view_of = True, o.name
                marked.append(b)
                break
    return marked


def relocator(captures, bufs, maps):
    """The Relocator over captures A, B and C (relocate.py), and B's and C's allocations
    paired with A's ({capture: relocate.Allocations}); maps: this process's host memory
    mappings (capture.host_maps), for what a constant word points at.  Raises
    ExportError where B or C made other allocations than A."""
    capA, capB, capC, caps = captures.capA, captures.capB, captures.capC, captures.caps
    # captures B and C are checked against A through their allocations, paired with A's
    # by the order the program made them: C's memory is laid out otherwise (one
    # expandable segment), and B's regions need not be A's either (seen: ResNet-50 under
    # fp16 autocast); A's regions define the intermediates
    paired = {}
    for c, cap in ((1, capB), (2, capC)):
        if not Allocations.pairable(cap.allocs, capA.allocs):
            raise ExportError(f"capture {'ABC'[c]} made other allocations than capture A (" + (
                "no allocator trace" if cap.allocs is None or capA.allocs is None else
                f"{len(cap.allocs)} against {len(capA.allocs)}, or of other sizes") + "): the callable allocates "
                "differently from call to call, so its pointers cannot be matched between captures")
        paired[c] = Allocations(cap.allocs, capA.allocs)
    rel = Relocator(bufs, [cap.blocks() for cap in caps], [cap.regions() for cap in caps],
                    foreign=lambda addr: foreign_memory(maps, addr), paired=paired)
    return rel, paired


def map_nodes(torch, captures, rel, bufs, suspects):
    """Capture A's nodes (with B's and C's: their pointer words mapped by rel) as the
    export's nodes (model.Node); returns (nodes, kernels {function: model.Kernel}, comms {name:
    communicator}).  What cannot be mapped is added to rel.problems; changing parameter
    bytes no relocation explains go into suspects {node index: [(byte, length, why)]};
    read nodes add their host buffers to bufs."""
    capA, capB, capC, caps = captures.capA, captures.capB, captures.capC, captures.caps
    problems = rel.problems
    kernels, nodes, comms = {}, [], {}
    for i, (na, nb, nc) in enumerate(zip(capA.nodes, capB.nodes, capC.nodes)):
        where = f"node {i}"
        if not na["type"] == nb["type"] == nc["type"]:
            raise CapturesDiffer(f"{where}: the captures differ in its kind")
        kind = NODE_NAMES.get(na["type"], str(na["type"]))
        if na["type"] == NODE_KERNEL:
            where = f"node {i} ({na['name'][:80]})"
            if na.get("problem"):
                problems.append(f"{where}: {na['problem']}")
                continue
            if kernel_collective(na["name"]):
                problems.append(f"{where}: an NCCL collective the export did not record: it records "
                                "torch.distributed's functional collectives (_c10d_functional) under "
                                "torch.compile, not other calls into NCCL")
                continue
            if na["func"] not in kernels:
                kernels[na["func"]] = Kernel(symbol=na["name"], layout=na["layout"], attrs=na["attrs"], name=None,
                                             ptr_words=set())
            k = kernels[na["func"]]
            sus = []
            args = rel.kernel_args(na["layout"], [na["bytes"], nb["bytes"], nc["bytes"]], where, k.ptr_words, sus,
                                   values=value_ranges(na["name"], na["layout"]))
            if sus:
                suspects[i] = sus
            k.packed = k.packed or bool(na.get("packed"))
            if na.get("cooperative"):
                problems.append(f"{where}: a cooperative launch, which pgcc-export does not export yet")
            nodes.append(Node(kind="kernel", func=na["func"], grid=na["grid"], block=na["block"], smem=na["smem"],
                              args=args, index=i, cluster=na.get("cluster"), priority=na.get("priority")))
        elif na["type"] == NODE_MEMSET and capA.recorder and 0 <= na["dst"] - capA.recorder.marker < 256:
            k = na["dst"] - capA.recorder.marker  # (a collective's place: collectives.Recorder)
            calls = [cap.collectives[k] for cap in caps]
            ends = {x: rel.resolve(tuple(c[x] for c in calls), f"{where} ({calls[0]['fn']} {x})")
                    for x in ("send", "recv")}
            if not all(ends.values()):
                continue  # (a problem, said by resolve)
            group = torch.distributed.group.WORLD
            if calls[0]["group"] != getattr(group, "group_name", calls[0]["group"]):
                problems.append(f"{where}: a collective on a process group other than the world")
                continue
            comm = comms.setdefault("world", {"name": "world", "ranks": torch.distributed.get_world_size()})
            nodes.append(libcall(dict(calls[0], **ends), i, comm))
        elif na["type"] == NODE_MEMSET:
            r = rel.resolve((na["dst"], nb["dst"], nc["dst"]), where)
            if not r or na["height"] > 1:
                problems.append(f"{where}: a memset pgcc-export cannot map (2-D, or outside every buffer)")
                continue
            nodes.append(Node(kind="memset", dst=r, value=na["value"], elem=na["elem"], width=na["width"], index=i))
        elif na["type"] == NODE_MEMCPY:
            s, t = (rel.resolve((na[k], nb[k], nc[k]), where) for k in ("src", "dst"))
            if not s or not t or na["height"] > 1 or na["depth"] > 1 or na["src_type"] != 2 or na["dst_type"] != 2:
                problems.append(f"{where}: a memcpy pgcc-export cannot map (not 1-D device to device)")
                continue
            nodes.append(Node(kind="memcpy", src=s, dst=t, width=na["width"], index=i))
        elif na["type"] == "read":
            r = rel.resolve((na["src"], nb["src"], nc["src"]), where)
            if not r:
                problems.append(f"{where}: the value read at {na['where']} is in no buffer of the export")
                continue
            k = na["read"]
            host = bufs.add(name=f"r{k}", size=na["width"], role="host", dtype=na["dtype"], shape=[])
            nodes.append(Node(kind="read", src=r, dst=(host, 0), width=na["width"], index=i, read=k,
                              where=na["where"], op=na["op"]))
        elif na["type"] == "sync":
            nodes.append(Node(kind="sync", index=i, read=na["read"], where=capA.reads[na["read"]]["where"]))
        elif na["type"] == NODE_EMPTY:
            nodes.append(Node(kind="empty", index=i))
        else:
            problems.append(f"{where}: a {kind} node, which pgcc-export does not export yet")
    return nodes, kernels, comms


def copy_aliased_outputs(captures, rel, bufs, nodes, log):
    """Outputs whose memory held other tensors earlier in capture A: a word pointing there
    cannot say which tensor it means, so every word is the region's, and the output is
    copied out of the region at the end (a copy node, appended to nodes, after every node
    without successors).  Returns the edges, capture A's and the copies'."""
    capA, caps = captures.capA, captures.caps
    edges = list(capA.edges)
    last = {a for a, _ in edges}
    sinks = [n.index for n in nodes if n.index not in last]
    for b in [b for b in bufs.list if b.aliased]:
        src = rel.resolve(tuple(b.ranges[c] for c in range(len(caps))), f"output {b.name}")
        if not src:
            continue  # (a problem, said by resolve)
        index = len(capA.nodes) + sum(1 for n in nodes if n.index >= len(capA.nodes))
        nodes.append(Node(kind="memcpy", src=src, dst=(b, 0), width=b.size, index=index))
        edges += [(s, index) for s in sinks]
        log(f"  {b.name}: " + (f"it lies in {b.view_of}'s memory (the same tensor, or a view of it); copied out"
                                f" of {src[0].name}" if b.view_of else "its memory in capture A held other tensors "
                                f"before it; computed in {src[0].name} and copied out") + f" at the end ({b.size} bytes)")
    return edges


def reused(allocs, addr, size):
    """Whether, in an allocation trace ((address, size) in order), memory of the allocation
    at addr (the last made there) was handed out to an earlier allocation too."""
    allocs = allocs or []
    last = max((i for i, (a, _) in enumerate(allocs) if a == addr), default=None)
    if last is None:
        return False
    return any(a < addr + size and addr < a + s for a, s in allocs[:last])


def address_spread(bufs):
    """Whether the inputs' and outputs' addresses differ between every two captures in
    their low 32 bits, and in their high 32 bits between some two."""
    low, high = True, False
    for b in bufs.list:
        if b.role in ("input", "output"):
            addrs = [a for _, a in sorted(b.ranges.items())]
            low = low and len({a & 0xFFFFFFFF for a in addrs}) == len(addrs)
            high = high or len({a >> 32 for a in addrs}) > 1
    return {"low": low, "high": high}


def relocation_counts(kernels):
    counts = {}
    for k in kernels.values():
        for _, _, kind in k.ptr_words:
            counts[kind] = counts.get(kind, 0) + 1
    return counts
