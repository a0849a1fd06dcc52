#!/usr/bin/env bash
# Code generation on a GPU, in one command (see docs/codegen.md):
#
#   bash tests/gpu/run_codegen.sh
#
# pgcc turns tests/gpu/codegen/chain.graph into C, which is built against libpgrt
# and run with fresh buffers at new addresses on every call, checked against a CPU
# reference; then the graphs libpgrt built are dumped and read back by pgcc to
# check their topology against the IR.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-build/gpu}
mkdir -p "$OUT" build/gpu
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
make -s build/pgcc runtime
build/pgcc tests/gpu/codegen/chain.graph -o build/gpu/chain.c
gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Ibuild/gpu -Iruntime -I"$CUDA_HOME/include" \
  tests/gpu/codegen/chain_main.c build/gpu/chain.c build/libpgrt.a \
  -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Wl,-rpath,"$CUDA_HOME/lib64" -lcuda -lnvrtc -lm \
  -o build/gpu/chain
build/gpu/chain "$OUT"
python3 tests/gpu/codegen/check_topology.py build/pgcc tests/gpu/codegen/chain.graph "$OUT"
