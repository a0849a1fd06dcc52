"""What the values a program reads back to the host (hostreads.py) become in the
export.

A kernel after a read may take the value as a by-value argument (Inductor passes a
float read by `.item()` as an fp64 scalar).  Captures A, B and C run on the same
values, so such an argument looks constant there; capture D runs on other values
(hostreads.perturbed).  An argument whose bytes differ between A and D must be
explained: it is the value of one read before it, converted to the parameter's type,
in both captures (flows()).  The C then computes it: a scalar `from` the read's host
buffer.  A read no argument takes only chose what ran (a branch, a loop's end): the
program is exported for the path it took, with a guard that stops a call whose value
differs (guards()).

flows(), explain() and same_path() are pure: bytes in, decisions out.  host_values()
applies them to an analysis's nodes (capture A's and D's), and host_computed() proves
by replay (replay.py) what an argument that changes with the values but is none of them
is: don't-care bytes, or a callback scalar.

    found, unexplained = flows(nodes_a, nodes_d, kernel_args, reads_a, reads_d)
"""
from .call_args import decode, encode
from .replay import mark_dontcare, prove_irrelevant

__all__ = ["BY_SIZE", "explain", "flows", "host_computed", "host_values", "same_path"]

# the parameter types a value may be passed as, by parameter size (bf16: by hand below)
BY_SIZE = {8: ("f64", "i64"), 4: ("f32", "i32"), 2: ("f16", "bf16", "i16"), 1: ("i8", "bool")}


def explain(size, got_a, got_d, reads):
    """The read an argument is: reads is [(dtype, value bytes in A, in D)] of the reads
    before it, got_a/got_d its bytes in captures A and D.  Returns (read index, parameter
    type) of the last read that, converted to one of the types of that size, gives both,
    or None."""
    for r in range(len(reads) - 1, -1, -1):
        dtype, raw_a, raw_d = reads[r]
        va, vd = decode(raw_a, dtype), decode(raw_d, dtype)
        if va is None or vd is None:
            continue
        for t in BY_SIZE.get(size, ()):
            if encode(va, t) == got_a and encode(vd, t) == got_d:
                return r, t
    return None


def flows(nodes_a, nodes_d, kernel_args, reads_a, reads_d):
    """The kernel arguments that are values read.  nodes_a, nodes_d: the captures' nodes
    (capture.py: kernels with their "layout" and "bytes", "read" nodes in order);
    kernel_args: {node index: [argument]} as relocate.py made them for capture A
    (("value", bytes) for a constant).  Returns (found, unexplained): found {(node index,
    parameter index): (read index, type)}; unexplained [(node index, parameter index)],
    arguments that change with the values read but are none of them."""
    found, unexplained = {}, []
    seen = 0  # reads before the node
    for i, (na, nd) in enumerate(zip(nodes_a, nodes_d)):
        if na["type"] == "read":
            seen += 1
            continue
        if i not in kernel_args:
            continue
        for p, ((off, size), arg) in enumerate(zip(na["layout"], kernel_args[i])):
            if arg[0] != "value" or nd["bytes"][off:off + size] == arg[1]:
                continue
            why = explain(size, arg[1], nd["bytes"][off:off + size],
                          [(r["dtype"], r["value"], reads_d[k]["value"]) for k, r in enumerate(reads_a[:seen])])
            if why is None:
                unexplained.append((i, p))
            else:
                found[(i, p)] = why
    return found, unexplained


def same_path(nodes_a, nodes_d):
    """Whether two captures ran the same nodes (kinds, kernels, launch shapes, reads):
    else a value read chose what ran, and the captures cannot be compared argument by
    argument.  Returns None, or where they part."""
    if len(nodes_a) != len(nodes_d):
        return f"{len(nodes_a)} nodes against {len(nodes_d)}"
    for i, (a, d) in enumerate(zip(nodes_a, nodes_d)):
        keys = ("type", "name", "grid", "block") if a["type"] != "read" else ("type", "width", "dtype")
        if any(a.get(k) != d.get(k) for k in keys):
            return f"node {i}: {a.get('name', a['type'])[:60]} against {d.get('name', d['type'])[:60]}"
    return None


def host_values(capA, capD, nodes, kernels, suspects, computed, warn, log):
    """The values the program reads back (capture.py's read nodes): which kernel
    arguments are a value read (hostvalues.flows, capture D against A), made scalars
    `from` the read's host buffer; a read no argument takes is guarded (its sync node
    gets its guard: the bytes read at export).  An argument that changes in capture D but
    is none of the values read goes into computed ({node: [(parameter, byte ranges)]}),
    for host_computed() to prove irrelevant by replay (seen: an eager kernel's
    uninitialised padding byte that happened to agree in A, B and C) or to make a
    callback scalar.  Returns the scalars."""
    part = same_path(capA.nodes, capD.nodes)
    by_index = {n.index: n for n in nodes}
    found, unexplained = {}, []
    if part:
        warn("a value read back chose what ran: on other input values the program ran other nodes; it is exported "
             "for the path the example inputs took, and every read is guarded (a call that reads another value "
             "stops with PGRT_ERR_GUARD)", part)
    else:
        found, unexplained = flows(capA.nodes, capD.nodes, {i: n.args for i, n in by_index.items()
                                                            if n.kind == "kernel"}, capA.reads, capD.reads)
    scalars = {}
    for (i, p), (r, t) in sorted(found.items()):
        s = scalars.setdefault((r, t), {"name": f"v{r}_{t}", "type": t, "from": f"r{r}", "read": r})
        n = by_index[i]
        n.args[p] = ("scalar", n.args[p][1], s)
        k = kernels[capA.nodes[i]["func"]]
        k.scalar_types[k.layout[p][0]] = t
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
        if n.kind == "sync" and n.read not in taken:
            n.guard = capA.reads[n.read]["value"]
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
    by_index = {n.index: n for n in nodes}
    for i, params in computed.items():
        for p, ranges in params:
            off, size = capA.nodes[i]["layout"][p]
            read = prove_irrelevant(replayer, {i: ranges}, lambda i: capA.nodes[i]["name"][:80])
            k = kernels[capA.nodes[i]["func"]]
            if not read:
                mark_dontcare(k, ranges)
                continue
            floats, ints = {8: "f64", 4: "f32"}.get(size), {8: "i64", 4: "i32", 2: "u16", 1: "u8"}.get(size)
            raw = by_index[i].args[p][1]
            v = decode(raw, floats) if floats else None
            t = floats if v is not None and v == v and (v == 0 or 1e-30 < abs(v) < 1e30) else ints
            s = {"name": f"cb{sum(1 for x in scalars if x.get('callback'))}", "type": t, "callback": True}
            scalars.append(s)
            by_index[i].args[p] = ("scalar", raw, s)
            k.scalar_types[off] = t
            log(f"  node {i} ({capA.nodes[i]['name'][:60]}): parameter {p} is a value the host computes from the "
                f"values read: the C takes it from the caller, callback scalar {s['name']} ({t})")
            for n in nodes:  # the reads before it feed the callback: they chose no path
                if n.kind == "sync" and n.index < i:
                    n.guard = None
                    r = report["host_reads"][n.read]
                    r["guarded"] = False
                    r.setdefault("callbacks", []).append(s["name"])
