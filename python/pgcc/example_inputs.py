"""The callable's inputs and outputs as the export sees them: example_inputs checked up
front, before anything runs or is written (CUDA tensors on one device, dense; Python
numbers; 0-dimensional CPU tensors), pytrees flattened (structure.py), the leaves made
what the program takes (as_exported: a 0-dimensional CPU tensor becomes a CUDA one, an
input whose elements share memory -- an expanded one, stride 0 -- a contiguous copy),
and the callable wrapped as a function of
the flat tensors that returns its outputs' tensors flat (FlatCall), recording the
structure, each tensor's layout (sizes, strides, storage offset) and the outputs that
are inputs, weights or earlier outputs (aliases.py) for NAME.export.json, which
pgcc.load reads.

    leaves, spec = flat_inputs(torch, (x, {"mask": m}))
    run = FlatCall(torch, torch.compile(fn), spec)   # run(*leaves) -> tuple of tensors

Takes torch as an argument (the CPU tests give stand-ins); imports it nowhere.
"""
from .aliases import describe, find
from .errors import ExportError
from .structure import flatten, leaf_paths, unflatten

__all__ = ["as_exported", "check_inputs", "flat_inputs", "FlatCall", "input_copy", "layout", "leaf_grads",
           "overlapping", "record"]


def input_copy(x, scale=None):
    """A copy of input tensor x at another address (its values times scale, where given),
    a leaf of autograd as x is: x.clone() of an x that requires grad -- a step that took
    torch.autograd.grad with respect to its input set that, in place -- would be a node
    of x's graph, whose backward runs on the stream the copy was made on; a capture of the
    step with the copy then fails ("operation would make the legacy stream depend on a
    capturing blocking stream")."""
    y = x.detach().clone() if scale is None else x.detach() * scale
    return y.requires_grad_() if x.requires_grad else y


def leaf_grads(torch, xs):
    """[(x, x.grad)] of the input tensors that are autograd leaves: those a step that
    differentiates with respect to its input accumulates into, once it has set
    requires_grad on them (the export clears their .grad before each capture and puts the
    caller's back after; a non-leaf gets no .grad, and reading it only warns)."""
    return [(x, x.grad) for x in xs if isinstance(x, torch.Tensor) and x.is_leaf]


def layout(t):
    """A tensor's layout as captured: {"shape", "stride", "offset"} (storage offset, in elements)."""
    return {"shape": list(t.shape), "stride": list(t.stride()), "offset": int(t.storage_offset())}


def check_inputs(torch, leaves):
    """ExportError for the first input leaf an export cannot take: a tensor not on a CUDA
    device (but a 0-dimensional CPU tensor: a learning rate, a temperature), a sparse or
    otherwise non-strided one, tensors on different devices; anything but tensors and
    Python numbers."""
    device = None
    for i, x in enumerate(leaves):
        what = f"example input {i}"
        if isinstance(x, torch.Tensor):
            if getattr(x, "is_sparse", False) or x.layout != torch.strided:
                raise ExportError(f"{what} is a {x.layout} tensor: only dense (strided) tensors are exported; pass "
                                  "x.to_dense()")
            if x.device.type != "cuda":
                if x.dim() == 0 and x.device.type == "cpu":
                    continue  # (a CUDA tensor in the program: as_exported)
                raise ExportError(f"{what} is on {x.device}, shape {list(x.shape)}: an export's inputs are CUDA "
                                  "tensors (x.cuda())")
            if device is None:
                device = (x.device, i)
            elif x.device != device[0]:
                raise ExportError(f"{what} is on {x.device}, example input {device[1]} on {device[0]}: an export's "
                                  "inputs are on one device")
        elif not isinstance(x, (bool, int, float)):
            raise ExportError(f"{what} is a {type(x).__name__}: an export takes tensors and Python numbers")


def flat_inputs(torch, example_inputs):
    """(the input leaves, checked and made what the program takes (as_exported), and the
    structure of the inputs as a tuple of arguments): example_inputs is a tuple or list
    of arguments, each a tensor, a number or a pytree of them, or one tensor."""
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    leaves, spec = flatten(args, lambda x: isinstance(x, torch.Tensor), numbers="leaf", where="example_inputs",
                           caches=False)
    check_inputs(torch, leaves)
    return as_exported(torch, leaves), spec


def overlapping(shape, stride):
    """Whether a tensor of shape and stride may reach one element by two indices (an
    expanded tensor: stride 0 along a dimension of more than one element): whether,
    its dimensions of more than one element sorted by stride, one's stride is not past
    the reach of those before it.  No elements: False."""
    if any(n == 0 for n in shape):
        return False
    reach = 0  # (the largest offset the dimensions so far reach)
    for n, s in sorted(((n, abs(s)) for n, s in zip(shape, stride) if n > 1), key=lambda d: d[1]):
        if s <= reach:
            return True
        reach += (n - 1) * s
    return False


def as_exported(torch, leaves):
    """The input leaves as the program takes them, the callable called on these in the
    export: a 0-dimensional CPU tensor becomes a CUDA tensor of its value on the inputs'
    device (the program's C takes it as a 0-dimensional input; pgcc.load's call takes
    the CPU tensor or a Python number for it and copies it over), a tensor whose elements
    share memory (an expanded one) a contiguous copy (the program takes its elements;
    the call copies such an argument so, as CUDA Graph Trees copies inputs into its
    static buffers).  Other leaves are returned as they are."""
    cuda = [x.device for x in leaves if isinstance(x, torch.Tensor) and x.device.type == "cuda"]
    out = []
    for x in leaves:
        if isinstance(x, torch.Tensor):
            if x.device.type == "cpu" and x.dim() == 0:
                x = x.to(cuda[0] if cuda else "cuda")
            elif overlapping(tuple(x.shape), tuple(x.stride())):
                x = x.contiguous()
        out.append(x)
    return out


def record(torch, out):
    """(the output's tensor leaves, its spec): the leaves checked (dense CUDA tensors)."""
    leaves, spec = flatten(out, lambda x: isinstance(x, torch.Tensor), where="output")
    for i, t in enumerate(leaves):
        if getattr(t, "is_sparse", False) or t.layout != torch.strided:
            raise ExportError(f"output tensor {i} is a {t.layout} tensor: only dense outputs are exported; return "
                              "it .to_dense()")
        if t.device.type != "cuda":
            raise ExportError(f"output tensor {i} is on {t.device}: an export's outputs are CUDA tensors")
    return leaves, spec


class FlatCall:
    """fn as a function of the flat input leaves, returning its output's tensors as a
    tuple: calls fn with the inputs' structure rebuilt (in_spec), and records the
    output's structure (.spec) and its tensors' layouts (.layouts) -- the same on every
    call, or an ExportError (a Python number returned that changed, a structure that
    changed)."""

    def __init__(self, torch, fn, in_spec, weights=None):
        self.torch, self.fn, self.in_spec = torch, fn, in_spec
        self.weights = weights if weights is not None else {}  # {name: tensor}: outputs that are views of one
        self.spec, self.layouts, self.aliases, self._weights = None, None, None, None

    def __call__(self, *leaves):
        args = unflatten(self.in_spec, leaves)
        out = self.fn(*args)
        tensors, spec = record(self.torch, out)
        # (detached, the same storage: a loss returned as it is holds its autograd graph,
        # which a capture keeping its outputs would keep alive, gradient accumulators and
        # all; what made such steps capture was the warm-up on the capture stream,
        # warmup.on_capture_stream)
        tensors = [t.detach() if t.requires_grad else t for t in tensors]
        if self.spec is not None and spec != self.spec:
            raise ExportError(f"the callable's output changed its structure between calls: {self.spec} then {spec} "
                              "(a Python number returned is exported as a constant: it must not change)")
        self.spec, self.layouts = spec, [layout(t) for t in tensors]
        if self._weights is None:  # (described once: a weight stays where it is)
            self._weights = [(n, describe(w)) for n, w in self.weights.items()
                             if isinstance(w, self.torch.Tensor)]
        self.aliases = find([describe(t) for t in tensors],
                            [describe(x) if isinstance(x, self.torch.Tensor) else None for x in leaves], self._weights)
        return tuple(tensors)

    def structure(self, inputs):
        """What NAME.export.json records: the inputs' and outputs' structure, each leaf's
        name as Python reaches it (args[1]['mask'], output['past_key_values'].layers[0].keys;
        the program's in0.., out0.. in this order), the tensors' layouts, and which outputs
        are inputs, earlier outputs or weights, or views of them (aliases.py)."""
        return {"inputs": self.in_spec, "outputs": self.spec,
                "input_paths": leaf_paths(self.in_spec, "args"), "output_paths": leaf_paths(self.spec, "output"),
                "input_layouts": [layout(x) if isinstance(x, self.torch.Tensor) else None for x in inputs],
                "output_layouts": self.layouts, "output_aliases": self.aliases}
