#!/usr/bin/env python3
"""The parse benchmark (docs/benchmarks.md): time and peak memory of
`pgcc --stats` on synthetic verbose DOT dumps of 10k, 100k and 300k nodes, and of the
same programs as .graph files.  One command, from the top directory:

    make bench          (or: python3 bench/parse.py [--runs 5])

Prints one row per input: nodes, input size, median wall time over the runs,
nanoseconds per node, peak resident memory.  pgcc runs on one core.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
PGCC = os.path.join(TOP, 'build', 'pgcc')
WORK = os.path.join(TOP, 'build', 'bench')


def run(args):
    """Wall time and peak RSS (KiB) of one run, pinned to one core."""
    t0 = time.perf_counter()
    p = subprocess.Popen(['taskset', '-c', '0'] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, _, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    out, err = p.communicate()
    if p.returncode:
        sys.exit(f'pgcc failed: {err.decode()}')
    return wall, ru.ru_maxrss, out.decode().strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--sizes', default='10000,100000,300000')
    a = ap.parse_args()
    os.makedirs(WORK, exist_ok=True)
    rows = []
    for n in map(int, a.sizes.split(',')):
        dot = os.path.join(WORK, f'verbose_{n}.dot')
        graph = os.path.join(WORK, f'verbose_{n}.graph')
        if not os.path.exists(dot):
            with open(dot, 'w') as f:
                subprocess.run([sys.executable, os.path.join(HERE, 'gen_dot.py'), str(n)], stdout=f, check=True)
        subprocess.run([PGCC, '--emit=graph', '-o', graph, dot], check=True)
        for path in (dot, graph):
            times, rss = [], 0
            for _ in range(a.runs):
                wall, kib, stats = run([PGCC, '--stats', path])
                times.append(wall)
                rss = max(rss, kib)
            med = statistics.median(times)
            rows.append((os.path.basename(path), n, os.path.getsize(path) / 1e6, med, med / n * 1e9, rss / 1024, stats))
    print(f'{"input":24} {"nodes":>8} {"MB":>7} {"median s":>9} {"ns/node":>8} {"peak MiB":>9}')
    for name, n, mb, med, ns, mib, stats in rows:
        print(f'{name:24} {n:8d} {mb:7.1f} {med:9.3f} {ns:8.0f} {mib:9.1f}')


if __name__ == '__main__':
    main()
