#!/usr/bin/env python3
"""A chain of N kernels for the NAME_run benchmark (bench/run_codegen.sh).

    gen.py N edges [CUBIN]   the input x enters at the first node, y leaves the last:
                             2 nodes see new addresses when x and y move
    gen.py N all [CUBIN]     every node reads x: all N see new addresses

The kernels are tests/gpu/codegen/chain.cu's, compiled by NVRTC at init, or taken
from CUBIN (a path relative to bench/codegen/, the same source built with nvcc).
"""
import hashlib
import os
import sys

n, mode = int(sys.argv[1]), sys.argv[2]
cubin = sys.argv[3] if len(sys.argv) > 3 else None
here = os.path.dirname(os.path.abspath(__file__))
kernels = cubin or '../../tests/gpu/codegen/chain.cu'  # relative to here
sha = hashlib.sha256(open(os.path.join(here, kernels), 'rb').read()).hexdigest()
w = sys.stdout.write
w('pgcc 1;\narch sm_90;\n')
w(f'module kernels {"cubin" if cubin else "cuda"} file "{kernels}" sha256 "{sha}";\n')
w('kernel mul symbol "mul" module kernels {\n  param 0 4 i32;\n  param 8 8 ptr;\n  param 16 8 ptr;\n  param 24 8 ptr;\n}\n')
w('kernel scale_add symbol "scale_add" module kernels {\n  param 0 4 i32;\n  param 4 4 f32;\n'
  '  param 8 8 ptr;\n  param 16 8 ptr;\n  param 24 8 ptr;\n}\n')
w('buffer x size 4096 role input;\nbuffer y size 4096 role output;\nbuffer b size 4096 role weight;\n')
for i in range(n):
    w(f'buffer t{i} size 4096 role intermediate;\n')
w('graph main {\n')
for i in range(n):
    out = 'y' if i == n - 1 else f't{i}'
    if i == 0:
        w(f'  node k0 kernel mul grid [4] block [256] smem 0 args [1024, x, b, {out}];\n')
    else:
        src = 'x' if mode == 'all' else f't{i - 1}'
        acc = f't{i - 1}' if mode == 'all' else 'b'
        w(f'  node k{i} kernel scale_add grid [4] block [256] smem 0 args [1024, 1.0, {src}, {acc}, {out}];\n')
for i in range(1, n):
    w(f'  k{i - 1} -> k{i};\n')
w('}\n')
