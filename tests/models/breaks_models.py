"""Programs that cannot be captured whole: they read a value back to the host in the
middle of a call, which torch.compile turns into a graph break (tests/gpu/breaks_export.py
exports them; issue "Programs that cannot be captured whole").

Each builder returns (fn, inputs, weights, other) as pgcc.export takes the first three;
`other` makes inputs for a later call: other(seed, same_path) gives fresh values that
take the same path through the program as the example inputs (same_path=True) or the
other one (False; None where the program has one path).  Random weights, fixed seed.
"""
import math

import torch
import torch.nn as nn


class ItemMLP(nn.Module):
    """An MLP that divides by the largest activation, read back with .item() half-way:
    the value flows on into a kernel as a scalar."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(64, 256), nn.Linear(256, 32)

    def forward(self, x):
        h = torch.relu(self.a(x))
        m = h.abs().max().item()  # the host read
        return self.b(h / m)


@torch.compiler.disable
def damping(m):
    """Host arithmetic on a value read back, which torch.compile does not trace."""
    return math.exp(-m)


class HostMath(ItemMLP):
    """An MLP that scales by exp(-m), m the largest activation read back with .item(),
    exp computed on the host: the kernel after it takes a value the host computed, which
    the C gets from the caller through a callback scalar."""

    def forward(self, x):
        h = torch.relu(self.a(x))
        m = h.abs().max().item()  # the host read
        return self.b(h * damping(m))


class Branch(nn.Module):
    """Which of two heads runs depends on the sign of a sum read back (`if tensor:`): the
    value only chooses the path."""

    def __init__(self):
        super().__init__()
        self.a, self.up, self.down = nn.Linear(64, 64), nn.Linear(64, 16), nn.Linear(64, 16)

    def forward(self, x):
        h = torch.tanh(self.a(x))
        if h.sum() > 0:  # the host read
            return self.up(h)
        return self.down(h) * 2


class Cond(nn.Module):
    """torch.cond on a device predicate: compiled, Inductor runs it as `if pred.item():`
    between the two branches' kernels."""

    def __init__(self):
        super().__init__()
        self.a, self.up, self.down = nn.Linear(64, 64), nn.Linear(64, 16), nn.Linear(64, 16)

    def forward(self, x):
        h = torch.tanh(self.a(x))
        return torch.cond(h.sum() > 0, lambda h: self.up(h), lambda h: self.down(h) * 2, (h,))


def _module(model, x, other):
    model = model.cuda().eval()
    weights = dict(model.named_parameters())

    @torch.no_grad()
    def fn(*xs):
        return model(*xs)

    fn.model = model
    return fn, [x.cuda()], weights, other


def item_mlp():
    torch.manual_seed(0)

    def other(seed, same_path=None):
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(8, 64, generator=g).cuda()]
    return _module(ItemMLP(), torch.randn(8, 64), other)


def host_math():
    torch.manual_seed(4)

    def other(seed, same_path=None):
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(8, 64, generator=g).cuda()]
    fn, inputs, weights, other = _module(HostMath(), torch.randn(8, 64), other)
    fn.callbacks = {"cb0": lambda m: math.exp(-m)}  # what the C's caller computes from the value read
    return fn, inputs, weights, other


def branch():
    torch.manual_seed(1)
    return _two_paths(Branch(), 1)


def _two_paths(model, seed):
    """(fn, inputs, weights, other) of a model whose output depends on the sign of
    tanh(a(x)).sum(): other(seed, same_path) draws fresh inputs until one takes the path
    asked for."""
    torch.manual_seed(seed)
    x = torch.randn(8, 64)

    def positive(x):
        with torch.no_grad():
            return bool(torch.tanh(model.a(x)).sum() > 0)
    first = positive(x)

    def other(seed, same_path=True):
        g = torch.Generator().manual_seed(seed)
        for k in range(200):  # fresh values until one takes the path asked for
            y = torch.randn(8, 64, generator=g) * (1 + k % 4) * (-1) ** k
            if positive(y.cuda()) == (first if same_path else not first):
                return [y.cuda()]
        raise RuntimeError("no input found that takes the path asked for")
    return _module(model, x, other)


def cond():
    torch.manual_seed(2)
    return _two_paths(Cond(), 2)


class Generate(nn.Module):
    """Greedy generation from a tiny recurrent language model until an end-of-sequence
    token or max_new tokens: a loop that reads after every token whether to stop
    (`bool(...)`), its state -- the token, the hidden state, the output and the position
    in it -- in tensors updated in place, as a static-cache decode loop keeps it."""

    def __init__(self, vocab=32, hidden=64, max_new=16, eos=0):
        super().__init__()
        self.emb, self.cell, self.head = nn.Embedding(vocab, hidden), nn.Linear(2 * hidden, hidden), \
            nn.Linear(hidden, vocab)
        self.max_new, self.eos = max_new, eos

    def step(self, tok, h, out, pos):
        """One token, in place; whether to stop, on the device.  (A function of its own:
        torch.compile compiles it although the loop around it, with its read, runs
        eagerly.)"""
        h.copy_(torch.tanh(self.cell(torch.cat([self.emb(tok), h], -1))))
        tok.copy_(self.head(h).argmax(-1))
        out.index_copy_(0, pos, tok)
        pos += 1
        return ((tok == self.eos) | (pos >= self.max_new)).any()

    def forward(self, tok, h):
        tok, h = tok.clone(), h.clone()
        out = torch.full((self.max_new,), -1, dtype=torch.long, device=tok.device)
        pos = torch.zeros(1, dtype=torch.long, device=tok.device)
        while True:
            if bool(self.step(tok, h, out, pos)):  # the host read: stop?
                return out


def generate():
    """The example stops at an end-of-sequence token after 6 tokens: eos is the token the
    example's prompt generates 6th (one it has not generated before)."""
    torch.manual_seed(3)
    model = Generate().cuda().eval()
    tok, h = torch.tensor([5], device="cuda"), torch.randn(1, 64, device="cuda")
    with torch.no_grad():
        model.eos = -1
        model.max_new = 64
        seq = model(tok, h).tolist()
    model.max_new = 16
    model.eos = next((t for i, t in enumerate(seq) if i >= 5 and t not in seq[:i]), seq[5])

    def other(seed, same_path=None):
        g = torch.Generator().manual_seed(seed)
        return [torch.randint(0, 32, (1,), generator=g).cuda(), torch.randn(1, 64, generator=g).cuda()]
    fn, _, weights, _ = _module(model, tok, other)
    return fn, [tok, h], weights, other


class ScalerStep:
    """An fp16 autocast training step with torch.amp.GradScaler: GradScaler.step reads
    whether any gradient is inf or NaN back with .item() and skips the optimizer step if
    so (update() then lowers the scale, on the device).  The read chooses the path: the
    export holds the step that is taken and guards the read."""

    train = True

    def __init__(self):
        torch.manual_seed(40)
        self.model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64)).cuda().train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", init_scale=1024.0)

    def __call__(self, x, y):
        self.opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(self.model(x).float(), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)  # the host read: found_inf.item()
        self.scaler.update()
        return loss.detach()

    @property
    def weights(self):
        """Every state tensor: parameters, gradients, momentum, the scale and its growth
        tracker."""
        out = dict(self.model.named_parameters())
        for j, p in enumerate(self.model.parameters()):
            out[f"grad.{j}"] = p.grad
            if "momentum_buffer" in self.opt.state.get(p, {}):
                out[f"momentum.{j}"] = self.opt.state[p]["momentum_buffer"]
        out["scaler.scale"], out["scaler.growth_tracker"] = self.scaler._scale, self.scaler._growth_tracker
        return out


def scaler_step():
    step = ScalerStep()
    x, y = torch.randn(16, 64, device="cuda"), torch.randn(16, 64, device="cuda")
    step(x, y)  # the state exists before anything is captured (momentum, the scale)
    torch.cuda.synchronize()

    def other(seed, same_path=True):
        g = torch.Generator().manual_seed(seed)
        xs = [torch.randn(16, 64, generator=g).cuda(), torch.randn(16, 64, generator=g).cuda()]
        if not same_path:
            xs[0][0, 0] = float("inf")  # an inf batch: GradScaler skips the step
        return xs
    step.model_fn = step
    return step, [x, y], step.weights, other


PROGRAMS = {"item_mlp": item_mlp, "host_math": host_math, "branch": branch, "cond": cond, "scaler_step": scaler_step, "generate": generate}
