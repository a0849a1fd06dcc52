#!/usr/bin/env bash
# libpgrt and generated C without a GPU, in one command (`make check-fake`, part of
# `make check`):
#
#   bash tests/fakecuda/run.sh
#
# Builds the CPU double of the CUDA driver (fakecuda.c, kernels.c) as libcuda.so.1 --
# libpgrt loads it through PGRT_LIBCUDA (runtime/cuda_driver.c: dlopen, then the double's
# cuGetProcAddress); the test programs, which call the driver themselves, link it -- and
# runs the code-generation test programs of tests/gpu/codegen over it, as
# tests/gpu/run_codegen.sh runs them on a GPU: each program's C from pgcc, built against
# libpgrt, with new buffers at new addresses on every call and checked against a CPU
# computation by its own main; again with every graph region patched on the device
# (PGRT_UPDATE=device: the updater's entries applied by its host version), from the host
# (relocs), with every region eager (PGRT_FAULT=instantiate), with the buckets as a
# switch or a graph each; chain with libpgrt's own kernels from its build's table, then
# with nothing prebuilt or cached (NVRTC compiles here: it needs no GPU).  What this
# proves is libpgrt's host side: what it writes into each node and when.  It proves
# nothing about a GPU (no concurrency, no real kernels); run_codegen.sh does that.
# The allreduce program (NCCL) and the topology checks (cuGraphDebugDotPrint) are
# GPU-only.  libpgrt from threads (tests/codegen/threads_main.c, over hostread's C) runs
# here too, and once more under ThreadSanitizer with libpgrt built with it (build/tsan).  With SAN_FLAGS (check-fake's second run: B=build/asan and check-asan's
# flags), libpgrt, the mains and the double are built with them and run under
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer: libpgrt's own memory
# errors show, and so does a kernel reading or writing past a buffer the double
# allocated (an arena too small for its plan, a wrong offset).
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
B=${B:-build}
F=$B/fake
mkdir -p "$F/out/device" "$F/out/host" "$F/out/eager"
if [ -n "${SAN_FLAGS:-}" ]; then # libpgrt, the fake and the mains under the sanitizers, as check-asan builds pgcc
  make -s B="$B" OPT="-O1 -g" EXTRA_CFLAGS="$SAN_FLAGS" LDFLAGS="$SAN_FLAGS" "$B/pgcc" runtime >/dev/null
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
else
  make -s B="$B" "$B/pgcc" runtime >/dev/null
fi
gcc -std=c11 -O1 -g ${SAN_FLAGS:-} -Wall -Wextra -Werror -fPIC -shared -I"$CUDA_HOME/include" -Iruntime \
  -Wl,-soname,libcuda.so.1 -Wl,--no-undefined tests/fakecuda/fakecuda.c tests/fakecuda/kernels.c -lm -o "$F/libcuda.so.1"
export PGRT_LIBCUDA="$PWD/$F/libcuda.so.1" # the same file the programs link: one double in the process
export PGRT_CACHE="$F/cache"
rm -rf "$PGRT_CACHE"
# each run's PASS line goes to $F/fake.log; a failure prints the run's whole output
: >"$F/fake.log"
run() { LD_LIBRARY_PATH="$F" "$@" >"$F/run.log" 2>&1 || { cat "$F/run.log"; echo "FAIL: $label: $*"; exit 1; }
        grep -q '^PASS' "$F/run.log" || { cat "$F/run.log"; echo "FAIL (no PASS line): $label: $*"; exit 1; }
        grep '^PASS' "$F/run.log" | sed "s|^|fake: ${label}: |" >>"$F/fake.log"; }
# the double's own audit of launch parameters (audit_main.c): an address in freed memory
# in a pointer, two 32-bit halves or a struct faults; 8 bytes straddling two parameters
# do not
gcc -std=c11 -O1 -g ${SAN_FLAGS:-} -Wall -Wextra -Werror -Iruntime -Itests/gpu -I"$CUDA_HOME/include" tests/fakecuda/audit_main.c \
  -L"$F" -lcuda -L"$CUDA_HOME/lib64" -lnvrtc -Wl,-rpath,"$CUDA_HOME/lib64" -o "$F/audit"
for c in pointer halves struct straddle; do # (a launch that faults leaves the context sticky, its library unfreeable)
  leaks=1 && [ $c != straddle ] && leaks=0
  ASAN_OPTIONS=detect_leaks=$leaks LD_LIBRARY_PATH="$F" FAKECUDA_KERNELS=skip "$F/audit" $c >"$F/run.log" 2>&1 ||
    { cat "$F/run.log"; echo "FAIL: audit $c"; exit 1; }
  sed -n 's/^audit: /fake: the double'"'"'s audit: /p' "$F/run.log" >>"$F/fake.log"
done
for t in chain loops shapes relocs hostread buckets globals pdl philox; do
  "$B/pgcc" tests/gpu/codegen/$t.graph -o "$F/$t.c"
  gcc -std=c11 -O2 ${SAN_FLAGS:-} -Wall -Wextra -Werror -pedantic -I"$F" -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
    tests/gpu/codegen/${t}_main.c "$F/$t.c" "$B/libpgrt.a" \
    -L"$CUDA_HOME/lib64/stubs" -lcuda -ldl -lm -o "$F/$t"
  label=$t; run "$F/$t" "$F/out"
  label="$t, PGRT_UPDATE=device"; PGRT_UPDATE=device run "$F/$t" "$F/out/device"
done
# libpgrt's own kernels came built with it, so its cache holds the programs' 9 CUDA
# modules, compiled by the first run of each, and nothing else
kept=$(ls "$PGRT_CACHE"/*.cubin 2>/dev/null | wc -l)
[ "$kept" -eq 9 ] || { echo "FAIL: libpgrt's cache holds $kept cubins, expected the 9 programs' modules"; exit 1; }
# libpgrt from threads (runtime/pgrt.h, "Threads"; tests/codegen/threads_main.c, over hostread's C):
# programs of their own on threads at once, built at once into an empty cache (whose one
# cubin, written by several threads at once, a later init finds whole); one program from
# two threads at once (PGRT_ERR_BUSY, deterministically: the first call waits in its
# callback scalar); one program from threads in turn, with no CUDA context of their own
threads_build() { # out, libpgrt, flags...
  local out=$1 lib=$2; shift 2
  gcc -std=c11 -O1 -g "$@" -Wall -Wextra -Werror -pedantic -I"$F" -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
    tests/codegen/threads_main.c "$F/hostread.c" "$lib" -L"$CUDA_HOME/lib64/stubs" -lcuda -ldl -lm -pthread -o "$out"; }
threads_cache() { # the cache the threads' run left: one cubin, no temporary file
  [ "$(ls "$F/threads_cache" | grep -c '\.cubin$')" = 1 ] && ! ls "$F/threads_cache" | grep -q '\.tmp$' ||
    { ls -l "$F/threads_cache"; echo "FAIL: $label: the cache is not one cubin"; exit 1; }; }
threads_build "$F/threads" "$B/libpgrt.a" ${SAN_FLAGS:-}
rm -rf "$F/threads_cache"
label="threads"; PGRT_CACHE="$F/threads_cache" run "$F/threads"
threads_cache
# and under ThreadSanitizer, libpgrt built with it (build/tsan; the double is not: its
# one lock is what TSan sees of it), once: in the run without the other sanitizers
if [ -z "${SAN_FLAGS:-}" ]; then
  if echo 'int main(void) { return 0; }' | gcc -fsanitize=thread -x c - -o "$F/tsan_probe" 2>/dev/null; then
    make -s B=build/tsan OPT="-O1 -g" EXTRA_CFLAGS="-fsanitize=thread" LDFLAGS="-fsanitize=thread" build/tsan/libpgrt.a \
      >/dev/null
    threads_build "$F/threads_tsan" build/tsan/libpgrt.a -fsanitize=thread
    rm -rf "$F/threads_cache"
    label="threads, ThreadSanitizer"
    TSAN_OPTIONS="halt_on_error=1 exitcode=66" PGRT_CACHE="$F/threads_cache" run "$F/threads_tsan"
    threads_cache
  else
    echo "fake: threads, ThreadSanitizer: not run (gcc has no -fsanitize=thread here)" >>"$F/fake.log"
  fi
fi
# kernels inside an installed library (runtime/libraries.c), as cuBLAS's and PyTorch's are:
# chain's cubin (as NVRTC compiled it above, from libpgrt's cache) in two fatbins of a library's .nv_fatbin
# section (mklib.py), and chain.graph with its module that library, its first kernel
# hinted in the first fatbin and the others in the second.  libpgrt loads both on
# threads with no current context (the double counts them), reads them in place from
# the mapped file (the double keeps the pointer); PGRT_LIBLOAD=serial, one by one.
cached=$(grep -l scale_add "$PGRT_CACHE"/*.cubin | head -n 1) # (runtime/cache.c: magic, key length, key, length, cubin)
python3 -c 'import struct, sys; d = open(sys.argv[1], "rb").read(); k, = struct.unpack_from("<Q", d, 8)
c, = struct.unpack_from("<Q", d, 16 + k); open(sys.argv[2], "wb").write(d[24 + k:24 + k + c])' "$cached" "$F/chain.cubin"
read -r off0 off1 <<<"$(python3 tests/fakecuda/mklib.py "$F/nv_fatbin" "$F/chain.cubin" "$F/chain.cubin")"
echo 'int pgfake_library;' >"$F/library.c"
gcc -shared -fPIC -Wl,-soname,libpgfake.so.1 "$F/library.c" -o "$F/libpgfake.so.1"
objcopy --add-section .nv_fatbin="$F/nv_fatbin" "$F/libpgfake.so.1"
sed -e 's/^pgcc 1;/pgcc 2;/' -e 's|^module kernels cuda file .*|module kernels library library "libpgfake.so.1";|' \
  -e "s|^kernel mul symbol \"mul\" module kernels {|kernel mul symbol \"mul\" module kernels entry $off0 {|" \
  -e "s|^\(kernel [a-z_]* symbol \"[a-z_]*\" module kernels\) {|\1 entry $off1 {|" \
  tests/gpu/codegen/chain.graph >"$F/chainlib.graph"
[ "$(grep -c " entry $off1 {" "$F/chainlib.graph")" -ge 2 ] || { echo "FAIL: chainlib.graph: kernels not hinted"; exit 1; }
"$B/pgcc" --name=chain "$F/chainlib.graph" -o "$F/chainlib.c"
gcc -std=c11 -O2 ${SAN_FLAGS:-} -Wall -Wextra -Werror -pedantic -I"$F" -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/codegen/chain_main.c "$F/chainlib.c" "$B/libpgrt.a" \
  -L"$CUDA_HOME/lib64/stubs" -lcuda -ldl -lm -o "$F/chainlib"
label="chain, its kernels in a library's two fatbins, loaded on threads"; run "$F/chainlib" "$F/out"
grep -q "^libraries: 2 fatbins, 2 threads loading them" "$F/run.log" &&
  grep -q "^fakecuda: 2 libraries loaded on threads with no current context" "$F/run.log" ||
  { cat "$F/run.log"; echo "FAIL: chainlib: its two fatbins were not loaded on two threads"; exit 1; }
label="chain, its kernels in a library's two fatbins, PGRT_LIBLOAD=serial"; PGRT_LIBLOAD=serial run "$F/chainlib" "$F/out"
grep -q "^libraries: 2 fatbins, 0 threads loading them" "$F/run.log" && ! grep -q "on threads with no current" "$F/run.log" ||
  { cat "$F/run.log"; echo "FAIL: chainlib, PGRT_LIBLOAD=serial: the fatbins were not loaded one by one"; exit 1; }
# the copy of a library already in the process (as PyTorch's, from its wheels) is the one
# libpgrt opens (runtime/shlib.c), before PGRT_LIB_<NAME>: chainlib with libpgfake.so.1
# mapped first from a directory of its own, and PGRT_LIB_PGFAKE naming no file
mkdir -p "$F/beside" && cp "$F/libpgfake.so.1" "$F/beside/"
label="chain, its library already in the process, PGRT_LIB_PGFAKE naming no file"
ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" LD_PRELOAD="$F/beside/libpgfake.so.1" \
  PGRT_LIB_PGFAKE=/nonexistent/libpgfake.so.1 run "$F/chainlib" "$F/out"
# chain captured as one chain, its kernels with access sets (chainwide.py): pgcc rebuilds
# the root graph from true dependencies (k1 beside m0), and the double, running ready
# nodes in an adversarial order, finds any dependency lost in the results
python3 tests/fakecuda/chainwide.py tests/gpu/codegen/chain.graph "$F/chainwide.graph" "$PWD/tests/gpu/codegen"
"$B/pgcc" --report=json "$F/chainwide.graph" | grep -q '"widen": {"ran": true, "kept": true, .*"width": 2,' ||
  { "$B/pgcc" --report "$F/chainwide.graph"; echo "FAIL: chainwide: its root graph was not widened"; exit 1; }
"$B/pgcc" --name=chain "$F/chainwide.graph" -o "$F/chainwide.c"
gcc -std=c11 -O2 ${SAN_FLAGS:-} -Wall -Wextra -Werror -pedantic -I"$F" -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/codegen/chain_main.c "$F/chainwide.c" "$B/libpgrt.a" \
  -L"$CUDA_HOME/lib64/stubs" -lcuda -ldl -lm -o "$F/chainwide"
label="chain widened from access sets"; run "$F/chainwide" "$F/out"
label="chain widened from access sets, PGRT_UPDATE=device"; PGRT_UPDATE=device run "$F/chainwide" "$F/out/device"
# one intermediate holding two values (reuse.graph): pgcc splits it where mul overwrites
# it (compiler/rename.c) and runs the two halves side by side; the double's order finds a
# value overwritten before its last reader
"$B/pgcc" --report=json tests/gpu/codegen/reuse.graph >"$F/reuse.json"
grep -q '"rename": {"buffers": 1, "values": 1,' "$F/reuse.json" &&
  grep -q '"widen": {"ran": true, "kept": true, .*"width": 4,' "$F/reuse.json" ||
  { "$B/pgcc" --report tests/gpu/codegen/reuse.graph; echo "FAIL: reuse: not renamed and widened"; exit 1; }
"$B/pgcc" tests/gpu/codegen/reuse.graph -o "$F/reuse.c"
gcc -std=c11 -O2 ${SAN_FLAGS:-} -Wall -Wextra -Werror -pedantic -I"$F" -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/codegen/reuse_main.c "$F/reuse.c" "$B/libpgrt.a" -L"$CUDA_HOME/lib64/stubs" -lcuda -ldl -lm -o "$F/reuse"
label="one buffer's two values renamed and run side by side"; run "$F/reuse"
label="one buffer's two values renamed, PGRT_UPDATE=device"; PGRT_UPDATE=device run "$F/reuse"
# the same with --priorities (compiler/priority.c): its kernels on the critical path (both
# halves' here: they are as long) carry a priority, and the double refuses a graph with one
# that is not instantiated to honour it
"$B/pgcc" --priorities --report=json tests/gpu/codegen/reuse.graph | grep -q '"priority": {"critical": 4, "kernels": 4,' ||
  { "$B/pgcc" --priorities --report tests/gpu/codegen/reuse.graph; echo "FAIL: reuse --priorities: not 4 of 4"; exit 1; }
"$B/pgcc" --priorities tests/gpu/codegen/reuse.graph -o "$F/reuse_prio.c"
[ "$(grep -c '\.priority = -1' "$F/reuse_prio.c")" = 4 ] || { echo "FAIL: reuse --priorities: not 4 priorities emitted"; exit 1; }
gcc -std=c11 -O2 ${SAN_FLAGS:-} -Wall -Wextra -Werror -pedantic -I"$F" -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/codegen/reuse_main.c "$F/reuse_prio.c" "$B/libpgrt.a" -L"$CUDA_HOME/lib64/stubs" -lcuda -ldl -lm \
  -o "$F/reuse_prio"
label="one buffer's two values renamed, the critical path's kernels prioritized"; run "$F/reuse_prio"
grep -q "^fakecuda: 1 graphs instantiated to honour their kernel nodes' priorities" "$F/run.log" ||
  { cat "$F/run.log"; echo "FAIL: reuse --priorities: the graph was not instantiated with USE_NODE_PRIORITY"; exit 1; }
label="the critical path prioritized, eagerly"; PGRT_FAULT=instantiate run "$F/reuse_prio"
label="relocs, PGRT_UPDATE=host"; PGRT_UPDATE=host run "$F/relocs" "$F/out/host"
label="buckets as a switch"; PGRT_BUCKETS=switch run "$F/buckets" "$F/out"
label="buckets as a switch, PGRT_UPDATE=device"; PGRT_BUCKETS=switch PGRT_UPDATE=device run "$F/buckets" "$F/out/device"
label="buckets, no graph instantiating"; PGRT_BUCKETS=graphs PGRT_FAULT=instantiate run "$F/buckets" "$F/out/eager"
label="shapes, eager"; PGRT_FAULT=instantiate run "$F/shapes" "$F/out/eager"
label="hostread, eager"; PGRT_FAULT=instantiate run "$F/hostread" "$F/out/eager"
# a region with conditional nodes cannot run eagerly: init must fail, saying so
if LD_LIBRARY_PATH="$F" PGRT_FAULT=instantiate "$F/loops" "$F/out/eager" >"$F/run.log" 2>&1 ||
   ! grep -q "does not instantiate (.*), and its conditional nodes cannot run eagerly" "$F/run.log"; then
  cat "$F/run.log"; echo "FAIL: loops with PGRT_FAULT=instantiate: init should fail, naming the conditional nodes"; exit 1
fi
echo "fake: loops, no graph instantiating: init refused (its conditional nodes cannot run eagerly)" >>"$F/fake.log"
# libpgrt under faults (tests/gpu/faults/faults_main.c, as run_faults.sh builds it): an
# arena past the device's memory, a cubin for another GPU, CUDA C that does not compile,
# a missing or mis-sized module global, null arguments; leaks over 120 calls and 20
# init/destroy cycles, counted by the double's cuMemGetInfo
for g in oom badmodule badsource badglobal badglobalsize; do "$B/pgcc" tests/gpu/faults/$g.graph -o "$F/$g.c"; done
gcc -std=c11 -O2 ${SAN_FLAGS:-} -Wall -Wextra -Werror -I"$F" -Iruntime -Itests/gpu -I"$CUDA_HOME/include" \
  tests/gpu/faults/faults_main.c "$F"/{oom,badmodule,badsource,badglobal,badglobalsize,chain}.c "$B/libpgrt.a" \
  -L"$CUDA_HOME/lib64/stubs" -lcuda -ldl -lm -o "$F/faults"
for how in host device; do
  LD_LIBRARY_PATH="$F" PGRT_UPDATE=$how "$F/faults" >"$F/run.log" 2>&1 || { cat "$F/run.log"; echo "FAIL: faults, PGRT_UPDATE=$how"; exit 1; }
  # the check macro names the driver call as written in cuda.h's terms, not through libpgrt's table
  grep -q "'cuMemAlloc(&c->arena, pr->arena_bytes) failed: out of memory (runtime/init.c:" "$F/run.log" ||
    { cat "$F/run.log"; echo "FAIL: faults: the arena's failed cuMemAlloc is not named so"; exit 1; }
  sed -n "s|^\([0-9]* passed, 0 failed\)$|fake: faults, PGRT_UPDATE=$how: \1|p" "$F/run.log" >>"$F/fake.log"
done
# a real export, its kernels Triton's and cuBLASLt's (nvjet, arguments packed in a
# 1,720-byte struct): examples/deploy runs tests/corpus/export/llama_tiny_bf16 four
# times, each call on buffers at new addresses with the last call's freed, both update
# ways.  No kernel of it has a host version (FAKECUDA_KERNELS=skip: none runs), so its
# results are not checked here; what is, is every launch's parameters: none may point
# into freed memory, as one libpgrt failed to patch would.
deploy_build() { # dir, export, name: examples/deploy built for the export in $F/dir, against libpgrt.a
  rm -rf "$F/$1" && mkdir -p "$F/$1" && cp examples/deploy/deploy.c examples/deploy/Makefile "$F/$1/"
  make -s -C "$F/$1" EXPORT="$PWD/$2" NAME="$3" PGCC="$PWD/$B/pgcc" CC=gcc PKG_CONFIG=true \
    PGRT_CFLAGS="-I$PWD/runtime -I$CUDA_HOME/include" EXTRA_CFLAGS="-Werror -pedantic ${SAN_FLAGS:-}" \
    LDFLAGS="${SAN_FLAGS:-}" PGRT_LIBS="$PWD/$B/libpgrt.a -ldl -pthread" deploy >/dev/null; }
E=tests/corpus/export/llama_tiny_bf16
deploy_build deploy $E llama_tiny_bf16
# deploy calls the driver through libpgrt's table (pgrt_cuda): it does not link libcuda,
# and reaches the double through PGRT_LIBCUDA alone
! ldd "$F/deploy/deploy" | grep -q libcuda || { ldd "$F/deploy/deploy"; echo "FAIL: examples/deploy links libcuda"; exit 1; }
launches=$((4 * $(grep -c '^ *node [^ ]* kernel ' $E/llama_tiny_bf16.graph))) # every kernel node, every call
for how in host device; do
  FAKECUDA_KERNELS=skip PGRT_UPDATE=$how "$F/deploy/deploy" --calls 4 $E/llama_tiny_bf16.safetensors \
    $E/llama_tiny_bf16.io.safetensors "$F/deploy/out.safetensors" >"$F/run.log" 2>&1 &&
    grep -q "(the last of 4 calls, each at new addresses)" "$F/run.log" &&
    grep -q "^fakecuda: $launches launches of kernels without a host version skipped" "$F/run.log" ||
    { cat "$F/run.log"; echo "FAIL: llama_tiny_bf16 through examples/deploy, PGRT_UPDATE=$how"; exit 1; }
  echo "fake: llama_tiny_bf16 export, 4 calls at new addresses, PGRT_UPDATE=$how: no launch points into freed memory" \
    >>"$F/fake.log"
done
# init failing after the weights are loaded (mlp_small's cuBLASLt library not found):
# deploy says so and exits 1 having freed the weights' block and all else it held; a
# block left allocated fails the process at exit (status 4, the double's leak check)
E=tests/corpus/export/mlp_small
deploy_build deploy_mlp $E mlp_small
st=0
PGRT_LIB_CUBLASLT=/nonexistent/libcublasLt.so.13 "$F/deploy_mlp/deploy" $E/mlp_small.safetensors \
  $E/mlp_small.io.safetensors "$F/deploy_mlp/out.safetensors" >"$F/run.log" 2>&1 || st=$?
[ $st -eq 1 ] && grep -q "^deploy: API(_init).* failed .*libcublasLt.so.13" "$F/run.log" ||
  { cat "$F/run.log"; echo "FAIL: examples/deploy on a failed init: exit status $st, not 1 with the init's failure"; exit 1; }
echo "fake: examples/deploy, init failing after the weights loaded: exits 1, nothing left allocated" >>"$F/fake.log"
# the driver missing, or lacking a function libpgrt calls: init fails, saying which
# (runtime/cuda_driver.c), before anything else is touched
fails() { # label, expected message, command...
  local want=$2; shift 2
  if LD_LIBRARY_PATH="$F" "$@" >"$F/run.log" 2>&1 || ! grep -qF "$want" "$F/run.log"; then
    cat "$F/run.log"; echo "FAIL: $label: expected the message: $want"; exit 1; fi
  echo "fake: $label: init refused: $want" >>"$F/fake.log"; }
label="chain, PGRT_LIBCUDA=/nonexistent"
fails "$label" "the CUDA driver (/nonexistent, from PGRT_LIBCUDA) could not be loaded: /nonexistent: cannot open shared object file" \
  env PGRT_LIBCUDA=/nonexistent "$F/chain" "$F/out"
label="chain, a library without the driver's functions as the driver"
nodrv="$(cd "$B" && pwd)/libpgrt.so"  # (a shared library that defines none of them)
fails "$label" "the CUDA driver ($nodrv, from PGRT_LIBCUDA) could not be loaded: it has no cuGetErrorString" \
  env PGRT_LIBCUDA="$nodrv" "$F/chain" "$F/out"
# NVRTC missing (runtime/modules.c loads it too; the programs do not link it): a CUDA C
# module, with nothing prebuilt or cached, fails init, saying so
label="chain, PGRT_LIB_NVRTC=/nonexistent, nothing prebuilt or cached"
fails "$label" "module 'kernels' is CUDA C, and NVRTC does not load from '/nonexistent'" \
  env PGRT_LIB_NVRTC=/nonexistent PGRT_PREBUILT=off PGRT_CACHE=off "$F/chain" "$F/out"
# which way libpgrt's own kernels came: chain's line "init: ..., prebuilt P, nvrtc N, cached C"
ways() { sed -n 's/^init: .*prebuilt \([0-9]*\), nvrtc \([0-9]*\), cached \([0-9]*\)$/\1 \2 \3/p' "$F/run.log"; }
label="chain, own kernels prebuilt, its module cached"; PGRT_UPDATE=device run "$F/chain" "$F/out/device"
read -r pre nv ca <<<"$(ways)"
[ "${pre:-0}" -ge 1 ] && [ "$nv" = 0 ] && [ "$ca" = 1 ] ||
  { echo "FAIL: chain's init: prebuilt ${pre:-?}, nvrtc ${nv:-?}, cached ${ca:-?}; expected >= 1, 0, 1"; exit 1; }
label="chain, nothing prebuilt or cached"; PGRT_PREBUILT=off PGRT_CACHE=off PGRT_UPDATE=device run "$F/chain" "$F/out/device"
read -r pre2 nv2 ca2 <<<"$(ways)"
[ "$pre2" = 0 ] && [ "$nv2" = $((pre + 1)) ] && [ "$ca2" = 0 ] ||
  { echo "FAIL: chain's init: prebuilt $pre2, nvrtc $nv2, cached $ca2; expected 0, $((pre + 1)), 0"; exit 1; }
echo "fake: the double's audit, 9 code-generation test programs, chain from a library's fatbins, chain widened, a buffer's values renamed and its critical path prioritized, the faults program and an export pass over the CPU double of the driver ($(wc -l <"$F/fake.log") runs${SAN_FLAGS:+, under the sanitizers}; $F/fake.log)"
