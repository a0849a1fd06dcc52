#!/usr/bin/env python3
"""The partition benchmark (docs/benchmarks.md): time of each pass of
`pgcc --report=json --time-passes` on synthetic .graph programs of 10k, 100k and 300k
nodes (bench/gen_graph.py: kernels over short-lived intermediates, a host operation
every 20 nodes, skip edges), pinned to one core; medians of 5 runs.

    make bench          (or: python3 bench/partition.py)
"""
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
PGCC = os.path.join(TOP, 'build', 'pgcc')
WORK = os.path.join(TOP, 'build', 'bench')
PASSES = ['read', 'verify', 'classify', 'schedule', 'partition', 'cost', 'memplan', 'report']


def main():
    runs = 5
    os.makedirs(WORK, exist_ok=True)
    rows = []
    for n in (10000, 100000, 300000):
        path = os.path.join(WORK, f'part_{n}.graph')
        if not os.path.exists(path):
            with open(path, 'w') as f:
                subprocess.run([sys.executable, os.path.join(HERE, 'gen_graph.py'), str(n)], stdout=f, check=True)
        per = {k: [] for k in PASSES + ['passes', 'total']}
        for _ in range(runs):
            t0 = time.perf_counter()
            p = subprocess.run(['taskset', '-c', '0', PGCC, '--time-passes', '--report=json', '-o', os.devnull, path],
                               capture_output=True, text=True)
            total = time.perf_counter() - t0
            if p.returncode:
                sys.exit(p.stderr)
            t = {}
            for name, sec in re.findall(r'pgcc: time: (\w+)\s+([\d.]+) s', p.stderr):
                t[name] = t.get(name, 0) + float(sec)
            for k in PASSES:
                per[k].append(t.get(k, 0))
            per['passes'].append(sum(t.get(k, 0) for k in ('classify', 'schedule', 'partition', 'cost', 'memplan', 'report')))
            per['total'].append(total)
        rows.append((n, {k: statistics.median(v) for k, v in per.items()}))
    cols = PASSES + ['passes', 'total']
    print(f'{"nodes":>8} ' + ' '.join(f'{c:>9}' for c in cols) + '   (ms; passes = classify..report)')
    for n, m in rows:
        print(f'{n:8d} ' + ' '.join(f'{m[c] * 1e3:9.1f}' for c in cols))


if __name__ == '__main__':
    main()
