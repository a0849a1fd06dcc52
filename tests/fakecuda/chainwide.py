"""chainwide.py -- tests/gpu/codegen/chain.graph as one chain whose kernels carry access sets.

    python3 tests/fakecuda/chainwide.py SRC DST CODEGEN_DIR

The capture of chain.graph's program from one stream: its edges replaced by one chain in
node order, each pointer parameter annotated (`access r|w|rw`, as its kernel uses it in
chain.cu), k1 and m0 given measured times long enough that running them side by side
pays, and the module's path made absolute (DST is written elsewhere).  pgcc then rebuilds
the root graph from true dependencies (compiler/widen.c), and run.sh runs it over the
double, which runs ready nodes in an adversarial order: a dependency lost fails the
program's check of its results.
"""
import re
import sys

__all__ = ["main"]

ACCESS = {"mul": {8: "r", 16: "r", 24: "w"}, "scale_add": {8: "r", 16: "r", 24: "rw"}, "relu": {8: "rw"}}


def main(src, dst, codegen):
    out, kernel, nodes, done = [], None, [], False
    for line in open(src).read().splitlines():
        m = re.match(r"kernel (\w+) symbol", line)
        if m:
            kernel = m.group(1)
        m = re.match(r"  param (\d+) 8 ptr;$", line)
        if m and kernel in ACCESS:
            line = line[:-1] + " access %s;" % ACCESS[kernel][int(m.group(1))]
        line = line.replace('file "chain.cu"', 'file "%s/chain.cu"' % codegen)
        m = re.match(r"  node (\w+) ", line)
        if m:
            nodes.append(m.group(1))
            if m.group(1) in ("k1", "m0"):
                line = line[:-1] + " gpu_us 50;"
        if re.match(r"  \w+ -> \w+;$", line):
            continue
        if line == "}" and nodes and not done:
            out += ["  %s -> %s;" % (a, b) for a, b in zip(nodes, nodes[1:])]
            done = True
        out.append(line)
    open(dst, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
