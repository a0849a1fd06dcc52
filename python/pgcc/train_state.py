"""A training step's state, found for the user.

`pgcc.export(step, batch, out, state=(model, optimizer, scaler))` -- or, with no state
and no weights given, the modules, optimizers and GradScalers the step's own code refers
to (its globals and closure, or the attributes of the object it is a method of:
discover) -- makes the export's weights from them (state_weights):

- a module's parameters and buffers (BatchNorm's running statistics among them);
- the gradients a parameter holds (a step that zeroes them in place, or accumulates);
- an optimizer's per-parameter state (momentum buffers, Adam's moments and step
  counts) and any tensor among its param groups' settings (a learning rate given as a
  tensor, or given as a float that an LR scheduler drives, which the export makes a
  tensor: on_device_settings; the scheduler then changes it in place);
- a GradScaler's scale and growth tracker.

Names are the objects' labels (the variable names discovery found them under; else
model, optimizer, scaler) joined with the module's names for parameters: model.fc.weight,
optimizer.fc.weight.exp_avg, scaler.scale.  An optimizer holds no state before its first
step, nor a GradScaler its scale: needs_first_step says so, and export() then takes that
step itself (the compiled step, once) before it reads the state.

Assumes PyTorch (passed in as `torch`); importing this module needs none.
"""
import inspect

from .errors import ExportError

__all__ = ["capturable", "counted_schedulers", "discover", "kind_of", "needs_first_step", "on_device_settings",
           "rates_kept", "referenced", "state_objects", "state_weights"]


def kind_of(torch, obj):
    """"module", "optimizer", "scaler" or None."""
    if isinstance(obj, torch.nn.Module):
        return "module"
    if isinstance(obj, torch.optim.Optimizer):
        return "optimizer"
    scalers = tuple(c for c in (getattr(torch.amp, "GradScaler", None), getattr(torch.cuda.amp, "GradScaler", None))
                    if isinstance(c, type))
    if scalers and isinstance(obj, scalers):
        return "scaler"
    return None


def unwrapped(fn):
    """The callable torch.compile or functools.wraps wrapped, as far down as it goes."""
    seen = 0
    while seen < 16:
        inner = next((getattr(fn, a) for a in ("_torchdynamo_orig_callable", "__wrapped__", "_orig_mod")
                      if getattr(fn, a, None) is not None), None)
        if inner is None:
            return fn
        fn, seen = inner, seen + 1
    return fn


def referenced(fn):
    """({label: object} fn's code refers to by name -- a function's globals and closure; a
    bound method's or a callable object's attributes --, the function or None)."""
    fn = unwrapped(fn)
    found = {}
    if inspect.ismethod(fn) or (not inspect.isfunction(fn) and not inspect.isbuiltin(fn)):
        owner = fn.__self__ if inspect.ismethod(fn) else fn
        found.update(vars(owner) if hasattr(owner, "__dict__") else {})
    func = fn.__func__ if inspect.ismethod(fn) else fn if inspect.isfunction(fn) else None
    if func is not None:
        try:
            cv = inspect.getclosurevars(func)
        except (TypeError, ValueError):
            cv = None
        if cv is not None:
            found.update(cv.globals)
            found.update(cv.nonlocals)
    return found, func


def discover(torch, fn):
    """[(label, object)]: the modules, optimizers and GradScalers fn's code refers to by
    name (referenced()), modules first; [] where fn refers to no optimizer (no training
    step)."""
    found, _ = referenced(fn)
    objs = [(label, obj, kind_of(torch, obj)) for label, obj in found.items()]
    objs = [(label, obj, k) for label, obj, k in objs if k]
    if not any(k == "optimizer" for _, _, k in objs):
        return []
    order = {"module": 0, "optimizer": 1, "scaler": 2}
    return [(label, obj) for label, obj, k in sorted(objs, key=lambda o: order[o[2]])]


def state_objects(torch, state):
    """[(label, object)] of state= (one object or a tuple/list of them): each a module,
    an optimizer or a GradScaler (an LR scheduler holds no tensor: its optimizer's
    learning rate is one where given as a tensor); labels by kind, numbered where a
    kind comes twice."""
    items = list(state) if isinstance(state, (tuple, list)) else [state]
    kinds = []
    for i, obj in enumerate(items):
        k = kind_of(torch, obj)
        if k is None:
            raise ExportError(f"state[{i}] is a {type(obj).__module__}.{type(obj).__qualname__}: state= takes modules, "
                              "optimizers and GradScalers (an LR scheduler's learning rate is its optimizer's; give it "
                              "as a tensor, lr=torch.tensor(0.01), to change it between calls)")
        kinds.append(k)
    base = {"module": "model", "optimizer": "optimizer", "scaler": "scaler"}
    out = []
    for obj, k in zip(items, kinds):
        n = sum(1 for x in kinds if x == k)
        out.append((base[k] if n == 1 else f"{base[k]}{sum(1 for _, o in out if kind_of(torch, o) == k)}", obj))
    return out


def needs_first_step(torch, objs):
    """Whether an optimizer of objs has no state yet, or a GradScaler no scale: the state
    they make at the first step does not exist to be exported."""
    for _, obj in objs:
        k = kind_of(torch, obj)
        if k == "optimizer" and not obj.state:
            return True
        if k == "scaler" and obj.is_enabled() and getattr(obj, "_scale", None) is None:
            return True
    return False


def capturable(torch, objs):
    """Makes every optimizer of objs that keeps its step counts on the host (Adam, AdamW
    and their kin with capturable=False, not fused) capturable, as PyTorch's CUDA graphs
    require of an optimizer step: the counts moved to their parameters' devices, where
    the captured step advances them, instead of a count the capture would bake in.  The
    update is the same computation, done on the device; settings given as CPU tensors
    go to the device too (on_device_settings).  Returns the optimizers changed (labels,
    with the settings moved)."""
    changed = []
    for label, obj in objs:
        if kind_of(torch, obj) != "optimizer":
            continue
        groups = [g for g in obj.param_groups if g.get("capturable") is False and not g.get("fused")]
        for g in groups:
            g["capturable"] = True
            for p in g["params"]:
                st = obj.state.get(p, {})
                step = st.get("step")
                if isinstance(step, torch.Tensor) and not step.is_cuda:
                    st["step"] = step.to(device=p.device, dtype=torch.float32)
        moved = on_device_settings(torch, obj)
        if groups or moved:
            changed.append(label + (f" (its {', '.join(sorted(moved))} moved to the GPU)" if moved else ""))
    return changed


# Optimizers whose update takes a learning rate given as a CUDA tensor (torch.optim's own, in
# every implementation: for-loop, foreach, fused, capturable): a float rate an LR scheduler
# drives is made one for them
TENSOR_LR = ("SGD", "Adam", "AdamW")


def scheduled_float(group):
    """Whether a param group's learning rate is a Python float an LR scheduler drives (the
    scheduler put its initial_lr in the group)."""
    return "initial_lr" in group and isinstance(group.get("lr"), float)


def on_device_settings(torch, opt):
    """Moves an optimizer's settings given as CPU tensors (lr=torch.tensor(0.01), as
    PyTorch's compiled-optimizer tutorial writes it; the initial_lr an LR scheduler keeps
    beside it) to their parameters' device, and makes a learning rate given as a Python
    float a CUDA tensor of its value where an LR scheduler drives it (the scheduler put
    its initial_lr in the group); returns their keys.  On the CPU, the compiled step
    reads such a tensor with .item() into a kernel's argument, and a scheduler stepped
    inside the step changes it with a CPU operation; a float is a constant of the
    compiled code: neither is in a CUDA graph, so the program would keep the captured
    rate for ever.  On the GPU, the rate is a state tensor (optimizer.group0.lr) that a
    scheduler stepped inside the step changes with a kernel of the step, and that the
    caller writes where the scheduler runs between calls (Program.weight_tensor).  A
    float rate of another optimizer stays a float (rates_kept says so)."""
    moved = set()
    for g in opt.param_groups:
        device = next((p.device for p in g["params"] if p.is_cuda), None)
        if device is None:
            continue
        for key, v in list(g.items()):
            if isinstance(v, torch.Tensor) and not v.is_cuda and v.dim() == 0 and v.is_floating_point():
                g[key] = v.to(device)
                moved.add(key)
        if type(opt).__name__ in TENSOR_LR and scheduled_float(g) and not g.get("differentiable"):
            g["lr"] = torch.tensor(g["lr"], dtype=torch.float32, device=device)
            moved.add("lr")
    return moved


def rates_kept(torch, objs):
    """The labels of objs' optimizers (with the group) whose learning rate an LR scheduler
    drives but is still a Python float after on_device_settings: the program keeps the
    rate it was exported with, whatever the scheduler does later."""
    out = []
    for label, obj in objs:
        if kind_of(torch, obj) == "optimizer":
            out += [f"{label}.group{i}.lr ({type(obj).__name__})" for i, g in enumerate(obj.param_groups)
                    if scheduled_float(g)]
    return out


def state_weights(torch, objs):
    """{name: tensor}: every CUDA tensor of objs' state (the module docstring's list),
    each once (the first name it is met under), in a stable order."""
    out, seen = {}, set()

    def add(name, t):
        if isinstance(t, torch.Tensor) and t.is_cuda and t.numel() and id(t) not in seen:
            seen.add(id(t))
            out[name] = t

    names = {}  # parameter -> its name in the optimizers' state: the module's name (with its label where several)
    modules = [(label, obj) for label, obj in objs if kind_of(torch, obj) == "module"]
    for label, obj in modules:
        for n, p in obj.named_parameters():
            names.setdefault(id(p), n if len(modules) == 1 else f"{label}.{n}")
            add(f"{label}.{n}", p)
        for n, b in obj.named_buffers():
            add(f"{label}.{n}", b)
    for label, obj in objs:
        if kind_of(torch, obj) != "module":
            continue
        for n, p in obj.named_parameters():
            if p.grad is not None:
                add(f"{label}.{n}.grad", p.grad)
    for label, obj in objs:
        k = kind_of(torch, obj)
        if k == "optimizer":
            for g, group in enumerate(obj.param_groups):
                for key, v in group.items():
                    if key != "params":
                        add(f"{label}.group{g}.{key}", v)
                for i, p in enumerate(group["params"]):
                    pname = names.get(id(p), f"group{g}.param{i}")
                    for key, v in obj.state.get(p, {}).items():
                        add(f"{label}.{pname}.{key}", v)
                    if p.grad is not None and id(p) not in names:
                        add(f"{label}.{pname}.grad", p.grad)
        elif k == "scaler":
            add(f"{label}.scale", getattr(obj, "_scale", None))
            add(f"{label}.growth_tracker", getattr(obj, "_growth_tracker", None))
    return out


# LR schedulers whose rate, after their first step, does not follow their Python step count:
# ExponentialLR multiplies the rate by gamma at every step (a kernel of the step where the
# rate is a tensor), so a program that captured it stepping follows it for ever.  Every other
# one computes the rate from its count (StepLR: `last_epoch % step_size`; cosine, linear,
# one-cycle, lambda schedules; ReduceLROnPlateau from a metric read on the host).
COUNT_FREE = ("ExponentialLR",)


def counted_schedulers(torch, fn):
    """[(label, class name, "file:line" or None)]: the LR schedulers fn's code refers to
    by name and steps (`label.step(` in its source) whose rate follows their step count, a
    Python number the compiled code reads as a constant: the program, which replays the
    GPU work of the calls it captured, would keep their rate of those calls."""
    base = getattr(getattr(getattr(torch, "optim", None), "lr_scheduler", None), "LRScheduler", None) or \
        getattr(getattr(getattr(torch, "optim", None), "lr_scheduler", None), "_LRScheduler", None)
    if not isinstance(base, type):
        return []
    found, func = referenced(fn)
    try:
        lines, first = inspect.getsourcelines(func) if func is not None else ([], 0)
        path = inspect.getsourcefile(func) if func is not None else None
    except (OSError, TypeError):
        lines, first, path = [], 0, None
    out = []
    for label, obj in found.items():
        if not isinstance(obj, base) or type(obj).__name__ in COUNT_FREE:
            continue
        at = next((k for k, ln in enumerate(lines) if f"{label}.step(" in ln.split("#")[0]), None)
        if at is not None:
            out.append((label, type(obj).__name__, f"{path}:{first + at}" if path else None))
    return out
