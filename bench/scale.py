#!/usr/bin/env python3
"""The scale benchmark (docs/benchmarks.md): wall time and peak memory of pgcc
(read, verify, every pass, write) on the shapes of bench/gen_scale.py: with
`--emit=graph -o /dev/null` in both dialects at 10k and 100k nodes and at 1M nodes
for the .graph dialect; then compiled to C (`-o X.c`, which writes X.c and X.h) for
the shapes C can express (chain, wide, nested) from .graph input at 10k, 100k and 1M.
One core, median of 3 runs.

    python3 bench/scale.py            # everything
    python3 bench/scale.py c          # only the C part
"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
PGCC = os.path.join(TOP, 'build', 'pgcc')
WORK = os.path.join(TOP, 'build', 'bench')


def run(path, emit='graph'):
    out = os.devnull if emit == 'graph' else os.path.join(WORK, 'scale_out.c')
    t0 = time.perf_counter()
    p = subprocess.Popen(['taskset', '-c', '0', PGCC, f'--emit={emit}', '-o', out, path],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status:
        sys.exit(f'pgcc failed on {path}: {p.stderr.read().decode()}')
    return wall, ru.ru_maxrss / 1024


def cases():
    only_c = sys.argv[1:] == ['c']
    for shape in ('chain', 'wide', 'nested', 'conditional'):
        for dialect in ('dot', 'graph'):
            for n in (10000, 100000, 1000000):
                if not only_c and not (n == 1000000 and dialect == 'dot'):
                    yield shape, dialect, n, 'graph'
    for shape in ('chain', 'wide', 'nested'):  # conditional bodies need declared conditions for C
        for n in (10000, 100000, 1000000):
            yield shape, 'graph', n, 'c'


def main():
    os.makedirs(WORK, exist_ok=True)
    print(f'{"shape":12} {"dialect":7} {"emit":5} {"nodes":>9} {"MB":>7} {"median s":>9} {"us/node":>8} '
          f'{"peak MiB":>9}')
    for shape, dialect, n, emit in cases():
        path = os.path.join(WORK, f'scale_{shape}_{n}.{dialect}')
        if not os.path.exists(path):
            with open(path, 'w') as f:
                subprocess.run([sys.executable, os.path.join(HERE, 'gen_scale.py'), shape, str(n), dialect],
                               stdout=f, check=True)
        stats = subprocess.run([PGCC, '--stats', path], capture_output=True, text=True).stdout
        nodes = int(stats.split()[0].split('=')[1])
        runs = [run(path, emit) for _ in range(3)]
        med = statistics.median(r[0] for r in runs)
        mib = max(r[1] for r in runs)
        print(f'{shape:12} {dialect:7} {emit:5} {nodes:9d} {os.path.getsize(path) / 1e6:7.1f} {med:9.3f} '
              f'{med / nodes * 1e6:8.2f} {mib:9.1f}', flush=True)


if __name__ == '__main__':
    main()
