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


def gpt2():
    """A GPT-2-style decoder from a transformers config: 6 layers, width 512, batch 1 x 32 tokens
    (the issue's model (b)); returns the last hidden state."""
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(2)
    cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, n_positions=128, vocab_size=1000)
    model = GPT2Model(cfg).cuda().eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 32))
    fn, inputs, weights = _module(model, ids)

    @torch.no_grad()
    def forward(x):
        return model(input_ids=x, use_cache=False).last_hidden_state

    return forward, inputs, weights


def bert():
    """A BERT encoder from a transformers config: 4 layers, width 256, batch 1 x 64 tokens
    (the issue's model (d), our choice)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(3)
    cfg = BertConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024,
                     vocab_size=1000, max_position_embeddings=128)
    model = BertModel(cfg, add_pooling_layer=False).cuda().eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 64))
    fn, inputs, weights = _module(model, ids)

    @torch.no_grad()
    def forward(x):
        return model(input_ids=x).last_hidden_state

    return forward, inputs, weights


class TrainStep:
    """One SGD step of a model on a batch (forward, MSE loss, backward, update), returning
    the loss.  Its state is the model's parameters, updated in place; `train` tells the
    tests to check it as a training step.  Plain SGD (no momentum): the parameters are
    all the state there is."""

    train = True

    def __init__(self, model, lr):
        self.model, self.lr = model, lr
        self.opt = torch.optim.SGD(model.parameters(), lr=lr)
        self.weights = dict(model.named_parameters())

    def __call__(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def fresh(self):
        """An independent eager copy, at the parameters' present values."""
        import copy
        return TrainStep(copy.deepcopy(self.model), self.lr)


def mlp_train():
    """A training step of a 4x256 MLP on a batch of 8 (the issue's model (c))."""
    torch.manual_seed(4)
    model = MLP(256, 4).cuda().train()
    step = TrainStep(model, lr=0.05)
    return step, [torch.randn(8, 256, device="cuda"), torch.randn(8, 256, device="cuda")], step.weights


BUILDERS = {"mlp": mlp, "mlp_small": mlp_small, "gpt2": gpt2, "bert": bert, "mlp_train": mlp_train}
