"""Tensor-parallel programs for two (or more) GPUs, one process per rank, for
tests/gpu/tp_export.py and bench/tp_timing.py.  Every rank builds the same whole model from one seed
and keeps its shards; its step ends each block with
torch.distributed._functional_collectives.all_reduce, as a tensor-parallel program
under torch.compile does (Megatron-style: column-parallel, then row-parallel, then the
sum over ranks).

    program(name, rank, world) -> SimpleNamespace(step, inputs, weights, whole, whole_fp32)
    run_ranks(target, args) -> {rank: result}: one spawned process per rank

step(*inputs) is the rank's compiled-able step; weights its shards by name; whole(*inputs)
the same computation on one GPU with the unsplit weights (the model that the ranks
together must match), whole_fp32 the same in fp32 (an independent reference for bf16).

Programs:
- mlp: Linear 256 -> 1024 (column-parallel), GELU, Linear 1024 -> 256 (row-parallel),
  all-reduce; fp32, batch 8.
- sp_mlp: the same MLP sequence-parallel: each rank takes its rows of the batch, an
  all-gather makes the whole batch, and a reduce-scatter sums the row-parallel layer's
  partial results and leaves each rank its rows (fp32, batch 8; the step takes the
  whole batch and slices its rows, so the all-gather reads a part of an input and the
  reduce-scatter writes the output).
- llama: a Llama-style decoder's forward over a sequence (4 layers x 512, 8 heads and 2
  KV heads split over the ranks, RMSNorm, rotary embeddings, causal attention through
  scaled_dot_product_attention, SwiGLU 512 -> 1408, vocabulary 1000), bf16, 2 x 32
  tokens; an all-reduce after attention's output projection and after the MLP's down
  projection in every layer (8 per step).
"""
import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F

PROGRAMS = ("mlp", "sp_mlp", "llama")


def _all_reduce(x):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc
    return fc.all_reduce(x, "sum", dist.group.WORLD)


def _all_gather(x):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc
    return fc.all_gather_tensor(x, 0, dist.group.WORLD)


def _reduce_scatter(x):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc
    return fc.reduce_scatter_tensor(x, "sum", 0, dist.group.WORLD)


def shard_rows(w, rank, world):
    """Column-parallel: this rank's rows of an [out, in] weight (its outputs)."""
    part = w.shape[0] // world
    return w[rank * part:(rank + 1) * part].contiguous()


def shard_cols(w, rank, world):
    """Row-parallel: this rank's columns of an [out, in] weight (its inputs)."""
    part = w.shape[1] // world
    return w[:, rank * part:(rank + 1) * part].contiguous()


MLP_WIDTH, MLP_HIDDEN, MLP_BATCH = 256, 1024, 8


def _mlp_program(rank, world, make_step, rows_of):
    """The MLP's weights (seeded: whole, and this rank's shards) and example input; the
    step make_step(w1_r, w2_r) makes; the whole model's output cut by rows_of."""
    torch.manual_seed(0)
    w1 = torch.randn(MLP_HIDDEN, MLP_WIDTH, device="cuda") / MLP_WIDTH ** 0.5
    w2 = torch.randn(MLP_WIDTH, MLP_HIDDEN, device="cuda") / MLP_HIDDEN ** 0.5
    w1_r, w2_r = shard_rows(w1, rank, world), shard_cols(w2, rank, world)

    def whole(x):
        return rows_of(F.gelu(x @ w1.t()) @ w2.t())
    x = torch.randn(MLP_BATCH, MLP_WIDTH, device="cuda")
    return SimpleNamespace(step=make_step(w1_r, w2_r), inputs=[x], weights={"w1": w1_r, "w2": w2_r}, whole=whole,
                           whole_fp32=whole,
                           fresh=lambda g: [torch.randn(MLP_BATCH, MLP_WIDTH, device="cuda", generator=g)])


def mlp(rank, world):
    def make_step(w1_r, w2_r):
        def step(x):
            return _all_reduce(F.gelu(x @ w1_r.t()) @ w2_r.t())
        return step
    return _mlp_program(rank, world, make_step, lambda y: y)


def sp_mlp(rank, world):
    rows = MLP_BATCH // world

    def make_step(w1_r, w2_r):
        def step(x):
            whole_x = _all_gather(x[rank * rows:(rank + 1) * rows])
            return _reduce_scatter(F.gelu(whole_x @ w1_r.t()) @ w2_r.t())
        return step
    return _mlp_program(rank, world, make_step, lambda y: y[rank * rows:(rank + 1) * rows])


LAYERS, WIDTH, HEADS, KV_HEADS, FFN, VOCAB, SEQ, BATCH = 4, 512, 8, 2, 1408, 1000, 32, 2
HEAD_DIM = WIDTH // HEADS


def _rms(x, w):
    v = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(v + 1e-6)).to(x.dtype) * w


def _rotate(x, cos, sin):
    a, b = x[..., :HEAD_DIM // 2], x[..., HEAD_DIM // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


def _forward(p, tokens, heads, kv_heads, reduce):
    """The decoder with weights p (whole or a rank's shards: heads and kv_heads of them),
    reduce() applied to every row-parallel projection's partial sums."""
    b, s = tokens.shape
    x = p["embed"][tokens]
    cos, sin = p["cos"][:s].to(x.dtype), p["sin"][:s].to(x.dtype)
    for i in range(LAYERS):
        h = _rms(x, p[f"l{i}.norm1"])
        q = (h @ p[f"l{i}.q"].t()).view(b, s, heads, HEAD_DIM).transpose(1, 2)
        k = (h @ p[f"l{i}.k"].t()).view(b, s, kv_heads, HEAD_DIM).transpose(1, 2)
        v = (h @ p[f"l{i}.v"].t()).view(b, s, kv_heads, HEAD_DIM).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        k, v = k.repeat_interleave(heads // kv_heads, 1), v.repeat_interleave(heads // kv_heads, 1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, heads * HEAD_DIM)
        x = x + reduce(a @ p[f"l{i}.o"].t())
        h = _rms(x, p[f"l{i}.norm2"])
        x = x + reduce((F.silu(h @ p[f"l{i}.gate"].t()) * (h @ p[f"l{i}.up"].t())) @ p[f"l{i}.down"].t())
    return _rms(x, p["norm"]) @ p["head"].t()


def llama_weights(dtype=torch.bfloat16):
    """The whole decoder's weights (seeded), on the GPU."""
    g = torch.Generator(device="cuda").manual_seed(41)

    def w(*shape, scale=None):
        return (torch.randn(*shape, device="cuda", generator=g) * (scale or 1 / math.sqrt(shape[-1]))).to(dtype)
    p = {"embed": w(VOCAB, WIDTH, scale=1.0), "norm": torch.ones(WIDTH, device="cuda", dtype=dtype),
         "head": w(VOCAB, WIDTH)}
    for i in range(LAYERS):
        p.update({f"l{i}.norm1": torch.ones(WIDTH, device="cuda", dtype=dtype),
                  f"l{i}.norm2": torch.ones(WIDTH, device="cuda", dtype=dtype),
                  f"l{i}.q": w(HEADS * HEAD_DIM, WIDTH), f"l{i}.k": w(KV_HEADS * HEAD_DIM, WIDTH),
                  f"l{i}.v": w(KV_HEADS * HEAD_DIM, WIDTH), f"l{i}.o": w(WIDTH, HEADS * HEAD_DIM),
                  f"l{i}.gate": w(FFN, WIDTH), f"l{i}.up": w(FFN, WIDTH), f"l{i}.down": w(WIDTH, FFN)})
    inv = 1.0 / 10000 ** (torch.arange(0, HEAD_DIM, 2, device="cuda").float() / HEAD_DIM)
    ang = torch.arange(SEQ, device="cuda").float()[:, None] * inv[None]
    p["cos"], p["sin"] = ang.cos(), ang.sin()
    return p


def llama_shards(p, rank, world):
    """Rank `rank`'s shards: q, k, v, gate and up by rows (its heads, its part of the
    MLP), o and down by columns; embedding, norms and head whole on every rank."""
    if HEADS % world or KV_HEADS % world or FFN % world:
        raise ValueError(f"llama: {HEADS} heads, {KV_HEADS} KV heads and {FFN} MLP rows do not split {world} ways")
    out = {}
    for n, t in p.items():
        kind = n.split(".")[-1]
        out[n] = (shard_rows(t, rank, world) if kind in ("q", "k", "v", "gate", "up") else
                  shard_cols(t, rank, world) if kind in ("o", "down") else t)
    return out


def llama(rank, world):
    p = llama_weights()
    shards = llama_shards(p, rank, world)
    p32 = {n: t.float() for n, t in p.items()}

    @torch.no_grad()
    def step(tokens):
        return _forward(shards, tokens, HEADS // world, KV_HEADS // world, _all_reduce)

    @torch.no_grad()
    def whole(tokens):
        return _forward(p, tokens, HEADS, KV_HEADS, lambda x: x)

    @torch.no_grad()
    def whole_fp32(tokens):
        return _forward(p32, tokens, HEADS, KV_HEADS, lambda x: x)
    g = torch.Generator(device="cuda").manual_seed(7)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda", generator=g)
    return SimpleNamespace(step=step, inputs=[tokens], weights=shards, whole=whole, whole_fp32=whole_fp32,
                           fresh=lambda g: [torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda", generator=g)])


def run_ranks(target, args, world=2, timeout=540):
    """target(rank, world, *args, results) in a fresh (spawned) process per rank; returns
    {rank: what that rank put in results[rank]}.  A rank still running after `timeout`
    seconds is killed, and has no entry."""
    import torch.multiprocessing as mp
    mp.set_start_method("spawn", force=True)
    with mp.Manager() as m:
        results = m.dict()
        procs = [mp.Process(target=target, args=(r, world, *args, results)) for r in range(world)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=timeout)
            if p.is_alive():
                p.kill()
        return dict(results)


def program(name, rank, world):
    if name not in PROGRAMS:
        raise ValueError(f"no TP program {name!r} (there are {', '.join(PROGRAMS)})")
    return globals()[name](rank, world)
