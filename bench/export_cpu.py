#!/usr/bin/env python3
"""The export's CPU-bound steps, each timed the way it runs now against the way it ran
before, on this machine, no GPU (docs/training.md, "Export"; docs/benchmarks.md):

  relocate   relocate.Relocator.kernel_args over a synthetic training step shaped like
             the ViT's (NODES kernel nodes, a sixth of them multi-tensor kernels whose
             1816-byte struct holds 100 weight addresses; WEIGHTS weight buffers, 1500
             other allocator blocks, 20 pool regions of 60 allocations each, three
             captures): its buffers, blocks and allocations found by bisection (now)
             against a scan of every one (before)
  embedded   embedded.embedded_cubins over a library's compressed cubins (cuBLASLt's, in
             $CUDA_HOME/lib64, where it is there) for 42 kernel names: matched by each
             cubin's symbol table against a search of its bytes for each name (every frame
             decompressed whole, one after another, both); each frame's header read first
             and only a cubin for this GPU decompressed whole, on threads, against every
             frame decompressed whole in turn; and from the index the first search leaves
             (search_cache.py)
  c          the C that pgcc generates for an export with its modules' bytes as string
             literals (now) against the same C with them as lists of numbers (before),
             compiled by $CC (default cc) -O2 -c; the two objects' .rodata compared

    PYTHONPATH=python:. python3 bench/export_cpu.py [--runs 3] [--nodes 651] [--weights 600]
        [--graph G.graph] [WHAT ...]

Median of --runs of each way, the ratio, and a check that both ways give the same
(the relocations, the cubins found, the bytes compiled); exits 1 where they do not.
"""
import argparse
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from pgcc import embedded
from pgcc.relocate import Allocations, Buffers, Relocator, Spans, block_of

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PGCC = os.path.join(TOP, "build", "pgcc")
GRAPH = os.path.join(TOP, "tests", "corpus", "export", "llama_tiny_bf16", "llama_tiny_bf16.graph")


def timed(fn, runs):
    """(median seconds, the last result)."""
    times, got = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        got = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), got


# ---- relocate ----

class ScanSpans(Spans):
    """Spans as they were: a scan of every block."""

    def holding(self, addr):
        return block_of(self.blocks, addr)


def synthetic_step(nodes, weights, seed=1):
    """(buffers, blocks per capture, regions per capture, allocations per capture, the
    nodes' (layout, blobs per capture)) of a synthetic training step's three captures."""
    rnd = random.Random(seed)
    caps, pools = 3, [0x7E0000000000, 0x7D0000000000, 0x300000000000]
    bufs, blocks, addr, ws = [], [[] for _ in range(caps)], 0x7F0000000000, []
    for i in range(weights):
        size = rnd.choice([768 * 4, 768 * 768 * 2, 3072 * 768 * 2, 768 * 2, 4])
        bufs.append(dict(name=f"w{i}", size=size, role="weight", ranges={c: addr for c in range(caps)}))
        ws.append((addr, size))
        for c in range(caps):
            blocks[c].append((addr, -(-size // 512) * 512))
        addr += -(-size // 512) * 512
    inputs = [pools[c] + 0x10000000 for c in range(caps)]
    bufs.append(dict(name="in0", size=4096, role="input", ranges={c: inputs[c] for c in range(caps)}))
    regions, allocs = [], []
    for c in range(caps):
        blocks[c].append((inputs[c], 4096))
        regs = [(pools[c] + r * 0x4000000, 0x2000000) for r in range(20)]
        regions.append(regs)
        blocks[c] += regs
        allocs.append([(rb + k * 0x8000, 0x8000) for rb, _ in regs for k in range(60)])
        blocks[c] += [(0x7C0000000000 + k * 0x100000, 0x1000) for k in range(1500)]
        blocks[c].sort()

    def inter(c, r, k, off):
        return pools[c] + r * 0x4000000 + k * 0x8000 + off
    progs = []
    for _ in range(nodes):
        if rnd.random() < 0.15:  # a multi-tensor kernel: 100 addresses, 100 sizes, stale bytes
            chosen = rnd.sample(ws, 100)
            stale = bytes(rnd.getrandbits(8) for _ in range(216))
            blobs = [b"".join(struct.pack("<Q", a) for a, _ in chosen) + b"".join(struct.pack("<q", n // 2)
                                                                                    for _, n in chosen) + stale
                     for _ in range(caps)]
            progs.append(([(0, 1816)], blobs))
        else:
            r, k, (wa, _) = rnd.randrange(20), rnd.randrange(60), rnd.choice(ws)
            blobs = [struct.pack("<QQQQiif", inter(c, r, k, 0), inter(c, (r + 1) % 20, k, 64), wa, inputs[c], 768,
                                 3072, 1.0) + bytes(4) for c in range(caps)]
            progs.append(([(0, 8), (8, 8), (16, 8), (24, 8), (32, 4), (36, 4), (40, 4)], blobs))
    return bufs, blocks, regions, allocs, progs


def relocate_once(step, scan):
    """The nodes' arguments and the problems, with the searches as they are or as scans."""
    bufs_spec, blocks, regions, allocs, progs = step
    bufs = Buffers()
    for b in bufs_spec:
        bufs.add(**b)
    paired = {2: Allocations(allocs[2], allocs[0])}
    rel = Relocator(bufs, blocks, [regions[0], regions[1], regions[2]], foreign=lambda a: None, paired=paired)
    if scan:
        rel.index.find = bufs.find
        rel.blocks = [ScanSpans(s.blocks) for s in rel.blocks]
        rel.regions = [ScanSpans(s.blocks) for s in rel.regions]
        for a in paired.values():
            a._holding = lambda side, v, a=a: [p for p in a.pairs if p[side][0] <= v <= p[side][0] + p[side][1]]
    out = []
    for i, (layout, blobs) in enumerate(progs):
        sus = []
        args = rel.kernel_args(layout, blobs, f"node {i}", set(), sus)
        out.append(([(a[0], a[1].name if a[0] == "ptr" else a[1], a[2] if a[0] == "ptr" else
                      [(r.at, r.buffer.name, r.offset, r.kind) for r in a[2]] if a[0] == "bytes" else None)
                     for a in args], sus))
    return out, list(rel.problems)


def bench_relocate(args):
    step = synthetic_step(args.nodes, args.weights)
    now_s, now = timed(lambda: relocate_once(step, False), args.runs)
    before_s, before = timed(lambda: relocate_once(step, True), args.runs)
    return [(f"relocate: {args.nodes} nodes, {args.weights + 1} buffers", before_s, now_s, now == before)]


# ---- embedded ----

def bench_embedded(args):
    path = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64", "libcublasLt.so.13")
    if not os.path.isfile(path):
        return [("embedded: no libcublasLt.so.13 under $CUDA_HOME/lib64: not measured", None, None, True)]
    names = ["_ZN7cutlass7Kernel2I42cutlass_80_simt_sgemm_128x64_8x5_nn_align1EEvNT_6ParamsE"] + \
            [f"_Z14not_a_kernel_{i}v" for i in range(41)]
    run = lambda **kw: [(s, at, len(img)) for s, at, img in embedded.embedded_cubins(path, 90, names, **kw)]

    class OneByOne(embedded.Zstd):
        peeks = False  # (every frame decompressed whole, in turn: the search before its threads)
    one_by_one_s, one_by_one = timed(lambda: run(zstd=OneByOne()), args.runs)
    own = embedded.holds_symbol
    embedded.holds_symbol = lambda image, wanted: any(s in image for s in wanted)
    try:
        bytes_s, by_bytes = timed(lambda: run(zstd=OneByOne()), args.runs)
    finally:
        embedded.holds_symbol = own
    now_s, now = timed(run, args.runs)
    index = {}
    run(index=index)
    indexed_s, indexed = timed(lambda: run(index=index), args.runs)
    return [("embedded: cuBLASLt 13's compressed cubins, 42 names, by symbol table", bytes_s, one_by_one_s,
             one_by_one == by_bytes and len(one_by_one) == 1),
            ("embedded: the same, frames' headers first, on threads", one_by_one_s, now_s, now == one_by_one),
            ("embedded: the same from the index a search left", now_s, indexed_s, indexed == now)]


# ---- generated C ----

LITERAL = re.compile(r'(static const unsigned char \w+\[(\d+)\] =)((?:\n    "(?:[^"\\]|\\[0-7]{3})*")+);\n')


def as_numbers(c_text):
    """The generated C with each module held as a list of numbers, as pgcc wrote it before."""
    def numbers(m):
        data = bytearray()
        for lit in re.findall(r'"((?:[^"\\]|\\[0-7]{3})*)"', m.group(3)):
            k = 0
            while k < len(lit):
                if lit[k] == "\\":
                    data.append(int(lit[k + 1:k + 4], 8))
                    k += 4
                else:
                    data.append(ord(lit[k]))
                    k += 1
        assert len(data) == int(m.group(2))
        rows = ["    " + " ".join(f"0x{b:02x}," for b in data[i:i + 16]) for i in range(0, len(data), 16)]
        return m.group(1).replace(" =", " = {") + "\n" + "\n".join(rows) + "\n};\n"
    return LITERAL.sub(numbers, c_text)


def bench_c(args):
    cc = os.environ.get("CC", "cc")
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if not os.path.isfile(os.path.join(cuda, "include", "cuda.h")):
        return [("c: no CUDA headers under $CUDA_HOME: not measured", None, None, True)]
    work = tempfile.mkdtemp(prefix="pgcc-bench-c-")
    try:
        now_c = os.path.join(work, "now.c")
        subprocess.run([PGCC, args.graph, "-o", now_c], check=True, capture_output=True)
        before_c = os.path.join(work, "before.c")
        with open(now_c) as f, open(before_c, "w") as g:
            g.write(as_numbers(f.read()))

        def compile_(src):
            obj = src[:-2] + ".o"
            subprocess.run([cc, "-std=c11", "-O2", "-fPIC", "-c", f"-I{TOP}/runtime", f"-I{cuda}/include", src, "-o",
                            obj], check=True, capture_output=True)
            rodata = obj + ".rodata"
            subprocess.run(["objcopy", "-O", "binary", "-j", ".rodata", obj, rodata], check=True, capture_output=True)
            with open(rodata, "rb") as f:
                return f.read()
        now_s, now = timed(lambda: compile_(now_c), args.runs)
        before_s, before = timed(lambda: compile_(before_c), args.runs)
        size = os.path.getsize(now_c) >> 20, os.path.getsize(before_c) >> 20
        return [(f"c: {os.path.basename(args.graph)}'s C ({size[0]} MiB, {size[1]} MiB as numbers), {cc} -O2",
                 before_s, now_s, now == before)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


WAYS = {"relocate": bench_relocate, "embedded": bench_embedded, "c": bench_c}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="*", choices=[[], *WAYS], default=[])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=651)
    ap.add_argument("--weights", type=int, default=600)
    ap.add_argument("--graph", default=GRAPH)
    args = ap.parse_args(argv)
    rows = []
    for what in args.what or list(WAYS):
        rows += WAYS[what](args)
    print("| step | before s | now s | before / now | same result |")
    print("|---|---|---|---|---|")
    for name, before, now, same in rows:
        cells = "- | - | -" if before is None else f"{before:.3f} | {now:.3f} | {before / now:.1f}x"
        print(f"| {name} | {cells} | {'yes' if same else 'NO'} |")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
