"""Where a graph launch's host time goes, on the zoo (issue 18's host-time target) and on
wild programs ("wild:KEY", tests/wild, built as bench/zoo_timing.py builds them).

    PYTHONPATH=python:. python3 bench/launch.py [--rounds 7] [--timeout 240] [--out DIR] [--no-pgcc [--watch]]
        PATTERN ...

bench/zoo_timing.py's floor -- a bare replay of the compiled program's capture -- cost the
host 30 to 110 µs a call on the zoo, while a graph of 100 tiny kernels launches in
about 2 µs (../shared/MEASUREMENTS.md; bench/launch_cost.cu takes graphs of one kind
of node apart).  This took it apart: the causes were memset nodes and CUPTI left
attached by the export's ModuleWatch (docs/e2e.md, "What a launch costs the host").
Per model, in a child process of its own: the compiled program is captured whole and
(unless --no-pgcc) exported with pgcc; then the host time of one launch is taken,
from an idle GPU ("idle": the stream synchronized before each launch) and back to
back ("busy": in runs of 50), for:

  floor             cuGraphLaunch of the capture, instantiated and uploaded here
                    (through ctypes, which costs about 0.3 µs of a call)
  floor, legacy     the same on the legacy default stream (PyTorch's current stream
                    unless one is set: where bench/zoo_timing.py launches every way)
  kernels emptied   the capture with every kernel node launching an empty kernel
                    instead (1 block, no parameters, cluster set to 1), memsets and
                    copies kept: what the kernels themselves cost a launch
  emptied, clusters kept   the same, each node's launch attributes as captured (one
                    cluster of blocks where it ran in clusters)
  empty nodes, captured edges   a new graph of as many empty kernel nodes, the
                    capture's edges between them (its topology alone)
  empty nodes, a chain      the same in one chain
  kernels removed   the capture with only its memsets and copies (edges bridged)
  pgcc              Program.run on packed arguments, the inputs fixed; and moving (4
                    argument sets in turn: what libpgrt patches), with libpgrt's own
                    split of the call (pgrt_last_run: before the launch, cuGraphLaunch)
  pgcc memset nodes the same export loaded with PGRT_MEMSET=node: its memsets built as
                    memset nodes, not as libpgrt's pgrt_set kernel

--no-pgcc times the capture's ways only, in a process where CUPTI never attached;
--watch starts and closes pgcc.ModuleWatch first all the same, as an export does.
Every launch but the floor's runs on a stream of its own.  Interleaved rounds; per
way the median of all samples and the spread (p90 - p10) / median; and the GPU time
of a replay (events around 20 launches per round).  NAME_init's time both ways.  The
capture's inventory: nodes by type; kernel nodes: distinct functions, parameter
bytes, how many run in clusters and with dynamic shared memory over 48 KiB; edges,
roots, leaves, largest in- and out-degree.  One JSON line per model (LAUNCH {...}), a
table at the end, launch.json under --out.
"""
import argparse
import ctypes as C
import json
import os
import statistics
import tempfile
import time

GRAPH_WAYS = ["floor", "floor, legacy", "kernels emptied", "emptied, clusters kept", "empty nodes, captured edges",
              "empty nodes, a chain", "kernels removed"]
PGCC_WAYS = ["pgcc, fixed", "pgcc, moving", "pgcc memset nodes, fixed", "pgcc memset nodes, moving"]
EMPTY_PTX = b""".version 8.0
.target sm_90
.address_size 64
.visible .entry pgcc_empty() { ret; }
"""


def driver():
    """pgcc.cuda's entry points and the ones this probe adds, in a namespace of its own
    (pgcc.cuda's is the package's, left as it is)."""
    import types

    from pgcc.cuda import cu
    d = types.SimpleNamespace(**vars(cu()))
    lib = C.CDLL("libcuda.so.1")
    P, S = C.c_void_p, C.c_size_t
    for name, attr, args in (("cuGraphClone", "GraphClone", [C.POINTER(P), P]),
                             ("cuGraphUpload", "GraphUpload", [P, P]),
                             ("cuGraphKernelNodeSetParams_v2", "KernelNodeSetParams", [P, P]),
                             ("cuGraphKernelNodeSetAttribute", "KernelNodeSetAttribute", [P, C.c_int, P]),
                             ("cuGraphNodeGetDependencies_v2", "NodeGetDependencies",
                              [P, C.POINTER(P), P, C.POINTER(S)]),
                             ("cuGraphNodeGetDependentNodes_v2", "NodeGetDependents", [P, C.POINTER(P), P,
                                                                                        C.POINTER(S)]),
                             ("cuGraphAddDependencies_v2", "AddDependencies", [P, C.POINTER(P), C.POINTER(P), P, S]),
                             ("cuGraphDestroyNode", "DestroyNode", [P]),
                             ("cuGraphCreate", "GraphCreate", [C.POINTER(P), C.c_uint]),
                             ("cuGraphAddKernelNode_v2", "AddKernelNode", [C.POINTER(P), P, C.POINTER(P), S, P])):
        f = getattr(lib, name)
        f.restype, f.argtypes = C.c_int, args
        setattr(d, attr, f)
    return d


def nodes_of(d, g):
    from pgcc.cuda import check
    n = C.c_size_t(0)
    check(d.GraphGetNodes(g, None, C.byref(n)), "cuGraphGetNodes")
    arr = (C.c_void_p * n.value)()
    check(d.GraphGetNodes(g, arr, C.byref(n)), "cuGraphGetNodes")
    out = []
    for h in arr:
        t = C.c_int()
        check(d.GraphNodeGetType(h, C.byref(t)), "cuGraphNodeGetType")
        out.append((h, t.value))
    return out


def inventory(d, g):
    from pgcc.capture import launch_attributes
    from pgcc.cuda import NODE_KERNEL, NODE_NAMES, KernelNodeParams, check
    types, funcs, param_bytes, clusters, big_smem, extra = {}, set(), 0, 0, 0, 0
    for h, t in nodes_of(d, g):
        types[NODE_NAMES.get(t, str(t))] = types.get(NODE_NAMES.get(t, str(t)), 0) + 1
        if t != NODE_KERNEL:
            continue
        p = KernelNodeParams()
        check(d.KernelNodeGetParams(h, C.byref(p)), "cuGraphKernelNodeGetParams")
        funcs.add(p.func)
        i, end = 0, 0
        while True:
            off, size = C.c_size_t(), C.c_size_t()
            if d.FuncGetParamInfo(p.func, i, C.byref(off), C.byref(size)) != 0:
                break
            end, i = max(end, off.value + size.value), i + 1
        param_bytes += end
        clusters += "cluster" in launch_attributes(h)
        big_smem += p.smem > 48 << 10
        extra += bool(p.extra)
    return {"nodes": types, "kernel_functions": len(funcs), "param_bytes": param_bytes, "in_clusters": clusters,
            "smem_over_48k": big_smem, "packed_args": extra}


def instantiate(d, g, stream):
    from pgcc.cuda import check
    ex = C.c_void_p()
    check(d.GraphInstantiate(C.byref(ex), g, 0), "cuGraphInstantiate")
    check(d.GraphUpload(ex, stream), "cuGraphUpload")
    return ex


def empty_params(func, grid=(1, 1, 1)):
    from pgcc.cuda import KernelNodeParams
    p = KernelNodeParams(func=func, smem=0, kernelParams=None, extra=None)
    p.grid[:] = list(grid)
    p.block[:] = [32, 1, 1]
    return p


def emptied(d, g, func, clusters):
    """A clone of g whose kernel nodes launch func (no parameters) on 1 block of 32; or,
    clusters="kept", on one cluster of blocks where the node runs in clusters (its
    launch attributes as they were); clusters="one": every node's cluster set to 1 block."""
    from pgcc.capture import launch_attributes
    from pgcc.cuda import ATTR_CLUSTER_DIMENSION, ATTR_VALUE_BYTES, NODE_KERNEL, check
    cl = C.c_void_p()
    check(d.GraphClone(C.byref(cl), g), "cuGraphClone")
    one = (C.c_uint * (ATTR_VALUE_BYTES // 4))(1, 1, 1)
    for h, t in nodes_of(d, cl):
        if t == NODE_KERNEL:
            if clusters == "one":
                check(d.KernelNodeSetAttribute(h, ATTR_CLUSTER_DIMENSION, one), "cuGraphKernelNodeSetAttribute")
                p = empty_params(func)
            else:
                p = empty_params(func, launch_attributes(h).get("cluster", (1, 1, 1)))
            check(d.KernelNodeSetParams(h, C.byref(p)), "cuGraphKernelNodeSetParams")
    return cl


def empty_graph(d, g, func, chain):
    """A new graph of as many empty kernel nodes (func, 1 block, nothing set but the
    parameters) as g has nodes, joined by g's edges, or in a chain."""
    from pgcc.cuda import check
    hs = [h for h, _ in nodes_of(d, g)]
    index = {h: i for i, h in enumerate(hs)}
    ng = C.c_void_p()
    check(d.GraphCreate(C.byref(ng), 0), "cuGraphCreate")
    p = empty_params(func)
    made = []
    for h in hs:
        nh = C.c_void_p()
        check(d.AddKernelNode(C.byref(nh), ng, None, 0, C.byref(p)), "cuGraphAddKernelNode")
        made.append(nh.value)
    pairs = ([(i - 1, i) for i in range(1, len(made))] if chain else
             [(index[a], i) for i, h in enumerate(hs) for a in linked(d.NodeGetDependencies, h)])
    for a, b in pairs:
        check(d.AddDependencies(ng, C.byref(C.c_void_p(made[a])), C.byref(C.c_void_p(made[b])), None, 1),
              "cuGraphAddDependencies")
    return ng


def topology(d, g):
    """Edges, roots, leaves and the largest in- and out-degree of g."""
    hs = [h for h, _ in nodes_of(d, g)]
    ins = [len(linked(d.NodeGetDependencies, h)) for h in hs]
    outs = [len(linked(d.NodeGetDependents, h)) for h in hs]
    return {"edges": sum(ins), "roots": ins.count(0), "leaves": outs.count(0), "max_in": max(ins, default=0),
            "max_out": max(outs, default=0)}


def linked(get, h):
    """The nodes get (cuGraphNodeGetDependencies_v2 or ...GetDependentNodes_v2) gives for h."""
    from pgcc.cuda import check
    n = C.c_size_t(0)
    check(get(h, None, None, C.byref(n)), "cuGraphNode dependencies")
    if not n.value:  # (an array with a count of 0 is refused)
        return []
    arr = (C.c_void_p * n.value)()
    check(get(h, arr, None, C.byref(n)), "cuGraphNode dependencies")
    return [arr[i] for i in range(n.value)]


def without_kernels(d, g):
    """A clone of g without its kernel nodes, each one's predecessors made its successors'."""
    from pgcc.cuda import NODE_KERNEL, check
    cl = C.c_void_p()
    check(d.GraphClone(C.byref(cl), g), "cuGraphClone")
    for h, t in nodes_of(d, cl):
        if t != NODE_KERNEL:
            continue
        preds, succs = linked(d.NodeGetDependencies, h), linked(d.NodeGetDependents, h)
        check(d.DestroyNode(h), "cuGraphDestroyNode")
        for b in succs:
            for a in set(preds) - set(linked(d.NodeGetDependencies, b)):
                check(d.AddDependencies(cl, C.byref(C.c_void_p(a)), C.byref(C.c_void_p(b)), None, 1),
                      "cuGraphAddDependencies")
    return cl


def child(key, rounds, with_pgcc, watch):
    import torch

    import pgcc
    from pgcc.cuda import check
    from tests.models import zoo_models

    d = driver()
    watch = pgcc.ModuleWatch() if watch else None  # (CUPTI: the export's; --no-pgcc without --watch has none)
    if key.startswith("wild:"):  # (a wild program, built as bench/zoo_timing.py builds it)
        from bench.zoo_timing import build
        fn, inputs, weights = build(key)
    else:
        fn, inputs, weights = zoo_models.ZOO[key]()
    compiled = torch.compile(fn)
    rec = {"model": key, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    ways = GRAPH_WAYS + (PGCC_WAYS if with_pgcc else [])
    for _ in range(3):
        compiled(*inputs)
    progs = {}
    if with_pgcc:
        print("PHASE export", flush=True)
        exp = tempfile.mkdtemp(prefix="pgcc-launch-")
        pgcc.export(compiled, tuple(inputs), exp, name="m", weights=weights, compile=False, quiet=True, watch=watch,
                    warmup=1)
        for way, env in (("pgcc", None), ("pgcc memset nodes", "node")):  # (libpgrt reads PGRT_MEMSET at init)
            if env:
                os.environ["PGRT_MEMSET"] = env
            try:
                progs[way] = pgcc.load(exp)
            finally:
                os.environ.pop("PGRT_MEMSET", None)
        rec["init_ms"] = {w: round(p.init_s * 1e3, 2) for w, p in progs.items()}
    rec["cupti_watch"] = watch is not None
    if watch:
        rec["cupti_detached"] = watch.close()
    print("PHASE capture", flush=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.stream(side):
        compiled(*inputs)
    torch.cuda.synchronize()
    with torch.cuda.graph(g, stream=side):
        compiled(*inputs)
    raw = C.c_void_p(g.raw_cuda_graph())
    rec["inventory"] = inventory(d, raw)
    rec["inventory"].update(topology(d, raw))

    mod, func = C.c_void_p(), C.c_void_p()
    check(d.ModuleLoadData(C.byref(mod), C.c_char_p(EMPTY_PTX)), "cuModuleLoadData")
    check(d.ModuleGetFunction(C.byref(func), mod, b"pgcc_empty"), "cuModuleGetFunction")
    own = torch.cuda.Stream()
    s = C.c_void_p(own.cuda_stream)
    execs = {"floor": instantiate(d, raw, s)}
    execs["kernels emptied"] = instantiate(d, emptied(d, raw, func, "one"), s)
    execs["emptied, clusters kept"] = instantiate(d, emptied(d, raw, func, "kept"), s)
    execs["empty nodes, captured edges"] = instantiate(d, empty_graph(d, raw, func, False), s)
    execs["empty nodes, a chain"] = instantiate(d, empty_graph(d, raw, func, True), s)
    execs["kernels removed"] = instantiate(d, without_kernels(d, raw), s)
    launch = {w: (lambda ex=ex: d.GraphLaunch(ex, s)) for w, ex in execs.items()}
    launch["floor, legacy"] = lambda ex=execs["floor"]: d.GraphLaunch(ex, None)
    sets = [[x.clone() for x in inputs] for _ in range(4)]
    state = {"k": 0, "split": {}}

    def pgcc_run(way, prog, moving):
        outs = prog.new_outputs()
        packed = [prog.args(xs, outs) for xs in sets]
        state["split"][way] = []

        def go():
            if moving:
                state["k"] = (state["k"] + 1) % 4
            prog.run(packed[state["k"] if moving else 0], own.cuda_stream)
            st = prog.last_run()
            state["split"][way].append((st["host_ns"], st["prepare_ns"], st["launch_ns"], st["nodes_patched"]))
            return 0
        return go
    for name, prog in progs.items():
        launch[f"{name}, fixed"] = pgcc_run(f"{name}, fixed", prog, False)
        launch[f"{name}, moving"] = pgcc_run(f"{name}, moving", prog, True)

    print("PHASE timing", flush=True)
    for w in ways:  # warm, and a fault is the way's that made it
        for _ in range(5):
            check(launch[w](), w)
        torch.cuda.synchronize()
    idle, busy, gpu = {w: [] for w in ways}, {w: [] for w in ways}, {w: [] for w in ways}
    for _ in range(rounds):
        for w in ways:
            torch.cuda.synchronize()
            on = torch.cuda.default_stream() if w == "floor, legacy" else own
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(on)
            for _ in range(20):
                check(launch[w](), w)
            e1.record(on)
            e1.synchronize()
            gpu[w].append(e0.elapsed_time(e1) / 20 * 1e3)
            for _ in range(20):
                torch.cuda.synchronize()
                t0 = time.perf_counter_ns()
                r = launch[w]()
                idle[w].append((time.perf_counter_ns() - t0) / 1e3)
                check(r, w)
            torch.cuda.synchronize()
            for _ in range(50):
                t0 = time.perf_counter_ns()
                r = launch[w]()
                busy[w].append((time.perf_counter_ns() - t0) / 1e3)
                check(r, w)
            torch.cuda.synchronize()

    def summary(v):
        v = sorted(v)
        m = statistics.median(v)
        return {"us": round(m, 2), "spread": round((v[int(0.9 * (len(v) - 1))] - v[int(0.1 * (len(v) - 1))]) / m, 3)}
    rec["idle"] = {w: summary(idle[w]) for w in ways}
    rec["busy"] = {w: summary(busy[w]) for w in ways}
    rec["gpu"] = {w: summary(gpu[w]) for w in ways}
    rec["pgcc_split"] = {w: {"host_us": round(statistics.median(x[0] for x in v) / 1e3, 2),
                             "before_launch_us": round(statistics.median(x[1] for x in v) / 1e3, 2),
                             "launch_us": round(statistics.median(x[2] for x in v) / 1e3, 2),
                             "nodes_patched": max(x[3] for x in v)} for w, v in state["split"].items()}
    print("LAUNCH " + json.dumps(rec), flush=True)


def table(recs):
    ways = GRAPH_WAYS + [w for w in PGCC_WAYS if any(w in r.get("idle", {}) for r in recs)]
    lines = ["| model | nodes (kernels: functions, parameter KiB, in clusters; edges, roots, max in/out) | "
             + " | ".join(ways) + " | pgcc moving: patched, before launch, in cuGraphLaunch |",
             "|---" * (len(ways) + 3) + "|"]
    for r in recs:
        if "failed" in r:
            lines.append(f"| {r['model']} | FAIL: {r['failed'][:150]} |" + " |" * (len(ways) + 1))
            continue
        inv = r["inventory"]
        nodes = ", ".join(f"{n} {t}" for t, n in sorted(inv["nodes"].items()))
        cells = [f"{r['idle'][w]['us']}, {r['busy'][w]['us']} ({r['gpu'][w]['us']})" if w in r["idle"] else "—"
                 for w in ways]
        sp = r.get("pgcc_split", {}).get("pgcc, moving")
        lines.append(f"| {r['model']} | {nodes} ({inv['kernel_functions']}, {inv['param_bytes'] / 1024:.1f}, "
                     f"{inv['in_clusters']}; {inv['edges']}, {inv['roots']}, {inv['max_in']}/{inv['max_out']}) | "
                     + " | ".join(cells)
                     + (f" | {sp['nodes_patched']}, {sp['before_launch_us']} µs, {sp['launch_us']} µs |" if sp
                        else " | — |"))
    return ("host µs per launch: from idle, back to back (GPU µs per replay); medians\n\n" + "\n".join(lines)
            + "\n\ninit ms: " + ", ".join(f"{r['model']} {r['init_ms']}" for r in recs if "init_ms" in r))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("patterns", nargs="*", help="fnmatch patterns over the zoo's 'family:variant' (inference ones)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--out")
    ap.add_argument("--no-pgcc", action="store_true", help="the captures' ways only: no export")
    ap.add_argument("--watch", action="store_true",
                    help="with --no-pgcc: start (and close) pgcc.ModuleWatch, CUPTI's subscriber, all the same")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.rounds, not args.no_pgcc, args.watch or not args.no_pgcc)
    from bench import children
    from tests.models import zoo_models
    import fnmatch

    from tests.wild import wild_programs
    zoo = [p for p in args.patterns if not p.startswith("wild:")]
    keys = [k for k in zoo_models.select(zoo) if not k.startswith("train_")] if zoo or not args.patterns else []
    keys += [f"wild:{k}" for k in wild_programs.keys() if any(fnmatch.fnmatch(f"wild:{k}", p) for p in args.patterns)]
    recs = children.run(__file__, keys, ["--rounds", str(args.rounds)] + (["--no-pgcc"] if args.no_pgcc else [])
                        + (["--watch"] if args.watch else []), "LAUNCH", args.timeout, args.out, "launch")
    print()
    print(table(recs))


if __name__ == "__main__":
    main()
