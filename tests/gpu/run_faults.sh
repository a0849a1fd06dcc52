#!/usr/bin/env bash
# libpgrt under faults, on a GPU, one command:  bash tests/gpu/run_faults.sh
# Then the eager fallback (every instantiation made to fail: results must stay right)
# and compute-sanitizer memcheck and racecheck over the code-generation test programs.
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p build/faults
make -s build/pgcc runtime
for g in oom badmodule badsource badglobal badglobalsize; do build/pgcc tests/gpu/faults/$g.graph -o build/faults/$g.c; done
build/pgcc tests/gpu/codegen/chain.graph -o build/faults/chain.c
CFLAGS="-std=c11 -O2 -Wall -Wextra -Werror -Ibuild/faults -Iruntime -Itests/gpu -I$CUDA_HOME/include"
LIBS="build/libpgrt.a -L$CUDA_HOME/lib64 -L$CUDA_HOME/lib64/stubs -Wl,-rpath,$CUDA_HOME/lib64 -lcuda -lnvrtc -ldl -lm"
gcc $CFLAGS tests/gpu/faults/faults_main.c build/faults/{oom,badmodule,badsource,badglobal,badglobalsize,chain}.c $LIBS \
  -o build/faults/faults
build/faults/faults
echo "== the same with every graph region patched on the device (PGRT_UPDATE=device)"
PGRT_UPDATE=device build/faults/faults | grep -E "leaks|info|passed"
echo "== eager fallback: every graph region fails to instantiate"
bash tests/gpu/run_codegen.sh >/dev/null 2>&1 || true   # builds build/gpu/chain
PGRT_FAULT=instantiate build/gpu/chain build/gpu 2>&1 | grep -E "warning|PASS|FAIL|call 0"
echo "== a region with conditional nodes cannot fall back: init fails, with the reason"
PGRT_FAULT=instantiate build/gpu/loops build/gpu 2>&1 | grep -E "failed|PASS|FAIL" || true
for t in chain loops shapes; do
  echo "== compute-sanitizer memcheck: $t"
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 build/gpu/$t build/gpu 2>&1 | grep -E "ERROR SUMMARY|PASS|FAIL"
  echo "== compute-sanitizer memcheck: $t, patched on the device"
  PGRT_UPDATE=device compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 build/gpu/$t build/gpu 2>&1 | grep -E "ERROR SUMMARY|PASS|FAIL"
  echo "== compute-sanitizer racecheck: $t"
  compute-sanitizer --tool racecheck --error-exitcode 9 build/gpu/$t build/gpu 2>&1 | grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASS|FAIL"
done
