"""The model zoo: programs pgcc has not been tuned to, for the exporter's coverage.

Every entry is a builder returning (fn, inputs, weights) as pgcc.export takes them
(fn(*inputs) gives the output; weights names every tensor fn reads or updates
besides its inputs), built from random weights with a fixed seed -- nothing is
downloaded.  Families: ResNet-50 and MobileNetV3 (depthwise convolutions,
squeeze-excite) from torchvision, a ViT from timm, a Llama-style decoder with
grouped-query attention and a T5-style encoder-decoder from transformers configs,
and training steps (SGD with momentum, AdamW foreach, AdamW fused, a bf16 autocast
step).  Each inference family comes in fp32, bf16 and fp16 (`.to(dtype)`), and under
autocast in bf16 and fp16; ZOO maps "family:variant" to a builder, TOLERANCE gives
the relative error each variant is checked to against eager fp32 PyTorch.
"""
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# max |got - ref| / max |ref| against eager PyTorch in the variant's own precision
TOLERANCE = {"fp32": 1e-5, "bf16": 2e-2, "fp16": 5e-3, "autocast_bf16": 2e-2, "autocast_fp16": 5e-3}


def _weights(*modules):
    """Parameters and buffers by name, each tensor once (tied weights share one)."""
    out, seen = {}, set()
    for prefix, m in modules:
        for name, t in list(m.named_parameters()) + list(m.named_buffers()):
            if t.data_ptr() in seen:
                continue
            seen.add(t.data_ptr())
            out[f"{prefix}{name}"] = t
    return out


def _inference(model, inputs, variant, call=None):
    """fn, inputs, weights of a model in eval mode, in the variant's precision."""
    model = model.cuda().eval()
    inputs = [x.cuda() for x in inputs]
    if variant in ("bf16", "fp16"):
        model = model.to(DTYPES[variant])
        inputs = [x.to(DTYPES[variant]) if x.is_floating_point() else x for x in inputs]
    autocast = DTYPES[variant.split("_")[1]] if variant.startswith("autocast") else None
    call = call or (lambda m, *xs: m(*xs))

    @torch.no_grad()
    def fn(*xs):
        if autocast is not None:
            with torch.autocast("cuda", dtype=autocast):
                return call(model, *xs)
        return call(model, *xs)

    fn.model = model
    return fn, inputs, _weights(("", model))


# ---- inference families ----

def resnet50(variant):
    from torchvision.models import resnet50 as make
    torch.manual_seed(10)
    return _inference(make(weights=None), [torch.randn(2, 3, 224, 224)], variant)


def mobilenet(variant):
    """MobileNetV3-small: depthwise convolutions, squeeze-excite, hardswish."""
    from torchvision.models import mobilenet_v3_small as make
    torch.manual_seed(11)
    return _inference(make(weights=None), [torch.randn(2, 3, 224, 224)], variant)


def vit(variant):
    import timm
    torch.manual_seed(12)
    return _inference(timm.create_model("vit_tiny_patch16_224", pretrained=False), [torch.randn(2, 3, 224, 224)],
                      variant)


def _llama_config(layers=4, width=512):
    from transformers import LlamaConfig
    return LlamaConfig(hidden_size=width, intermediate_size=4 * width, num_hidden_layers=layers,
                       num_attention_heads=8, num_key_value_heads=2, vocab_size=1000,
                       max_position_embeddings=256, attn_implementation="sdpa")


def llama(variant):
    """A Llama-style decoder, 4 layers x 512, grouped-query attention (8 heads, 2 KV heads),
    batch 1 x 32 tokens; the last hidden state."""
    from transformers import LlamaModel
    torch.manual_seed(13)
    model = LlamaModel(_llama_config())
    ids = torch.randint(0, 1000, (1, 32))
    return _inference(model, [ids], variant, lambda m, x: m(input_ids=x, use_cache=False).last_hidden_state)


def t5(variant):
    """A T5-style encoder-decoder, 2+2 layers x 256: encoder 1 x 32 tokens, decoder 1 x 16."""
    from transformers import T5Config, T5Model
    torch.manual_seed(14)
    cfg = T5Config(d_model=256, d_ff=1024, d_kv=32, num_layers=2, num_decoder_layers=2, num_heads=8,
                   vocab_size=1000, decoder_start_token_id=0)
    model = T5Model(cfg)
    ids, dec = torch.randint(0, 1000, (1, 32)), torch.randint(0, 1000, (1, 16))
    return _inference(model, [ids, dec], variant,
                      lambda m, x, d: m(input_ids=x, decoder_input_ids=d, use_cache=False).last_hidden_state)


# ---- training steps ----

class TrainStep:
    """One optimizer step of a model on a batch (forward, loss, backward, update),
    returning the loss.  Its state -- the parameters and every optimizer state tensor,
    all updated in place -- is in `weights`; `train` tells the tests to check it as a
    training step (losses over several steps, then every state tensor)."""

    train = True

    def __init__(self, make_model, make_opt, loss, autocast=None, seed=0):
        self.make_model, self.make_opt, self.loss, self.autocast, self.seed = make_model, make_opt, loss, autocast, seed
        torch.manual_seed(seed)
        self.model = make_model().cuda().train()
        self.opt = make_opt(self.model.parameters())

    def __call__(self, x, y):
        self.opt.zero_grad(set_to_none=False)
        if self.autocast is not None:
            with torch.autocast("cuda", dtype=self.autocast):
                loss = self.loss(self.model(x), y)
        else:
            loss = self.loss(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def materialize(self, x, y):
        """Optimizers make their state at the first step: take one, so that the state
        exists (and is part of `weights`) before anything is captured."""
        self(x, y)
        torch.cuda.synchronize()

    @property
    def weights(self):
        out = _weights(("", self.model))
        for i, group in enumerate(self.opt.param_groups):
            for j, p in enumerate(group["params"]):
                for k, v in self.opt.state.get(p, {}).items():
                    if torch.is_tensor(v) and v.is_cuda:
                        out[f"opt.{i}.{j}.{k}"] = v
                if p.grad is not None:
                    out[f"grad.{i}.{j}"] = p.grad
        return out

    def fresh(self):
        """An independent eager copy, at the present values of every state tensor."""
        import copy
        twin = TrainStep.__new__(TrainStep)
        twin.__dict__.update(self.__dict__)
        twin.model = copy.deepcopy(self.model)
        twin.opt = self.make_opt(twin.model.parameters())
        twin.opt.load_state_dict(copy.deepcopy(self.opt.state_dict()))
        for mine, its in zip(self.model.parameters(), twin.model.parameters()):  # (deepcopy leaves .grad out)
            if mine.grad is not None:
                its.grad = mine.grad.detach().clone()
        return twin


class _Mlp(nn.Module):
    def __init__(self, width=256, depth=4):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = x + F.gelu(layer(x))
        return x


class _TinyLM(nn.Module):
    """A 2-layer Llama-style language model returning logits."""

    def __init__(self):
        super().__init__()
        from transformers import LlamaForCausalLM
        self.lm = LlamaForCausalLM(_llama_config(layers=2, width=256))

    def forward(self, ids):
        return self.lm(input_ids=ids, use_cache=False).logits


def _lm_loss(logits, targets):
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def _train(step, x, y):
    step.materialize(x, y)
    return step, [x, y], step.weights


def train_sgd_momentum(_variant="fp32"):
    step = TrainStep(_Mlp, lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9), F.mse_loss, seed=20)
    return _train(step, torch.randn(8, 256, device="cuda"), torch.randn(8, 256, device="cuda"))


def _lm_batch(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 1000, (2, 32), generator=g).cuda(), torch.randint(0, 1000, (2, 32), generator=g).cuda())


def train_adamw_foreach(_variant="fp32"):
    step = TrainStep(_TinyLM, lambda ps: torch.optim.AdamW(ps, lr=1e-3, foreach=True, capturable=True), _lm_loss,
                     seed=21)
    return _train(step, *_lm_batch(21))


def train_adamw_fused(_variant="fp32"):
    step = TrainStep(_TinyLM, lambda ps: torch.optim.AdamW(ps, lr=1e-3, fused=True, capturable=True), _lm_loss,
                     seed=22)
    return _train(step, *_lm_batch(22))


def train_autocast_bf16(_variant="autocast_bf16"):
    step = TrainStep(_TinyLM, lambda ps: torch.optim.AdamW(ps, lr=1e-3, fused=True, capturable=True), _lm_loss,
                     autocast=torch.bfloat16, seed=23)
    return _train(step, *_lm_batch(23))


INFERENCE = {"resnet50": resnet50, "mobilenet": mobilenet, "vit": vit, "llama": llama, "t5": t5}
VARIANTS = ("fp32", "bf16", "fp16", "autocast_bf16", "autocast_fp16")
TRAINING = {"train_sgd_momentum": (train_sgd_momentum, "fp32"), "train_adamw_foreach": (train_adamw_foreach, "fp32"),
            "train_adamw_fused": (train_adamw_fused, "fp32"),
            "train_autocast_bf16": (train_autocast_bf16, "autocast_bf16")}

ZOO = {f"{family}:{v}": functools.partial(make, v) for family, make in INFERENCE.items() for v in VARIANTS}
ZOO.update({f"{name}:{v}": functools.partial(make, v) for name, (make, v) in TRAINING.items()})


def select(patterns):
    """The keys of ZOO that match any of the fnmatch patterns (all of them for none)."""
    import fnmatch
    return [k for k in ZOO if not patterns or any(fnmatch.fnmatch(k, p) for p in patterns)]


def variant_of(key):
    return key.split(":", 1)[1]
