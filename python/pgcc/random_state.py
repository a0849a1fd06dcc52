"""The CUDA generator's Philox state in the captures, made the program's random-number
state (a buffer of role rng, docs/graph-format.md).

Inside a CUDA graph, PyTorch's random kernels (ATen's dropout, bernoulli, rand, randn,
multinomial, rrelu, and the randint that makes Inductor's seeds for its own Triton
random) take a PhiloxCudaState by value, 32 bytes: a pointer to the generator's seed
tensor, a pointer to its offset tensor, the kernel's u64 offset within the graph, and
`captured` (1).  A replay fills the two tensors with the generator's seed and offset and
advances the offset by what the graph draws (PyTorch's CUDAGraph::replay).  Here:

- philox_generator(torch): the current device's default CUDA generator;
- find_philox(torch, captures): the two tensors' addresses in each capture, read off
  the kernels' parameter bytes (each candidate's seed pointer must hold the generator's
  seed); None where no kernel draws random numbers;
- rng_buffer(bufs, found, increment): the export's buffer `rng` (16 bytes: the seed at 0,
  the offset at 8) that those addresses map to, with `increment`, how far a call
  advances the offset (warmup.py measures it on the calls before the captures);
- rewound(p): a block after which PyTorch's generator is back where it was (verify runs
  the program and then the callable on the same draws).

Assumes PyTorch (passed in as `torch`); importing this module needs none.
"""
import contextlib
import struct

from .cuda import NODE_KERNEL, read_device
from .errors import ExportError

__all__ = ["find_philox", "philox_generator", "rewound", "rng_buffer", "PHILOX_BYTES"]

PHILOX_BYTES = 32  # sizeof(at::PhiloxCudaState): two pointers, a u64, a bool, padding


def philox_generator(torch):
    """The current CUDA device's default generator (CUDA initialised first: the list is
    empty before)."""
    torch.cuda.init()
    return torch.cuda.default_generators[torch.cuda.current_device()]


def candidates(blob, layout):
    """(seed pointer, offset pointer) of every parameter of `layout` that is laid out as a
    captured PhiloxCudaState: 32 bytes, two distinct nonzero 8-byte words, a u64 offset
    within the graph below 2^48, then `captured` = 1."""
    out = []
    for off, size in layout:
        if size != PHILOX_BYTES or off + size > len(blob):
            continue
        seed, offset, intra = struct.unpack_from("<QQQ", blob, off)
        if seed and offset and seed != offset and intra < (1 << 48) and blob[off + 24] == 1:
            out.append((seed, offset))
    return out


def find_philox(torch, captures):
    """{capture number: (seed address, offset address)} where capture A's kernels take
    PyTorch's Philox state (0 is A, 1 B, 2 C), or None.  A candidate counts only where
    its seed pointer holds the generator's seed; two generators' states in one capture,
    or a capture without the state capture A has, are an ExportError."""
    gen = philox_generator(torch)
    seed = gen.initial_seed()
    found = {}
    for c, cap in enumerate(captures.caps):
        pairs = set()
        for n in cap.nodes:
            if n["type"] != NODE_KERNEL or "bytes" not in n:
                continue
            for s, o in candidates(n["bytes"], n["layout"]):
                if (s, o) in pairs:
                    continue
                try:
                    held = struct.unpack("<Q", read_device(s, 8))[0]
                except RuntimeError:
                    continue  # (no device memory: not the generator's)
                if held == seed:
                    pairs.add((s, o))
        if len(pairs) > 1:
            raise ExportError(f"capture {'ABC'[c]}: kernels draw random numbers from {len(pairs)} generators' states "
                              f"({', '.join(f'seed at 0x{s:x}' for s, _ in sorted(pairs))}); an export draws from one, "
                              "the current device's default generator")
        if pairs:
            found[c] = pairs.pop()
    if not found:
        return None
    if len(found) != len(captures.caps):
        raise ExportError("the captures disagree on random numbers: capture A's kernels draw from PyTorch's generator "
                          "and another capture's do not")
    return found


def rng_buffer(bufs, found, increment):
    """The buffer `rng` (role rng, 16 bytes) that the generator's seed and offset tensors
    of every capture map to (model.Buffer.places), added to bufs (relocate.Buffers)."""
    if increment is None:
        raise ExportError("kernels of the call draw random numbers from PyTorch's generator: an export with buckets "
                          "does not take such a callable yet (export it without buckets)")
    if increment <= 0:
        raise ExportError("kernels of the call draw random numbers from PyTorch's generator, but a call did not "
                          "advance the generator's offset (measured on the calls before the captures)")
    b = bufs.add(name="rng", size=16, role="rng", places={c: {s: 0, o: 8} for c, (s, o) in found.items()})
    b.increment = increment
    return b


@contextlib.contextmanager
def rewound(p):
    """PyTorch's generator back after the block where it was before it (a program p that
    draws random numbers advanced it: the callable then draws the same numbers)."""
    gen = p.generator if p.rng_increment else None
    offset = gen.get_offset() if gen is not None else None
    try:
        yield
    finally:
        if gen is not None:
            gen.set_offset(offset)
