"""Where the kernels of programs exported in the user's own flow come from: evidence for
choosing how pgcc finds kernel code it did not watch being loaded.

    PYTHONPATH=python python3 tests/gpu/probe_kernel_sources.py [--out DIR] [MODEL ...]

Each model runs in a child process of its own, the way a user runs it: the model built,
run eagerly once, `import pgcc` after torch, then pgcc.export with no watch.  Where the
export stops on kernels whose code it did not find, the child asks, for each such kernel:
  - which loaded libraries hold a kernel of that name in a fatbin for this GPU at all,
    and with which attributes (the captured function's attributes beside them);
  - whether cuBLASLt's runtime-generated kernels (nvjet) come back into view when its
    kernel cache is cleared (cublasLtClearNvjetCache) with a ModuleWatch running, by
    exporting again with that watch.
One JSON line per model (PROBE {...}); the list goes to DIR/probe.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def build(key):
    import torch
    import torch.nn as nn
    dev = "cuda"
    if key == "mlp_fp32":
        m = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).to(dev).eval()
        return m, (torch.randn(8, 512, device=dev),)
    if key == "mlp_fp16":
        m = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).to(dev).half().eval()
        return m, (torch.randn(8, 512, device=dev, dtype=torch.half),)
    if key == "mlp_bf16_b1":
        m = nn.Sequential(nn.Linear(1024, 4096), nn.SiLU(), nn.Linear(4096, 1024)).to(dev).bfloat16().eval()
        return m, (torch.randn(1, 1024, device=dev, dtype=torch.bfloat16),)
    if key == "mobilenet_v3_small":
        import torchvision
        m = torchvision.models.mobilenet_v3_small().to(dev).eval()
        return m, (torch.randn(2, 3, 224, 224, device=dev),)
    if key == "resnet18_fp16":
        import torchvision
        m = torchvision.models.resnet18().to(dev).half().eval()
        return m, (torch.randn(1, 3, 224, 224, device=dev, dtype=torch.half),)
    if key == "convnext_atto":
        import timm
        m = timm.create_model("convnext_atto", pretrained=False).to(dev).eval()
        return m, (torch.randn(2, 3, 224, 224, device=dev),)
    if key == "bert_mask":
        from transformers import BertConfig, BertModel
        cfg = BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024)
        m = BertModel(cfg).to(dev).eval()
        ids = torch.randint(0, 1000, (2, 64), device=dev)
        mask = torch.ones(2, 64, dtype=torch.long, device=dev)
        mask[1, 40:] = 0

        class Wrap(nn.Module):
            def __init__(self, b):
                super().__init__()
                self.b = b

            def forward(self, i, a):
                return self.b(input_ids=i, attention_mask=a).last_hidden_state
        return Wrap(m).eval(), (ids, mask)
    if key == "sdpa_fp16":
        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(256, 768)

            def forward(self, x):
                q, k, v = self.qkv(x).view(2, 128, 3, 4, 64).permute(2, 0, 3, 1, 4)
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return Attn().to(dev).half().eval(), (torch.randn(2, 128, 256, device=dev, dtype=torch.half),)
    raise KeyError(key)


MODELS = ["mlp_fp32", "mlp_fp16", "mlp_bf16_b1", "mobilenet_v3_small", "resnet18_fp16", "convnext_atto",
          "bert_mask", "sdpa_fp16"]


def where_named(symbols, sm):
    """{symbol: [[library, fatbin offset, attrs], ...]} over every loaded library's fatbins
    for this GPU, by name alone."""
    import ctypes as C
    from pgcc.cuda import cu
    from pgcc.fatbin import fatbins, read_section
    from pgcc.kernel_search import func_attrs, loaded_libraries
    d = cu()
    out = {s: [] for s in symbols}
    for path in loaded_libraries():
        sec = read_section(path)
        base = C.cast(C.c_char_p(sec), C.c_void_p).value
        for at, ok in fatbins(sec, sm):
            if not ok:
                continue
            lib = C.c_void_p()
            if d.LibraryLoadData(C.byref(lib), C.c_void_p(base + at), None, None, 0, None, None, 0) != 0:
                continue
            try:
                for s in symbols:
                    k, fn = C.c_void_p(), C.c_void_p()
                    if d.LibraryGetKernel(C.byref(k), lib, s.encode()) == 0 and \
                            d.KernelGetFunction(C.byref(fn), k) == 0:
                        out[s].append([os.path.basename(path), at, func_attrs(fn)])
            finally:
                d.LibraryUnload(lib)
    return out


def missing(err):
    """The kernel names an ExportError says it found no code for."""
    import re
    return sorted(set(re.findall(r"kernel (\S+): its code is neither", str(err))))


def clear_nvjet(torch):
    """Whether cuBLASLt's generated kernels were forgotten (the exporter's own step)."""
    from pgcc.kernel_search import forget_generated_kernels
    return forget_generated_kernels(torch.cuda.current_blas_handle(), lambda line: None)


def embedded_holders(symbols, sm):
    """{symbol: [[library, section, offset]]}: the zstd-compressed cubins for this GPU in the
    loaded libraries' data sections that hold the name (pgcc.embedded)."""
    from pgcc.embedded import embedded_cubins
    from pgcc.kernel_search import loaded_libraries
    out = {s: [] for s in symbols}
    for path in loaded_libraries():
        for section, at, image in embedded_cubins(path, sm, symbols):
            for s in symbols:
                if s.encode() in image:
                    out[s].append([os.path.basename(path), section, at])
    return out


def seen_in_new_thread(torch, m, xs, watch, symbols):
    """Runs the model eagerly and compiled in a new thread (PyTorch keeps a cuDNN handle and
    its plan caches per thread) with the watch running: {symbol: whether an image the watch
    saw from then on holds its name}."""
    import threading
    before = set(watch.images)
    err = []

    def run():
        try:
            with torch.no_grad():
                m(*xs)
                torch.compile(m)(*xs)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            err.append(repr(e)[:300])
    t = threading.Thread(target=run)
    t.start()
    t.join()
    new = [img for k, img in watch.images.items() if k not in before]
    out = {s: any(s.encode() in img for img in new) for s in symbols}
    out["(new images)"] = len(new)
    if err:
        out["(error)"] = err[0]
    return out


def child(key, out_dir):
    import torch
    rec = {"model": key, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    m, xs = build(key)
    with torch.no_grad():
        m(*xs)                                  # the user's eager check
        torch.compile(m)(*xs)                   # and a compiled call, as users try first
    torch.cuda.synchronize()
    import pgcc                                 # after torch, as users import it
    t0 = time.time()
    try:
        pgcc.export(m, xs, os.path.join(out_dir, "a"), verify=True, quiet=True)
        rec["natural"] = "PASS"
    except Exception as e:  # noqa: BLE001 -- the probe records every outcome
        rec["natural"] = f"{type(e).__name__}: {str(e)[:600]}"
        rec["missing"] = missing(e)
    rec["natural_s"] = round(time.time() - t0, 1)
    if rec.get("missing"):
        major, minor = torch.cuda.get_device_capability()
        sm = 10 * major + minor
        rec["named_in_libraries"] = where_named(rec["missing"], sm)
        rec["embedded"] = embedded_holders(rec["missing"], sm)
        watch = pgcc.ModuleWatch()
        rec["nvjet_clear"] = clear_nvjet(torch)
        rec["seen_after_thread"] = seen_in_new_thread(torch, m, xs, watch, rec["missing"])
        t0 = time.time()
        try:
            pgcc.export(m, xs, os.path.join(out_dir, "b"), verify=True, quiet=True, watch=watch)
            rec["after_clear"] = "PASS"
        except Exception as e:  # noqa: BLE001
            rec["after_clear"] = f"{type(e).__name__}: {str(e)[:600]}"
            rec["after_clear_missing"] = missing(e)
        rec["after_clear_s"] = round(time.time() - t0, 1)
        rec["watched_images"] = len(watch.images)
    print("PROBE " + json.dumps(rec), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--child")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    if a.child:
        with tempfile.TemporaryDirectory() as d:
            child(a.child, d)
        return
    recs = []
    for key in a.models or MODELS:
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, __file__, "--child", key], capture_output=True, text=True,
                               timeout=a.timeout)
            lines = [l for l in p.stdout.splitlines() if l.startswith("PROBE ")]
            rec = json.loads(lines[-1][6:]) if lines else {"model": key, "natural": "child died",
                                                            "stderr": p.stderr[-1500:]}
        except subprocess.TimeoutExpired:
            rec = {"model": key, "natural": f"timeout {a.timeout}s"}
        rec["wall_s"] = round(time.time() - t0, 1)
        print(json.dumps(rec), flush=True)
        recs.append(rec)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "probe.json"), "w") as f:
            json.dump(recs, f, indent=1)


if __name__ == "__main__":
    main()
