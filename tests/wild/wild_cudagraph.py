"""Programs re-expressed from the tests PyTorch keeps for its own CUDA graphs
(test/inductor/test_cudagraph_trees.py, test/test_cuda.py) and from vLLM's piecewise
compilation tests (tests/compile/piecewise/): the shapes of call that trip graph
capture -- outputs that alias inputs or each other, inputs changed in place, nested and
None outputs, a Python number out, odd input layouts (channels_last, zero elements,
a 0-d CPU tensor, stride 0, a storage offset), a value read back to the host, torch.cond,
a side stream, BatchNorm in training mode, a backward, and random ops (dropout in
training mode, torch.rand), which a replayed graph cannot reproduce.  Written as a user
writes them; each build() returns (model_or_callable, example_inputs).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

DEV = "cuda"


class Small(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


# ---- aliasing ----

def output_is_input():
    """test_cudagraph_trees: an output that is an input, and one that is a view of it."""
    def f(x, y):
        z = x @ y
        return x, y[:, :4], z
    return f, (torch.randn(16, 32, device=DEV), torch.randn(32, 16, device=DEV))


def outputs_alias_each_other():
    """test_cudagraph_trees' aliased outputs: one result, returned whole, reshaped and sliced."""
    def f(x):
        y = torch.relu(x) * 2
        return y, y.view(-1), y[1:], y.t()
    return f, (torch.randn(8, 16, device=DEV),)


def same_output_twice():
    def f(x):
        y = x.sin() + 1
        return y, y
    return f, (torch.randn(64, device=DEV),)


def output_is_parameter_view():
    """An output that is a view of a parameter (test_cudagraph_trees' outputs aliasing
    parameters), beside a computed one."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(32, 32)

        def forward(self, x):
            return self.lin(x), self.lin.weight.t()
    return M().to(DEV).eval(), (torch.randn(4, 32, device=DEV),)


# ---- mutation ----

def inplace_input():
    """test_cudagraph_trees' mutation of an input: x changed in place, and used after."""
    def f(x, y):
        x.mul_(2)
        x.add_(y)
        return (x * y).sum(dim=1)
    return f, (torch.randn(8, 32, device=DEV), torch.randn(8, 32, device=DEV))


def index_copy_cache():
    """A cache buffer written in place at given rows (a KV cache update, as vLLM and
    gpt-fast write it), the cache read after."""
    class Cache(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("cache", torch.zeros(32, 16))

        def forward(self, pos, val):
            self.cache.index_copy_(0, pos, val)
            return self.cache.sum(dim=0)
    return Cache().to(DEV).eval(), (torch.tensor([3, 7], device=DEV), torch.randn(2, 16, device=DEV))


def batchnorm_train():
    """A conv net in training mode: BatchNorm updates its running statistics in place
    (test_cuda's graphs of modules in training mode)."""
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3)).to(DEV)
    m.train()
    return m, (torch.randn(2, 3, 16, 16, device=DEV),)


def forward_backward():
    """A forward and backward, the loss returned and the gradients left in .grad
    (test_cudagraph_trees' backward tests), as a user's training loop body."""
    model = Small().to(DEV)

    def step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss.detach()
    return step, (torch.randn(8, 64, device=DEV), torch.randn(8, 64, device=DEV))


def forward_backward_marked():
    """The same step, marked as pgcc's guide marks a training step (step.train = True: its
    calls change its state -- here the gradients, which accumulate in .grad, allocated
    before the first call)."""
    model = Small().to(DEV)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)

    def step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss.detach()
    step.train = True
    return step, (torch.randn(8, 64, device=DEV), torch.randn(8, 64, device=DEV))


# ---- output structures ----

def dict_outputs():
    def f(x, w):
        h = x @ w
        return {"hidden": h, "stats": {"mean": h.mean(0), "max": h.amax(0)}, "parts": (h[:, :8], [h.relu(), x])}
    return f, (torch.randn(16, 32, device=DEV), torch.randn(32, 32, device=DEV))


def none_in_outputs():
    def f(x):
        return x.exp(), None, (x.cos(), None)
    return f, (torch.randn(32, 32, device=DEV),)


def python_number_output():
    """A tensor and a Python number from the shapes (test_cudagraph_trees' int outputs)."""
    def f(x):
        return x.tanh(), x.shape[0] * 2
    return f, (torch.randn(12, 8, device=DEV),)


# ---- input layouts ----

def channels_last_input():
    m = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 1)).to(DEV).eval()
    m = m.to(memory_format=torch.channels_last)
    return m, (torch.randn(2, 8, 16, 16, device=DEV).to(memory_format=torch.channels_last),)


def zero_element_input():
    """An input with no elements beside a normal one (an empty batch of extras)."""
    def f(x, extra):
        return x * 2 + extra.sum(0)
    return f, (torch.randn(4, 8, device=DEV), torch.randn(0, 8, device=DEV))


def cpu_scalar_input():
    """A 0-d CPU tensor as an input (test_cudagraph_trees' CPU scalar inputs: a learning
    rate, a temperature)."""
    def f(x, temperature):
        return torch.softmax(x / temperature, dim=-1)
    return f, (torch.randn(4, 64, device=DEV), torch.tensor(0.7))


def expanded_input():
    """A stride-0 input: a row broadcast with expand, as users pass a shared bias."""
    def f(x, bias):
        return x + bias
    return f, (torch.randn(16, 64, device=DEV), torch.randn(1, 64, device=DEV).expand(16, 64))


def sliced_input():
    """Inputs at a storage offset: rows sliced out of a bigger buffer, and a transposed
    (non-contiguous) one."""
    def f(x, w):
        return x @ w
    base = torch.randn(10, 32, device=DEV)
    return f, (base[3:7], torch.randn(16, 32, device=DEV).t())


# ---- host reads and control flow ----

def item_host_arithmetic():
    """.item() feeding host arithmetic (a scale computed on the host)."""
    def f(x):
        m = x.abs().max().item()
        scale = 127.0 / max(m, 1e-6)
        return torch.round(x * scale).clamp(-127, 127) / scale
    return f, (torch.randn(64, 64, device=DEV),)


def torch_cond():
    def true_fn(x):
        return x.sin() * 2

    def false_fn(x):
        return x.cos() - 1

    def f(x):
        return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))
    return f, (torch.randn(32, 32, device=DEV).abs(),)


def side_stream_events():
    """Work on a side stream joined back with an event (test_cuda's multistream graphs)."""
    side = torch.cuda.Stream()
    w1, w2 = torch.randn(64, 64, device=DEV), torch.randn(64, 64, device=DEV)

    def f(x):
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        with torch.cuda.stream(side):
            a = x @ w1
            done = torch.cuda.Event()
            done.record(side)
        b = x @ w2
        main.wait_event(done)
        return a + b
    return f, (torch.randn(32, 64, device=DEV),)


# ---- dropout and random ops ----

def mlp_dropout_eval():
    m = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 10)).to(DEV).eval()
    return m, (torch.randn(8, 64, device=DEV),)


def dropout_train():
    """Dropout in training mode: random per call (expected refused: the suite measures)."""
    m = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10)).to(DEV).train()
    return m, (torch.randn(8, 64, device=DEV),)


def torch_rand():
    def f(x):
        return x + torch.rand(x.shape, device=x.device)
    return f, (torch.randn(16, 16, device=DEV),)


def embedding_bag_offsets():
    """nn.EmbeddingBag with offsets (a recommender's sparse features)."""
    m = nn.EmbeddingBag(100, 16, mode="mean").to(DEV).eval()
    return m, (torch.randint(0, 100, (12,), device=DEV), torch.tensor([0, 3, 7], device=DEV))


# ---- vLLM's piecewise compilation tests ----

@torch.library.custom_op("wild::silly_attention", mutates_args=["out"])
def silly_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(q)
    out += k
    out += v


@silly_attention.register_fake
def _(q, k, v, out):
    return None


class SillyModel(nn.Module):
    """vLLM's tests/compile/piecewise/test_simple.py: additions around an attention op
    that writes its output buffer in place (vLLM splits the graph there)."""

    def forward(self, x):
        x = x + 1
        x = x + 2
        out = torch.empty_like(x)
        silly_attention(x, x, x, out)
        x = out
        x = x - 2
        x = x - 1
        out = torch.empty_like(x)
        silly_attention(x, x, x, out)
        x = out
        return x + 1


def vllm_silly():
    return SillyModel().eval(), (torch.randn(100, device=DEV),)


class ToyLlamaLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d, bias=False), nn.SiLU(), nn.Linear(2 * d, d, bias=False))

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        attn = torch.empty_like(q)
        silly_attention(q, k, v, attn)
        x = x + self.o(attn)
        return x + self.mlp(x)


class ToyLlama(nn.Module):
    """vLLM's tests/compile/piecewise/test_toy_llama.py, smaller: embedding, layers whose
    attention is the in-place custom op, a final norm."""

    def __init__(self, vocab=128, d=64, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(ToyLlamaLayer(d) for _ in range(layers))
        self.norm = nn.RMSNorm(d)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def vllm_toy_llama():
    return ToyLlama().to(DEV).eval(), (torch.randint(0, 128, (16,), device=DEV),)


PROGRAMS = {
    "cg:output_is_input": output_is_input,
    "cg:outputs_alias_each_other": outputs_alias_each_other,
    "cg:same_output_twice": same_output_twice,
    "cg:output_is_parameter_view": output_is_parameter_view,
    "cg:inplace_input": inplace_input,
    "cg:index_copy_cache": index_copy_cache,
    "cg:batchnorm_train": batchnorm_train,
    "cg:forward_backward": forward_backward,
    "cg:forward_backward_marked": forward_backward_marked,
    "cg:dict_outputs": dict_outputs,
    "cg:none_in_outputs": none_in_outputs,
    "cg:python_number_output": python_number_output,
    "cg:channels_last_input": channels_last_input,
    "cg:zero_element_input": zero_element_input,
    "cg:cpu_scalar_input": cpu_scalar_input,
    "cg:expanded_input": expanded_input,
    "cg:sliced_input": sliced_input,
    "cg:item_host_arithmetic": item_host_arithmetic,
    "cg:torch_cond": torch_cond,
    "cg:side_stream_events": side_stream_events,
    "cg:mlp_dropout_eval": mlp_dropout_eval,
    "cg:dropout_train": dropout_train,
    "cg:torch_rand": torch_rand,
    "cg:embedding_bag_offsets": embedding_bag_offsets,
    "vllm:silly_piecewise": vllm_silly,
    "vllm:toy_llama": vllm_toy_llama,
}
