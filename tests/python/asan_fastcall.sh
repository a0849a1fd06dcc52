#!/usr/bin/env bash
# pgcc.load's call in C (python/pgcc/_fastcall.c) under gcc's AddressSanitizer and
# UndefinedBehaviorSanitizer:
#
#   bash tests/python/asan_fastcall.sh
#
# builds the extension with both into a temporary folder and runs its CPU tests
# (tests/python/test_fastcall.py, test_loader_fastcall.py) with the sanitizers' runtimes
# preloaded into Python, the build named by PGCC_FASTCALL_SO.  Any report fails the run
# (UBSan does not recover); leaks are not checked (Python's own allocations live on).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
CC=${CC:-gcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
include=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or ".so")')
so="$tmp/_fastcall$suffix"
"$CC" -std=c11 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
  -fPIC -shared -I"$include" python/pgcc/_fastcall.c -o "$so"
preload="$("$CC" -print-file-name=libasan.so) $("$CC" -print-file-name=libubsan.so)"
PGCC_FASTCALL_SO="$so" LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  PYTHONPATH="$PWD/python:$PWD" "$PY" -m pytest -q -p no:cacheprovider -p no:faulthandler --capture=sys \
  tests/python/test_fastcall.py tests/python/test_loader_fastcall.py
