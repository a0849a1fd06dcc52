#!/usr/bin/env bash
# End to end on a GPU, in one command (docs/e2e.md):
#
#   bash tests/gpu/run_e2e.sh [--bench] [MODEL ...]
#
# Builds pgcc and libpgrt from the committed sources, then runs tests/gpu/e2e.py:
# each model is torch.compile'd, exported by the pgcc package (python/pgcc, put on
# PYTHONPATH here with the tree's root, whose tests/models holds the models; no install
# needed), compiled by pgcc, built and run from C through pgcc.load on fresh inputs at
# new addresses, and checked against PyTorch.
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
make -s build/pgcc runtime CUDA_HOME="$CUDA_HOME"
export PYTHONPATH="$PWD/python:$PWD${PYTHONPATH:+:$PYTHONPATH}"
CUDA_HOME="$CUDA_HOME" PYTHONUNBUFFERED=1 python3 tests/gpu/e2e.py "$@"
