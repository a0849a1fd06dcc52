"""Tensors to and from files: safetensors writing and reading, and the dtype tables
that link PyTorch's dtypes, the .graph's dtype names ("f32", "bf16", ...) and
safetensors' ("F32", "BF16", ...).

Pure apart from tensor_bytes and torch_dtype, which import torch when called.  A
safetensors file is an 8-byte little-endian header length, a JSON header (padded with
spaces to 8 bytes, as the reference writer does) and the tensors' bytes in order.
"""
import json
import struct

from .call_args import DTYPES, torch_dtype

__all__ = ["dtype_of", "DTYPES", "ITEM_SIZE", "memory_order", "read_safetensors", "ST_DTYPES", "tensor_bytes", "to_tensor",
           "torch_dtype", "write_safetensors"]

ST_DTYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "f64": "F64", "i64": "I64", "i32": "I32", "i16": "I16",
             "i8": "I8", "u8": "U8", "bool": "BOOL"}
ITEM_SIZE = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1, "bool": 1}


def dtype_of(t):
    """The .graph's name of a tensor's dtype ("f32"), or None where it has none."""
    return DTYPES.get(str(t.dtype)[6:])


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype text, shape, raw bytes)."""
    header, at = {}, 0
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": ST_DTYPES.get(dt, "U8"), "shape": list(shape), "data_offsets": [at, at + len(raw)]}
        at += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, raw in tensors:
            f.write(raw)


def read_safetensors(path):
    """{name: (dtype text, shape, raw bytes)} of a safetensors file, in the file's order."""
    inv = {v: k for k, v in ST_DTYPES.items()}
    with open(path, "rb") as f:
        n, = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                          key=lambda kv: kv[1]["data_offsets"][0]):
        lo, hi = t["data_offsets"]
        out[name] = (inv.get(t["dtype"], "u8"), list(t["shape"]), data[lo:hi])
    return out


def memory_order(shape, stride):
    """The 1-dimensional view (size, stride) that reads a tensor of shape and stride in
    the order its elements lie in memory, from its first element: (numel, 1) where the
    layout is dense and without overlap (contiguous, channels_last, a transpose: the
    bytes the captured kernels read at its address), else None (gaps, shared elements,
    no elements: the contiguous copy stands)."""
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return None
    span = 1 + sum((d - 1) * s for d, s in zip(shape, stride))
    if span != n or any(s < 0 for s in stride):
        return None
    dims = sorted((s, d) for d, s in zip(shape, stride) if d != 1)
    want = 1
    for s, d in dims:  # (dense: each stride is the product of the sizes below it)
        if s != want:
            return None
        want *= d
    return (n,), (1,)


def tensor_bytes(t):
    """A tensor's bytes on the host in the order they lie in its memory -- what the
    program's kernels read at its address: a channels_last weight's as channels_last,
    not permuted to contiguous (memory_order) -- else as laid out contiguously."""
    import torch
    t = t.detach()
    flat = memory_order(tuple(t.shape), tuple(t.stride()))
    if flat is not None and not t.is_contiguous():
        t = t.as_strided(*flat).contiguous()
    t = t.contiguous().cpu().reshape(-1)  # (a 0-d tensor, a loss, cannot be viewed as bytes)
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def to_tensor(dtype, shape, raw, device="cuda"):
    """A torch tensor from a read_safetensors entry."""
    import torch
    t = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    return t.view(torch_dtype(dtype) or torch.uint8).reshape(shape).to(device)
