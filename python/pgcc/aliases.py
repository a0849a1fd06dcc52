"""Outputs that are not new memory: an output that is an input, or a view of one, an
earlier output again or a view of it, or a view of a weight (CUDA Graph Trees' aliased
outputs).  The export finds them on the example call (find: the same storage and
dtype, the output's elements within the base's), records them in NAME.export.json's
"structure" ("output_aliases": one entry per output tensor, None or {"of": "input" |
"output" | "weight", "index" or "name", "shape", "stride", "offset", "same"}), and the
loaded program returns them as the callable did (rebuild): the caller's input tensor
itself, the earlier output itself, or the same view of it (as_strided, offset relative
to the base's own storage offset) -- the program's copy of such an output
(node_mapping.mark_views) is left unused.

    entry = find(outs, ins, weights)[0]   # {"of": "input", "index": 0, "same": True, ...}
    rebuild(entry, x)                      # x itself

A module of both sides (loader.py imports it); pure: tensors are only asked for their
storage, offset, shape, strides and dtype (describe) and for as_strided (rebuild).
"""

from .call_args import same_layout

__all__ = ["describe", "find", "rebuild", "recorded"]


def describe(t):
    """(storage address, storage offset, shape, stride, dtype name) of a tensor."""
    return (t.untyped_storage().data_ptr(), int(t.storage_offset()), tuple(t.shape), tuple(t.stride()),
            str(t.dtype))


def extent(d):
    """The elements [lo, hi] of its storage that a described tensor covers (None: none)."""
    _, off, shape, stride, _ = d
    if any(n == 0 for n in shape):
        return None
    return off, off + sum((n - 1) * s for n, s in zip(shape, stride))


def within(o, b):
    """Whether described tensor o lies inside described tensor b: the same storage and
    dtype, and o's elements among those b spans."""
    eo, eb = extent(o), extent(b)
    return (eo is not None and eb is not None and o[0] == b[0] and o[4] == b[4]
            and eb[0] <= eo[0] and eo[1] <= eb[1])


def entry(kind, key, o, b):
    return {"of": kind, ("name" if kind == "weight" else "index"): key, "shape": list(o[2]),
            "stride": list(o[3]), "offset": o[1] - b[1], "same": o[1:4] == b[1:4], "base_stride": list(b[3])}


def find(outs, ins, weights):
    """One entry per output (described): where it lies in an input (ins: described, None
    for a number), else in an earlier output that is its own memory, else in a weight
    (weights: [(name, described)], the first holding it), as the module says; None for
    an output that is new memory (or has no elements)."""
    got = []
    for i, o in enumerate(outs):
        e = None
        for j, x in enumerate(ins):
            if x is not None and within(o, x):
                e = entry("input", j, o, x)
                break
        if e is None:
            for k in range(i):
                if got[k] is None and within(o, outs[k]):
                    e = entry("output", k, o, outs[k])
                    break
        if e is None:
            for name, w in weights:
                if within(o, w):
                    e = entry("weight", name, o, w)
                    break
        got.append(e)
    return got


def recorded(structure, n_outputs):
    """The entries NAME.export.json's structure records for n_outputs outputs, or None
    (none aliased, not recorded, or recorded for another count); their shapes and strides
    as tuples, as a tensor gives its own (rebuild compares them)."""
    got = (structure or {}).get("output_aliases")
    if not got or len(got) != n_outputs or not any(got):
        return None
    lists = ("shape", "stride", "base_stride")
    return [None if e is None else dict(e, **{k: tuple(e[k]) for k in lists if k in e}) for e in got]


def rebuild(e, base, flat=False):
    """The output entry e describes, over base (the input given, the earlier output; flat:
    the weight's memory from its first element, 1-dimensional): base itself where it is
    the same tensor, else its view -- over a copy of base in the layout the export saw,
    where the caller's tensor has other strides (its view would be other elements)."""
    shape, stride, base_stride = e["shape"], e["stride"], e["base_stride"]  # (recorded's tuples: compared as they are)
    if e["same"] and not flat and base.shape == shape:
        return base
    if (not flat and base.stride() != base_stride
            and not same_layout(tuple(base.shape), tuple(base.stride()), tuple(base_stride))):
        base = base.new_empty_strided(tuple(base.shape), tuple(base_stride)).copy_(base)
    return base.as_strided(shape, stride, base.storage_offset() + e["offset"])
