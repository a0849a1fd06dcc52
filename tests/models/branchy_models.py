"""Programs with parallel branches at batch 1, where a capture's one chain orders kernels
that need not wait for each other (bench/widen_timing.py), and two without branches,
where rebuilding the chain from its dependencies should buy nothing.

Every entry is a builder returning (fn, inputs, weights) as pgcc.export takes them
(fn(*inputs) gives the output; weights names every tensor fn reads besides its
inputs), built from random weights with a fixed seed -- nothing is downloaded:

- llama_layer: one Llama decoder layer from a transformers LlamaConfig (width 256, 4
  heads, separate q, k and v projections), batch 1 x 8 tokens; llama_layer_bf16: the
  same in bfloat16, as decoders are served (cuBLASLt's GEMMs then need no workspace;
  in fp32 they split K through one shared workspace, which orders them);
- moe: a mixture-of-experts layer whose 8 experts are Linear modules of their own, each
  run densely on every token (a loop over the experts, the gate's weights combining
  them: no shape depends on the data), batch 1 x 4 tokens; moe_bf16: the same in
  bfloat16;
- inception: torchvision's GoogLeNet Inception block (four branches of convolutions
  concatenated), batch 1 at 28 x 28;
- qwen2_moe_bf16: transformers' Qwen2-MoE sparse block as it comes (a router choosing 2
  of 8 experts per token, the experts run by transformers' "batched_mm" backend -- the
  one its docs give for CUDA graphs, no host read -- and a shared expert beside them,
  gated), batch 1 x 4 tokens, bfloat16;
- clip_fp16: transformers' CLIPModel, both towers (a 4-layer text encoder on 16 tokens,
  a 4-layer vision encoder on a 64 x 64 image), the image-text logit, batch 1, float16;
- googlenet: torchvision's whole GoogLeNet (nine Inception blocks), batch 1 at 224 x 224;
- mlp: a stack of Linear and GELU layers, batch 1 (no branches);
- convnet: a stack of 3x3 convolutions, batch norms and ReLUs, batch 1 at 32 x 32 (no
  branches).

The first five are our own compositions (the MoE layer) or single blocks (one Llama
layer, one Inception block); REAL names the three taken whole from the libraries as users
get them.  BRANCHY names the branchy ones, CHAINS the last two; MODELS maps every name to
its builder.  Needs PyTorch with CUDA, transformers (llama_layer, qwen2_moe_bf16,
clip_fp16) and torchvision (inception, googlenet), imported when a builder runs.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["BRANCHY", "CHAINS", "MODELS", "REAL", "build"]


def _weights(model):
    """Parameters and buffers by name, each tensor once."""
    out, seen = {}, set()
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            out[name] = t
    return out


def _inference(model, inputs, call=None, dtype=None):
    model = model.cuda().eval()
    inputs = [x.cuda() for x in inputs]
    if dtype is not None:  # (the model's weights and its floating inputs)
        model = model.to(dtype)
        inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    call = call or (lambda m, *xs: m(*xs))

    @torch.no_grad()
    def fn(*xs):
        return call(model, *xs)

    fn.model = model
    return fn, inputs, _weights(model)


class _LlamaLayer(nn.Module):
    """A decoder layer with the rotary embedding computed in the program, as LlamaModel
    does before its layers."""

    def __init__(self, config):
        super().__init__()
        from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
        self.layer = LlamaDecoderLayer(config, layer_idx=0)
        self.rotary = LlamaRotaryEmbedding(config=config)

    def forward(self, x, positions):
        cos_sin = self.rotary(x, positions)
        out = self.layer(x, position_ids=positions, position_embeddings=cos_sin)
        return out[0] if isinstance(out, tuple) else out


def llama_layer(dtype=None):
    from transformers import LlamaConfig
    torch.manual_seed(31)
    config = LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=1, num_attention_heads=4,
                         num_key_value_heads=4, vocab_size=1000, max_position_embeddings=64,
                         attn_implementation="sdpa")
    model = _LlamaLayer(config)
    return _inference(model, [torch.randn(1, 8, 256), torch.arange(8).unsqueeze(0)], dtype=dtype)


class _MoE(nn.Module):
    """A gate and `experts` MLP experts (Linear, SiLU, Linear), every expert run on every
    token and weighted by the gate's softmax."""

    def __init__(self, width=256, hidden=512, experts=8):
        super().__init__()
        self.gate = nn.Linear(width, experts, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(width, hidden), nn.SiLU(), nn.Linear(hidden, width))
                                     for _ in range(experts))

    def forward(self, x):
        w = F.softmax(self.gate(x), dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            out = out + w[..., e:e + 1] * expert(x)
        return out


def moe(dtype=None):
    torch.manual_seed(32)
    return _inference(_MoE(), [torch.randn(1, 4, 256)], dtype=dtype)


def inception():
    from torchvision.models.googlenet import Inception
    torch.manual_seed(33)
    block = Inception(192, 64, 96, 128, 16, 32, 32)  # GoogLeNet's inception 3a
    return _inference(block, [torch.randn(1, 192, 28, 28)])


def qwen2_moe_bf16():
    from transformers import Qwen2MoeConfig
    from transformers.models.qwen2_moe.modeling_qwen2_moe import Qwen2MoeSparseMoeBlock
    torch.manual_seed(36)
    config = Qwen2MoeConfig(hidden_size=256, moe_intermediate_size=256, shared_expert_intermediate_size=512,
                            num_experts=8, num_experts_per_tok=2, hidden_act="silu")
    config._experts_implementation = "batched_mm"  # (what model.set_experts_implementation sets)
    block = Qwen2MoeSparseMoeBlock(config)
    with torch.no_grad():  # (the block alone: the model's _init_weights does this, the router starts at zero)
        for p in block.parameters():
            p.normal_(0, 0.02)
    return _inference(block, [torch.randn(1, 4, 256)], dtype=torch.bfloat16)


def clip_fp16():
    from transformers import CLIPConfig, CLIPModel
    torch.manual_seed(37)
    tower = dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=4)
    config = CLIPConfig(text_config=dict(vocab_size=1000, max_position_embeddings=16, **tower),
                        vision_config=dict(image_size=64, patch_size=16, **tower), projection_dim=128)
    return _inference(CLIPModel(config), [torch.randint(3, 1000, (1, 16)), torch.randn(1, 3, 64, 64)],
                      call=lambda m, ids, pixels: m(input_ids=ids, pixel_values=pixels).logits_per_image,
                      dtype=torch.float16)


def googlenet():
    from torchvision.models import googlenet as build_googlenet
    torch.manual_seed(38)
    return _inference(build_googlenet(weights=None, aux_logits=False, init_weights=True),
                      [torch.randn(1, 3, 224, 224)])


def mlp():
    torch.manual_seed(34)
    layers = []
    for _ in range(6):
        layers += [nn.Linear(512, 512), nn.GELU()]
    return _inference(nn.Sequential(*layers), [torch.randn(1, 512)])


def convnet():
    torch.manual_seed(35)
    layers, c = [], 3
    for width in (32, 32, 64, 64, 128):
        layers += [nn.Conv2d(c, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU()]
        c = width
    return _inference(nn.Sequential(*layers), [torch.randn(1, 3, 32, 32)])


REAL = ("qwen2_moe_bf16", "clip_fp16", "googlenet")
BRANCHY = ("llama_layer", "llama_layer_bf16", "moe", "moe_bf16", "inception") + REAL
CHAINS = ("mlp", "convnet")
MODELS = {"llama_layer": llama_layer, "llama_layer_bf16": lambda: llama_layer(torch.bfloat16), "moe": moe,
          "moe_bf16": lambda: moe(torch.bfloat16), "inception": inception, "qwen2_moe_bf16": qwen2_moe_bf16,
          "clip_fp16": clip_fp16, "googlenet": googlenet, "mlp": mlp, "convnet": convnet}


def build(name):
    """fn, inputs, weights of the model of that name."""
    return MODELS[name]()
