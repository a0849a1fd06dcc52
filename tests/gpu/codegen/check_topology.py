#!/usr/bin/env python3
"""The CUDA graphs libpgrt built have the IR's topology: for each graph region of a
.graph file, the DOT that cudaGraphDebugDotPrint wrote of the built graph, read
back by pgcc, has the region's nodes (kind by kind) and its edges, counting the
nodes and edges of every child graph and conditional body inside the region.

    check_topology.py PGCC GRAPH DOT_DIR      (DOT files: DOT_DIR/STEM_regionN.dot)
"""
import collections
import json
import os
import re
import subprocess
import sys

pgcc, graph, dot_dir = sys.argv[1:4]
stem = os.path.splitext(os.path.basename(graph))[0]
text = open(graph).read()
# libpgrt builds graph allocations as empty nodes: their buffers live in the arena
BUILT_AS = {'mem_alloc': 'empty', 'mem_free': 'empty'}

graphs = {}  # graph name -> (node names, edges)
for name, body in re.findall(r'^graph (\S+) \{\n(.*?)^\}', text, re.M | re.S):
    graphs[name] = (re.findall(r'^\s*node (\S+)', body, re.M), re.findall(r'^\s*(\S+) -> (\S+)(?: \S+)?;', body, re.M))
kinds, bodies = {}, {}
for name, kind, rest in re.findall(r'^\s*node (\S+) ([^\s;]+)([^;]*);', text, re.M):
    kinds[name] = BUILT_AS.get(kind, kind)
    m = re.search(r'\bbody (\S+)|\bbodies \[([^\]]*)\]', rest)
    bodies[name] = [g.strip() for g in (m.group(1) or m.group(2)).split(',')] if m else []


def inside(names):
    """The nodes and edges of the bodies under these nodes, all the way down."""
    nodes, edges = [], 0
    for n in names:
        for g in bodies[n]:
            members, body_edges = graphs[g]
            sub_nodes, sub_edges = inside(members)
            nodes += members + sub_nodes
            edges += len(body_edges) + sub_edges
    return nodes, edges


report = json.loads(subprocess.run([pgcc, '--report=json', '--calls=1000000', graph], capture_output=True, text=True,
                                   check=True).stdout)
failed = False
for r in report['regions']:
    if r['decision'] != 'graph':
        continue
    members = set(r['members'])
    sub_nodes, sub_edges = inside(sorted(members))
    want_kinds = collections.Counter(kinds[m] for m in list(members) + sub_nodes)
    want_edges = sum(1 for a, b in graphs[next(iter(graphs))][1] if a in members and b in members) + sub_edges
    dot = f'{dot_dir}/{stem}_region{r["id"]}.dot'
    back = subprocess.run([pgcc, '--emit=graph', dot], capture_output=True, text=True)
    if back.returncode:
        print(f'region {r["id"]}: pgcc cannot read {dot}:\n{back.stderr}')
        failed = True
        continue
    # libpgrt's device-side updater (a kernel named pgrt_update, first in a region that
    # patches on the device) is not the IR's: leave it and its edges out
    updaters = set(re.findall(r'^\s*node (\S+) kernel pgrt_update\b', back.stdout, re.M))
    # a copy or memset of several rows whose operands move is built as libpgrt's
    # pgrt_copy or pgrt_set kernel (CUDA patches only one-dimensional ones)
    boxed = {name: {'pgrt_copy': 'memcpy', 'pgrt_set': 'memset'}[k]
             for name, k in re.findall(r'^\s*node (\S+) kernel (pgrt_copy|pgrt_set)\b', back.stdout, re.M)}
    got_kinds = collections.Counter(boxed.get(name, kind)
                                    for name, kind in re.findall(r'^\s*node (\S+) (\S+)', back.stdout, re.M)
                                    if name not in updaters)
    got_edges = sum(1 for a, b in re.findall(r'^\s*(\S+) -> (\S+);', back.stdout, re.M) if a not in updaters)
    ok = got_kinds == want_kinds and got_edges == want_edges
    failed |= not ok
    print(f'{stem} region {r["id"]}: IR {dict(want_kinds)} {want_edges} edges; built graph {dict(got_kinds)} '
          f'{got_edges} edges{" besides the device-side updater" if updaters else ""}'
          f'{f" ({len(boxed)} copies and memsets as kernels)" if boxed else ""}: {"same" if ok else "DIFFERENT"}')
sys.exit(1 if failed else 0)
