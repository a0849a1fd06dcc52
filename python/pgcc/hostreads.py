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
import linecache
import os
import sys

from .example_inputs import input_copy

__all__ = ["FlipRead", "flipped", "HostReads", "OPS", "perturbed", "user_line"]

OPS = ("item", "__bool__", "__int__", "__float__", "__index__")


def user_line(frames=None):
    """"file:line: code" of the innermost of frames (traceback's FrameSummary list;
    default: this call's stack) outside torch, pgcc and Python's own machinery -- the
    user's line that made a read, or raised -- or "" if none.  This call's stack is walked
    frame by frame, each file judged once per process: a read hook calls it for every read
    (a tensor's repr reads each element it prints: Dynamo's guards print the optimizer's
    state, hundreds of thousands of reads, each of which traceback.extract_stack took half a
    millisecond over)."""
    if frames is None:
        f = sys._getframe(1)
        while f is not None:
            name = f.f_code.co_filename
            if _outside(name):
                return f"{name}:{f.f_lineno}: {linecache.getline(name, f.f_lineno).strip()}"
            f = f.f_back
        return ""
    for f in reversed(frames):
        if _outside(f.filename):
            return f"{f.filename}:{f.lineno}: {(f.line or '').strip()}"
    return ""


_OURS = []      # (pgcc's folder and torch's, once known)
_OUTSIDE = {}   # file name -> whether it is outside them


def _outside(filename):
    """Whether a frame's file is the user's: not pgcc's, not torch's, not Python's own
    ("<frozen ...>", "<string>")."""
    got = _OUTSIDE.get(filename)
    if got is None:
        if not _OURS:
            import torch
            _OURS.extend((os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__))))
        got = _OUTSIDE[filename] = "<" not in filename and not os.path.abspath(filename).startswith(tuple(_OURS))
    return got


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


class FlipRead:
    """A HostReads hook that gives the program the k-th value it reads back in a call
    flipped (the other side of a branch), and keeps the value it read there (`value`; None
    until then).  One per call: it counts the call's reads."""

    def __init__(self, k):
        self.k, self.reads, self.value = k, 0, None

    def __call__(self, _t, _op, _where):
        self.reads += 1
        if self.reads - 1 != self.k:
            return None

        def after(v):
            self.value = v
            return flipped(v) if v is not None else v
        return after


def perturbed(torch, inputs, scale=1.25):
    """The inputs at other values and other addresses: floating tensors scaled by `scale`,
    the others copied as they are (token ids, masks: changing them could change what the
    program does, not only the values it reads)."""
    return [input_copy(x, scale if x.is_floating_point() else None) for x in inputs]
