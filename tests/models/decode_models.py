"""A Llama-style decoder's decode step with a static KV cache, for shape buckets over
the batch (tests/gpu/decode_export.py, bench/decode_timing.py).

The step takes one token per sequence and the position it is at, appends its keys and
values to the caches in place at that position, attends over the cache (positions
past it masked) and returns the greedy next token:

    step(tokens [B, 1] int64, pos [1] int64, k_cache, v_cache) -> next [B, 1] int64
    k_cache, v_cache: [layers, B, kv_heads, MAX_LEN, head_dim]

pos is a device tensor, an input like any other: every call has its own, at its own
address, and nothing is re-captured as it moves.  A prompt is fed one token per step
(prefill by decode steps), then each step's output is the next step's input.

Model: 4 layers x 512, 8 heads, 2 KV heads (grouped-query), RMSNorm, rotary
embeddings, SwiGLU, vocabulary 1000, MAX_LEN 256; bf16 weights and caches.

build_driver() builds tests/gpu/decode_main.c, the same generation driven from C,
against an export's generated C.
"""
import math
import os
import subprocess

import torch
from torch import nn

LAYERS, WIDTH, HEADS, KV_HEADS, VOCAB, MAX_LEN = 4, 512, 8, 2, 1000, 256
HEAD_DIM = WIDTH // HEADS


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + 1e-6)).to(x.dtype) * self.weight


def rotate(x, cos, sin):
    a, b = x[..., :HEAD_DIM // 2], x[..., HEAD_DIM // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(WIDTH), RMSNorm(WIDTH)
        self.q = nn.Linear(WIDTH, HEADS * HEAD_DIM, bias=False)
        self.kv = nn.Linear(WIDTH, 2 * KV_HEADS * HEAD_DIM, bias=False)
        self.o = nn.Linear(HEADS * HEAD_DIM, WIDTH, bias=False)
        self.up = nn.Linear(WIDTH, 2 * 4 * WIDTH, bias=False)
        self.down = nn.Linear(4 * WIDTH, WIDTH, bias=False)

    def forward(self, x, pos, cos, sin, kc, vc, mask):
        b = x.shape[0]
        h = self.norm1(x)
        q = self.q(h).view(b, 1, HEADS, HEAD_DIM).transpose(1, 2)
        k, v = self.kv(h).view(b, 1, 2, KV_HEADS, HEAD_DIM).unbind(2)
        q, k = rotate(q, cos, sin), rotate(k.transpose(1, 2), cos, sin)
        kc.index_copy_(2, pos, k)
        vc.index_copy_(2, pos, v.transpose(1, 2))
        keys = kc.repeat_interleave(HEADS // KV_HEADS, 1)
        values = vc.repeat_interleave(HEADS // KV_HEADS, 1)
        att = (q @ keys.transpose(-1, -2)).float() / math.sqrt(HEAD_DIM)
        att = att.masked_fill(mask, float("-inf")).softmax(-1).to(x.dtype)
        x = x + self.o((att @ values).transpose(1, 2).reshape(b, 1, WIDTH))
        g, u = self.up(self.norm2(x)).chunk(2, -1)
        return x + self.down(torch.nn.functional.silu(g) * u)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = RMSNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        inv = 1.0 / 10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM)
        ang = torch.arange(MAX_LEN).float()[:, None] * inv[None]
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)
        self.register_buffer("positions", torch.arange(MAX_LEN), persistent=False)

    def forward(self, tokens, pos, k_cache, v_cache):
        x = self.embed(tokens)
        cos, sin = self.cos[pos].to(x.dtype), self.sin[pos].to(x.dtype)
        mask = self.positions > pos  # positions after this one are not yet written
        for i, layer in enumerate(self.layers):
            x = layer(x, pos, cos, sin, k_cache[i], v_cache[i], mask)
        return self.head(self.norm(x)).argmax(-1)


def model(dtype=torch.bfloat16):
    """The decoder (seeded), on the GPU, in eval mode: (module, step, weights)."""
    torch.manual_seed(40)
    m = Decoder().cuda().eval().to(dtype)
    for p in m.parameters():  # larger than nn.Linear's default, so that tokens vary
        p.data.mul_(2.0)

    @torch.no_grad()
    def step(tokens, pos, k_cache, v_cache):
        return m(tokens, pos, k_cache, v_cache)
    step.model = m
    weights = dict(m.named_parameters())
    weights.update({n: t for n, t in m.named_buffers()})
    return m, step, weights


def caches(batch, dtype=torch.bfloat16):
    shape = (LAYERS, batch, KV_HEADS, MAX_LEN, HEAD_DIM)
    return torch.zeros(shape, dtype=dtype, device="cuda"), torch.zeros(shape, dtype=dtype, device="cuda")


def example(batch, dtype=torch.bfloat16):
    """A step's inputs at batch size `batch`, position 3."""
    g = torch.Generator(device="cuda").manual_seed(batch)
    tokens = torch.randint(0, VOCAB, (batch, 1), device="cuda", generator=g)
    kc, vc = caches(batch, dtype)
    return [tokens, torch.tensor([3], device="cuda"), kc, vc]


def generate(step, prompt, new, dtype=torch.bfloat16, kv=None, positions=None):
    """Greedy generation with any step callable (PyTorch's or an export's): the prompt
    [B, P] fed one token per step, then `new` tokens, each step's output the next one's
    input; returns the new tokens [B, new].  kv: the caches to use, zeroed first (else
    new ones); positions: the position tensors 0, 1, ... (else new ones)."""
    b, p = prompt.shape
    if kv is None:
        kc, vc = caches(b, dtype)
    else:
        kc, vc = kv
        kc.zero_()
        vc.zero_()
    if positions is None:
        positions = [torch.tensor([i], device="cuda") for i in range(p + new - 1)]
    tok = prompt[:, :1].contiguous()
    out = []
    for i in range(p + new - 1):
        nxt = step(tok, positions[i], kc, vc)
        if i + 1 < p:
            tok = prompt[:, i + 1:i + 2].contiguous()
        else:
            out.append(nxt)
            tok = nxt
    return torch.cat(out, 1)


def build_driver(root, out, refs):
    """Builds tests/gpu/decode_main.c with the C pgcc generates from the export in `out`
    (under out/c) and writes refs (safetensors tensors prompt_B, tokens_B) beside it;
    returns (the program, the refs file).  RuntimeError naming the step that failed."""
    from pgcc.weights import write_safetensors
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    refs_path = os.path.join(out, "refs.safetensors")
    write_safetensors(refs_path, refs)
    build = os.path.join(out, "c")
    os.makedirs(build, exist_ok=True)
    binary = os.path.join(build, "decode")
    for cmd in ([os.path.join(root, "build", "pgcc"), os.path.join(out, "decode.graph"), "-o",
                 os.path.join(build, "decode.c")],
                ["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{build}",
                 f"-I{root}/runtime", f"-I{root}/tests/gpu", f"-I{cuda}/include", f"{root}/tests/gpu/decode_main.c",
                 os.path.join(build, "decode.c"), f"{root}/build/libpgrt.a", f"-L{cuda}/lib64",
                 f"-L{cuda}/lib64/stubs", f"-Wl,-rpath,{cuda}/lib64", "-lcuda", "-lnvrtc", "-ldl", "-lm", "-o",
                 binary]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{os.path.basename(cmd[0])} exited {r.returncode}: {r.stderr[-2000:]}")
    return binary, refs_path
