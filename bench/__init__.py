"""pgcc's benchmarks as a package, so that a benchmark imports its helpers (bench.children)
and the model definitions (tests.models) by name.  Run from the repository's root with the
tree's pgcc package and the root on the path:

    PYTHONPATH=python:. python3 bench/zoo_timing.py ...

The benchmarks that import neither (parse.py, partition.py, memplan.py, scale.py, the
generators) run as plain scripts: `make bench`."""
