#!/usr/bin/env bash
# examples/deploy on a GPU, in one command (see examples/deploy/README.md):
#
#   bash tests/gpu/run_deploy.sh
#
# Builds pgcc and libpgrt, builds the deployment example for the committed export
# tests/corpus/export/mlp_small exactly as its README says (through pkg-config and
# runtime/pgrt-uninstalled.pc), runs it with --expect against the outputs PyTorch
# gave, and checks that the outputs file it wrote holds the same bytes it compared.
# Then the same build against an installed libpgrt (make install PREFIX=...) and its
# pgrt.pc.  Needs the libraries the export names (libcublasLt.so.13) and an sm_90 GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
OUT=${OUT:-build/gpu}
mkdir -p "$OUT"
X=tests/corpus/export/mlp_small
make -s build/pgcc runtime

echo "== examples/deploy, uninstalled libpgrt"
make -s -C examples/deploy clean
make -s -C examples/deploy EXPORT=../../$X NAME=mlp_small EXTRA_CFLAGS=-Werror
examples/deploy/deploy --expect $X/mlp_small.safetensors $X/mlp_small.io.safetensors "$OUT/deploy_out.safetensors" \
  | tee "$OUT/deploy.log"
grep -q '^PASS$' "$OUT/deploy.log"
echo "== the same, 20 calls, each on buffers at new addresses (--calls 20): the last must still PASS"
examples/deploy/deploy --expect --calls 20 $X/mlp_small.safetensors $X/mlp_small.io.safetensors \
  "$OUT/deploy_calls.safetensors" | tee "$OUT/deploy_calls.log"
grep -q '^PASS$' "$OUT/deploy_calls.log"
python3 - "$OUT/deploy_out.safetensors" <<'PY'
import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]; h = json.loads(f.read(n))
assert h["out0"]["dtype"] == "F32" and h["out0"]["shape"] == [1, 256], h
print("outputs file:", h)
PY

echo "== examples/deploy, installed libpgrt (pkg-config pgrt from PREFIX)"
prefix=$(mktemp -d)
make -s install PREFIX="$prefix" >/dev/null
make -s -C examples/deploy clean
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -s -C examples/deploy EXPORT=../../$X NAME=mlp_small \
  PGCC_TREE= PGCC="$PWD/build/pgcc" EXTRA_CFLAGS=-Werror
LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" examples/deploy/deploy --expect \
  $X/mlp_small.safetensors $X/mlp_small.io.safetensors "$OUT/deploy_out2.safetensors"
rm -rf "$prefix"
make -s -C examples/deploy clean
echo "PASS: examples/deploy runs mlp_small and matches PyTorch's outputs (uninstalled and installed libpgrt)"
