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
#   shapes.graph: 2-D and 3-D copies, a 2-D memset, f16 and bf16 literal arguments,
#                a host node whose function the caller binds on every call; run a
#                third time with every region eager (PGRT_FAULT=instantiate)
#   relocs.graph: .graph format 2's relocation kinds: a whole address at a 4-byte-
#                aligned offset in a by-value struct, the low and high halves of an
#                address (buffers mapped 4 GiB apart, so the high halves move too), a
#                don't-care word; run with PGRT_UPDATE=host as well, and it checks
#                which path patched its nodes
#   hostread.graph: a program that reads device values on the host mid-way: a copy
#                into libpgrt's host buffers, a synchronization, a guard on a flag
#                (flipped on one call: PGRT_ERR_GUARD), then a kernel taking a scalar
#                read from a host buffer and a callback scalar; run a third time with
#                every region eager (PGRT_FAULT=instantiate)
#   buckets.graph: shape buckets: one program exported at batch sizes 1, 2, 4 and 8, a
#                switch node whose bodies are the variants; each call's size picks one
#                (sizes between them padded up, sizes past them refused with
#                PGRT_ERR_BUCKET), checked against the CPU with the arena poisoned; run as
#                generated (one graph per bucket, the cost model's choice) and with
#                PGRT_UPDATE=device, then as a switch (PGRT_BUCKETS=switch, with the
#                topology check) both ways, then with every bucket's graph failing to
#                instantiate (each bucket eagerly)
#   globals.graph: .graph format 2's module globals: a __device__ variable of a CUDA C
#                module, 1 in its image, that libpgrt sets to 3 after the module loads
#                (as cuDNN sets its kernels' configuration); y = 3 * x only if it did
#   pdl.graph:   .graph format 3's programmatic edge: a slow kernel and one that waits on
#                its grid dependency, run as generated and with PGRT_PDL=off; exact
#                results both ways, and the two graphs' edges must print differently
#   philox.graph: a program that draws random numbers (its random-number state, role
#                rng): two kernels take PyTorch's PhiloxCudaState by value and read the
#                seed and offset libpgrt wrote for the call; they must be PyTorch's
#                default seed and offsets 0, 8, 16 ..., then pgrt_rng_set's
# The runs share libpgrt's cache of compiled cubins, new at the start (PGRT_CACHE under
# $OUT): the first run of each CUDA source compiles it, the later ones load what it
# kept.  libpgrt's own kernels come compiled with libpgrt; chain runs twice more, with
# them so and its module cached, then with both off (everything compiled at init).
# Then DOT input: tests/gpu/dotin/capture.c captures launches on two streams and
# dumps the graph; pgcc compiles the dump; captured_main.c runs it with those launches'
# arguments and checks the result.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-build/gpu}
mkdir -p "$OUT/device" build/gpu
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
make -s build/pgcc runtime
# libpgrt's cache of compiled cubins starts empty: the first program that needs a CUDA
# source compiled runs with what NVRTC made, every later one with what the cache kept
export PGRT_CACHE="$OUT/pgrt-cache"
rm -rf "$PGRT_CACHE"
for t in chain loops shapes relocs hostread buckets globals pdl philox; do
  build/pgcc tests/gpu/codegen/$t.graph -o build/gpu/$t.c
  gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Ibuild/gpu -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
    tests/gpu/codegen/${t}_main.c build/gpu/$t.c build/libpgrt.a \
    -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Wl,-rpath,"$CUDA_HOME/lib64" -lcuda -lnvrtc -ldl -lm \
    -o build/gpu/$t
  # the bucket program runs as a switch here, where its graph can be checked; its default
  # form (one graph per bucket) runs below
  if [ $t = buckets ]; then export PGRT_BUCKETS=switch; echo "== buckets as a switch (PGRT_BUCKETS=switch)"; fi
  build/gpu/$t "$OUT"
  python3 tests/gpu/codegen/check_topology.py build/pgcc tests/gpu/codegen/$t.graph "$OUT"
  echo "== $t again, every graph region patched on the device (PGRT_UPDATE=device)"
  PGRT_UPDATE=device build/gpu/$t "$OUT/device"
  python3 tests/gpu/codegen/check_topology.py build/pgcc tests/gpu/codegen/$t.graph "$OUT/device"
  unset PGRT_BUCKETS
done
# libpgrt's own kernels came built with it, so the cache holds the programs' 9 CUDA
# modules and nothing else
kept=$(ls "$PGRT_CACHE"/*.cubin 2>/dev/null | wc -l)
echo "== libpgrt's cache holds $kept cubins (the programs' CUDA modules)"
[ "$kept" -eq 9 ] || { echo "FAIL: libpgrt kept $kept compiled cubins in $PGRT_CACHE, expected the 9 programs' modules"; exit 1; }
# chain's init line: "init: T ms, own kernels T ms: prebuilt P, nvrtc N, cached C"
own_ways() { build/gpu/chain "$OUT" | tee -a /dev/stderr | sed -n 's/^init: .*prebuilt \([0-9]*\), nvrtc \([0-9]*\), cached \([0-9]*\)$/\1 \2 \3/p'; }
echo "== chain again, its own kernels as libpgrt's build compiled them, its module from the cache"
read -r pre nv ca <<<"$(PGRT_UPDATE=device own_ways)"
[ "${pre:-0}" -ge 1 ] && [ "$nv" = 0 ] && [ "$ca" = 1 ] ||
  { echo "FAIL: expected libpgrt's own kernels prebuilt and chain.cu cached, nothing compiled"; exit 1; }
echo "== chain again, nothing prebuilt or cached (PGRT_PREBUILT=off PGRT_CACHE=off): NVRTC compiles all"
read -r pre2 nv2 ca2 <<<"$(PGRT_PREBUILT=off PGRT_CACHE=off PGRT_UPDATE=device own_ways)"
[ "$pre2" = 0 ] && [ "$nv2" = $((pre + 1)) ] && [ "$ca2" = 0 ] ||
  { echo "FAIL: expected NVRTC to compile chain.cu and the $pre sources of libpgrt's own"; exit 1; }
echo "== buckets as generated: one graph per bucket, the host launching the one the size picks"
build/gpu/buckets "$OUT"
echo "== buckets again, one graph per bucket, patched on the device where it can (PGRT_UPDATE=device)"
PGRT_UPDATE=device build/gpu/buckets "$OUT/device"
echo "== buckets again, no bucket's graph instantiating: each bucket's nodes eagerly (PGRT_FAULT=instantiate)"
mkdir -p "$OUT/eager"
PGRT_BUCKETS=graphs PGRT_FAULT=instantiate build/gpu/buckets "$OUT/eager"
echo "== relocs again, every graph region patched from the host (PGRT_UPDATE=host)"
mkdir -p "$OUT/host"
PGRT_UPDATE=host build/gpu/relocs "$OUT/host"
python3 tests/gpu/codegen/check_topology.py build/pgcc tests/gpu/codegen/relocs.graph "$OUT/host"
echo "== shapes again, its graph region launched eagerly (PGRT_FAULT=instantiate)"
PGRT_FAULT=instantiate build/gpu/shapes "$OUT/eager"
echo "== hostread again, every region launched eagerly (PGRT_FAULT=instantiate)"
PGRT_FAULT=instantiate build/gpu/hostread "$OUT/eager"
echo "== DOT input: a stream capture's cudaGraphDebugDotPrint dump, compiled by pgcc and run"
"$CUDA_HOME/bin/nvcc" -cubin -arch=sm_90 tests/gpu/codegen/chain.cu -o build/gpu/chain.cubin
gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/dotin/capture.c -L"$CUDA_HOME/lib64/stubs" -lcuda -o build/gpu/capture
build/gpu/capture build/gpu/chain.cubin "$OUT/captured.dot"
build/pgcc --calls=1000000 "$OUT/captured.dot" --module=tests/gpu/codegen/chain.cu --name=captured \
  -o build/gpu/captured.c
gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Ibuild/gpu -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/dotin/captured_main.c build/gpu/captured.c build/libpgrt.a \
  -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Wl,-rpath,"$CUDA_HOME/lib64" -lcuda -lnvrtc -ldl -lm \
  -o build/gpu/captured
build/gpu/captured
