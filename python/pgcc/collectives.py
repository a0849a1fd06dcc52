"""NCCL collectives of a torch.distributed program, as the .graph's `libcall` nodes
(issue 20's exporter; docs/graph-format.md, "Collectives").

A collective that torch.compile'd code makes (torch.ops._c10d_functional.all_reduce_
and its kin), captured as it runs, is one NCCL kernel node between an event wait and
an event record (seen on two H200s with NCCL 2.28.9: tests/gpu/probe_collectives.py),
and its parameters hold no address of the tensors -- its work lives in NCCL's memory
-- so the node cannot say what it reduces; and every replay the export makes would run
it, waiting for the other ranks.  So the exporter does not let it run: while a capture
runs, Recorder's stand-ins record each call (its tensors' addresses, count, type, op)
and put a one-byte memset of a marker buffer, valued the call's number, in its place.
Each rank then exports on its own; node_mapping.map_nodes turns each marker memset into the
call's libcall node (libcall).  A collective on an input or output is written as it is:
pgcc stages it through an arena buffer of its own (compiler/stage.c), since libpgrt
captures a collective once, at init.  An NCCL kernel that is still captured (a collective made
some other way) is named by kernel_collective, and the export refuses it.

Pure but Recorder (torch).  Proven on two H200s by tests/gpu/tp_export.py (docs/e2e.md,
"Tensor parallel on two GPUs").
"""
import re
import warnings

from .cuda import check, cu
from .errors import ExportError
from .model import Node
from .weights import dtype_of

__all__ = ["FUNCTIONAL", "kernel_collective", "libcall", "Recorder", "REDUCE_OPS"]

# torch.ops._c10d_functional ops -> the NCCL function they call
FUNCTIONAL = {"all_reduce": "ncclAllReduce", "all_reduce_": "ncclAllReduce",
              "all_gather_into_tensor": "ncclAllGather", "all_gather_into_tensor_out": "ncclAllGather",
              "reduce_scatter_tensor": "ncclReduceScatter"}
REDUCE_OPS = {"sum": "sum", "avg": "avg", "product": "prod", "prod": "prod", "min": "min", "max": "max"}
_KERNEL_OPS = {"Sum": "sum", "Prod": "prod", "Min": "min", "Max": "max", "PreMulSum": "sum", "SumPostDiv": "avg"}
_KERNEL = re.compile(r"ncclDevKernel_(AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|SendRecv|Generic)"
                     r"(?:_(Sum|Prod|Min|Max|PreMulSum|SumPostDiv))?(?:_([a-z]+[0-9]*))?")
_DTYPES = {"i8": "i8", "u8": "u8", "i32": "i32", "u32": "u32", "i64": "i64", "u64": "u64", "f16": "f16",
           "f32": "f32", "f64": "f64", "bf16": "bf16"}


def kernel_collective(symbol):
    """What an NCCL kernel's (mangled) name says: {"fn": "ncclAllReduce", "op": "sum" or
    None, "dtype": "f32" or None}; None for a kernel that is not NCCL's device kernel."""
    m = _KERNEL.search(symbol or "")
    if not m:
        return None
    fn, op, dtype = m.groups()
    return {"fn": "nccl" + fn, "op": _KERNEL_OPS.get(op) if op else None, "dtype": _DTYPES.get(dtype or "")}


def libcall(call, index, comm):
    """The libcall node (model.Node) of one recorded call: fn, send, recv ((buffer, offset)
    each), count (elements per rank, as NCCL counts them), dtype, op (reductions)."""
    node = Node(kind="libcall", index=index, fn=call["fn"], comm=comm, send=call["send"], recv=call["recv"],
                count=call["count"], dtype=call["dtype"])
    if call["fn"] in ("ncclAllReduce", "ncclReduceScatter"):
        if call.get("op") not in REDUCE_OPS.values():
            raise ExportError(f"{call['fn']}: reduction {call.get('op')!r} is not one NCCL has")
        node.op = call["op"]
    return node


# ---- recording, with torch ------------------------------------------------------------


class Recorder:
    """Within `with Recorder(torch) as rec:`, torch.ops._c10d_functional's collectives
    (FUNCTIONAL) and wait_tensor are stand-ins: each call is appended to rec.calls
    ({"fn", "send", "recv" (addresses), "count", "dtype", "op", "ranks", "group"}) and
    leaves a memset of byte k + 1 at rec.marker + k (k: the call's number) on the current
    stream, in the collective's place; an out-of-place collective's result is a new
    tensor of its shape, its bytes never written.  Nothing is reduced: the values after
    a collective are not the program's (captures compare only addresses)."""

    def __init__(self, torch):
        self.torch, self.calls = torch, []
        self.marker_tensor = torch.zeros(256, dtype=torch.uint8, device="cuda")
        self.marker = self.marker_tensor.data_ptr()

    def __enter__(self):
        # The ops' CUDA kernels are overridden through the dispatcher (a library of
        # implementations, dropped on exit), not the torch.ops attributes: torch.compile
        # guards on those objects, and replacing them recompiled the callable during
        # the capture (seen on two H200s: Triton autotuned inside it and the capture broke)
        self.lib = self.torch.library.Library("_c10d_functional", "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ("overriding a previously registered kernel")
            for name in list(FUNCTIONAL) + ["wait_tensor"]:
                if hasattr(self.torch.ops._c10d_functional, name):
                    self.lib.impl(name, lambda *a, _n=name, **k: self.call(_n, list(a) + list(k.values())), "CUDA")
        return self

    def __exit__(self, *exc):
        self.lib._destroy()
        return False

    def call(self, name, args):
        torch = self.torch
        if name == "wait_tensor":
            return args[0]
        x = args[0]
        fn = FUNCTIONAL[name]
        if fn == "ncclAllReduce":
            op, group = args[1], args[2]
            out, count, ranks = (x if name.endswith("_") else torch.empty_like(x)), x.numel(), None
        elif fn == "ncclAllGather":
            ranks, group = int(args[1]), args[2]
            out = args[3] if name.endswith("_out") else x.new_empty((x.shape[0] * ranks,) + tuple(x.shape[1:]))
            op, count = None, x.numel()
        else:
            op, ranks, group = args[1], int(args[2]), args[3]
            out = x.new_empty((x.shape[0] // ranks,) + tuple(x.shape[1:]))
            count = out.numel()
        k = len(self.calls)
        if k >= 255:
            raise ExportError("more than 255 collectives in one call")
        self.calls.append({"fn": fn, "send": x.data_ptr(), "recv": out.data_ptr(), "count": count,
                           "dtype": dtype_of(x), "op": REDUCE_OPS.get(op) if op else None, "ranks": ranks,
                           "group": group, "name": name})
        stream = torch.cuda.current_stream().cuda_stream
        check(cu().MemsetD8Async(self.marker + k, k + 1, 1, stream), "cuMemsetD8Async (a collective's marker)")
        return out

