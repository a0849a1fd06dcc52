#!/usr/bin/env bash
# Code generation on a GPU, in one command (see docs/codegen.md):
#
#   bash tests/gpu/run_codegen.sh
#
# pgcc turns each test program into C, which is built against libpgrt and run with
# fresh buffers at new addresses on every call, checked against a CPU reference;
# then the graphs libpgrt built are dumped and read back by pgcc to check their
# topology against the IR.
#   chain.graph: kernels (NVRTC), memcpy, memset, events, a graph allocation, two
#                graph regions around a host synchronization
#   loops.graph: a child graph, a while node and an if/else node whose conditions
#                kernels set on the device
set -euo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-build/gpu}
mkdir -p "$OUT/device" build/gpu
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
make -s build/pgcc runtime
for t in chain loops; do
  build/pgcc tests/gpu/codegen/$t.graph -o build/gpu/$t.c
  gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Ibuild/gpu -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
    tests/gpu/codegen/${t}_main.c build/gpu/$t.c build/libpgrt.a \
    -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Wl,-rpath,"$CUDA_HOME/lib64" -lcuda -lnvrtc -ldl -lm \
    -o build/gpu/$t
  build/gpu/$t "$OUT"
  python3 tests/gpu/codegen/check_topology.py build/pgcc tests/gpu/codegen/$t.graph "$OUT"
  echo "== $t again, every graph region patched on the device (PGRT_UPDATE=device)"
  PGRT_UPDATE=device build/gpu/$t "$OUT/device"
  python3 tests/gpu/codegen/check_topology.py build/pgcc tests/gpu/codegen/$t.graph "$OUT/device"
done
