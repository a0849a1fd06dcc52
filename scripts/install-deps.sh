#!/usr/bin/env bash
# Installs the Debian packages pgcc needs to build and test on a fresh machine.
# Idempotent and quick when everything is already there; needs root (or sudo) otherwise.
#
#   flex, bison        regenerate the scanners and parsers in grammar/
#   check, pkg-config  the unit and golden test suites (make check)
#   libjansson-dev     JSON in tests (reading the drivers' _walk.json files, reports)
#   libclang-dev       optional at build time: kernel signatures from CUDA C
#   clang, libclang-rt-14-dev  the clang build check, sanitizers and libFuzzer
#   valgrind           make check runs pgcc under memcheck
#   graphviz           renders --emit=dot pictures (dot -Tsvg)
#   libtcc-dev, tcc    fuzz_c compiles the generated C in process (libtcc, and tcc's runtime and headers)
#   libzstd1           the exporter decompresses libraries' zstd cubins (tests/python/test_embedded.py)
set -euo pipefail

packages=(flex bison check pkg-config libjansson-dev libclang-dev clang libclang-rt-14-dev valgrind graphviz libzstd1 libtcc-dev tcc)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
