"""Programs exported with shape buckets (pgcc.export(..., buckets=)): each is
(fn, example inputs, weights, buckets, dim, expected padding), fn with .model, the
module run eagerly for reference.

- mlp_tiny: a 2-layer MLP, 64 wide, fp32, batch buckets 1, 2, 4: rows independent, so
  padded; small enough to be the CI fixture;
- mlp: a 3-layer MLP, 256 -> 1024 -> 1024 -> 256, fp32, batch buckets 1, 2, 4, 8;
- llama_bf16: the zoo's Llama-style decoder (4 layers x 512, bf16, 32 tokens), batch
  buckets 1, 2, 4, 8;
- llama_seq: the same decoder at one prompt, sequence-length buckets 16, 32, 64 (dim 1):
  causal attention, so the first positions never see the padding after them;
- center: x - x.mean(0) before a linear layer: every row sees the others, so exact
  buckets only.
"""
import torch
from torch import nn

from tests.models.zoo_models import _inference, _llama_config


class MLP(nn.Module):
    def __init__(self, widths):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = torch.nn.functional.gelu(x)
        return x


class Center(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(64, 32)

    def forward(self, x):
        return self.lin(x - x.mean(0, keepdim=True))


def mlp_tiny():
    torch.manual_seed(30)
    fn, xs, w = _inference(MLP([64, 64, 16]), [torch.randn(2, 64)], "fp32")
    return fn, xs, w, [1, 2, 4], 0, True


def mlp():
    torch.manual_seed(31)
    fn, xs, w = _inference(MLP([256, 1024, 1024, 256]), [torch.randn(2, 256)], "fp32")
    return fn, xs, w, [1, 2, 4, 8], 0, True


def _llama(ids):
    from transformers import LlamaModel
    torch.manual_seed(13)
    return _inference(LlamaModel(_llama_config()), [ids], "bf16",
                      lambda m, x: m(input_ids=x, use_cache=False).last_hidden_state)


def llama_bf16():
    torch.manual_seed(32)
    fn, xs, w = _llama(torch.randint(0, 1000, (1, 32)))
    return fn, xs, w, [1, 2, 4, 8], 0, True


def llama_seq():
    torch.manual_seed(33)
    fn, xs, w = _llama(torch.randint(0, 1000, (1, 16)))
    return fn, xs, w, [16, 32, 64], 1, True


def center():
    torch.manual_seed(34)
    fn, xs, w = _inference(Center(), [torch.randn(4, 64)], "fp32")
    return fn, xs, w, [2, 4, 8], 0, False


PROGRAMS = {"mlp_tiny": mlp_tiny, "mlp": mlp, "llama_bf16": llama_bf16, "llama_seq": llama_seq, "center": center}
