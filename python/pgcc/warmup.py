"""The calls before the captures, and the state they change: warm_up() runs the callable
(torch.compile compiles on the first call, libraries load their kernels) and counts
the values it reads back to the host per call, then, where a ModuleWatch is running,
calls it once more in a fresh thread (in_fresh_thread: PyTorch keeps a cuDNN handle
and its plans per thread, so cuDNN compiles its runtime-compiled kernels again there,
a backward's too, and loads them where the watch sees their images); saved_state()/restore_state() keep a
training step's weights as they were; training_step() tells a training step;
compiled_or_eager() is torch.compile's callable, or the callable itself from the first
call torch.compile cannot run on (AOTAutograd's double backward, EAGER_ONLY).

    state = saved_state(torch, weights)
    run(*inputs)                 # a call for real: the weights change
    restore_state(state)         # ... and are as they were

Assumes PyTorch (passed in as `torch`: importing this module needs none).
"""
import contextlib
import functools
import re
import threading
import types

from .hostreads import HostReads, perturbed
from .random_state import philox_generator

__all__ = ["compiled_or_eager", "EAGER_ONLY", "in_fresh_thread", "on_capture_stream", "own_code", "restore_state",
           "saved_state", "training_step", "warm_up"]


# What torch.compile raises, at run time, for a program it cannot compile at all (PyTorch
# 2.11): torch.autograd.grad(..., create_graph=True) through a compiled function's
# backward, as a gradient penalty takes it.
EAGER_ONLY = re.compile(r"does not currently support double backward")


class compiled_or_eager:
    """torch.compile(fn), until a call raises what EAGER_ONLY matches: from that call on
    (the failed call made again) fn itself runs, eagerly, and `why` says so.  A training
    step whose compiled call failed part way has changed what it changed before the
    failure -- zero_grad(), a forward -- which a step does again anyway.

    scalars_on_device: compiled, and called, with TorchDynamo's capture_scalar_outputs,
    so that a value read with .item() and the host arithmetic on it are traced into the
    graph, where Inductor may keep them on the GPU (no read at all); a function is
    compiled from a copy of its code, whose compiled graphs are its own (TorchDynamo
    keeps them per code object, beside those of a compile without the setting)."""

    def __init__(self, torch, fn, warn, scalars_on_device=False):
        self.fn, self.warn, self.why, self.scalars_on_device = fn, warn, None, scalars_on_device
        self.call = torch.compile(own_code(fn) if scalars_on_device else fn)
        self.config = (lambda: torch._dynamo.config.patch(capture_scalar_outputs=True)) if scalars_on_device \
            else contextlib.nullcontext

    def __call__(self, *args, **kwargs):
        try:
            with self.config():
                return self.call(*args, **kwargs)
        except RuntimeError as e:
            if self.why is not None or not EAGER_ONLY.search(str(e)):
                raise
            self.why = " ".join(str(e).split())[:200]
            self.call = self.fn
            self.warn("torch.compile cannot run this callable; it is exported as it runs eagerly (its kernels "
                      "captured as PyTorch launches them, verified against the callable run eagerly)", self.why)
            return self.call(*args, **kwargs)


def own_code(fn):
    """fn, where it is a plain function, as a function of the same globals, closure and
    defaults whose code object is a copy of its own; anything else as it is."""
    if not isinstance(fn, types.FunctionType):
        return fn
    g = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    g.__kwdefaults__, g.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    return functools.update_wrapper(g, fn, assigned=("__module__", "__doc__"), updated=())


def warm_up(torch, run, inputs, weights, warmup, compile, name, prog, original, fresh_thread=False):
    """Calls run(*inputs) warmup times, and, where a call reads values back to the host,
    on other input values too (capture D's), so that torch.compile has compiled
    everything the captures run; with fresh_thread, once more in a new thread
    (in_fresh_thread); then puts back the state `original` (saved_state).  Returns how
    many values a call reads back (0: the captures are whole), and how far the last call
    advanced PyTorch's CUDA generator's Philox offset (0: it drew no random numbers on
    the GPU; random_state.py)."""
    gen = philox_generator(torch)
    drawn = 0
    with HostReads() as reads, on_capture_stream(torch):
        before = 0
        for i in range(warmup):
            prog.status(f"{name}: warm-up call {i + 1}/{warmup}" + (" (compiling)" if compile and i == 0 else ""))
            before = len(reads.seen)
            offset = gen.get_offset()
            run(*inputs)
            drawn = gen.get_offset() - offset
        per_call = len(reads.seen) - before  # (the last call's: compiling makes reads of its own)
        if per_call and compile and warmup < 2:  # (that call compiled: count again)
            before = len(reads.seen)
            run(*inputs)
            per_call = len(reads.seen) - before
        if per_call:
            # The captures split at the reads, and capture D runs on other values: the
            # compiler sees those values now (torch.compile compiles a graph after a
            # read once for the value, then again with the value as an argument).
            state = saved_state(torch, weights)
            for scale in (1.25, 1.5):
                prog.status(f"{name}: warm-up call on other input values (x{scale})")
                run(*perturbed(torch, inputs, scale))
            restore_state(state)
            run(*inputs)
        if fresh_thread and warmup:
            prog.status(f"{name}: a call in a fresh thread (the libraries' per-thread kernels made again)")
            in_fresh_thread(torch, run, inputs)
    restore_state(original)
    if reads.seen:
        prog.log(f"  {per_call} host reads in a call, the first at {reads.seen[-per_call][1]} "
                 f"({reads.seen[-per_call][0]}): the captures are split there" if per_call else
                 f"  {len(reads.seen)} host reads while compiling, none in a call: the captures are whole")
    if drawn:
        prog.log(f"  a call draws random numbers: it advances PyTorch's Philox offset by {drawn}")
    return per_call, drawn


@contextlib.contextmanager
def on_capture_stream(torch):
    """The block runs on the stream torch.cuda.graph captures on (made here where it has
    none yet), after the current stream's work and before what follows on it.  PyTorch's
    CUDA graphs want the calls before a capture there: a training step's gradient
    accumulators keep the stream of the backward that made them, and one made on the
    default stream fails a later capture ("operation would make the legacy stream depend
    on a capturing blocking stream"); libraries make their per-stream workspaces there
    once, as the captures then find them."""
    cls = torch.cuda.graphs.graph
    if getattr(cls, "default_capture_stream", None) is None:
        cls.default_capture_stream = torch.cuda.Stream()
    side, current = cls.default_capture_stream, torch.cuda.current_stream()
    side.wait_stream(current)
    try:
        with torch.cuda.stream(side):
            yield
    finally:
        current.wait_stream(side)


def in_fresh_thread(torch, run, inputs):
    """run(*inputs) in a new thread with the caller's grad mode, autocast and CUDA device
    (thread-local state that the call's results depend on); its exception is raised here.
    Its backward runs in that thread too (autograd's multithreading off): the autograd
    engine's own thread, where a training step's backward otherwise runs, keeps the
    cuDNN plans of the user's steps before the export (a ViT's flash-attention backward,
    compiled at run time), which it would never compile again."""
    grad, device = torch.is_grad_enabled(), torch.cuda.current_device()
    autocast = torch.is_autocast_enabled("cuda")
    dtype = torch.get_autocast_dtype("cuda")
    failed = []

    def call():
        try:
            with torch.cuda.device(device), torch.set_grad_enabled(grad), \
                    torch.autocast("cuda", dtype=dtype, enabled=autocast), on_capture_stream(torch), \
                    torch.autograd.set_multithreading_enabled(False):
                run(*inputs)
                torch.cuda.current_stream().synchronize()
        except BaseException as e:  # noqa: BLE001 -- raised again in the caller's thread
            failed.append(e)
    t = threading.Thread(target=call, name="pgcc-fresh-thread")
    t.start()
    t.join()
    if failed:
        raise failed[0]


def training_step(fn):
    """Whether fn is a training step: its `train` is True (an nn.Module's is a method), or
    that of the callable torch.compile wrapped (PyTorch 2.11 wraps a callable object in
    functions made by functools.wraps, which keep it as __wrapped__; dynamo's wrappers
    keep _torchdynamo_orig_callable, a bound method's object is its __self__, a compiled
    module's _orig_mod).  A compiled training step verified as inference would run under
    no_grad."""
    seen = [fn]
    for f in seen:
        if getattr(f, "train", False) is True:
            return True
        seen += [g for a in ("__wrapped__", "_torchdynamo_orig_callable", "__self__", "_orig_mod")
                 if (g := getattr(f, a, None)) is not None and len(seen) < 16]
    return False


def saved_state(torch, weights, device=None):
    """A copy of the weights (a training step's state), which a call that runs for real
    changes (a warm-up, one split at its host reads); device="cpu": in host memory."""
    return [(t, t.detach().to(device, copy=True) if device else t.detach().clone())
            for t in {id(t): t for t in weights.values()}.values()]


def restore_state(state):
    for t, saved in state or []:
        t.detach().copy_(saved)
