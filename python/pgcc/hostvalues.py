"""What the values a program reads back to the host (hostreads.py) become in the
export.  Pure: bytes in, decisions out.

A kernel after a read may take the value as a by-value argument (Inductor passes a
float read by `.item()` as an fp64 scalar).  Captures A, B and C run on the same
values, so such an argument looks constant there; capture D runs on other values
(hostreads.perturbed).  An argument whose bytes differ between A and D must be
explained: it is the value of one read before it, converted to the parameter's type,
in both captures (flows()).  The C then computes it: a scalar `from` the read's host
buffer.  A read no argument takes only chose what ran (a branch, a loop's end): the
program is exported for the path it took, with a guard that stops a call whose value
differs (guards()).
"""
from .call_args import decode, encode

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
