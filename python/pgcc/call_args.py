"""What the run side needs to turn a Python call's arguments into the generated C's, shared
with the export side: the .graph's dtype names and torch's, one scalar element's bytes
(decode, encode), a number given as one or as a 0-d CPU tensor (as_number), the
strides a call's tensor must have (same_layout, layouts: as the export recorded them,
contiguous where it did not), which shape bucket runs a size (choose) and how its
inputs are padded to it (pad_to), NAME_args packed in one step where it holds only
addresses (packed_layout), and a call's callback scalars as C functions (scalar_callbacks).

    choose([1, 2, 4, 8], 3, pad=True)   # 2: the bucket of size 4
    encode(1.5, "f32")                  # b'\\x00\\x00\\xc0?'

A run-side module (loader.py imports it): it imports nothing from the export side, and
torch only inside the functions that take tensors (torch_dtype), so that the package
imports without torch.
"""
import ctypes as C
import math
import re
import struct

from .errors import ExportError

__all__ = ["DTYPES", "FORMATS", "as_number", "choose", "contiguous_strides", "decode", "encode", "layouts",
           "packed_layout", "pad_to", "same_layout", "scalar_callbacks", "torch_dtype"]

DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64", "int32": "i32",
          "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool"}


def torch_dtype(name):
    """The torch dtype of a .graph dtype name (None where unknown)."""
    import torch
    inv = {v: k for k, v in DTYPES.items()}
    return getattr(torch, inv[name]) if name in inv else None


# .graph dtype -> struct format of one element
FORMATS = {"f64": "<d", "f32": "<f", "f16": "<e", "i64": "<q", "i32": "<i", "i16": "<h", "i8": "<b", "u8": "<B",
           "u16": "<H", "u32": "<I", "u64": "<Q", "bool": "<?"}


def decode(raw, dtype):
    """One element of dtype from raw bytes, as a Python number (None: a dtype not known)."""
    if dtype == "bf16":
        return struct.unpack("<f", b"\0\0" + raw[:2])[0]
    fmt = FORMATS.get(dtype)
    return struct.unpack(fmt, raw[:struct.calcsize(fmt)])[0] if fmt else None


def encode(v, dtype):
    """v as the bytes of one dtype element, converted as C converts (float to integer
    truncates); None where it does not fit."""
    try:
        if dtype == "bf16":
            f = struct.unpack("<I", struct.pack("<f", float(v)))[0]
            if math.isnan(float(v)):
                return struct.pack("<H", 0x7FC0)
            f += 0x7FFF + ((f >> 16) & 1)  # round to nearest even, as PyTorch does
            return struct.pack("<H", (f >> 16) & 0xFFFF)
        if dtype.startswith(("i", "u")):
            return struct.pack(FORMATS[dtype], int(v))
        if dtype == "bool":
            return struct.pack("<?", bool(v))
        return struct.pack(FORMATS[dtype], float(v))
    except (struct.error, OverflowError, ValueError, KeyError):
        return None


def as_number(torch, x):
    """x as a Python number where it is one or a 0-dimensional CPU tensor (a temperature,
    given for a scalar or a 0-dimensional input), else None."""
    if isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, torch.Tensor) and x.dim() == 0 and x.device.type == "cpu":
        return x.item()
    return None


def choose(values, n, pad):
    """The index of the bucket that runs size n (the smallest holding it, or, for exact
    buckets, the one equal to it); None where none does."""
    for k, v in enumerate(values):
        if v == n or (pad and v > n >= 1):
            return k
    return None


def pad_to(torch, x, pos, size, fill=None):
    """x padded along pos to `size` with zeros (or the rows of `fill`, a tensor of the
    padded shape), contiguous."""
    if pos is None or x.shape[pos] == size:
        return x
    shape = list(x.shape)
    shape[pos] = size
    y = torch.zeros(shape, dtype=x.dtype, device=x.device) if fill is None else fill.clone()
    y.narrow(pos, 0, x.shape[pos]).copy_(x)
    return y


def contiguous_strides(shape):
    """The strides, in elements, of a contiguous tensor of shape."""
    out, n = [], 1
    for d in reversed(list(shape)):
        out.append(n)
        n *= max(d, 1)
    return tuple(reversed(out))


def same_layout(shape, stride, want):
    """Whether a tensor of shape and stride lays its elements out as strides `want` (None:
    contiguous) do: the strides of the dimensions of size 1 do not matter, nor any of a
    tensor of no elements."""
    want = contiguous_strides(shape) if want is None else want
    if len(stride) != len(want) or any(d == 0 for d in shape):
        return len(stride) == len(want)
    return all(s == w for d, s, w in zip(shape, stride, want) if d != 1)


def layouts(report, n_inputs, n_outputs):
    """(strides of each input, of each output) as NAME.export.json's "structure" recorded
    them when the export captured its tensors -- None for one it did not record (a
    number, a bucket program's, an export older than the record): contiguous."""
    st = (report or {}).get("structure") or {}

    def strides(key, n):
        got = st.get(key) or []
        out = [tuple(g["stride"]) if isinstance(g, dict) and "stride" in g else None for g in got]
        return out if len(out) == n else [None] * n  # (positions only where the counts agree)
    return strides("input_layouts", n_inputs), strides("output_layouts", n_outputs)


def packed_layout(p):
    """How Program.args packs NAME_args in one step where every field of it is a tensor's
    address (no scalars, sizes, host callbacks or buckets): (struct.Struct.pack over the
    fields in offset order, the padding between them zero; for each field in that order
    its place in inputs + outputs; the address a tensor without elements gets: the
    arena's, whose kernels read nothing there), or None."""
    fields = p.inputs + p.outputs
    if p.dims or any(f.role not in ("input", "inout", "output") for f in p.fields):
        return None
    order = sorted(range(len(fields)), key=lambda i: fields[i].offset)
    fmt, at = "<", 0
    for i in order:
        if fields[i].offset < at:
            return None
        fmt += f"{fields[i].offset - at}xQ" if fields[i].offset > at else "Q"
        at = fields[i].offset + 8  # (a buffer's field is its CUdeviceptr)
    end = max(p.args_size, 1)
    if end < at:
        return None
    fmt += f"{end - at}x" if end > at else ""
    return struct.Struct(fmt).pack, order, p.arena.data_ptr()


def scalar_callbacks(name, fields, graph, given):
    """[(field, C function, its address)] for program name's callback scalars (of fields;
    the .graph at path graph says its host buffers), from given {scalar name: Python
    function}: called with the values the call read back so far (one number per host
    buffer, in the .graph's order), it returns the scalar's value."""
    wanted = [f for f in fields if f.role == "scalar callback"]
    missing = [f.name for f in wanted if f.name not in given]
    if missing:
        raise ExportError(f"{name}: callback scalars {missing} need a function each: "
                          "pgcc.load(..., callbacks={name: function of the values read})")
    with open(graph) as fh:
        host = re.findall(r"^buffer \w+ size (\d+) role host dtype (\w+)", fh.read(), re.M)
    proto = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(C.c_void_p), C.POINTER(C.c_uint64))
    out = []
    for f in wanted:
        def call(data, buffers, value, fn=given[f.name], dtype=f.dtype):
            try:
                vals = [decode(C.string_at(buffers[j], int(size)), t) for j, (size, t) in enumerate(host)]
                raw = encode(fn(*vals), dtype)
                value[0] = int.from_bytes(raw + bytes(8 - len(raw)), "little")
                return 0
            except Exception:  # noqa: BLE001 -- any failure is the call's, said by libpgrt
                return 1
        fn = proto(call)
        out.append((f, fn, C.cast(fn, C.c_void_p).value))
    return out
