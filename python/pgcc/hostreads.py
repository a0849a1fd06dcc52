"""Host reads: where a callable reads a value of a CUDA tensor back to the host in the
middle of a call (`.item()`, `bool(t)` as in `if t:`, `int(t)`, `float(t)`, an index),
which no CUDA graph can hold.  torch.compile splits such a program at the read (a graph
break) and runs the read eagerly between its compiled graphs.

HostReads wraps those Tensor methods for as long as it is entered: each read of a
one-element CUDA tensor is told to a hook first, with the tensor, the operation and the
user's line that made it.  export.py counts the reads while warming up, and splits its
captures at them (capture.Capture): the stretch before a read is captured, replayed so
that the value is real, the read made eagerly, and capture goes on after it.  Reads of
CPU tensors (Inductor's own `.item()` of a 0-d CPU scalar) are not host reads and pass
through untouched.

perturbed(inputs) gives the inputs at other values (floating inputs scaled), on which a
capture tells which kernel arguments follow the values read (hostvalues.py).

Imports torch only when entered.
"""
import os
import traceback

from .example_inputs import input_copy

__all__ = ["flipped", "HostReads", "OPS", "perturbed", "user_line"]

OPS = ("item", "__bool__", "__int__", "__float__", "__index__")


def user_line(frames=None):
    """"file:line: code" of the innermost of frames (traceback's FrameSummary list;
    default: this call's stack) outside torch, pgcc and Python's own machinery -- the
    user's line that made a read, or raised -- or "" if none."""
    import torch
    ours = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__)))
    for f in reversed(traceback.extract_stack() if frames is None else frames):
        if not os.path.abspath(f.filename).startswith(ours) and "<" not in f.filename:
            return f"{f.filename}:{f.lineno}: {(f.line or '').strip()}"
    return ""


class HostReads:
    """While entered, every host read of a CUDA tensor calls hook(tensor, op, where) before
    it is made; what the hook returned (None, or a callable) is called after it with the
    value read (None if the read failed) and gives the value the program gets; `seen`
    lists (op, where) of each read (hook or not)."""

    def __init__(self, hook=None):
        self.hook, self.seen, self.saved = hook, [], {}

    def __enter__(self):
        import torch
        for op in OPS:
            original = getattr(torch.Tensor, op)
            self.saved[op] = (original, op in vars(torch.Tensor))  # (else inherited from the C base)

            def wrapped(t, *a, _op=op, _original=original, **kw):
                if t.is_cuda and t.numel() == 1:
                    where = user_line()
                    self.seen.append((_op, where))
                    after = self.hook(t, _op, where) if self.hook is not None else None
                    try:
                        got = _original(t, *a, **kw)
                    except BaseException:
                        if after is not None:
                            after(None)
                        raise
                    return after(got) if after is not None else got
                return _original(t, *a, **kw)
            # torch.compile must not trace into the wrapper (it would compile the hook)
            setattr(torch.Tensor, op, torch.compiler.disable(wrapped, recursive=True))
        return self

    def __exit__(self, *exc):
        import torch
        for op, (original, own) in self.saved.items():
            if own:
                setattr(torch.Tensor, op, original)
            else:
                delattr(torch.Tensor, op)
        self.saved = {}
        return False


def flipped(v):
    """The value that takes the other side of a branch: not v for a bool, 0 for a nonzero
    number and 1 for zero (a flag such as GradScaler's found_inf)."""
    if isinstance(v, bool):
        return not v
    return type(v)(0 if v else 1)


def perturbed(torch, inputs, scale=1.25):
    """The inputs at other values and other addresses: floating tensors scaled by `scale`,
    the others copied as they are (token ids, masks: changing them could change what the
    program does, not only the values it reads)."""
    return [input_copy(x, scale if x.is_floating_point() else None) for x in inputs]
