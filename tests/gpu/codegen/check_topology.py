#!/usr/bin/env python3
"""The CUDA graphs libpgrt built have the IR's topology: for each graph region of
chain.graph, the DOT that cudaGraphDebugDotPrint wrote of the instantiated graph,
read back by pgcc, has the region's nodes (kind by kind) and its edges.

    check_topology.py PGCC GRAPH DOT_DIR
"""
import collections
import json
import re
import subprocess
import sys

pgcc, graph, dot_dir = sys.argv[1:4]
text = open(graph).read()
# libpgrt builds graph allocations as empty nodes: their buffers live in the arena
BUILT_AS = {'mem_alloc': 'empty', 'mem_free': 'empty'}
kinds = {name: BUILT_AS.get(kind, kind) for name, kind in re.findall(r'^\s*node (\S+) (\S+)', text, re.M)}
edges = re.findall(r'^\s*(\S+) -> (\S+);', text, re.M)
report = json.loads(subprocess.run([pgcc, '--report=json', '--calls=1000000', graph], capture_output=True, text=True,
                                   check=True).stdout)
failed = False
for r in report['regions']:
    if r['decision'] != 'graph':
        continue
    members = set(r['members'])
    want_kinds = collections.Counter(kinds[m] for m in members)
    want_edges = sum(1 for a, b in edges if a in members and b in members)
    dot = f'{dot_dir}/chain_region{r["id"]}.dot'
    back = subprocess.run([pgcc, '--emit=graph', dot], capture_output=True, text=True)
    if back.returncode:
        print(f'region {r["id"]}: pgcc cannot read {dot}:\n{back.stderr}')
        failed = True
        continue
    got_kinds = collections.Counter(re.findall(r'^\s*node \S+ (\S+)', back.stdout, re.M))
    got_edges = len(re.findall(r'^\s*\S+ -> \S+;', back.stdout, re.M))
    ok = got_kinds == want_kinds and got_edges == want_edges
    failed |= not ok
    print(f'region {r["id"]}: IR {dict(want_kinds)} {want_edges} edges; built graph {dict(got_kinds)} '
          f'{got_edges} edges: {"same" if ok else "DIFFERENT"}')
sys.exit(1 if failed else 0)
