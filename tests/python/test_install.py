"""Packaging: `pip install --no-build-isolation .` into a temporary target carries the C
sources (pgcc/_csrc) and the call's (pgcc/_fastcall.c), the pgcc-export command, and a package that imports without
torch; the shim tools/pgcc-export runs the same command from the tree."""
import os
import subprocess
import sys

import pytest
from conftest import ROOT


@pytest.mark.slow
def test_pip_install_target(tmp_path):
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                        "--target", str(target), ROOT], capture_output=True, text=True,
                       env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    assert r.returncode == 0, r.stderr
    csrc = target / "pgcc" / "_csrc"
    for f in ("compiler/pgcc.h", "compiler/main.c", "grammar/gen/graph.tab.c", "runtime/pgrt.h", "runtime/init.c", "runtime/pgrt_relocs.h", "runtime/half.h",
              "runtime/own_kernels.h", "runtime/tool/prebuild.c"):
        assert (csrc / f).is_file(), f
    assert (target / "bin" / "pgcc-export").is_file()
    assert (target / "pgcc" / "_fastcall.c").is_file()  # (the call in C, built on first use)
    env = dict(os.environ, PYTHONPATH=str(target))
    code = ("import sys, pgcc, pgcc.toolchain as t; assert 'torch' not in sys.modules; "
            "print(t.csrc()); print(pgcc.export.__doc__ is not None)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == str(csrc)
    r = subprocess.run([sys.executable, str(target / "bin" / "pgcc-export"), "--help"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0 and "--no-verify" in r.stdout


def test_shim_runs_the_package_cli():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "pgcc-export"), "--help"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "--eager" in r.stdout and "-q" in r.stdout


def test_package_imports_without_torch():
    r = subprocess.run([sys.executable, "-c", "import sys; import pgcc, pgcc.cli, "
                        "pgcc.capture, pgcc.module_watch, pgcc.kernel_search, pgcc.verify_export, pgcc.loader; assert 'torch' not in sys.modules"],
                       cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH="python"))
    assert r.returncode == 0, r.stderr
