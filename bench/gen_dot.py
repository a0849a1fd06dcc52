#!/usr/bin/env python3
"""Writes a synthetic verbose DOT dump of N nodes, in the form cudaGraphDebugDotPrint
writes with cudaGraphDebugDotFlagsVerbose: kernel, memcpy and memset nodes as record
labels, host/empty/event nodes as plain labels, a chain of dependencies with a
fan-out every few nodes.

    python3 bench/gen_dot.py 100000 > big.dot
"""
import sys

KERNEL = ('"graph_1_node_{i}"[style="bold" shape="record" label="{{KERNEL\n'
          '| {{ID | {i} (topoId: {t}) | {name}\\<\\<\\<\\{{{g},1\\}},\\{{128,4\\}},{smem}\\>\\>\\>}}\n'
          '| {{{{node handle | func handle}} | {{0x{h:016X} | 0x000055F117756700}}}}\n'
          '| {{accessPolicyWindow | {{base_ptr | num_bytes | hitRatio | hitProp | missProp}} | '
          '{{0x0000000000000000 | 0 | 0.000000 | N | N}}}}\n'
          '| {{cooperative | 0}}\n| {{priority | 0}}\n}}"];\n\n')
MEMCPY = ('"graph_1_node_{i}"[style="solid" shape="record" label="{{\nMEMCPY\n'
          '| {{{{ID | node handle}} | {{{i} (topoId: {t}) | 0x{h:016X}}}}}\n'
          '| {{kind | DtoD (DEVICE to DEVICE)}}\n'
          '| {{{{srcPtr | dstPtr}} | {{pitch | ptr | xsize | ysize | pitch | ptr | xsize | ysize}} | '
          '{{0 | 0x{src:016X} | 0 | 0 | 0 | 0x{dst:016X} | 0 | 0}}}}\n'
          '| {{{{srcPos | {{{{x | 0}} | {{y | 0}} | {{z | 0}}}}}} | {{dstPos | {{{{x | 0}} | {{y | 0}} | {{z | 0}}}}}} | '
          '{{Extent | {{{{Width | 4096}} | {{Height | 1}} | {{Depth | 1}}}}}}}}\n}}"];\n\n')
MEMSET = ('"graph_1_node_{i}"[style="solid" style="solid" shape="record" label="{{MEMSET\n'
          '| {{{{ID | node handle | dptr | pitch | value | elementSize | width | height}} | '
          '{{{i} (topoId: {t}) | 0x{h:016X} | 0x{dst:016X} | 0 | 0 | 4 | 1024 | 1}}}}}}"];\n\n')
PLAIN = ('"graph_1_node_{i}"[style="solid" shape="rectangle" label="{i} (topoId: {t})\n{kind}\n'
         'node handle: 0x{h:016X}\n{extra}"];\n\n')

NAMES = ['_ZN8internal5gemvx6kernelIiiffffLb0ELb1ELb1ELb0ELi7ELb0E18cublasGemvParamsExIi30cublasGemv'
         'TensorStridedBatchedIKfES5_S3_IfEfEEENSt9enable_ifIXntT5_EvE4typeET11_',
         'triton_poi_fused_add_addmm_gelu_mul_0', 'triton_per_fused_add_addmm_native_layer_norm_view_5',
         '_Z5scalePffi']


def node(i, n):
    t, h = n - 1 - i, 0x55F11775F7B0 + 0x768 * i
    base = 0x7F9399E00000 + 0x1000 * (i % 4096)
    r = i % 10
    if r < 6:
        return KERNEL.format(i=i, t=t, h=h, name=NAMES[i % len(NAMES)], g=1 + i % 256, smem=16 * (i % 33))
    if r == 6:
        return MEMCPY.format(i=i, t=t, h=h, src=base, dst=base + 0x1000000)
    if r == 7:
        return MEMSET.format(i=i, t=t, h=h, dst=base + 0x2000000)
    if r == 8:
        return PLAIN.format(i=i, t=t, h=h, kind='EVENT_RECORD', extra='event: 0x000055F11779B8A0\n')
    return PLAIN.format(i=i, t=t, h=h, kind='EMPTY', extra='')


def main():
    n = int(sys.argv[1])
    out = sys.stdout
    out.write('digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n')
    for i in range(n):
        out.write(node(i, n))
    for i in range(1, n):  # a chain, plus a skip edge every 8 nodes
        out.write(f'"graph_1_node_{i - 1}" -> "graph_1_node_{i}" [headlabel=0];\n')
        if i % 8 == 0 and i >= 4:
            out.write(f'"graph_1_node_{i - 4}" -> "graph_1_node_{i}" [headlabel=1];\n')
    out.write('}\n}\n')


if __name__ == '__main__':
    main()
