#!/usr/bin/env python3
"""Writes a synthetic .graph program of N nodes for the partition benchmark: kernels
with a parameter layout reading and writing intermediates (a new one every 4
kernels, so buffers live briefly, as in a forward pass), a host operation every 20
nodes, a dependency chain plus random skip edges within a window of 16, and 1 in 8
kernels with a measured GPU time.

    python3 bench/gen_graph.py 100000 > big.graph
"""
import random
import sys


def main():
    n = int(sys.argv[1])
    rnd = random.Random(1)
    out = sys.stdout
    w = out.write
    w('pgcc 1;\narch sm_90;\n')
    w('kernel k symbol "triton_poi_fused_add_mul_0" {\n  param 0 8 ptr;\n  param 8 8 ptr;\n  param 16 4 i32;\n}\n')
    w('buffer x size 65536 role input;\nbuffer y size 65536 role output;\n')
    nbuf = n // 4 + 2
    for b in range(nbuf):
        w(f'buffer t{b} size {4096 * (1 + b % 16)} role intermediate;\n')
    w('graph main {\n')
    for i in range(n):
        if i % 20 == 19:
            w(f'  node n{i} hostop op sync reason "the host reads a flag";\n')
            continue
        src = 'x' if i == 0 else f't{i // 4}'
        dst = 'y' if i == n - 1 else f't{i // 4 + 1}'
        gpu = f' gpu_us {rnd.uniform(1, 20):.2f}' if i % 8 == 0 else ''
        w(f'  node n{i} kernel k grid [{1 + i % 64}] block [128] args [{src}, {dst}, 4096]{gpu};\n')
    for i in range(1, n):
        w(f'  n{i - 1} -> n{i};\n')
        j = i - rnd.randint(2, 16)
        if j >= 0 and rnd.random() < 0.3:
            w(f'  n{j} -> n{i};\n')
    w('}\n')


if __name__ == '__main__':
    main()
