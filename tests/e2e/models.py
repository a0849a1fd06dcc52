"""The models the end-to-end tests and benchmarks export (tests/gpu/e2e.py).

Each builder returns (fn, inputs, weights) as pgcc-export takes them: fn(*inputs)
gives the output; weights names the tensors fn reads besides its inputs.  Weights
are random from a fixed seed; fp32 throughout.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """x = 0.5 x + gelu(W x + b), `depth` times, then softmax."""

    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = 0.5 * x + F.gelu(layer(x))
        return torch.softmax(x, dim=-1)


def _module(model, *inputs):
    model = model.cuda().eval()
    weights = dict(model.named_parameters())
    weights.update(model.named_buffers())

    @torch.no_grad()
    def fn(*xs):
        return model(*xs)

    return fn, [x.cuda() for x in inputs], weights


def mlp():
    """8 layers of 1024, batch 1 (the issue's model (a))."""
    torch.manual_seed(0)
    return _module(MLP(1024, 8), torch.randn(1, 1024))


def mlp_small():
    """2 layers of 256, batch 1: small enough to commit as a CI fixture."""
    torch.manual_seed(1)
    return _module(MLP(256, 2), torch.randn(1, 256))


BUILDERS = {"mlp": mlp, "mlp_small": mlp_small}
