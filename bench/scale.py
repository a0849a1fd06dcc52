#!/usr/bin/env python3
"""The scale benchmark (docs/benchmarks.md): wall time and peak memory of
`pgcc --emit=graph -o /dev/null` (read, verify, every pass, write) on the shapes of
bench/gen_scale.py in both dialects at 10k and 100k nodes, and at 1M nodes for the
.graph dialect; one core, median of 3 runs.

    python3 bench/scale.py
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


def run(path):
    t0 = time.perf_counter()
    p = subprocess.Popen(['taskset', '-c', '0', PGCC, '--emit=graph', '-o', os.devnull, path],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status:
        sys.exit(f'pgcc failed on {path}: {p.stderr.read().decode()}')
    return wall, ru.ru_maxrss / 1024


def main():
    os.makedirs(WORK, exist_ok=True)
    print(f'{"shape":12} {"dialect":7} {"nodes":>9} {"MB":>7} {"median s":>9} {"us/node":>8} {"peak MiB":>9}')
    for shape in ('chain', 'wide', 'nested', 'conditional'):
        for dialect in ('dot', 'graph'):
            for n in (10000, 100000, 1000000):
                if n == 1000000 and dialect == 'dot':
                    continue
                path = os.path.join(WORK, f'scale_{shape}_{n}.{dialect}')
                if not os.path.exists(path):
                    with open(path, 'w') as f:
                        subprocess.run([sys.executable, os.path.join(HERE, 'gen_scale.py'), shape, str(n), dialect],
                                       stdout=f, check=True)
                stats = subprocess.run([PGCC, '--stats', path], capture_output=True, text=True).stdout
                nodes = int(stats.split()[0].split('=')[1])
                runs = [run(path) for _ in range(3)]
                med = statistics.median(r[0] for r in runs)
                mib = max(r[1] for r in runs)
                print(f'{shape:12} {dialect:7} {nodes:9d} {os.path.getsize(path) / 1e6:7.1f} {med:9.3f} '
                      f'{med / nodes * 1e6:8.2f} {mib:9.1f}', flush=True)


if __name__ == '__main__':
    main()
