#!/usr/bin/env bash
# The CPU tests of the pgcc Python package (python/pgcc), no GPU and no torch needed:
#
#   bash tests/python/run.sh [PYTEST ARGS...]      (-m "not slow" skips the builds and the install)
#
# Installs pytest, safetensors, numpy and pyflakes (and wheel, for the install test) with pip where missing, then runs
# pytest on tests/python and the wild suite runner's torch-free parts (tests/wild/test_runner.py); exits nonzero on a failure, and ends with pytest's summary line.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
if ! "$PY" -c "import pytest, safetensors, numpy, pyflakes" 2>/dev/null; then
  "$PY" -m pip install --quiet --disable-pip-version-check pytest safetensors numpy pyflakes
fi
# pip install --no-build-isolation (test_install.py) needs bdist_wheel: in setuptools from 70.1, else `wheel`
if ! "$PY" -c "import wheel" 2>/dev/null && ! "$PY" -c "import setuptools.command.bdist_wheel" 2>/dev/null; then
  "$PY" -m pip install --quiet --disable-pip-version-check wheel
fi
# the package of this tree, imported as a deployment would (no sys.path edits in the tests)
export PYTHONPATH="$PWD/python:$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the package; the tree's tests/ and bench/ packages
exec "$PY" -m pytest -q -p no:cacheprovider tests/python tests/wild/test_runner.py tests/training/test_training_runner.py "$@"
