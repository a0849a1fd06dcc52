#!/usr/bin/env python3
"""Synthetic graphs for the scale benchmark (bench/scale.py), in either dialect:

    gen_scale.py SHAPE N dot|graph > out

SHAPE: chain (one dependency chain), wide (every node depends on one of the first
64: a wide DAG), nested (the root's nodes are child graphs of 100-node chains, the
first few nested four deep), conditional (IF nodes whose bodies are 100-node chains).
N is the total number of nodes, bodies included (about).  DOT is written the way
cudaGraphDebugDotPrint writes it with the kernel-params flag.
"""
import sys

shape, n, dialect = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = sys.stdout
graphs = []  # (number, [node lines], [edges as (i, j)])


def chain(length):
    return [('kernel', None)] * length, [(i - 1, i) for i in range(1, length)]


if shape == 'chain':
    graphs.append((1, *chain(n)))
elif shape == 'wide':
    nodes = [('kernel', None)] * n
    graphs.append((1, nodes, [(i % 64, i) for i in range(64, n)]))
elif shape in ('nested', 'conditional'):
    per = 100
    bodies = max(1, n // (per + 1))
    root = []
    next_graph = 2
    body_graphs = []
    for b in range(bodies):
        g = next_graph
        next_graph += 1
        root.append(('child' if shape == 'nested' else 'cond', g))
        nodes, edges = chain(per)
        if shape == 'nested' and b < 4:  # a few bodies nest four deep
            inner = g
            for depth in range(3):
                deeper = next_graph
                next_graph += 1
                nodes = nodes + [('child', deeper)]
                edges = edges + [(len(nodes) - 2, len(nodes) - 1)]
                body_graphs.append((inner, nodes, edges))
                inner, (nodes, edges) = deeper, chain(per)
            body_graphs.append((inner, nodes, edges))
        else:
            body_graphs.append((g, nodes, edges))
    graphs.append((1, root, [(i - 1, i) for i in range(1, len(root))]))
    graphs += body_graphs
else:
    sys.exit(f'unknown shape {shape}')

if dialect == 'graph':
    out.write('pgcc 1;\nkernel k symbol "_Z4stepPf";\n')
    for g, nodes, edges in graphs:
        out.write(f'graph g{g} {{\n')
        for i, (kind, ref) in enumerate(nodes):
            if kind == 'kernel':
                out.write(f'  node g{g}.n{i} kernel k grid [{1 + i % 64}] block [128] smem 0;\n')
            elif kind == 'child':
                out.write(f'  node g{g}.n{i} child body g{ref};\n')
            else:
                out.write(f'  node g{g}.n{i} conditional type if handle {i} bodies [g{ref}];\n')
        for a, b in edges:
            out.write(f'  g{g}.n{a} -> g{g}.n{b};\n')
        out.write('}\n')
else:
    out.write('digraph dot {\n')
    for g, nodes, edges in graphs:
        out.write(f'subgraph cluster_{g} {{\nlabel="graph_{g}" graph[style="dashed"];\n')
        for i, (kind, ref) in enumerate(nodes):
            if kind == 'kernel':
                out.write(f'"graph_{g}_node_{i}"[style="bold" shape="octagon" label="{i}\n_Z4stepPf\n'
                          f'\\<\\<\\<{1 + i % 64},128,0\\>\\>\\>"];\n')
            elif kind == 'child':
                out.write(f'"graph_{g}_node_{i}"[style="solid" shape="rectangle" label="{i}\ngraph_{ref}\n"];\n')
            else:
                out.write(f'"graph_{g}_node_{i}"[style="bold" shape="record" label="{{\nCONDITIONAL\n| {{ID | {i}}}\n'
                          f'| {{Conditional Handle|{i}}}\n| {{Conditional Type| IF}}\n| {{True|graph_{ref}}}\n}}\n"];\n')
        for a, b in edges:
            out.write(f'"graph_{g}_node_{a}" -> "graph_{g}_node_{b}";\n')
        out.write('}\n')
    out.write('}\n')
