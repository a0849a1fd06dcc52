"""train_state.py on stand-ins for torch's classes (no torch here): which objects a step
refers to, their labels, whether the first step must be taken, and the state tensors'
names."""
import types

import pytest

from pgcc.errors import ExportError
from pgcc.train_state import discover, needs_first_step, state_objects, state_weights


class Tensor:
    def __init__(self, n=4, cuda=True):
        self.n, self.is_cuda, self.grad = n, cuda, None

    def numel(self):
        return self.n


class Module:
    def __init__(self, params, buffers=()):
        self._p, self._b = params, buffers

    def named_parameters(self):
        return iter(self._p)

    def named_buffers(self):
        return iter(self._b)


class Optimizer:
    def __init__(self, params, **group):
        self.param_groups = [dict(params=list(params), **group)]
        self.state = {}


class GradScaler:
    def __init__(self):
        self._scale, self._growth_tracker = None, None

    def is_enabled(self):
        return True


torch = types.SimpleNamespace(Tensor=Tensor, nn=types.SimpleNamespace(Module=Module),
                              optim=types.SimpleNamespace(Optimizer=Optimizer),
                              amp=types.SimpleNamespace(GradScaler=GradScaler), cuda=types.SimpleNamespace(amp=None))
torch.cuda.amp = types.SimpleNamespace()


def setup():
    w, b, rm = Tensor(), Tensor(), Tensor()
    net = Module([("fc.weight", w), ("fc.bias", b)], [("bn.running_mean", rm)])
    opt = Optimizer([w, b], lr=Tensor(1), momentum=0.9)
    return net, opt, w, b, rm


def test_state_names_every_tensor_once():
    net, opt, w, b, rm = setup()
    sc = GradScaler()
    assert needs_first_step(torch, state_objects(torch, (net, opt, sc)))
    opt.state = {w: {"momentum_buffer": Tensor()}, b: {"momentum_buffer": Tensor(), "step": Tensor(1, cuda=False)}}
    assert needs_first_step(torch, state_objects(torch, (net, opt, sc)))  # (the scaler's scale: none yet)
    sc._scale, sc._growth_tracker = Tensor(1), Tensor(1)
    w.grad = Tensor()
    objs = state_objects(torch, (net, opt, sc))
    assert [label for label, _ in objs] == ["model", "optimizer", "scaler"] and not needs_first_step(torch, objs)
    got = state_weights(torch, objs)
    assert list(got) == ["model.fc.weight", "model.fc.bias", "model.bn.running_mean", "model.fc.weight.grad",
                         "optimizer.group0.lr", "optimizer.fc.weight.momentum_buffer",
                         "optimizer.fc.bias.momentum_buffer", "scaler.scale", "scaler.growth_tracker"]
    assert got["model.fc.weight"] is w  # (a CPU step count is no state of the program's: left out)


def test_state_takes_only_what_holds_tensors():
    with pytest.raises(ExportError, match=r"state\[1\].*LR scheduler"):
        state_objects(torch, (setup()[0], object()))
    net, opt, *_ = setup()
    assert [label for label, _ in state_objects(torch, [net, Module([]), opt])] == ["model0", "model1", "optimizer"]


NET, OPT, *_ = setup()


def step_with_globals(x):
    OPT.zero_grad()
    return NET, x


def test_discover_a_steps_globals_closure_and_owner():
    assert [label for label, _ in discover(torch, step_with_globals)] == ["NET", "OPT"]
    net, opt, *_ = setup()

    def step(x):
        opt.zero_grad()
        return net(x)
    assert [o for _, o in discover(torch, step)] == [net, opt]

    class Trainer:
        def __init__(self):
            self.model, self.opt, self.lr = net, opt, 0.1

        def __call__(self, x):
            return self.model(x)
    t = Trainer()
    assert [label for label, _ in discover(torch, t)] == ["model", "opt"]
    assert [label for label, _ in discover(torch, t.__call__)] == ["model", "opt"]

    def forward_only(x):
        return net(x)
    assert discover(torch, forward_only) == []  # no optimizer: no training step


class Setting(Tensor):
    """A 0-dimensional tensor that knows its device, as an optimizer's lr=torch.tensor(0.05)."""

    def __init__(self, value, cuda=False, floating=True):
        super().__init__(1, cuda)
        self.value, self.floating, self.device = value, floating, "cuda:0" if cuda else "cpu"

    def dim(self):
        return 0

    def is_floating_point(self):
        return self.floating

    def to(self, device):
        return Setting(self.value, cuda=True, floating=self.floating)


def test_settings_given_as_cpu_tensors_move_to_the_parameters_device():
    from pgcc.train_state import capturable, on_device_settings
    w = Tensor()
    w.device = "cuda:0"
    cpu_lr, on_gpu = Setting(0.05), Setting(0.9, cuda=True)
    opt = Optimizer([w], lr=cpu_lr, initial_lr=Setting(0.05), momentum=on_gpu, nesterov=False,
                    count=Setting(3, floating=False))
    assert on_device_settings(torch, opt) == {"lr", "initial_lr"}
    g = opt.param_groups[0]
    assert g["lr"].is_cuda and g["lr"].value == 0.05 and g["lr"] is not cpu_lr and not cpu_lr.is_cuda
    assert g["momentum"] is on_gpu and g["nesterov"] is False and not g["count"].is_cuda
    assert on_device_settings(torch, opt) == set()  # (nothing left on the CPU)
    opt2 = Optimizer([w], lr=Setting(0.1))
    assert capturable(torch, [("optimizer", opt2)]) == ["optimizer (its lr moved to the GPU)"]
    assert state_weights(torch, [("optimizer", opt2)])["optimizer.group0.lr"] is opt2.param_groups[0]["lr"]


class SGD(Optimizer):
    """An optimizer of a kind whose update takes a CUDA tensor for its rate."""


class Adagrad(Optimizer):
    """One the export leaves a float rate to (not known to take a tensor)."""


def with_tensor(ns):
    made = []

    def tensor(value, dtype=None, device=None):
        made.append((value, dtype, device))
        return Setting(value, cuda=True)
    return types.SimpleNamespace(**vars(ns), tensor=tensor, float32="f32"), made


def test_a_float_rate_a_scheduler_drives_becomes_a_tensor_where_the_optimizer_takes_one():
    from pgcc.train_state import capturable, on_device_settings, rates_kept
    t, made = with_tensor(torch)
    w = Tensor()
    w.device = "cuda:0"
    opt = SGD([w], lr=0.1, initial_lr=0.1, momentum=0.9)  # (StepLR put its initial_lr in the group)
    assert on_device_settings(t, opt) == {"lr"}
    assert made == [(0.1, "f32", "cuda:0")] and opt.param_groups[0]["lr"].is_cuda
    assert opt.param_groups[0]["momentum"] == 0.9 and opt.param_groups[0]["initial_lr"] == 0.1  # (floats kept)
    assert state_weights(t, [("optimizer", opt)])["optimizer.group0.lr"] is opt.param_groups[0]["lr"]
    assert rates_kept(t, [("optimizer", opt)]) == []
    plain = SGD([w], lr=0.1)  # no scheduler: the float stays, and nothing is said
    assert on_device_settings(t, plain) == set() and plain.param_groups[0]["lr"] == 0.1
    assert rates_kept(t, [("optimizer", plain)]) == []
    other = Adagrad([w], lr=0.1, initial_lr=0.1)  # a scheduler, an optimizer not known to take a tensor
    assert capturable(t, [("opt", other)]) == [] and other.param_groups[0]["lr"] == 0.1
    assert rates_kept(t, [("opt", other)]) == ["opt.group0.lr (Adagrad)"]
    assert len(made) == 1


class LRScheduler:
    def step(self):
        pass


class StepLR(LRScheduler):
    pass


class ExponentialLR(LRScheduler):
    pass


def test_a_scheduler_stepped_by_its_count_inside_the_step_is_named():
    """counted_schedulers: a scheduler the step refers to and steps, whose rate follows its
    Python count (StepLR), is named with the line that steps it; ExponentialLR (the rate
    times gamma every step), a scheduler the step does not step, and one stepped in a
    comment are not."""
    from pgcc.train_state import counted_schedulers
    t = types.SimpleNamespace(**vars(torch))
    t.optim = types.SimpleNamespace(Optimizer=Optimizer, lr_scheduler=types.SimpleNamespace(LRScheduler=LRScheduler))
    sched, expo, unused = StepLR(), ExponentialLR(), StepLR()

    def step():
        expo.step()
        unused.get_last_lr = None  # (referred to, not stepped: unused.step( only in this comment)
        sched.step()
    found = counted_schedulers(t, step)
    assert [(label, cls) for label, cls, _ in found] == [("sched", "StepLR")]
    assert found[0][2].endswith(f"test_train_state.py:{step.__code__.co_firstlineno + 3}")

    def no_scheduler_stepped():
        return expo.step()
    assert counted_schedulers(t, no_scheduler_stepped) == []
    assert counted_schedulers(torch, step) == []  # (a torch without lr_scheduler: nothing to judge)
