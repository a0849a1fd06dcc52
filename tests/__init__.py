"""pgcc's tests as a package, so that a test script imports the model definitions
(tests.models) by name.  The convention: from the repository's root, with the pgcc
package of this tree and the root on the path,

    PYTHONPATH=python:. python3 tests/gpu/zoo_export.py ...

(tests/gpu/run_all.sh and run_e2e.sh set it once).  No script edits sys.path:
tests/check_names.py fails on one that does."""
