#!/usr/bin/env bash
# Unpacks Debian's libjansson-dev into .deps/jansson (ignored by git), for building
# pgcc on a machine that has no jansson and cannot install it (the GPU machine:
# carry .deps there).  Then:
#   make JANSSON_CFLAGS=-I.deps/jansson/usr/include \
#        JANSSON_LIBS=.deps/jansson/usr/lib/x86_64-linux-gnu/libjansson.a
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps/jansson && mkdir -p .deps/jansson
(cd .deps && apt-get download libjansson-dev >/dev/null)
dpkg -x .deps/libjansson-dev_*.deb .deps/jansson
rm -f .deps/libjansson-dev_*.deb
ls .deps/jansson/usr/lib/*/libjansson.a
