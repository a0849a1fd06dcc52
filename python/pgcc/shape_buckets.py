"""Shape buckets: one export of a callable at several sizes of one dimension (a batch,
a sequence length), written as one program whose root is a CUDA SWITCH node with a
body per size ("bucket"), chosen on the device from the size the caller gives.

Each bucket is warmed up and analysed as its own export (export.analyse, static
shapes: torch.compile(dynamic=False) compiles every size on its own, so each bucket
runs kernels specialised to it), then merge() joins the analyses: the model's weights
once, the inputs and outputs once each with the dimension named in their shape (their
size the largest bucket's), every bucket's intermediates under its own names (`b4_t0`)
-- the memory plan gives the bodies of one SWITCH the same bytes, since they never run
together -- and the kernels they share once.  A kernel of libpgrt's NVRTC (written to
kernels/pgcc_bucket.cu) sets the SWITCH's condition from the bucket scalar libpgrt
computes per call.

Padding: where a bucket computes each row of the dimension from the same row of its
inputs alone (a batch through an MLP or a decoder, where no row sees another), a size
between buckets runs the next larger one on inputs padded with zeros, and the first
rows of the outputs are the answer.  padded_rows() checks it by running the compiled
callable on the largest bucket's inputs padded two ways (zeros, and other values) and
comparing the rows that are the answer bit for bit; a callable that mixes rows (a
batch norm in training, a softmax over the batch) gets exact buckets only.

export.export_buckets drives it: bucket_examples(), an analysis per bucket, merge(),
the files; verify_export.verify_buckets checks the export, and the run side picks a
bucket per call with call_args.choose.  Pure except bucket_examples(), inputs_at() and
padded_rows() (torch, a GPU, passed in as `torch`).

    a = merge(analyses, [1, 2, 4], "batch", True, setter_kernel("out"))
"""
import hashlib
import os
from dataclasses import replace

from .call_args import pad_to
from .errors import ExportError
from .graphfile import remap
from .hostreads import HostReads
from .model import Analysis, Kernel, Node
from .relocate import Buffers

__all__ = ["SETTER_SOURCE", "SETTER_SYMBOL", "bucket_examples", "check_values", "dim_position", "inputs_at",
           "merge", "padded_rows", "setter_kernel"]

SETTER_SYMBOL = "pgcc_bucket_set"
# Compiled by libpgrt with NVRTC at init (module kind `cuda`); NVRTC does not declare
# the device runtime: cuda_device_runtime_api.h's declaration (nothing is linked).
SETTER_SOURCE = r"""// pgcc-export: sets a SWITCH node's condition to the index of the bucket this call
// runs, which libpgrt computes from the caller's size and passes as `index`.
#ifdef __CUDACC_RTC__
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(unsigned long long handle,
                                                                                    unsigned int value);
#endif
extern "C" __global__ void pgcc_bucket_set(unsigned long long cond, unsigned int index) {
  cudaGraphSetConditional(cond, index);
}
"""


def dim_position(shapes, values, what):
    """The position of the bucket dimension in a tensor whose shape at each bucket is
    shapes[k] (values[k] the bucket's size): the one entry that is the bucket's size at
    every bucket while the others stay the same; None for a shape that is the same at
    every bucket.  Raises ExportError for any other change (`what` names the tensor)."""
    shapes = [tuple(s) for s in shapes]
    if len(set(shapes)) == 1:
        return None
    if len({len(s) for s in shapes}) != 1:
        raise ExportError(f"{what}: its number of dimensions changes with the bucket ({shapes})")
    found = [p for p in range(len(shapes[0])) if all(s[p] == v for s, v in zip(shapes, values))]
    rest = [p for p in range(len(shapes[0])) if p not in found]
    moving = [p for p in found if len({s[p] for s in shapes}) > 1]
    if len(moving) != 1 or any(len({s[p] for s in shapes}) > 1 for p in rest):
        raise ExportError(f"{what}: its shape changes with the bucket other than in one dimension of the bucket's "
                          f"size ({', '.join(str(list(s)) for s in shapes)} for sizes {list(values)})")
    return moving[0]


def check_values(values):
    values = [int(v) for v in values]
    if not values or any(v < 1 for v in values) or any(b <= a for a, b in zip(values, values[1:])):
        raise ExportError(f"bucket sizes must be increasing sizes of at least 1, got {values}")
    return values


def setter_kernel(out_dir):
    """The kernel that sets the SWITCH's condition (its source written under out_dir/kernels),
    a model.Kernel."""
    path = os.path.join("kernels", "pgcc_bucket.cu")
    with open(os.path.join(out_dir, path), "w") as f:
        f.write(SETTER_SOURCE)
    return Kernel(symbol=SETTER_SYMBOL, layout=[(0, 8), (8, 4)], attrs=None, ptr_words=set(),
                  module={"name": "pgcc_bucket", "kind": "cuda", "file": path,
                          "sha256": hashlib.sha256(SETTER_SOURCE.encode()).hexdigest()})


def merge(analyses, values, dim_name, pad, setter):
    """Joins the analyses of the buckets (model.Analysis, one per size in
    values, in order) into one: a root of the setter kernel (the model.Kernel `setter`,
    setter_kernel()) and a SWITCH node whose body k is bucket k.  Buffers: inputs and
    outputs by name, with dim_name at the position dim_position finds and the largest
    bucket's size; the model's weights by name; static blocks (memory outside the
    captures' pools that kernels read) by address and bytes; everything else per bucket,
    renamed `b{size}_...`.  Kernels: one per function, their relocations and don't-care
    bytes the union of the buckets'.  Mutates the analyses' buffers and kernels; returns
    the merged analysis (capA and outputs: the largest bucket's)."""
    if len(analyses) != len(values):
        raise ExportError(f"{len(analyses)} analyses for {len(values)} buckets")
    shared, merged, io_shapes = {}, [], {}
    kernels = {}
    bodies = []
    for a, v in zip(analyses, values):
        if any(b.role == "host" for b in a.bufs.list) or a.scalars or a.conditions:
            raise ExportError(f"bucket {v}: the program reads values back to the host; buckets of such programs "
                              "are not exported yet")
        fmap = {}
        for b in a.bufs.list:
            role = b.role
            if role in ("input", "output"):
                key = ("io", b.name)
                io_shapes.setdefault(b.name, []).append(b.shape)
            elif role == "weight" and not b.static and b.host is None:
                key = ("weight", b.name)
            elif role == "weight":  # a static block, or a copy of host memory a kernel read
                key = ("block", b.ranges.get(0), b.size, b.host)
            else:
                key = None
            m = shared.get(key) if key else None
            if m is not None:
                if role == "weight" and key[0] == "weight" and m.ranges.get(0) != b.ranges.get(0):
                    raise ExportError(f"weight {b.tensor} is another tensor in bucket {v}")
                m.size = max(m.size, b.size)
                fmap[id(b)] = m
                continue
            if key is None or key[0] == "block":
                b.name = f"b{v}_{b.name}"
                if b.tensor is not None:
                    b.tensor = f"__b{v}{b.tensor}"
            if key:
                shared[key] = b
            merged.append(b)
        for func, k in a.kernels.items():
            kt = kernels.setdefault(func, k)
            if kt is not k:
                kt.ptr_words = set(kt.ptr_words) | set(k.ptr_words)
                kt.dontcare = set(kt.dontcare) | set(k.dontcare)
                kt.scalar_types.update(k.scalar_types)
        nodes = [remap(replace(n, index=f"b{v}_{n.index}"), fmap) for n in a.nodes]
        edges = [(f"b{v}_{x}", f"b{v}_{y}") for x, y in a.edges]
        bodies.append((f"bucket_{v}", nodes, edges))
    positions = {}
    for b in merged:
        if b.name in io_shapes:
            p = dim_position(io_shapes[b.name], values, f"{b.role} {b.name}")
            positions[b.name] = p
            if p is not None:
                b.shape = [dim_name if i == p else s for i, s in enumerate(io_shapes[b.name][-1])]
    kernels["pgcc_bucket"] = setter
    cond = {"name": f"c_{dim_name}"}
    scalar = {"name": f"{dim_name}_bucket", "type": "u32", "bucket": dim_name}
    set_node = Node(kind="kernel", func="pgcc_bucket", grid=[1, 1, 1], block=[1, 1, 1], smem=0, index="bset",
                    args=[("cond", cond), ("scalar", scalar)])
    switch = Node(kind="switch", index="bswitch", condition=cond, bucket=dim_name, bodies=bodies)
    last = analyses[-1]
    report = {"buckets": [{"dim": dim_name, "size": v, **{k: a.report[k] for k in
                                                          ("nodes", "edges", "relocations", "dontcare", "kernels")
                                                          if k in a.report}}
                          for a, v in zip(analyses, values)],
              "dim": {"name": dim_name, "values": list(values), "pad": bool(pad),
                      "positions": {n: p for n, p in positions.items()}},
              "problems": [], "host_reads": []}
    bufs = Buffers()
    bufs.list = merged
    return Analysis(capA=last.capA, bufs=bufs, nodes=[set_node, switch], edges=[("bset", "bswitch")],
                    kernels=kernels, scalars=[scalar], conditions=[cond],
                    dims=[{"name": dim_name, "values": list(values), "pad": bool(pad)}], report=report,
                    outputs=last.outputs, positions=positions)


# ---- with torch ----------------------------------------------------------------------


def inputs_at(torch, inputs, dim, n0, n):
    """The example inputs at size n of dimension `dim`: every tensor whose size there is
    n0 (the example's) cut, or repeated to n along it, each repetition j other values
    (floats scaled by 1 + j/4, integers such as token ids shifted by 7j modulo their
    largest + 1), so that no two rows are alike; the others as they are."""
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.dim() > dim and x.shape[dim] == n0:
            if x.is_floating_point():
                copies = [x * (1 + j / 4) for j in range(-(-n // n0))]
            else:
                top = int(x.max()) + 1 if x.numel() else 1
                copies = [(x + 7 * j) % top for j in range(-(-n // n0))]
            x = torch.cat(copies, dim).narrow(dim, 0, n).contiguous()
        out.append(x)
    return out


def padded_rows(torch, run, inputs, in_pos, out_pos, n):
    """Whether the callable's outputs' first n rows stay the same, bit for bit, when the
    rows past n of its inputs (the largest bucket's: `inputs`) change: zeros, then the
    example's own values, then those scaled by -3.  in_pos/out_pos: each input's and
    output's position of the dimension (None: it has none; then an output must not
    change at all).  Returns (True, None) or (False, why)."""
    def call(fill):
        xs = [x if p is None else pad_to(torch, x.narrow(p, 0, n), p, x.shape[p], fill(x))
              for x, p in zip(inputs, in_pos)]
        out = run(*xs)  # (in the grad mode the captures run it in: another would compile anew)
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        return [o.detach().clone() for o in out]
    ways = [lambda x: torch.zeros_like(x), lambda x: x,
            lambda x: x * -3 if x.is_floating_point() else x.flip(0)]
    results = [call(w) for w in ways]
    torch.cuda.synchronize()
    for w, res in enumerate(results[1:], 1):
        for i, (a, b) in enumerate(zip(results[0], res)):
            p = out_pos[i] if i < len(out_pos) else None
            a2, b2 = (a, b) if p is None else (a.narrow(p, 0, n), b.narrow(p, 0, n))
            if not torch.equal(a2, b2):
                return False, (f"output {i}'s first {n} rows change with the padding" if p is not None else
                               f"output {i} has no bucket dimension and changes with the padding")
    return True, None


def bucket_examples(torch, run, inputs, buckets, dim, dim_name, pad, warmup, name, prog):
    """The buckets' sizes and example inputs (buckets: sizes of dimension `dim` of inputs,
    or example input tuples), each warmed up with `run` (fn compiled with static shapes,
    or fn); each input's and output's position of the dimension (dim_position); and
    whether sizes between buckets run padded (pad: None tests it with padded_rows, True
    requires it, False: exact sizes).  Returns (values, examples, in_pos, out_pos, pad).
    Raises ExportError for buckets that cannot be exported."""
    if buckets and isinstance(buckets[0], (tuple, list)):
        examples = [list(b) for b in buckets]
        in_shapes = list(zip(*[[tuple(x.shape) if isinstance(x, torch.Tensor) else () for x in ex]
                               for ex in examples]))
        values = None
        for shapes in in_shapes:
            moving = [p for p in range(len(shapes[0])) if len({s[p] for s in shapes}) > 1] if \
                len({len(s) for s in shapes}) == 1 else []
            if moving:
                values = [s[moving[0]] for s in shapes]
                break
        if values is None:
            raise ExportError("the bucket examples all have the same shapes")
        order = sorted(range(len(values)), key=values.__getitem__)
        examples, values = [examples[k] for k in order], [values[k] for k in order]
    else:
        values = check_values(buckets)
        n0 = inputs[0].shape[dim]
        examples = [inputs_at(torch, inputs, dim, n0, v) for v in values]
    values = check_values(values)
    in_pos = [dim_position([tuple(ex[i].shape) if isinstance(ex[i], torch.Tensor) else () for ex in examples],
                           values, f"input {i}") for i in range(len(examples[0]))]
    if all(p is None for p in in_pos):
        raise ExportError("no input changes size with the bucket")

    if hasattr(torch, "_dynamo"):
        # Every bucket compiles once, and the limit counts per code object: callables
        # made by one function share it (the default is 8; past it, dynamo runs the
        # callable eagerly, and the export would capture PyTorch's own kernels)
        cfg = torch._dynamo.config
        for attr in ("recompile_limit", "cache_size_limit"):
            if hasattr(cfg, attr):
                setattr(cfg, attr, max(getattr(cfg, attr), 8 * len(values) + 64))
    out_shapes = []
    with HostReads() as reads:
        for v, ex in zip(values, examples):
            for i in range(max(warmup, 1)):
                prog.status(f"{name}: bucket {dim_name}={v}: warm-up call {i + 1}/{max(warmup, 1)}")
                out = run(*ex)
            out = list(out) if isinstance(out, (tuple, list)) else [out]
            out_shapes.append([tuple(o.shape) for o in out])
        before = len(reads.seen)
        run(*examples[-1])
        if len(reads.seen) > before:
            raise ExportError(f"the callable reads values back to the host ({reads.seen[-1][1]}): buckets of such "
                              "programs are not exported yet")
    out_pos = [dim_position([s[i] for s in out_shapes], values, f"output {i}") for i in range(len(out_shapes[0]))]

    if pad is False or values[-1] == 1:
        pad = False
    else:  # a size between the two largest buckets, else just below the largest
        n = values[-2] + 1 if len(values) > 1 and values[-2] + 1 < values[-1] else values[-1] - 1
        ok, why = padded_rows(torch, run, examples[-1], in_pos, out_pos, n)
        if pad and not ok:
            raise ExportError(f"pad=True, but the callable's rows are not independent: {why}")
        prog.log(f"  padding: {'sizes between buckets run the next larger one' if ok else 'exact sizes only'} "
                 f"(the largest bucket with its rows past {n} padded three ways: "
                 f"{'the first rows bit-identical' if ok else why})")
        pad = ok
    return values, examples, in_pos, out_pos, pad
