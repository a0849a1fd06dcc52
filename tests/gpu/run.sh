#!/usr/bin/env bash
# The GPU checks in one command, on a machine with an NVIDIA GPU, CUDA and PyTorch:
#
#   bash tests/gpu/run.sh
#
# Builds pgcc (from the committed parser sources: no flex or bison needed),
# pgcc-calibrate and the graph-walk helper; measures this GPU's profile; then runs
# the cost-model validation.  Results go to $OUT (default build/gpu).
set -euo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-build/gpu}
mkdir -p "$OUT" build/gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -s build/pgcc build/pgcc-calibrate
gcc -O2 -Wall -Wextra -Werror -shared -fPIC -I/usr/local/cuda/include tests/gpu/graphwalk.c \
  -o build/gpu/graphwalk.so -L/usr/local/cuda/lib64/stubs -lcuda
build/pgcc-calibrate -o "$OUT/profile.txt"
cat "$OUT/profile.txt"
PYTHONUNBUFFERED=1 python3 tests/gpu/cost_validate.py
