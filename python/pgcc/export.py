"""The export, step by step: warm the callable up, capture it four times (one thrown
away, A on the example inputs, B on copies at other addresses, C on copies in memory
far away: farmem.py), walk the graphs, map every pointer word to a (buffer, offset)
with a relocation kind (relocate.py), prove by replay which changing bytes do not
matter and which blocks are workspaces (replay.py), find each kernel's code
(kernels.py) -- all of it analyse(), in memory -- and write NAME.graph, kernels/,
NAME.safetensors, NAME.io.safetensors and NAME.export.json (write_export); then,
unless told not to, verify the result (verify.py).

A callable that reads values back to the host half-way (hostreads.py) is captured in
stretches between its reads, and a fifth capture, D, on other input values tells what
each value read becomes (hostvalues.py, host_values, host_computed): a scalar the C
reads at run time, a callback scalar, or a guard; a guarded read that chose a branch
or ended a loop's pass becomes an IF/ELSE or WHILE node (branches.py).

Assumes PyTorch with CUDA and a GPU; torch is imported when export() is called, not
when this module is imported.  docs/e2e.md explains each step and why.
"""
import contextlib
import ctypes as C
import hashlib
import json
import os
import struct
from types import SimpleNamespace

from .capture import Capture, foreign_memory, host_maps, tensor_span
from .collectives import Recorder, kernel_collective, libcall
from .cuda import NODE_EMPTY, NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, NODE_NAMES, placed, read_device
from .errors import ExportError
from .farmem import far
from .fatbin import image_kind
from . import slots
from .graphfile import ident, map_places, node_buffers, node_refs, write_graph
from .hostreads import HostReads, perturbed
from .hostvalues import flows, same_path
from .kernels import (CALL_NODE_KINDS, ModuleWatch, cache_roots, find_in_images, find_in_libraries, same_kernel,
                      triton_cubins, triton_images)
from .progress import Progress
from .relocate import Allocations, Buffers, Relocator, used_extent
from .replay import Replayer, prove_irrelevant, scratch_blocks
from .weights import dtype_of, tensor_bytes, write_safetensors


class ExportResult:
    """Where an export went: out_dir, name, and the paths of what it wrote (graph,
    weights, io, report); os.fspath() of it is out_dir."""

    def __init__(self, out_dir, name, report):
        self.out_dir, self.name, self.report = os.path.abspath(out_dir), name, report
        self.graph = os.path.join(self.out_dir, name + ".graph")
        self.weights = os.path.join(self.out_dir, name + ".safetensors")
        self.io = os.path.join(self.out_dir, name + ".io.safetensors")
        self.report_path = os.path.join(self.out_dir, name + ".export.json")
        self.verified = None  # verify's summary line, where it ran

    def __fspath__(self):
        return self.out_dir

    def __str__(self):
        return self.out_dir

    def __repr__(self):
        return f"ExportResult({self.out_dir!r}, name={self.name!r})"


def export(fn_or_module, example_inputs, out_dir, *, name=None, weights=None, compile=True, verify=True,
           quiet=False, warmup=3, watch=None, progress=None, diagnose=None, callbacks=None, buckets=None, dim=0,
           dim_name=None, pad=None):
    """Exports fn_or_module (an nn.Module or a callable) as captured on example_inputs (a
    tuple of CUDA tensors) into out_dir; returns an ExportResult.

    weights: {name: tensor} the callable reads besides its inputs; for a module, by
    default its named_parameters() and named_buffers() (shared tensors once).  A module
    in eval mode runs under torch.no_grad(); one in training mode runs as it is, like
    any callable.  compile: run it under torch.compile (False: eagerly).  warmup: calls
    before the captures (torch.compile compiles on the first; libraries load their
    kernels).  verify: build the export, run it, and compare with the callable
    (verify.py).  watch: a ModuleWatch already started (one is started here otherwise,
    which sees only the modules loaded from now on).  quiet: errors only.  diagnose: also
    run the nodes one by one in this process, as captured and as exported, and report the
    first that differs (diagnose.py; default: the PGCC_DIAGNOSE environment variable).
    A training step (fn.train is True, or that of the callable torch.compile wrapped) is
    verified over several steps (verify.py).  The weights are left as they were before
    the export (the warm-up calls run for real, so they are saved first and written
    back).  callbacks: {callback scalar name:
    function of the values read back}, for verify, where the program takes values its
    host computes from what it read (the report's host_reads names them; without the
    functions, the export is written but not verified).

    buckets: sizes of dimension `dim` ([1, 2, 4, 8]: the inputs whose size there is the
    example's are cut or repeated to each), or a list of example input tuples that differ
    in the size of one dimension: one program with a variant per size (buckets.py),
    whose C takes the size per call (a field named dim_name, default "batch" for
    dimension 0, else "dimN") and runs the smallest bucket that holds it where the
    callable's rows are independent (pad: None tests it, True requires it, False gives
    exact sizes only).  Inference only; compiled with static shapes."""
    import torch

    prog = progress or Progress(quiet=quiet, prefix="pgcc-export")
    inputs = list(example_inputs) if isinstance(example_inputs, (tuple, list)) else [example_inputs]
    fn = fn_or_module
    if isinstance(fn_or_module, torch.nn.Module):
        module = fn_or_module
        if weights is None:
            weights = dict(module.named_parameters())  # (each shared tensor once)
            weights.update(module.named_buffers())
        if not module.training:
            def inference(*xs):
                with torch.no_grad():
                    return module(*xs)
            fn = inference
        name = name or type(module).__name__.lower()
    name = ident(name or getattr(fn_or_module, "__name__", None) or "model")
    weights = {} if weights is None else weights
    own_watch = watch is None
    if own_watch:
        try:
            watch = ModuleWatch()
        except ExportError as e:
            prog.warn("no ModuleWatch: library kernels outside .nv_fatbin cannot be exported", e)
            watch = None
    if buckets is not None:
        return _export_buckets(torch, fn, fn_or_module, inputs, out_dir, name, weights, watch, own_watch, prog,
                               buckets, dim, dim_name or ("batch" if dim == 0 else f"dim{dim}"), pad, compile,
                               verify, warmup)
    # The warm-up calls run for real: a training step takes steps, a module in training
    # mode updates its running statistics.  The state is saved first (in host memory)
    # and written back after them, so that the captures, the weights file and the
    # verification start from the state the caller gave, and the caller gets it back.
    # (The copy costs what reading the weights for the weights file costs anyway.)
    original = saved_state(torch, weights, device="cpu")
    try:
        run = torch.compile(fn) if compile else fn
        if watch and warmup:
            watch.paused = False  # the first runs load the libraries' modules
        with HostReads() as reads:
            before = 0
            for i in range(warmup):
                prog.status(f"{name}: warm-up call {i + 1}/{warmup}" + (" (compiling)" if compile and i == 0 else ""))
                before = len(reads.seen)
                run(*inputs)
            per_call = len(reads.seen) - before  # (the last call's: compiling makes reads of its own)
            if per_call and compile and warmup < 2:  # (that call compiled: count again)
                before = len(reads.seen)
                run(*inputs)
                per_call = len(reads.seen) - before
            if per_call:
                # The captures split at the reads, and capture D runs on other values: the
                # compiler sees those values now (torch.compile compiles a graph after a
                # read once for the value, then again with the value as an argument).
                state = saved_state(torch, weights)
                for scale in (1.25, 1.5):
                    prog.status(f"{name}: warm-up call on other input values (x{scale})")
                    run(*perturbed(torch, inputs, scale))
                restore_state(state)
                run(*inputs)
        restore_state(original)
        if reads.seen:
            prog.log(f"  {per_call} host reads in a call, the first at {reads.seen[-per_call][1]} "
                     f"({reads.seen[-per_call][0]}): the captures are split there" if per_call else
                     f"  {len(reads.seen)} host reads while compiling, none in a call: the captures are whole")
        if diagnose is None:
            diagnose = os.environ.get("PGCC_DIAGNOSE", "") not in ("", "0")
        a = export_captured(run, inputs, weights, out_dir, name, progress=prog, watch=watch, diagnose=diagnose,
                            split=per_call > 0)
        report = a.report
    except BaseException:
        try:  # the caller's state back, where CUDA still works
            restore_state(original)
        except RuntimeError:
            pass
        raise
    finally:
        if own_watch and watch:
            watch.close()
        prog.done()
    result = ExportResult(out_dir, name, report)
    needed = sorted({c for r in report.get("host_reads", []) for c in r.get("callbacks", [])})
    if verify and needed and not callbacks:
        prog.warn(f"not verified: the program takes callback scalars {needed}, values its host computes from the "
                  "values it read back; give pgcc.export(..., callbacks={name: function}) to verify it")
        result.verified = f"NOT VERIFIED {name}: callback scalars {needed} need their functions"
        verify = False
    def check(build_dir=None):
        if training_step(fn_or_module):
            from .verify import verify_training
            return verify_training(result, run, inputs, weights, progress=prog, build_dir=build_dir)
        from .verify import verify as verify_export
        return verify_export(result, run, inputs, progress=prog, callbacks=callbacks, build_dir=build_dir)
    try:
        if verify:
            try:
                result.verified = check()
            except ExportError as e:
                # The regions split into slots, or cut, have not run on every program: where
                # the export fails with them, it is written again with every region whole,
                # verified again (built apart: the process holds the first build loaded), and
                # the report says why (intermediates.undone).
                if not whole_regions(a, str(e)):
                    raise
                prog.warn("the export failed verification with its capture memory split into slots or cut; "
                          "written again with every region whole", str(e))
                write_export(a, inputs, out_dir, name, prog, False)
                result.verified = check(build_dir=os.path.join(out_dir, "build-whole"))
    finally:
        prog.flush()
    return result


def _export_buckets(torch, fn, fn_or_module, inputs, out_dir, name, weights, watch, own_watch, prog, buckets, dim,
                    dim_name, pad, compile, verify, warmup):
    """export() with buckets (buckets.py)."""
    from .buckets import export_buckets, verify_buckets
    if training_step(fn_or_module):
        raise ExportError("buckets of a training step are not exported (a step changes its state; buckets are "
                          "for inference)")
    try:
        run = torch.compile(fn, dynamic=False) if compile else fn
        if watch and warmup:
            watch.paused = False
        b = export_buckets(fn, run, inputs, weights, out_dir, name, prog, watch,
                           buckets, dim, ident(dim_name), pad, warmup)
    finally:
        if own_watch and watch:
            watch.close()
        prog.done()
    result = ExportResult(out_dir, name, b.report)
    try:
        if verify:
            result.verified = verify_buckets(result, run, b, progress=prog)
    finally:
        prog.flush()
    return result


def export_captured(fn, inputs, weights, out_dir, name, progress=None, watch=None, diagnose=False, split=False):
    """The export proper, of a callable that has run (warmed up) already.  watch: a
    ModuleWatch started before fn first ran, for library kernels that are in no fatbin of
    their library (their images are then written beside the .graph).  diagnose: run the
    nodes one by one as captured and as exported (diagnose.py), into the report.  split:
    the callable reads values back to the host (hostreads.py): the captures are cut
    there (and run the call for real, so the state is put back after each), and capture D,
    on other input values, tells which kernel arguments are the values read
    (hostvalues.py).  A read that only chose the path is then tried as a conditional node
    (branches.py): the other path is captured too (the value given to the program
    flipped), and where the two share what came before the read, the program holds both,
    chosen on the device.  Returns the analysis (analyse(); its report is the export's)."""
    prog = progress or Progress(prefix="pgcc-export")
    a = analyse(fn, inputs, weights, out_dir, name, prog, watch, split)
    if split:
        from .branches import join_other_path
        join_other_path(fn, inputs, weights, out_dir, name, prog, watch, a)
    write_export(a, inputs, out_dir, name, prog, diagnose)
    keep_smaller_layout(a, out_dir, name, prog.log)
    return a


def analyse(fn, inputs, weights, out_dir, name, prog, watch, split, force=None):
    """Captures, relocations, the kernels' code, replays: everything an export holds, in
    memory (a namespace: capA, bufs, nodes, edges, kernels, scalars, report, outputs).
    force: {read index: True}, reads whose value the program is given flipped (the other
    path of a branch, branches.py)."""
    import torch
    log = prog.log
    if watch:
        watch.paused = True  # the captures and searches below load modules of their own

    os.makedirs(os.path.join(out_dir, "kernels"), exist_ok=True)
    # A first capture, thrown away: libraries allocate what they keep (cuBLASLt's
    # workspace) the first time they are captured, which would shift every later
    # allocation of capture A against capture B (seen with GPT-2).
    state = saved_state(torch, weights) if split else None
    count = 5 if split else 4

    # a torch.distributed program: its collectives are recorded, not run, in the captures
    # (collectives.py), so that this rank exports on its own
    tp = torch.distributed.is_available() and torch.distributed.is_initialized()

    def recording(cap_fn):
        rec = Recorder(torch) if tp else None
        with rec or contextlib.nullcontext():
            got = cap_fn()
        cap = got[1] if isinstance(got, tuple) else got
        cap.recorder = rec  # (alive as long as the capture: replays write its marker)
        cap.collectives = rec.calls if rec else []
        return got

    def capture(i, what, xs, **kw):
        prog.status(f"{name}: capture {i}/{count} ({what})")
        cap = recording(lambda: Capture(torch, fn, xs, split=split, force=force, **kw))
        restore_state(state)
        return cap
    capture(1, "thrown away", inputs).reset()
    capA = capture(2, "A, the example inputs", inputs, watch=watch)  # (its nodes placed in its trace: slots.py)
    inputs_b = [x.clone() for x in inputs]  # the same values at other addresses
    capB = capture(3, "B, the inputs at other addresses", inputs_b)
    prog.status(f"{name}: capture 4/{count} (C, far away: other high address bits)")
    inputs_c, capC = recording(lambda: capture_far(torch, fn, inputs, prog, split, force))
    restore_state(state)
    caps = [capA, capB, capC]
    for c, cap in enumerate(caps[1:], 1):
        if len(cap.nodes) != len(capA.nodes) or cap.edges != capA.edges or cap.edge_kinds != capA.edge_kinds:
            raise ExportError(f"captures A and {'ABC'[c]} differ in their nodes or edges: the callable is not "
                              "deterministic")
        if [(x["fn"], x["count"], x["dtype"], x["op"]) for x in cap.collectives] != \
                [(x["fn"], x["count"], x["dtype"], x["op"]) for x in capA.collectives]:
            raise ExportError(f"captures A and {'ABC'[c]} made other collectives")
        if [r["value"] for r in cap.reads] != [r["value"] for r in capA.reads]:
            raise ExportError(f"captures A and {'ABC'[c]} read other values back to the host on the same inputs: "
                              "the callable is not deterministic")
    capD = capture(5, "D, the inputs at other values", perturbed(torch, inputs)) if split else None
    if capA.special_edges:
        prog.warn("edges that are not full dependencies, of a kind not known, are exported as full ones",
                  f"{capA.special_edges} of the capture's {len(capA.edges)} edges")
    if capA.edge_kinds:
        log(f"  {len(capA.edge_kinds)} of the capture's {len(capA.edges)} edges are programmatic dependent launch's: "
            "kept (.graph format 3)")
    maps = host_maps()

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
    for b in bufs.list:
        if b["role"] == "output" and reused(capA.allocs, b["ranges"][0], b["size"]):
            b["aliased"] = True
    seen_w = set()
    for wname, t in weights.items():
        a, size = tensor_span(t)
        if a in seen_w or size == 0:
            continue  # tied weights: one buffer
        seen_w.add(a)
        bufs.add(name="w_" + ident(wname), size=size, role="weight", dtype=dtype_of(t),
                 shape=list(t.shape), tensor=wname, value=t, ranges={c: a for c in range(len(caps))})
    spread = address_spread(bufs)
    if not spread["high"] or not spread["low"]:
        prog.warn("the captures' buffers do not differ in both their low and high address bits: addresses cut to "
                  "32 bits cannot be told from constants", f"{spread}")
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
    problems = rel.problems
    suspects = {}  # node index -> [(parameter byte, length, why)]: proven irrelevant by replay, or problems

    # kernels
    prog.status(f"{name}: mapping the parameters of {len(capA.nodes)} nodes")
    kernels, nodes, comms = {}, [], {}
    for i, (na, nb, nc) in enumerate(zip(capA.nodes, capB.nodes, capC.nodes)):
        where = f"node {i}"
        if not na["type"] == nb["type"] == nc["type"]:
            raise ExportError(f"{where}: the captures differ in its kind")
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
                kernels[na["func"]] = {"symbol": na["name"], "layout": na["layout"], "attrs": na["attrs"],
                                       "name": None, "ptr_words": set()}
            k = kernels[na["func"]]
            sus = []
            args = rel.kernel_args(na["layout"], [na["bytes"], nb["bytes"], nc["bytes"]], where, k["ptr_words"], sus)
            if sus:
                suspects[i] = sus
            k["packed"] = k.get("packed", False) or bool(na.get("packed"))
            if na.get("cooperative"):
                problems.append(f"{where}: a cooperative launch, which pgcc-export does not export yet")
            nodes.append({"kind": "kernel", "func": na["func"], "grid": na["grid"], "block": na["block"],
                          "smem": na["smem"], "args": args, "index": i, "cluster": na.get("cluster"),
                          "priority": na.get("priority")})
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
            nodes.append({"kind": "memset", "dst": r, "value": na["value"], "elem": na["elem"], "width": na["width"],
                          "index": i})
        elif na["type"] == NODE_MEMCPY:
            s, t = (rel.resolve((na[k], nb[k], nc[k]), where) for k in ("src", "dst"))
            if not s or not t or na["height"] > 1 or na["depth"] > 1 or na["src_type"] != 2 or na["dst_type"] != 2:
                problems.append(f"{where}: a memcpy pgcc-export cannot map (not 1-D device to device)")
                continue
            nodes.append({"kind": "memcpy", "src": s, "dst": t, "width": na["width"], "index": i})
        elif na["type"] == "read":
            r = rel.resolve((na["src"], nb["src"], nc["src"]), where)
            if not r:
                problems.append(f"{where}: the value read at {na['where']} is in no buffer of the export")
                continue
            k = na["read"]
            host = bufs.add(name=f"r{k}", size=na["width"], role="host", dtype=na["dtype"], shape=[])
            nodes.append({"kind": "read", "src": r, "dst": (host, 0), "width": na["width"], "index": i, "read": k,
                          "where": na["where"], "op": na["op"]})
        elif na["type"] == "sync":
            nodes.append({"kind": "sync", "index": i, "read": na["read"], "where": capA.reads[na["read"]]["where"]})
        elif na["type"] == NODE_EMPTY:
            nodes.append({"kind": "empty", "index": i})
        else:
            problems.append(f"{where}: a {kind} node, which pgcc-export does not export yet")

    computed = {}
    scalars = host_values(capA, capD, nodes, kernels, suspects, computed, prog.warn, log) if split else []

    # Outputs whose memory held other tensors earlier in capture A: a word pointing there
    # cannot say which tensor it means, so every word is the region's, and the output is
    # copied out of the region at the end (a copy node after every node without successors).
    edges = list(capA.edges)
    last = {a for a, _ in edges}
    sinks = [n["index"] for n in nodes if n["index"] not in last]
    for b in [b for b in bufs.list if b.get("aliased")]:
        src = rel.resolve(tuple(b["ranges"][c] for c in range(len(caps))), f"output {b['name']}")
        if not src:
            continue  # (a problem, said by resolve)
        index = len(capA.nodes) + sum(1 for n in nodes if n["index"] >= len(capA.nodes))
        nodes.append({"kind": "memcpy", "src": src, "dst": (b, 0), "width": b["size"], "index": index})
        edges += [(s, index) for s in sinks]
        log(f"  {b['name']}: its memory in capture A held other tensors before it; computed in {src[0]['name']} "
            f"and copied out at the end ({b['size']} bytes)")

    # where each kernel's code is
    prog.status(f"{name}: finding the code of {len(kernels)} kernels")
    roots = cache_roots()
    library_wanted = {}
    launched = triton_images(roots, log)
    log(f"  {sum(1 for f in kernels if f in launched)} of {len(kernels)} kernels are Triton's, found by their "
        f"function handle among the {len(launched)} kernels Triton loaded")
    for func, k in kernels.items():
        image = launched.get(func)
        if image is None:  # not a kernel Triton launched in this process: the caches, if unambiguous
            found = {}
            for path in triton_cubins(k["symbol"], roots):
                with open(path, "rb") as fh:
                    data = fh.read()
                if same_kernel(data, k["symbol"], k["attrs"]):
                    found[hashlib.sha256(data).hexdigest()] = data
            if len(found) > 1:
                problems.append(f"kernel {k['symbol'][:100]}: {len(found)} different cubins in the caches match "
                                "it (autotuned variants, or kernels of other graphs with its name)")
                continue
            image = next(iter(found.values()), None)
        if image is not None:
            digest = hashlib.sha256(image).hexdigest()
            mname = ident(k["symbol"])[:48] + "_" + digest[:8]  # names cut short may collide
            rel_path = os.path.join("kernels", mname + ".cubin")
            with open(os.path.join(out_dir, rel_path), "wb") as f:
                f.write(image)
            k["module"] = {"name": mname, "kind": "cubin", "file": rel_path, "sha256": digest}
        else:
            library_wanted[k["symbol"]] = k["attrs"]
    if library_wanted:
        major, minor = torch.cuda.get_device_capability()
        found = find_in_libraries(library_wanted, log, sm=10 * major + minor, progress=prog.status)
        for func, k in kernels.items():
            if k["symbol"] in found:
                path, off = found[k["symbol"]]
                k["module"] = {"name": ident(os.path.basename(path).split(".so")[0]), "kind": "library",
                               "library": os.path.basename(path)}
                k["entry"] = off
        rest = {s: a for s, a in library_wanted.items() if s not in found}
        if watch:
            own_images(kernels, watch, log, out_dir)
        if rest and watch:
            prog.status(f"{name}: searching {len(watch.images)} module images for {len(rest)} kernels")
            images = find_in_images(rest, list(watch.images.values()), log, problems)
            for func, k in kernels.items():
                if k["symbol"] in images and "image" not in k:
                    set_image(k, images[k["symbol"]], out_dir)
                    own = watch.images.get(watch.image_of(func) or "")
                    if k["symbol"] in find_in_images.alternatives and own and same_kernel(own, k["symbol"],
                                                                                         k["attrs"]):
                        set_image(k, own, out_dir)  # the image this very function was taken from
                    elif k["symbol"] in find_in_images.alternatives:
                        # Not tried by running them: one such variant of cuDNN's attention
                        # kernel, run on another's arguments, stopped the GPU (an illegal
                        # instruction) and left the process's CUDA context unusable.
                        problems.append(f"kernel {k['symbol'][:100]}: "
                                        f"{len(find_in_images.alternatives[k['symbol']])} different module images "
                                        "the process loaded hold a kernel of this name and these attributes, with "
                                        "different code; which one ran cannot be told")
    for func, k in kernels.items():
        if "module" not in k:
            problems.append(f"kernel {k['symbol'][:100]}: its code is neither a Triton cubin in "
                            f"{roots or 'no cache directory'} nor in a loaded library's fatbins"
                            + (" (the module holding it was loaded before pgcc started watching: make a "
                               "pgcc.ModuleWatch() before the model first runs and pass it as watch=)"))
    report = {"nodes": len(capA.nodes), "edges": len(capA.edges), "programmatic_edges": len(capA.edge_kinds),
              "problems": problems,
              "address_bits_differ": spread,
              "allocations": {"A": len(capA.allocs), **{"ABC"[c]: {"made": len(caps[c].allocs), "paired": len(a.pairs)}
                                                          for c, a in paired.items()}},
              "packed_arguments": sum(1 for n in capA.nodes if n.get("packed")),
              "relocations": relocation_counts(kernels),
              "dontcare": [{"node": i, "bytes": [[a, n, why] for a, n, why in r]} for i, r in suspects.items()],
              "host_memory_read": [],
              "host_reads": [{"where": r["where"], "op": r["op"], "dtype": r["dtype"],
                              "scalars": [s["name"] for s in scalars if s.get("read") == k],
                              "guarded": not any(s.get("read") == k for s in scalars)}
                             for k, r in enumerate(capA.reads)],
              "library_candidates": {s: n for s, n in getattr(find_in_libraries, "candidates", {}).items() if n > 1},
              "kernels": [{"symbol": k["symbol"], "entry": k.get("entry"),
                           "module": k.get("module") if not (k.get("module") or {}).get("globals") else
                           dict(k["module"], globals={n: b.hex() for n, b in k["module"]["globals"]})}
                          for k in kernels.values()]}
    def write_report():
        if force:  # (the other path's analysis: its problems are said by branches.py)
            return
        with open(os.path.join(out_dir, name + ".export.json"), "w") as f:
            json.dump(report, f, indent=1)

    write_report()
    if problems:
        raise ExportError("cannot export; what stands in the way:\n  " + "\n  ".join(problems))

    replayer = Replayer(torch, capA, bufs)
    try:
        if suspects:
            prog.status(f"{name}: replaying to prove {sum(map(len, suspects.values()))} changing parameter words "
                        "irrelevant")
            # Words that point into host memory first, each on its own: the kernels may read
            # through them (cuBLAS's alpha and beta), or take them as values (CUTLASS SGEMM's
            # float bound beside stale stack bytes).  read_host tells which with copies that
            # keep their low 32 bits, where zeroing or poisoning such a word could make a
            # kernel fault.  The exported bytes hold the other suspects zeroed (relocate.py
            # never writes this process's addresses), so those are proven irrelevant by
            # replays with them zeroed and poisoned.
            rescued, kept, check = {}, [], host_copy_check(replayer)
            for i in list(suspects):
                suspects[i] = [r for r in suspects[i] if not read_host(i, [r], capA, maps, bufs, nodes, kernels,
                                                                        rescued, check, kept, problems)]
                if not suspects[i]:
                    del suspects[i]
            problems += prove_irrelevant(replayer, suspects, lambda i: capA.nodes[i]["name"][:80],
                                         words=lambda i, at, n: " ".join(
                                             f"{'ABC'[c]} {words_hex(cap.nodes[i]['bytes'], at, n)}"
                                             for c, cap in enumerate(caps)))
            report["host_memory_read"] = [f"0x{a:x}" for a in rescued]
            report["host_like_values"] = [{"node": i, "at": at, "word": f"0x{w:x}"} for i, at, w in kept]
            write_report()
            if problems:
                raise ExportError("cannot export; what stands in the way:\n  " + "\n  ".join(problems))
            if rescued:
                log(f"  {len(rescued)} parameter words in host memory that kernels read (through the GPU's access "
                    "to host memory): their bytes copied into the weights, the words pointed at the copies")
            if kept:
                at = sorted({i for i, _, _ in kept})
                log(f"  {len(kept)} parameter words in {len(at)} nodes point into this process's host memory but are "
                    "taken as values (replays with them pointed at copies of the bytes there, or of other bytes, "
                    "with the same low 32 bits compute the same: a float beside stale stack bytes, an unused slot): "
                    "kept as captured, listed in the report's host_like_values; e.g. " + ", ".join(
                        f"node {i} bytes {a}..{a + 8} 0x{w:x} ({capA.nodes[i]['name'][:40]})" for i, a, w in kept[:3]))
            for i, r in suspects.items():
                mark_dontcare(kernels[capA.nodes[i]["func"]], r)
            log(f"  {sum(map(len, suspects.values()))} parameter byte ranges in {len(suspects)} nodes change between "
                "captures or hold this process's addresses, and replays with them zeroed and poisoned give the same "
                "results bit for bit: written as don't-care")
        if computed:
            host_computed(replayer, capA, nodes, kernels, computed, scalars, report, log)
            write_report()
        prog.status(f"{name}: replaying to tell workspaces from data")
        scratch_blocks(replayer, bufs, nodes, log)
        if any(k["module"]["kind"] == "library" or "image" in k for k in kernels.values()):
            prog.status(f"{name}: running the library kernels' code found, node by node")
            try:
                prove_code(torch, capA, bufs, nodes, edges, kernels, replayer, log, prog.warn, out_dir, watch)
            except RuntimeError as e:  # a launch refused: the code stays as found, verify.py judges it
                prog.warn("the library kernels' code could not be run node by node", str(e))
        # the outputs of capture A on the example inputs; the replay's updates to the
        # weights (a training step's) are undone when the replayer closes
        outputs = [o.clone() for o in capA_outputs(torch, capA)]
        if comms:  # (capture A's collectives were stand-ins: the outputs are a real call's, every rank's at once)
            out = fn(*inputs)
            outputs = [o.detach().clone() for o in (out if isinstance(out, (tuple, list)) else [out])]
    finally:
        replayer.close()
    # (PGCC_SLOTS=off keeps every region whole, as exports before the seventh session had them)
    whole = SimpleNamespace(nodes=list(nodes), bufs=list(bufs.list), sizes={id(b): b["size"] for b in bufs.list})
    nodes, report["intermediates"] = place_intermediates(bufs, nodes, capA, log,
                                                         split=not split and os.environ.get("PGCC_SLOTS") != "off")
    write_report()
    return SimpleNamespace(capA=capA, bufs=bufs, nodes=nodes, edges=edges, kernels=kernels, scalars=scalars,
                           report=report, write_report=write_report, outputs=outputs, comms=list(comms.values()),
                           whole=whole)


def write_export(a, inputs, out_dir, name, prog, diagnose):
    """Writes what analyse() found (NAME.safetensors, NAME.io.safetensors, NAME.graph);
    with diagnose, runs the nodes one by one; returns the report."""
    import torch
    log = prog.log
    capA, bufs, nodes, edges, kernels = a.capA, a.bufs, a.nodes, a.edges, a.kernels
    report, write_report, outputs = a.report, a.write_report, a.outputs
    conditions = getattr(a, "conditions", [])

    # weights file: the model's weights that are used, and static blocks' bytes
    used = {id(b) for n in nodes for b in node_buffers(n)}
    tensors = []
    for b in bufs.list:
        if b["role"] != "weight" or id(b) not in used:
            continue
        if b.get("host"):
            tensors.append((b["tensor"], "u8", [b["size"]], b["host"]))
        elif b.get("static"):
            tensors.append((b["tensor"], "u8", [b["size"]], read_device(b["ranges"][0], b["size"])))
        else:
            tensors.append((b["tensor"], b["dtype"], b["shape"], tensor_bytes(b["value"])))
    write_safetensors(os.path.join(out_dir, name + ".safetensors"), tensors)
    io = [(f"in{i}", dtype_of(x), list(x.shape), tensor_bytes(x)) for i, x in enumerate(inputs)]
    io += [(f"out{i}", dtype_of(o), list(o.shape), tensor_bytes(o)) for i, o in enumerate(outputs)]
    write_safetensors(os.path.join(out_dir, name + ".io.safetensors"), io)
    graph_of(a, os.path.join(out_dir, name + ".graph"), name)
    if diagnose and conditions:
        log("  diagnosis: left out for a program with conditional nodes (the node-by-node runs follow one path)")
    elif diagnose:
        prog.status(f"{name}: diagnosis, node by node")
        from .diagnose import diagnose as run_diagnosis
        from .loader import load
        program = None
        try:
            program = load(out_dir, name=name)
        except ExportError as e:
            log(f"  diagnosis: the export does not load ({e}); the passes with libpgrt's code are left out")
        replayer = Replayer(torch, capA, bufs)
        try:
            report["diagnosis"] = run_diagnosis(torch, capA, bufs, nodes, edges, replayer, log, program)
        finally:
            replayer.close()
            if program is not None:
                program.close()
        write_report()
    prog.done()
    log(f"pgcc-export: {name}: {len(nodes)} nodes, {len(capA.edges)} edges, {len(kernels)} kernels "
        f"({sum(1 for k in kernels.values() if k['module']['kind'] == 'library')} from libraries), "
        f"{len(tensors)} weight tensors -> {out_dir}")
    return report


def graph_of(a, path, name):
    """Writes the .graph of analysis a as it stands to path (beside the export's other
    files: the modules and weights are named relative to it)."""
    import torch
    major, minor = torch.cuda.get_device_capability()
    used = {id(b) for n in a.nodes for b in node_buffers(n)}
    write_graph(path, name, a.kernels, a.bufs, used, a.nodes, a.edges, f"sm_{major}{minor}",
                origin=f"a torch {torch.__version__} capture", scalars=a.scalars,
                conditions=getattr(a, "conditions", []), dims=getattr(a, "dims", ()), comms=getattr(a, "comms", ()),
                edge_kinds=getattr(a.capA, "edge_kinds", None))


def arena_bytes(graph):
    """The arena pgcc's memory plan gives a .graph (pgcc --report=json), or None where pgcc
    does not read it."""
    import subprocess
    from .toolchain import find_pgcc
    r = subprocess.run([find_pgcc(), "--report=json", graph], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout).get("arena_bytes")


def keep_smaller_layout(a, out_dir, name, log, write=graph_of, arena=arena_bytes):
    """Regions split into slots stay split only where pgcc packs the slots into a smaller
    arena than the regions whole.  A slot lives from the first node that uses it to the
    last, as the allocator's trace and the node clock place them; where those are
    inferred (more launches seen than the capture has nodes), a slot can span uses that
    the region's own reuse kept apart, and the split came out larger (vit bf16: a 3.64 MB
    arena against a 1.98 MB region).  Written beside the export as NAME.whole.graph,
    planned, and kept in its place where smaller; the report's intermediates then say
    why each region is whole.  Returns whether the regions were made whole."""
    done = a.report.get("intermediates") or {}
    if not done.get("split"):
        return False
    graph, trial = os.path.join(out_dir, name + ".graph"), os.path.join(out_dir, name + ".whole.graph")
    split_bytes = arena(graph)
    saved = list(a.nodes), list(a.bufs.list), {id(b): b["size"] for b in a.bufs.list}, done
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
        b["size"] = saved[2].get(id(b), b["size"])
    a.report["intermediates"] = saved[3]
    a.write_report()
    return False


def set_image(k, image, out_dir, globals_=()):
    """Kernel k's code is a module image of its own, written under kernels/; globals_:
    [(name, bytes)] of its data objects to write after loading it (a module per image
    and set of values: ModuleFingerprints.globals_of)."""
    kind, digest = image_kind(image), hashlib.sha256(image).hexdigest()
    mname = "image_" + digest[:12]
    rel_path = os.path.join("kernels", f"{mname}.{kind}")
    with open(os.path.join(out_dir, rel_path), "wb") as f:
        f.write(image)
    k["module"], k["image"] = {"name": mname, "kind": kind, "file": rel_path, "sha256": digest}, image
    if globals_:
        k["module"]["globals"] = list(globals_)
        k["module"]["name"] += "_" + hashlib.sha256(repr(list(globals_)).encode()).hexdigest()[:8]


def own_images(kernels, watch, log, out_dir):
    """Library kernels whose name the process loaded in several module images with
    different code (cuDNN's depthwise convolution: one name, variants in several of its
    fatbins, loaded lazily inside the CUDA runtime, where ModuleWatch.image_of sees no
    call): each function's code is taken from the image its own module fits
    (ModuleFingerprints), with the data objects its library wrote after loading it,
    where the images it fits agree on the kernel's code; where they do not, they are
    kept in k["fits"], for prove_code to try first.  Kernels of Triton's, and names
    held by one image only (or by several with one code), are left as found."""
    from .fatbin import same_kernel_code
    from .kernels import ModuleFingerprints
    prints, holders = ModuleFingerprints(), {}
    for func, k in kernels.items():
        if "module" in k and k["module"]["kind"] != "library":
            continue
        sym = k["symbol"]
        if sym not in holders:
            held = [i for i in watch.images.values() if i[:4] == b"\x7fELF" and f".text.{sym}".encode() in i]
            holders[sym] = held if len(held) > 1 and not same_kernel_code(held, sym) else []
        if not holders[sym]:
            continue
        fits = prints.images_for(func, holders[sym])
        if len(fits) == 1 or fits and same_kernel_code(fits, sym):
            globals_ = prints.globals_of(func, fits[0])
            set_image(k, fits[0], out_dir, globals_)
            k.pop("entry", None)
            log(f"  kernel {sym[:60]} (function {func:#x}): {len(holders[sym])} loaded images hold it with "
                f"different code; its module fits {len(fits)}" + (", with one code" if len(fits) > 1 else "")
                + ": taken from there"
                + (f", with {len(globals_)} data objects as its library set them ("
                   + ", ".join(n for n, _ in globals_)[:120] + ")" if globals_ else ""))
        elif fits:
            k["fits"] = fits
            log(f"  kernel {sym[:60]} (function {func:#x}): its module fits {len(fits)} of the {len(holders[sym])} "
                "loaded images holding it, with different code: left to the node-by-node proof")
        else:
            log(f"  kernel {sym[:60]} (function {func:#x}): {len(holders[sym])} loaded images hold it with different "
                "code, and its module fits none of them: left as found")


def prove_code(torch, cap, bufs, nodes, edges, kernels, replayer, log, warn, out_dir, watch=None):
    """Library kernels are found by name and attributes, and a library may hold several
    kernels of one name with different code (cuDNN's depthwise convolution, one per data
    type); cuDNN compiles kernels at run time, one name for several variants, which
    ModuleWatch sees as several images.  The program is run node by node in this process,
    as captured and as exported with the code found (diagnose.Harness); where a library
    kernel's launch is the first to differ, the image its function was taken from (where
    the ModuleWatch saw it), the other module images this process loaded, and then every
    other fatbin holding a kernel of that name compiled for this GPU are tried, and the
    one with which the program runs further is kept.  A kernel nothing proves right is
    left as found, with a warning: verify.py has the last word."""
    from .diagnose import Harness, describe_node
    from .kernels import LibraryFunctions, ModuleFingerprints, library_candidates, loaded_libraries
    judged = {f: k for f, k in kernels.items() if k["module"]["kind"] == "library" or "image" in k}
    h = Harness(torch, cap, bufs, nodes, edges)
    replayer.restore()
    first, _ = h.compare()
    if first:  # the arguments already differ: no run can judge the code (PGCC_DIAGNOSE tells more)
        warn("the library kernels' code was not proven: the exported program differs from the capture in this "
             "process already", first[1])
        for line in describe_node(h.by_index[first[0]], h.captured[first[0]], bufs, cap.blocks()):
            log("    " + line)
        return
    paths = {os.path.basename(p): p for p in loaded_libraries()}
    major, minor = torch.cuda.get_device_capability()
    loaded = LibraryFunctions()
    pos = {i: n for n, i in enumerate(h.seq)}

    prints = ModuleFingerprints()

    def load(k):
        if k["module"]["kind"] == "library":
            return loaded.load(paths[k["module"]["library"]], k["entry"], k["symbol"])
        return loaded.load_image(k["image"], k["symbol"], k["module"].get("globals", ()))

    def candidates(func, k):
        """(how to load it, how to keep it) of each other place holding k's name: the
        images this process loaded first (the function's own first), then the fatbins
        (searched only if need be)."""
        if k["module"]["kind"] != "library":
            return
        images = list(watch.images.values()) if watch else []
        own = watch.images.get(watch.image_of(func) or "") if watch else None
        first = k.get("fits", []) + ([own] if own else [])
        for img in first + [i for i in images if all(i is not f for f in first)]:
            if any(img is f for f in first) or same_kernel(img, k["symbol"], k["attrs"]):
                g = prints.globals_of(func, img) if any(img is f for f in k.get("fits", ())) else ()
                yield (lambda img=img, g=g: loaded.load_image(img, k["symbol"], g),
                       lambda img=img, g=g: (set_image(k, img, out_dir, g), k.pop("entry", None)))
        here, entry = paths[k["module"]["library"]], k["entry"]

        def keep(path, at):
            k["module"] = {"name": ident(os.path.basename(path).split(".so")[0]), "kind": "library",
                           "library": os.path.basename(path)}
            k["entry"] = at
        for p, a in library_candidates(k["symbol"], k["attrs"], 10 * major + minor,
                                       [here] + [p for p in paths.values() if p != here]):
            if (p, a) != (here, entry):
                yield (lambda p=p, a=a: loaded.load(p, a, k["symbol"]), lambda p=p, a=a: keep(p, a))

    try:
        chosen = {f: load(k) for f, k in judged.items()}

        def run():
            replayer.restore()
            return h.compare({n["index"]: chosen[n["func"]] for n in nodes if n.get("func") in chosen})[0]

        first, tried = run(), set()
        while first:
            func = h.by_index[first[0]].get("func")
            if func not in judged or func in tried:
                warn("a kernel's launch differs from the capture's with the code found for it", first[1])
                return
            tried.add(func)
            k = judged[func]
            was = f"{k['module'].get('library', 'a module image')}" + (f" (fatbin at {k['entry']})" if "entry" in k
                                                                       else "")
            count = 0
            for load_it, keep in candidates(func, k):
                count += 1
                chosen[func] = load_it()
                again = run()
                if again is None or pos[again[0]] > pos[first[0]]:
                    keep()
                    log(f"  kernel {k['symbol'][:80]}: the code found in {was} does not reproduce the capture; "
                        f"{k['module'].get('library', 'another image')}"
                        + (f" (fatbin at {k['entry']})" if "entry" in k else "") + " does")
                    first = again
                    break
            else:
                warn(f"kernel {k['symbol'][:80]}: neither the code found nor any of {count} other places "
                     "holding a kernel of that name reproduces the capture's launch", first[1])
                return
        log(f"  the code of {len(judged)} library kernels reproduces the capture, node by node"
            + (f" (less {len(h.unsteady)} nodes whose captured launch itself is not deterministic)" if h.unsteady
               else ""))
        for what in h.unsteady.values():
            log("    " + what)
    finally:
        loaded.close()


def host_values(capA, capD, nodes, kernels, suspects, computed, warn, log):
    """The values the program reads back (capture.py's read nodes): which kernel
    arguments are a value read (hostvalues.flows, capture D against A), made scalars
    `from` the read's host buffer; a read no argument takes is guarded (its sync node
    gets "guard": the bytes read at export).  An argument that changes in capture D but
    is none of the values read goes into computed ({node: [(parameter, byte ranges)]}),
    for host_computed() to prove irrelevant by replay (seen: an eager kernel's
    uninitialised padding byte that happened to agree in A, B and C) or to make a
    callback scalar.  Returns the scalars."""
    part = same_path(capA.nodes, capD.nodes)
    by_index = {n["index"]: n for n in nodes}
    found, unexplained = {}, []
    if part:
        warn("a value read back chose what ran: on other input values the program ran other nodes; it is exported "
             "for the path the example inputs took, and every read is guarded (a call that reads another value "
             "stops with PGRT_ERR_GUARD)", part)
    else:
        found, unexplained = flows(capA.nodes, capD.nodes, {i: n["args"] for i, n in by_index.items()
                                                            if n["kind"] == "kernel"}, capA.reads, capD.reads)
    scalars = {}
    for (i, p), (r, t) in sorted(found.items()):
        s = scalars.setdefault((r, t), {"name": f"v{r}_{t}", "type": t, "from": f"r{r}", "read": r})
        n = by_index[i]
        n["args"][p] = ("scalar", n["args"][p][1], s)
        k = kernels[capA.nodes[i]["func"]]
        k.setdefault("scalar_types", {})[k["layout"][p][0]] = t
    for i, p in unexplained:  # the bytes that differ in D, less those that differ between A, B and C already
        off, size = capA.nodes[i]["layout"][p]
        a_, d_ = capA.nodes[i]["bytes"], capD.nodes[i]["bytes"]
        known = {j for at, n, _ in suspects.get(i, ()) for j in range(at, at + n)}
        runs = []
        for j in range(off, off + size):
            if a_[j] != d_[j] and j not in known:
                if runs and runs[-1][0] + runs[-1][1] == j:
                    runs[-1][1] += 1
                else:
                    runs.append([j, 1])
        if runs:
            computed.setdefault(i, []).append((p, [(at, n, f"parameter {p} changes with the input values (capture D) "
                                                            "but is none of the values read back") for at, n in runs]))
    taken = {s["read"] for s in scalars.values()}
    for n in nodes:
        if n["kind"] == "sync" and n["read"] not in taken:
            n["guard"] = capA.reads[n["read"]]["value"]
    for k, r in enumerate(capA.reads):
        uses = [s["name"] for s in scalars.values() if s["read"] == k]
        log(f"  the value read at {r['where']} ({r['dtype']}): " + (
            f"taken by kernels as {', '.join(uses)}, read at run time" if uses else
            "chose what ran (no kernel takes it): guarded, a call that reads another value stops"))
    return list(scalars.values())


def host_computed(replayer, capA, nodes, kernels, computed, scalars, report, log):
    """Arguments that change with the values read but are none of them (host_values'
    computed): bytes the kernel does not read (replays with them zeroed and poisoned give
    the same results) are don't-care; a parameter whose bytes it reads is a value the host
    computes from the reads, which the C takes from the caller through a callback scalar
    (`scalar cbN type T callback`, a pgrt_scalar_fn in NAME_args).  Its type is the
    parameter's size as a float where the bytes read as an ordinary float, else as an
    integer."""
    from .hostvalues import decode
    by_index = {n["index"]: n for n in nodes}
    for i, params in computed.items():
        for p, ranges in params:
            off, size = capA.nodes[i]["layout"][p]
            read = prove_irrelevant(replayer, {i: ranges}, lambda i: capA.nodes[i]["name"][:80])
            k = kernels[capA.nodes[i]["func"]]
            if not read:
                mark_dontcare(k, ranges)
                continue
            floats, ints = {8: "f64", 4: "f32"}.get(size), {8: "i64", 4: "i32", 2: "u16", 1: "u8"}.get(size)
            raw = by_index[i]["args"][p][1]
            v = decode(raw, floats) if floats else None
            t = floats if v is not None and v == v and (v == 0 or 1e-30 < abs(v) < 1e30) else ints
            s = {"name": f"cb{sum(1 for x in scalars if x.get('callback'))}", "type": t, "callback": True}
            scalars.append(s)
            by_index[i]["args"][p] = ("scalar", raw, s)
            k.setdefault("scalar_types", {})[off] = t
            log(f"  node {i} ({capA.nodes[i]['name'][:60]}): parameter {p} is a value the host computes from the "
                f"values read: the C takes it from the caller, callback scalar {s['name']} ({t})")
            for n in nodes:  # the reads before it feed the callback: they chose no path
                if n["kind"] == "sync" and n["index"] < i:
                    n.pop("guard", None)
                    r = report["host_reads"][n["read"]]
                    r["guarded"] = False
                    r.setdefault("callbacks", []).append(s["name"])


def training_step(fn):
    """Whether fn is a training step: its `train` is True (an nn.Module's is a method), or
    that of the callable torch.compile wrapped (PyTorch 2.11 wraps a callable object in
    functions made by functools.wraps, which keep it as __wrapped__; dynamo's wrappers
    keep _torchdynamo_orig_callable, a bound method's object is its __self__, a compiled
    module's _orig_mod).  A compiled training step verified as inference would run under
    no_grad."""
    seen = [fn]
    for f in seen:
        if getattr(f, "train", False) is True:
            return True
        seen += [g for a in ("__wrapped__", "_torchdynamo_orig_callable", "__self__", "_orig_mod")
                 if (g := getattr(f, a, None)) is not None and len(seen) < 16]
    return False


def saved_state(torch, weights, device=None):
    """A copy of the weights (a training step's state), which a call that runs for real
    changes (a warm-up, one split at its host reads); device="cpu": in host memory."""
    return [(t, t.detach().to(device, copy=True) if device else t.detach().clone())
            for t in {id(t): t for t in weights.values()}.values()]


def restore_state(state):
    for t, saved in state or []:
        t.detach().copy_(saved)


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
    regions = {id(b): b for b in bufs.list if b["role"] == "intermediate" and 0 in b["ranges"]}
    if split and regions:
        nodes, report["split"], report["whole"], report["timed"] = _split_regions(bufs, nodes, capA, regions)
    refs = {}
    for n in nodes:
        for b, off, width in node_refs(n):
            if id(b) in regions:
                refs.setdefault(id(b), []).append((off, width))
    for key, b in regions.items():
        if b["name"] in report["split"]:
            continue
        used = used_extent(b["ranges"][0], b["size"], capA.allocs, refs.get(key, []))
        if used < b["size"]:
            report["cut"][b["name"]] = [b["size"], used]
            b["size"] = used
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
    for b in a.bufs.list:
        if id(b) in a.whole.sizes:
            b["size"] = a.whole.sizes[id(b)]
    a.report["intermediates"] = {"split": {}, "whole": {}, "cut": {}, "undone": why}
    a.write_report()
    return True


def _split_regions(bufs, nodes, capA, regions):
    """place_intermediates' split: (nodes, split, whole, timed) as it reports them; the
    regions split are replaced in bufs by their slots."""
    why = "the capture is not one chain: the nodes' order is not the order they were captured in"
    order = slots.chain_order(len(capA.nodes), capA.edges)
    if order is None or getattr(capA, "trace", None) is None:
        return nodes, {}, {b["name"]: why if order is None else "no allocator trace" for b in regions.values()}, None
    rank = {i: r for r, i in enumerate(order)}
    # (nodes the export added, an aliased output's copy, come after the capture's)
    timed = sorted(range(len(nodes)), key=lambda k: (rank.get(nodes[k]["index"], len(order)), nodes[k]["index"]))
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
        times = [by_rank[rank[nodes[k]["index"]]] if nodes[k]["index"] in rank else None for k in timed]
    found, at, whole, how = slots.split({key: (b["ranges"][0], b["size"]) for key, b in regions.items()},
                                        slots.lifetimes(capA.trace), uses, len(capA.trace),
                                        [nodes[k]["index"] for k in timed], times)
    if seen is not None and len(seen) != len(order):
        how += (f" for {sum(t is not None for t in by_rank)} of {len(order)} nodes ({len(seen)} node-making calls "
                f"seen, matched by kind)" if by_rank is not None and how == "seen" else
                f" ({len(seen)} launches seen for {len(order)} nodes)")
    made = {}
    for key, parts in found.items():
        b = regions[key]
        made[key] = [dict(b, name=f"{b['name']}_{n}", size=size, ranges={c: a + lo for c, a in b["ranges"].items()})
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
    split = {regions[key]["name"]: [regions[key]["size"], len(parts), sum(size for _, size in parts)]
             for key, parts in found.items()}
    return out, split, {regions[key]["name"]: w for key, w in whole.items()}, how


def reused(allocs, addr, size):
    """Whether, in an allocation trace ((address, size) in order), memory of the allocation
    at addr (the last made there) was handed out to an earlier allocation too."""
    allocs = allocs or []
    last = max((i for i, (a, _) in enumerate(allocs) if a == addr), default=None)
    if last is None:
        return False
    return any(a < addr + size and addr < a + s for a, s in allocs[:last])


def capture_far(torch, fn, inputs, prog, split=False, force=None):
    """Capture C, with its inputs and its own pool in memory far from A's and B's
    (farmem.py), so that their addresses differ in the high 32 bits too."""
    with far(torch) as where:
        if where.pool is None:
            prog.warn("PyTorch has no allocator setting for expandable segments", "capture C at ordinary addresses")
        inputs_c = [x.clone() for x in inputs]
    cap = Capture(torch, fn, inputs_c, far=lambda: far(torch, pool=False), split=split, force=force)
    cap.inputs_memory = where  # as long as the capture
    return inputs_c, cap


def address_spread(bufs):
    """Whether the inputs' and outputs' addresses differ between every two captures in
    their low 32 bits, and in their high 32 bits between some two."""
    low, high = True, False
    for b in bufs.list:
        if b["role"] in ("input", "output"):
            addrs = [a for _, a in sorted(b["ranges"].items())]
            low = low and len({a & 0xFFFFFFFF for a in addrs}) == len(addrs)
            high = high or len({a >> 32 for a in addrs}) > 1
    return {"low": low, "high": high}


HOST_WINDOW = 256  # bytes of host memory copied where a kernel reads through a host address


FILLS = (0x00, 0xA5)  # what the copies hold instead of the host bytes, to tell a word read through


def host_copy_check(replayer):
    """check(i, found) for read_host: what node i's words at found [(offset in its
    parameters, host address, size)] are to its kernel, found by replaying capture A
    with each word pointed at a device copy of the host bytes there.  The copies are
    placed at addresses with the words' own low 32 bits (cuda.placed): a word whose low
    half is a value (CUTLASS SGEMM's float bound beside stale stack bytes, an index)
    keeps it, and the replay cannot fault on it.  Returns "read" where the results are
    a plain replay's with the host bytes copied and differ with the copies filled
    (FILLS): the kernel reads through the words; "value" where they are the same either
    way: the high halves and what they point at do not matter, the words are kept as
    captured; None where even faithful copies change the results."""
    state = {}

    def replay_with(i, found, fill):
        with contextlib.ExitStack() as stack:
            blob = bytearray(replayer.cap.nodes[i]["bytes"])
            for at, addr, size in found:
                data = C.string_at(addr, size) if fill is None else bytes([fill]) * size
                struct.pack_into("<Q", blob, at, stack.enter_context(placed(data, addr & 0xFFFFFFFF)))
            return replayer.replay_params({i: bytes(blob)})

    def check(i, found):
        try:
            if "reference" not in state:
                state["reference"] = replayer.replay_params({})
            if replay_with(i, found, None) != state["reference"]:
                return None
            return "read" if any(replay_with(i, found, f) != state["reference"] for f in FILLS) else "value"
        except RuntimeError as e:  # a fault: the kernel reads further than the copy, or otherwise
            raise ExportError(f"node {i} ({replayer.cap.nodes[i]['name'][:80]}): replaying with " + ", ".join(
                f"bytes {at}..{at + 8} (0x{addr:x}, host memory of this process)" for at, addr, _ in found) +
                f" pointed at device copies of the bytes there failed ({e}): the kernel reads memory it was not "
                "given (this process's CUDA context may now be unusable)") from e
    return check


def read_host(i, ranges, cap, maps, bufs, nodes, kernels, done, check, kept, problems):
    """A node whose parameters hold words that point into this process's host memory
    (the GPU reaches host memory: cuBLAS and CUTLASS epilogues read alpha and beta where
    the caller left them).  Returns False unless every one of ranges is such a word;
    else decides, by check (host_copy_check), what they are: words the kernel reads
    through get the bytes there (HOST_WINDOW of them, within the mapping) copied into a
    static block of the weights and become relocations to the copy -- what was there at
    export, right for constants, which is what a captured graph can rely on anyway;
    words it takes as values (MobileNet's CUTLASS SGEMM: a NaN float beside 4 bytes of
    stale stack, together 0x7f..7fc00000) are kept as captured and listed in kept
    [(node, offset, word)]; words neither explains add a problem.  Returns True."""
    from .relocate import u64
    blob = cap.nodes[i]["bytes"]
    found = []
    for a, n, _ in ranges:
        addr = u64(blob, a) if n == 8 and a % 4 == 0 else 0
        where = next(((lo, hi) for lo, hi, _ in maps if lo <= addr < hi), None)
        if where is None:
            return False
        found.append((a, addr, min(HOST_WINDOW, where[1] - addr)))
    node = next(n for n in nodes if n.get("index") == i)
    k = kernels[cap.nodes[i]["func"]]
    what = check(i, found)
    if what is None:
        problems.append(f"node {i} ({cap.nodes[i]['name'][:80]}): " + ", ".join(
            f"bytes {a}..{a + 8} (0x{addr:x}, host memory of this process)" for a, addr, _ in found) +
            ": replaying with them pointed at device copies of the bytes there, at addresses with the same low 32 "
            "bits, changes the results: the kernel takes them neither as addresses of what is there nor as values")
    elif what == "value":
        for a, addr, _ in found:
            for p, (off, size_) in enumerate(k["layout"]):
                if off <= a < off + size_ and node["args"][p][0] in ("value", "bytes"):
                    arg = node["args"][p]
                    raw = bytearray(arg[1])
                    raw[a - off:a - off + 8] = blob[a:a + 8]
                    node["args"][p] = (arg[0], bytes(raw)) + tuple(arg[2:])
            kept.append((i, a, addr))
    else:
        for a, addr, size in found:
            b = done.get(addr)
            if b is None:
                b = done[addr] = bufs.add(name=f"h{len(done)}", size=size, role="weight", static=True,
                                          host=C.string_at(addr, size), tensor=f"__host_{len(done)}",
                                          ranges={c: addr for c in range(3)})
            for p, (off, size_) in enumerate(k["layout"]):
                if off <= a < off + size_:
                    arg = node["args"][p]
                    if arg[0] == "value" and size_ == 8:
                        node["args"][p] = ("ptr", b, 0)
                    else:
                        raw = arg[1] if arg[0] != "ptr" else bytes(size_)
                        ptrs = list(arg[2]) if arg[0] == "bytes" else []
                        node["args"][p] = ("bytes", raw, sorted(ptrs + [(a - off, b, 0, "abs64")],
                                                                key=lambda r: r[0]))
                    k["ptr_words"].add((off, a - off, "abs64"))
    return True


def words_hex(blob, at, n):
    """Bytes at..at+n of a parameter blob as little-endian words of up to 8 bytes, in hex
    (0x7f12...: what a host address looks like), for messages."""
    return ",".join("0x" + blob[k:min(k + 8, at + n)][::-1].hex() for k in range(at, at + n, 8))


def relocation_counts(kernels):
    counts = {}
    for k in kernels.values():
        for _, _, kind in k["ptr_words"]:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def mark_dontcare(k, ranges):
    """Adds a node's proven-irrelevant byte ranges (offsets in its parameter bytes) to its
    kernel's layout, as (parameter offset, offset inside, length)."""
    dc = k.setdefault("dontcare", set())
    for a, n, _ in ranges:
        for off, size in k["layout"]:
            lo, hi = max(a, off), min(a + n, off + size)
            if lo < hi:
                dc.add((off, lo - off, hi - lo))


def capA_outputs(torch, cap):
    """The outputs of capture A, after one replay on the example inputs."""
    cap.replay()
    torch.cuda.synchronize()
    return cap.outputs
