#!/usr/bin/env bash
# `make demo`: pgcc on the embedded examples. Run from the top directory.
set -euo pipefail
pgcc=build/pgcc
out=build/demo
mkdir -p "$out"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "pgcc demo: examples/allkinds.dot is a real cudaGraphDebugDotPrint dump (verbose flags)"
echo "of a CUDA graph holding every node kind CUDA 13 can put in a graph."
step $pgcc --stats examples/allkinds.dot
step $pgcc --emit=graph -o $out/allkinds.graph examples/allkinds.dot
sed -n '1,40p' $out/allkinds.graph
step $pgcc --stats $out/allkinds.graph
step $pgcc --emit=dot -o $out/allkinds.gv examples/allkinds.dot
if command -v dot >/dev/null; then
  step dot -Tsvg -o $out/allkinds.svg $out/allkinds.gv
  echo "picture: $out/allkinds.svg"
fi

echo
echo "examples/saxpy.graph is written by hand in pgcc's own format:"
step $pgcc --stats examples/saxpy.graph

echo
echo "What running it as CUDA graphs would buy, predicted offline (no GPU needed):"
step $pgcc --report examples/saxpy.graph

echo
echo "The launch code: C for libpgrt that builds the graph once and patches it per call:"
step $pgcc examples/saxpy.graph -o $out/saxpy.c
sed -n '/static const pgrt_node saxpy_nodes/,/^};/p' $out/saxpy.c
echo "(also $out/saxpy.h: the saxpy_init / saxpy_run / saxpy_destroy API)"

echo
echo "Bad input gets a located diagnostic and exit status 1:"
printf 'pgcc 1;\nbuffer x size 4096;\ngraph g {\n  node k memcpy dir dtod src x dst y width 4096;\n}\n' > $out/broken.graph
set +e
$pgcc --stats $out/broken.graph
echo "exit status: $?"
