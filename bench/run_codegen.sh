#!/usr/bin/env bash
# The NAME_run benchmark (docs/benchmarks.md), on a GPU machine, one command:
#   bash bench/run_codegen.sh
# A generated 200-kernel chain; host and GPU time per call with inputs and outputs
# fixed, and moving to new addresses on every call (2 nodes or all 200 patched);
# each as the cost model chose (device-side update where many nodes change) and with
# every node patched from the host (PGRT_UPDATE=host), side by side; then init time
# against building the same graph by stream capture.
set -euo pipefail
cd "$(dirname "$0")/.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p build/benchgen
make -s build/pgcc runtime
for mode in edges all; do
  python3 bench/codegen/gen.py 200 $mode > bench/codegen/chain_$mode.graph
  build/pgcc --calls=1000000 --device-update bench/codegen/chain_$mode.graph --name=chain_$mode -o build/benchgen/chain_$mode.c
  gcc -std=c11 -O2 -Wall -Wextra -Werror -Ibuild/benchgen -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
    -DBENCH_HEADER="\"chain_$mode.h\"" -DBENCH_NAME_weights=chain_${mode}_weights -DBENCH_NAME_args=chain_${mode}_args \
    -DBENCH_NAME_init=chain_${mode}_init -DBENCH_NAME_run=chain_${mode}_run -DBENCH_NAME_destroy=chain_${mode}_destroy \
    bench/codegen/run_main.c build/benchgen/chain_$mode.c build/libpgrt.a \
    -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Wl,-rpath,"$CUDA_HOME/lib64" -lcuda -lnvrtc -ldl -o build/benchgen/run_$mode
  rm -f bench/codegen/chain_$mode.graph
  build/benchgen/run_$mode $mode
  PGRT_UPDATE=host build/benchgen/run_$mode $mode/host
done
# Init time against stream capture, from the same cubin (nvcc here, embedded by pgcc)
"$CUDA_HOME/bin/nvcc" -cubin -arch=sm_90 tests/gpu/codegen/chain.cu -o build/benchgen/chain.cubin
cp build/benchgen/chain.cubin bench/codegen/chain.cubin
python3 bench/codegen/gen.py 200 edges chain.cubin > bench/codegen/chain_cubin.graph
build/pgcc --calls=1000000 bench/codegen/chain_cubin.graph --name=chain_cubin -o build/benchgen/chain_cubin.c
rm -f bench/codegen/chain_cubin.graph bench/codegen/chain.cubin
gcc -std=c11 -O2 -Wall -Wextra -Werror -Ibuild/benchgen -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  bench/codegen/init_main.c build/benchgen/chain_cubin.c build/libpgrt.a \
  -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Wl,-rpath,"$CUDA_HOME/lib64" -lcuda -lnvrtc -ldl -o build/benchgen/init
build/benchgen/init build/benchgen/chain.cubin
