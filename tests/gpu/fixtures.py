"""The committed CI fixtures under tests/corpus/export, made on a GPU:

    PYTHONPATH=python:. python3 tests/gpu/fixtures.py OUT_DIR

exports, each verified (pgcc, C, run at new addresses against PyTorch):
  llama_tiny_bf16  a 2-layer Llama-style decoder, width 128, in bf16: cuBLASLt's
                   Hopper GEMMs with arguments packed in `extra`, run in clusters
  convnet_tiny     a small convnet (convolutions, batch norm, ReLU, pooling) in fp32:
                   cuDNN's kernels
and packs them into OUT_DIR/fixtures.tar.gz (tests/corpus/export/NAME/...).  Also
checks the package as a user gets it: the three lines of docs/python.md, run with
the package installed by pip elsewhere and not from this tree (PYTHONPATH=SITE
PGCC_SITE=SITE ...: with PGCC_SITE set, a pgcc imported from anywhere else is an error).
"""
import os
import sys
import tarfile

import torch
import torch.nn as nn


class TinyConvnet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        return self.body(x)


def llama_tiny_bf16():
    from transformers import LlamaConfig, LlamaModel
    torch.manual_seed(30)
    cfg = LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=256, max_position_embeddings=64, attn_implementation="sdpa")
    model = LlamaModel(cfg).cuda().eval().to(torch.bfloat16)

    class LastHidden(nn.Module):  # the module pgcc.export takes: ids -> last hidden state
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False).last_hidden_state

    return LastHidden().eval(), (torch.randint(0, 256, (1, 16), device="cuda"),)


def convnet_tiny():
    torch.manual_seed(31)
    return TinyConvnet().cuda().eval(), (torch.randn(2, 3, 32, 32, device="cuda"),)


def main():
    out = sys.argv[1]
    import pgcc
    import pgcc.verify_export
    print("pgcc from", os.path.dirname(pgcc.__file__))
    site = os.environ.get("PGCC_SITE")
    if site and not os.path.abspath(pgcc.__file__).startswith(os.path.abspath(site) + os.sep):
        sys.exit(f"pgcc came from {os.path.dirname(pgcc.__file__)}, not PGCC_SITE ({site}): put it first on PYTHONPATH")
    made = []
    for name, make in (("llama_tiny_bf16", llama_tiny_bf16), ("convnet_tiny", convnet_tiny)):
        model, inputs = make()
        d = os.path.join(out, "export", name)
        # the three lines of docs/python.md (the import above is the first)
        res = pgcc.export(model, inputs, d, name=name)
        y = pgcc.load(d, name=name)(*inputs)
        with torch.no_grad():
            ref = model(*inputs)  # eager: not the compiled program's kernels, so within the dtype's tolerance
        err, tol = pgcc.verify_export.rel_err(y, ref), {torch.bfloat16: 2e-2, torch.float32: 1e-5}[ref.dtype]
        print(f"{name}: {res.verified}; pgcc.load(...)(x) against eager PyTorch: max error {err:.3g} "
              f"(tolerance {tol:g})")
        if not err <= tol:
            raise SystemExit(1)
        made.append(name)
    with tarfile.open(os.path.join(out, "fixtures.tar.gz"), "w:gz") as t:
        for name in made:
            d = os.path.join(out, "export", name)
            for f in sorted(os.listdir(d)) + [os.path.join("kernels", k) for k in sorted(os.listdir(os.path.join(d, "kernels")))]:
                p = os.path.join(d, f)
                if os.path.isfile(p) and not f.startswith("build"):
                    t.add(p, arcname=f"tests/corpus/export/{name}/{f}")


if __name__ == "__main__":
    main()
