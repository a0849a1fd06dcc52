#!/usr/bin/env bash
# Every GPU check in one command, each step run whatever the others did, with a
# summary at the end and every log under $OUT (default build/gpu):
#
#   bash tests/gpu/run_all.sh [STEP ...]        STEP: codegen deploy e2e capture breaks buckets decode module state zoo wild
#                                                (default: all but wild)
#
#   codegen  tests/gpu/run_codegen.sh: generated C on fresh buffers, both update paths
#   deploy   tests/gpu/run_deploy.sh: examples/deploy on the committed export
#   e2e      tests/gpu/run_e2e.sh $E2E_MODELS (default: mlp gpt2 bert mlp_train)
#   capture  tests/gpu/capture_failure.py: a host read mid-call fails cleanly, the process usable
#   breaks   tests/gpu/breaks_export.py: programs with host reads exported in pieces, run from C
#   buckets  tests/gpu/buckets_export.py $BUCKETS: programs exported with shape buckets, run from C
#   decode   tests/gpu/decode_export.py: a KV-cache decode step with batch buckets, 128-token generations from C
#   module   tests/gpu/module_state.py: module data objects a library set, found and carried
#   state    tests/gpu/export_state.py $STATE: a training step's state as it was after its export, the step runs on
#   checkpoint tests/gpu/checkpoint.py: a training step's state saved and restored, the steps after repeated
#   random   tests/gpu/random_export.py: programs that draw random numbers, bit for bit the compiled callable's
#   zoo      tests/gpu/zoo_export.py $ZOO (default: every zoo model), for at most $ZOO_SECONDS
#   wild     tests/wild/run_wild.py $WILD (default: every program), $WILD_JOBS at a time: a measurement
#            (it passes whatever the programs did); its table $OUT/wild.md and wild.json
#
# The Python steps import the pgcc package of this tree and the model definitions
# (tests/models) by name: PYTHONPATH is the tree's python/ and its root, set here once.
# Exits nonzero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD/python:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export OUT=${OUT:-build/gpu}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(codegen deploy e2e capture breaks buckets decode module state checkpoint random zoo)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)' \
  | tee -a "$OUT/gpu.txt"
make -s build/pgcc runtime >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }

summary=()
for s in "${steps[@]}"; do
  t0=$(date +%s)
  case $s in
    codegen) OUT="$OUT/codegen" bash tests/gpu/run_codegen.sh >"$OUT/codegen.log" 2>&1 ;;
    deploy) bash tests/gpu/run_deploy.sh >"$OUT/deploy.log" 2>&1 ;;
    e2e) bash tests/gpu/run_e2e.sh ${E2E_MODELS:-mlp gpt2 bert mlp_train} >"$OUT/e2e.log" 2>&1 ;;
    capture) python3 tests/gpu/capture_failure.py >"$OUT/capture.log" 2>&1 ;;
    breaks) python3 tests/gpu/breaks_export.py ${BREAKS:-} >"$OUT/breaks.log" 2>&1 ;;
    buckets) python3 tests/gpu/buckets_export.py ${BUCKETS:-} >"$OUT/buckets.log" 2>&1 ;;
    decode) python3 tests/gpu/decode_export.py >"$OUT/decode.log" 2>&1 ;;
    module) python3 tests/gpu/module_state.py >"$OUT/module.log" 2>&1 ;;
    state) python3 tests/gpu/export_state.py ${STATE:-} >"$OUT/state.log" 2>&1 ;;
    checkpoint) python3 tests/gpu/checkpoint.py >"$OUT/checkpoint.log" 2>&1 ;;
    random) python3 tests/gpu/random_export.py >"$OUT/random.log" 2>&1 ;;
    zoo) timeout "${ZOO_SECONDS:-420}" python3 tests/gpu/zoo_export.py --jobs "${ZOO_JOBS:-4}" --out "$OUT/zoo" ${ZOO:-} \
           >"$OUT/zoo.log" 2>&1 ;;
    wild) python3 -m tests.wild.run_wild --jobs "${WILD_JOBS:-8}" --timeout "${WILD_TIMEOUT:-600}" --out "$OUT/wild" \
            ${WILD:-} >"$OUT/wild.log" 2>&1 && cp "$OUT/wild/wild.md" "$OUT/wild/wild.json" "$OUT/" ;;
    *) echo "unknown step $s"; false ;;
  esac
  rc=$?
  summary+=("$(printf '%-8s %s  (%d s)' "$s" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL (exit $rc)")" $(($(date +%s) - t0)))")
  echo "== $s: exit $rc"; tail -n 25 "$OUT/$s.log"
done
# the rest (per-model zoo and wild logs, codegen's graph dumps), packed: the device tool brings back few files
dirs=$(cd "$OUT" && ls -d zoo codegen wild 2>/dev/null)
[ -n "$dirs" ] && tar czf "$OUT/more.tar.gz" -C "$OUT" $dirs && (cd "$OUT" && rm -rf $dirs)
echo; echo "== summary"; printf '%s\n' "${summary[@]}"
! printf '%s\n' "${summary[@]}" | grep -q FAIL
