"""Where a library kernel's by-value struct can hold no address: ATen's multi-tensor
metadata (foreach ops, fused optimizers, GradScaler's unscale), passed by value as the
kernel's first parameter.  Only its address tables hold pointers; its tensor sizes,
scalars and block tables are values.

A launch fills the tables only as far as its tensors and blocks go, and the rest is
left as the host had it: a block table's bytes beside a stale word can read as an
address (block_to_tensor holding tensors 32..35 as bytes 20 21 22 23, then two bytes of
an old pointer: 0x00007f3023222120, inside a block the export owned).  Relocated, those
indices became another address's bytes, and the fused AdamW kernel indexed its tables
out of bounds.  relocate.Relocator.kernel_args takes no address from these ranges.

    value_ranges(symbol, layout) -> [(from, to)]  (byte offsets in the parameter bytes)

The sizes are PyTorch's (aten/src/ATen/native/cuda/MultiTensorApply.cuh: 4 KiB
parameters, and 32 KiB ones with 16-bit block tables where the driver takes them); a
parameter whose size matches none of the layouts gets no ranges.  Pure.
"""
import re

__all__ = ["metadata_layout", "value_ranges"]

# DepthToMaxConfig<large_kernel_arg>: (tensors per depth, blocks, tensors with a scalar
# list per depth, bytes of a block_to_tensor entry)
CONFIGS = (((110, 64, 48, 36, 30), 320, (96, 64, 48, 36, 30), 1),
           ((770, 448, 336, 252, 210), 2240, (672, 448, 336, 252, 210), 2))

KINDS = re.compile(r"multi_tensor_apply_kernel.*?\d+(FusedOptimizerTensorListMetadata|TensorListScalarListMetadata|"
                   r"TensorListMetadata)I(.*?)Li(\d)E")


def _round8(n):
    return -(-n // 8) * 8


def metadata_layout(kind, depth, size):
    """[(from, to)] of a multi-tensor metadata struct of `size` bytes that can hold
    addresses: the address table (and a fused optimizer's table of step counts), or None
    where no configuration gives that size.  kind: the struct's name; depth: its n."""
    for tensors, blocks, scalar_tensors, idx in CONFIGS:
        if kind == "TensorListMetadata":
            t = tensors[depth - 1]
            candidates = [(8 * depth * t + 8 * t + blocks * idx, 4 * blocks + 4, [(0, 8 * depth * t)])]
        elif kind == "FusedOptimizerTensorListMetadata":
            t, s = tensors[depth - 1], scalar_tensors[depth - 1]
            table = 8 * depth * t + 8 * t
            candidates = [(table + 8 * s + blocks * idx, 4 * blocks + 4,
                           [(0, 8 * depth * t), (table, table + 8 * s)])]
        else:  # TensorListScalarListMetadata: scalars of 4, 8 or 16 bytes (float, double, complex double)
            s = scalar_tensors[depth - 1]
            candidates = [(8 * depth * s + 8 * s + w * s + blocks * idx, 4 * blocks, [(0, 8 * depth * s)])
                          for w in (4, 8, 16)]
        for head, tail, pointers in candidates:
            # block_to_chunk (int) is aligned to 4 after the block table
            if _round8(-(-head // 4) * 4 + tail) == size:
                return pointers
    return None


def value_ranges(symbol, layout):
    """[(from, to)]: the byte ranges of a kernel's parameters where no address lies, by
    its symbol (ATen's multi_tensor_apply_kernel: its metadata struct, parameter 0, but
    its address tables); [] for any other kernel or an unknown layout."""
    m = KINDS.search(symbol or "")
    if not m or not layout:
        return []
    off, size = layout[0]
    pointers = metadata_layout(m.group(1), int(m.group(3)), size)
    if pointers is None:
        return []
    out, at = [], off
    for lo, hi in pointers:
        if off + lo > at:
            out.append((at, off + lo))
        at = off + hi
    if at < off + size:
        out.append((at, off + size))
    return out
