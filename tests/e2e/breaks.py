"""Programs that cannot be captured whole: they read a value back to the host in the
middle of a call, which torch.compile turns into a graph break (tests/gpu/breaks.py
exports them; issue "Programs that cannot be captured whole").

Each builder returns (fn, inputs, weights, other) as pgcc.export takes the first three;
`other` makes inputs for a later call: other(seed, same_path) gives fresh values that
take the same path through the program as the example inputs (same_path=True) or the
other one (False; None where the program has one path).  Random weights, fixed seed.
"""
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


def branch():
    torch.manual_seed(1)
    model = Branch()
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


PROGRAMS = {"item_mlp": item_mlp, "branch": branch}
