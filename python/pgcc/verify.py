"""Checking an export after it is written: build it (pgcc, libpgrt), load it, run it on
the example inputs and on copies of them at new addresses -- the last call's in memory
far away, whose addresses differ in the high 32 bits too (farmem.py) -- with its
outputs at new addresses too and its arena filled with 0xff bytes before every call,
and compare
each output with the callable's own on the same inputs.  Bit-identical passes; else
the largest difference over the reference's largest magnitude must be within the
dtype's tolerance (TOL).  Prints `PASS NAME: max error X (bit-identical|within tol)`
or raises ExportError naming the output.

Assumes a GPU, PyTorch, and a toolchain (toolchain.py); a callable whose calls change
its state (a training step) is not verified here.  compare() is pure over tensors.
"""
import contextlib

from .errors import ExportError
from .farmem import far

TOL = {"float32": 1e-5, "bfloat16": 1e-2, "float16": 1e-3, "float64": 1e-12}


def rel_err(got, ref):
    """max |got - ref| / max |ref| (NaN counts as infinite; exact for non-floats)."""
    import torch
    if not ref.is_floating_point():
        return 0.0 if torch.equal(got, ref) else float("inf")
    g, r = got.double(), ref.double()
    if r.numel() == 0:
        return 0.0
    e = ((g - r).abs().max() / r.abs().max().clamp_min(1e-30)).item()
    return e if e == e else float("inf")


def compare(got, ref):
    """(bit-identical, relative error, tolerance) of one output against its reference."""
    import torch
    same = got.shape == ref.shape and got.dtype == ref.dtype and torch.equal(
        got.contiguous().view(torch.uint8) if got.numel() else got,
        ref.contiguous().view(torch.uint8) if ref.numel() else ref)
    tol = TOL.get(str(ref.dtype)[6:], 0.0)
    return same, (0.0 if same else rel_err(got, ref)), tol


def verify(result, fn, inputs, calls=3, progress=None, build_dir=None):
    """result: an ExportResult (or the export's directory); fn: the callable as exported
    (compiled, if it was); inputs: the example inputs.  Returns the PASS line."""
    import torch
    from .loader import load
    from .progress import Progress

    prog = progress or Progress(prefix="pgcc-export")
    out_dir = getattr(result, "out_dir", result)
    name = getattr(result, "name", None)
    prog.status("verify: building the export with pgcc and libpgrt")
    p = load(out_dir, name=name, build_dir=build_dir)
    name = p.name
    worst, identical, keep, far_high = 0.0, True, [], False
    try:
        for call in range(calls + 1):
            prog.status(f"verify: call {call + 1}/{calls + 1}")
            where = far(torch) if call == calls else contextlib.nullcontext()
            with where as memory:  # the last call's inputs and outputs far away: other high address bits
                xs = list(inputs) if call == 0 else [x.clone() for x in inputs]  # new addresses after the first
                p.fill_arena(0xFF)
                got = p(*xs)
            keep += xs + [memory]  # alive: the next call's are elsewhere
            if call == calls:
                far_high = all(x.data_ptr() >> 32 != y.data_ptr() >> 32 for x, y in zip(xs, inputs) if x.numel())
            got = list(got) if isinstance(got, tuple) else [got]
            keep += got
            with torch.no_grad():
                ref = fn(*xs)
            ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
            torch.cuda.synchronize()
            if len(ref) != len(got):
                raise ExportError(f"verify {name}: the program has {len(got)} outputs, the callable {len(ref)}")
            for i, (g, r) in enumerate(zip(got, ref)):
                same, err, tol = compare(g, r.detach())
                identical = identical and same
                worst = max(worst, err)
                if not same and not err <= tol:
                    raise ExportError(f"verify {name}: output {i} (out{i}) differs from the callable's on call {call} "
                                      f"(inputs {'as given' if call == 0 else 'copied to new addresses'}"
                                      f"{', far away: other high address bits' if call == calls else ''}, arena "
                                      f"poisoned): max error {err:.3g} relative to its largest value, tolerance "
                                      f"{tol:g} for {r.dtype}")
    finally:
        prog.done()
        p.close()
    line = (f"PASS {name}: max error {worst:.3g} ({'bit-identical' if identical else 'within tol'}; {calls + 1} calls, "
            f"the last {'at addresses with other high 32 bits' if far_high else 'NOT far away (high bits the same)'})")
    prog.log(line)
    return line
