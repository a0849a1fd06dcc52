"""The training suite's programs: training steps written as the PyTorch tutorials and
the libraries' examples write them -- a model, an optimizer (a GradScaler, a scheduler),
and a step function that zeroes the gradients (`zero_grad()`, whose default sets them
to None), runs the forward and the loss, calls backward() and steps -- none written for
pgcc.  Each builder returns a Program: the step, a function making a batch from a seed
(fresh batches: inputs at new addresses, other values), the objects holding the state
(as state= takes them), and whether the user ran the step eagerly before exporting it
(else the optimizer has no state yet, and the export takes the first step itself), and
what the user does between steps (an LR scheduler stepped per epoch, outside the step:
given the loaded program where the step runs as one, else None), and, for a step the C
program cannot follow, the words its refusal must hold.

Builders import torch and the model libraries when called; this module imports without
them (tests/training/run_training.py lists the keys on the CPU).
"""
from typing import Callable, NamedTuple


class Program(NamedTuple):
    step: Callable
    batch: Callable      # seed -> the step's arguments (a tuple)
    state: tuple         # the modules, optimizers and GradScalers (state=); None: let the export find them
    eager_first: bool    # the user ran a step eagerly before exporting
    between: Callable = None  # (loaded program or None) -> None: after each step, outside it
    refuses: str = None  # words the export's refusal must hold: a step the C program cannot follow


def _cls_batch(shape, classes):
    def make(seed):
        import torch
        g = torch.Generator().manual_seed(seed)
        return torch.randn(*shape, generator=g).cuda(), torch.randint(0, classes, (shape[0],), generator=g).cuda()
    return make


def _lm_batch(vocab, batch=2, seq=32):
    def make(seed):
        import torch
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, vocab, (batch, seq), generator=g)
        return ids.cuda(), ids.roll(-1, dims=1).cuda()
    return make


def _plain_step(model, opt, loss_fn):
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def resnet18_bn_sgd():
    """torchvision's ResNet-18 (BatchNorm: running statistics) with SGD and momentum."""
    import torch
    import torch.nn.functional as F
    import torchvision
    model = torchvision.models.resnet18(num_classes=10).cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return Program(_plain_step(model, opt, F.cross_entropy), _cls_batch((8, 3, 32, 32), 10), (model, opt), True)


def _llama(layers=2, width=128, vocab=512):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    return LlamaForCausalLM(cfg).cuda().train()


def _lm_step(model, opt, scaler=None, dtype=None):
    import torch
    import torch.nn.functional as F

    def step(ids, targets):
        opt.zero_grad()
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            logits = model(input_ids=ids).logits
            loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss
    return step


def llama_adamw_fused():
    """A Llama-style decoder LM (transformers) with fused AdamW."""
    import torch
    model = _llama()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    return Program(_lm_step(model, opt), _lm_batch(512), (model, opt), True)


def gpt2_adamw_foreach():
    """GPT-2 (transformers, small config) with foreach AdamW; the optimizer has no state
    when exported."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config(vocab_size=512, n_positions=64, n_embd=128, n_layer=2, n_head=4)).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    return Program(_lm_step(model, opt), _lm_batch(512), None, False)


def vit_gradscaler_fp16():
    """A ViT (timm) under fp16 autocast with a GradScaler and foreach Adam."""
    import torch
    import torch.nn.functional as F
    import timm
    model = timm.create_model("vit_tiny_patch16_224", img_size=64, num_classes=10).cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)
    scaler = torch.amp.GradScaler("cuda")

    def step(x, y):
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss
    return Program(step, _cls_batch((8, 3, 64, 64), 10), (model, opt, scaler), True)


def bert_mlm_bf16():
    """BERT masked-LM (transformers) under bf16 autocast with fused AdamW."""
    import torch
    from transformers import BertConfig, BertForMaskedLM
    model = BertForMaskedLM(BertConfig(vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=256, max_position_embeddings=64)).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)

    def step(ids, labels):
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        opt.step()
        return loss
    return Program(step, _lm_batch(512), (model, opt), True)


def mlp_dropout_dict():
    """An MLP with dropout, its batch a dict, SGD."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10)).cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def step(batch):
        opt.zero_grad()
        loss = F.cross_entropy(model(batch["x"]), batch["y"])
        loss.backward()
        opt.step()
        return loss
    make = _cls_batch((32, 64), 10)
    return Program(step, lambda seed: ({"x": make(seed)[0], "y": make(seed)[1]},), (model, opt), True)


def _mlp(width=128):
    import torch.nn as nn
    return nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width), nn.GELU(),
                         nn.Linear(width, 10)).cuda().train()


def clip_grad_norm_adamw():
    """Gradient clipping (clip_grad_norm_) before an AdamW step."""
    import torch
    import torch.nn.functional as F
    model = _mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return Program(step, _cls_batch((16, 128), 10), (model, opt), True)


def _scheduled_step(model, opt, sched):
    """A classifier's step that steps its LR scheduler after the optimizer, inside it."""
    import torch.nn.functional as F

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        return loss
    return step


def lr_scheduler_tensor_lr():
    """SGD whose learning rate is a tensor (as PyTorch's compiled-optimizer tutorial
    writes it) with a scheduler stepped inside the step."""
    import torch
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=torch.tensor(0.05), momentum=0.9)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    return Program(_scheduled_step(model, opt, sched), _cls_batch((16, 128), 10), (model, opt), True)


def step_lr_in_step():
    """SGD whose learning rate is a tensor with StepLR (step size 2, gamma 0.5) stepped
    inside the step, as PyTorch's tutorial on the compiled optimizer with an LR scheduler
    writes it: the rate halves every second step, by the scheduler's Python count
    (`last_epoch % step_size`), which the C program cannot keep: the export must refuse
    it, naming the scheduler."""
    import torch
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=torch.tensor(0.1), momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return Program(_scheduled_step(model, opt, sched), _cls_batch((16, 128), 10), (model, opt), True,
                   refuses="LR scheduler 'sched' (StepLR)")


def step_lr_per_epoch():
    """SGD with a float learning rate and StepLR stepped after every step, outside it (as
    the tutorials step a scheduler once an epoch; an epoch is one step here, so that the
    rate changes within the suite's steps): the loaded program's rate is a state tensor the
    user sets from the scheduler's."""
    import torch
    import torch.nn.functional as F
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def epoch_end(prog=None):
        sched.step()
        if prog is not None:  # (the program keeps its own copy of the state, the rate in it)
            prog.weight_tensor("optimizer.group0.lr").fill_(sched.get_last_lr()[0])
    return Program(_plain_step(model, opt, F.cross_entropy), _cls_batch((16, 128), 10), (model, opt), True,
                   epoch_end)


def grad_accumulation():
    """Gradient accumulation over two micro-batches, then one Adam step."""
    import torch
    import torch.nn.functional as F
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        total = 0
        for xs, ys in zip(x.chunk(2), y.chunk(2)):
            loss = F.cross_entropy(model(xs), ys) / 2
            loss.backward()
            total = total + loss.detach()
        opt.step()
        return total
    return Program(step, _cls_batch((32, 128), 10), None, True)


def gcn_pyg():
    """A two-layer GCN (torch_geometric's GCNConv, normalisation cached) on a fixed graph,
    node classification, Adam."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv
    n = 200
    g = torch.Generator().manual_seed(0)
    edges = torch.randint(0, n, (2, 800), generator=g).cuda()

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = GCNConv(32, 64, cached=True), GCNConv(64, 7, cached=True)

        def forward(self, x, e):
            return self.c2(F.relu(self.c1(x, e)), e)
    model = GCN().cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x, edges), y)
        loss.backward()
        opt.step()
        return loss
    return Program(step, _cls_batch((n, 32), 7), (model, opt), True)


def activation_checkpointing():
    """Blocks under torch.utils.checkpoint (non-reentrant), AdamW."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128))
                                        for _ in range(3))
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            for b in self.blocks:
                x = x + checkpoint(b, x, use_reentrant=False)
            return self.head(x)
    model = Net().cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return Program(_plain_step(model, opt, F.cross_entropy), _cls_batch((16, 128), 10), (model, opt), True)


def autograd_grad_penalty():
    """A gradient penalty: torch.autograd.grad of the output with respect to the input
    (create_graph=True) inside the loss, then backward and an Adam step."""
    import torch
    import torch.nn.functional as F
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        x = x.requires_grad_(True)
        out = model(x)
        (gx,) = torch.autograd.grad(out.sum(), x, create_graph=True)
        loss = F.cross_entropy(out, y) + 0.1 * gx.pow(2).sum(1).mean()
        loss.backward()
        opt.step()
        return loss
    return Program(step, _cls_batch((16, 128), 10), (model, opt), True)


def adam_for_loop():
    """Adam with neither foreach nor fused (the for-loop implementation); the step keeps
    its gradients (zero_grad(set_to_none=False))."""
    import torch
    import torch.nn.functional as F
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)

    def step(x, y):
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return Program(step, _cls_batch((16, 128), 10), (model, opt), True)


PROGRAMS = {f.__name__: f for f in (resnet18_bn_sgd, llama_adamw_fused, gpt2_adamw_foreach, vit_gradscaler_fp16,
                                    bert_mlm_bf16, mlp_dropout_dict, clip_grad_norm_adamw, lr_scheduler_tensor_lr,
                                    step_lr_per_epoch, step_lr_in_step, grad_accumulation, gcn_pyg,
                                    activation_checkpointing, autograd_grad_penalty, adam_for_loop)}
