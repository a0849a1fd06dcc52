#!/usr/bin/env bash
# NCCL collectives in generated C, on two GPUs of one machine (see docs/codegen.md):
#
#   bash tests/gpu/run_nccl.sh
#
# pgcc turns tests/gpu/codegen/allreduce.graph (comm world ranks 2: a kernel into the
# arena, ncclAllReduce in place, a kernel into the output) into C, which is built
# against libpgrt; allreduce_main forks one process per rank (device = rank), each
# running 5 calls with new input and output addresses and the arena poisoned, checked
# against the CPU's sum over both ranks.  It runs as generated (the collective captured
# into a child graph of the region's graph), then with every region eager
# (PGRT_FAULT=instantiate: NCCL called on the stream).  NVLink multicast stays off
# (NCCL_NVLS_ENABLE=0).  libpgrt loads NCCL with dlopen: the Python package's
# (nvidia.nccl) where it is installed, else whatever the dynamic linker finds.
#
# Then the same for tests/gpu/codegen/allreduce_io.graph, the same computation with the
# all-reduce from the input into the output, which pgcc stages through the arena
# (compiler/stage.c: a copy in, the collective on arena buffers, a copy out): generated
# as `allreduce` (build/gpu/io/), it builds with the same allreduce_main.c.
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p build/gpu
make -s build/pgcc runtime
build/pgcc tests/gpu/codegen/allreduce.graph -o build/gpu/allreduce.c
build/pgcc --report tests/gpu/codegen/allreduce.graph
gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Ibuild/gpu -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/codegen/allreduce_main.c build/gpu/allreduce.c build/libpgrt.a \
  -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Wl,-rpath,"$CUDA_HOME/lib64" -lcuda -lnvrtc -ldl -lm \
  -o build/gpu/allreduce
mkdir -p build/gpu/io
build/pgcc tests/gpu/codegen/allreduce_io.graph --name=allreduce -o build/gpu/io/allreduce.c
build/pgcc --report tests/gpu/codegen/allreduce_io.graph
gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Ibuild/gpu/io -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/codegen/allreduce_main.c build/gpu/io/allreduce.c build/libpgrt.a \
  -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Wl,-rpath,"$CUDA_HOME/lib64" -lcuda -lnvrtc -ldl -lm \
  -o build/gpu/allreduce_io
# (nvidia.nccl is a namespace package: no __file__, its directory is its search location)
nccl_lib=$(python3 -c 'import importlib.util as u, os; s = u.find_spec("nvidia.nccl"); print(os.path.join(list(s.submodule_search_locations)[0], "lib"))' \
  2>/dev/null || true)
if [ -n "$nccl_lib" ] && [ -e "$nccl_lib/libnccl.so.2" ]; then
  export LD_LIBRARY_PATH="$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PGRT_NCCL="$nccl_lib/libnccl.so.2"
  echo "NCCL: $nccl_lib/libnccl.so.2 (the Python package's)"
elif ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 '; then
  echo "NCCL: $(ldconfig -p | grep 'libnccl.so.2 ' | head -n 1 | sed 's/.*=> //') (the system's)"
else
  echo "NCCL: no libnccl.so.2 found (pip install nvidia-nccl-cu13, or set PGRT_NCCL); trying the dynamic linker's path"
fi
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader || true
echo "== allreduce, 2 ranks, as generated (the collective captured into a child graph)"
build/gpu/allreduce
echo "== allreduce again, every region eager (PGRT_FAULT=instantiate: NCCL called on the stream)"
PGRT_FAULT=instantiate build/gpu/allreduce
echo "== allreduce_io, 2 ranks, as generated (the all-reduce on the input and output, staged through the arena)"
build/gpu/allreduce_io
echo "== allreduce_io again, every region eager (PGRT_FAULT=instantiate)"
PGRT_FAULT=instantiate build/gpu/allreduce_io
