#!/usr/bin/env python3
"""Cost-model validation on a GPU (docs/cost-model.md).

For each model of the corpus (an 8x1024 MLP at batch 1, eager and torch.compile'd;
a GPT-2-style decoder, 6 layers x 512, batch 1 x 32 tokens, eager and compiled; an
MLP 4x512 training step at batch 8), on this GPU:

  1. capture one call with torch.cuda.CUDAGraph and dump it as DOT (debug_dump);
  2. measure it from C (tests/gpu/graphwalk.c): every kernel launched eagerly with
     its captured parameters, and the graph replayed; medians of 200 passes;
  3. time each kernel by itself (20 launches of it in a graph) and write those
     times into the .graph as gpu_us;
  4. ask pgcc for its prediction (--report=json) with the profile pgcc-calibrate
     measured on this GPU, and print predicted against measured.

Run from the top directory after `make build/pgcc build/pgcc-calibrate` and building
build/gpu/graphwalk.so (tests/gpu/run.sh does all of it).  Writes under $OUT.
"""
import ctypes
import json
import os
import subprocess
import sys

import torch
import torch.nn as nn

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.environ.get('OUT') or os.path.join(TOP, 'build', 'gpu')
PGCC = os.path.join(TOP, 'build', 'pgcc')
LIB = ctypes.CDLL(os.path.join(TOP, 'build', 'gpu', 'graphwalk.so'))
LIB.pgw_measure.argtypes = [ctypes.c_ulonglong, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
LIB.pgw_node_times.argtypes = [ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                               ctypes.c_int]


def mlp(depth, width):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers).cuda()


def models():
    torch.manual_seed(0)
    m = mlp(8, 1024).eval()
    x = torch.randn(1, 1024, device='cuda')
    yield 'mlp_eager', lambda: m(x)
    cm = torch.compile(m)
    yield 'mlp_compiled', lambda: cm(x)

    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, n_positions=256)
    gpt = GPT2Model(cfg).cuda().eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 32), device='cuda')
    yield 'gpt2_eager', lambda: gpt(input_ids=ids).last_hidden_state
    cg = torch.compile(gpt)
    yield 'gpt2_compiled', lambda: cg(input_ids=ids).last_hidden_state

    t = mlp(4, 512).train()
    opt = torch.optim.SGD(t.parameters(), lr=1e-3)
    xb, yb = torch.randn(8, 512, device='cuda'), torch.randn(8, 512, device='cuda')

    def step():
        opt.zero_grad(set_to_none=False)
        loss = ((t(xb) - yb) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    yield 'mlp_train_eager', step


def capture(name, fn):
    grad = name.endswith('train_eager')
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.set_grad_enabled(grad):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    g.enable_debug_mode()
    with torch.set_grad_enabled(grad), torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    dot = os.path.join(OUT, f'{name}.dot')
    g.debug_dump(dot)
    return g, dot


def main():
    os.makedirs(OUT, exist_ok=True)
    profile = os.path.join(OUT, 'profile.txt')
    rows = []
    keep = []  # the graphs must outlive the measurements
    for name, fn in models():
        g, dot = capture(name, fn)
        keep.append(g)
        handle = g.raw_cuda_graph()
        res = (ctypes.c_double * 6)()
        rc = LIB.pgw_measure(handle, 200, res)
        if rc:
            sys.exit(f'{name}: pgw_measure failed ({rc})')
        n = int(res[4])
        times = (ctypes.c_double * n)()
        rc = LIB.pgw_node_times(handle, 20, 30, times, n)
        if rc:
            sys.exit(f'{name}: pgw_node_times failed ({rc})')
        # the .graph, with each node's own GPU time (DOT node order = cuGraphGetNodes order)
        text = subprocess.run([PGCC, '--emit=graph', dot], capture_output=True, text=True, check=True).stdout
        lines, k = [], 0
        for line in text.splitlines():
            if line.startswith('  node '):
                line = line.replace(' origin ', f' gpu_us {times[k]:.3f} origin ', 1)
                k += 1
            lines.append(line)
        if k != n:
            sys.exit(f'{name}: {k} nodes in the .graph, {n} in the captured graph')
        graph = os.path.join(OUT, f'{name}.graph')
        with open(graph, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        rep = json.loads(subprocess.run([PGCC, '--report=json', f'--profile={profile}', '--calls=1000000', graph],
                                        capture_output=True, text=True, check=True).stdout)
        regions = rep['regions']
        pred_eager = rep['est_total_eager_us']
        pred_graph = sum(r['est_graph_us'] if r['graphable'] else r['est_eager_us'] for r in regions)
        rows.append(dict(model=name, nodes=n, kernel_sum_us=sum(times), measured_eager_us=res[0],
                         predicted_eager_us=pred_eager, measured_graph_us=res[1], predicted_graph_us=pred_graph,
                         eager_host_us=res[2], graph_host_us=res[3], regions=len(regions),
                         decision=[r['decision'] for r in regions]))
        print(f'{name}: {n} nodes ({int(res[5])} kernels), measured eager {res[0]:.1f} us graph {res[1]:.1f} us; '
              f'predicted eager {pred_eager:.1f} us graph {pred_graph:.1f} us', flush=True)

    with open(os.path.join(OUT, 'cost_validate.json'), 'w') as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), f, indent=1)
    print()
    print(f'GPU: {torch.cuda.get_device_name()}, PyTorch {torch.__version__}')
    print(f'{"model":16} {"kernels":>7} {"sum of kernels":>14} {"eager meas":>10} {"pred":>8} {"err":>7} '
          f'{"graph meas":>10} {"pred":>8} {"err":>7}')
    worst = 0
    for r in rows:
        ee = (r['predicted_eager_us'] - r['measured_eager_us']) / r['measured_eager_us'] * 100
        ge = (r['predicted_graph_us'] - r['measured_graph_us']) / r['measured_graph_us'] * 100
        worst = max(worst, abs(ee), abs(ge))
        print(f'{r["model"]:16} {r["nodes"]:7d} {r["kernel_sum_us"]:14.1f} {r["measured_eager_us"]:10.1f} '
              f'{r["predicted_eager_us"]:8.1f} {ee:+6.1f}% {r["measured_graph_us"]:10.1f} '
              f'{r["predicted_graph_us"]:8.1f} {ge:+6.1f}%')
    print(f'worst error: {worst:.1f}% (target: within 25%)')


if __name__ == '__main__':
    main()
