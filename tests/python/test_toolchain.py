"""toolchain.py: pgcc built from a copy of the sources into a temporary cache (once per
hash of the sources, under a lock), libpgrt and an export's shared library built with
the CUDA headers, and the generated NAME_info read through loader.py's ctypes
structures where this pgcc emits it."""
import ctypes
import os
import shutil
import subprocess
import threading

import pytest
from conftest import ROOT

from pgcc import toolchain
from pgcc.errors import ExportError

CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")
HAVE_CUDA = os.path.isfile(os.path.join(CUDA, "include", "cuda.h"))


def copy_sources(dst):
    for pattern in ("compiler", "grammar/gen", "runtime"):
        shutil.copytree(os.path.join(ROOT, pattern), os.path.join(dst, pattern))
    return str(dst)


@pytest.mark.slow
def test_builds_pgcc_once_per_source_hash(tmp_path):
    src = copy_sources(tmp_path / "src")
    cache = str(tmp_path / "cache")
    dirs = []
    threads = [threading.Thread(target=lambda: dirs.append(toolchain.cached_build("pgcc", src=src, root=cache)))
               for _ in range(2)]  # concurrent: the lock makes one build
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(dirs) == 2 and dirs[0] == dirs[1]
    pgcc = os.path.join(dirs[0], "pgcc")
    r = subprocess.run([pgcc, "--stats", os.path.join(ROOT, "examples", "saxpy.graph")], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stdout.startswith("nodes=3"), r.stderr
    assert [d for d in os.listdir(cache) if not d.endswith(".lock")] == [os.path.basename(dirs[0])]
    stamp = os.path.getmtime(pgcc)
    assert toolchain.cached_build("pgcc", src=src, root=cache) == dirs[0]
    assert os.path.getmtime(pgcc) == stamp  # not rebuilt
    with open(os.path.join(src, "compiler", "pgcc.h"), "a") as f:
        f.write("\n/* changed */\n")
    assert toolchain.sources_hash(src, "pgcc") not in dirs[0]


def test_a_failed_build_says_why(tmp_path):
    src = copy_sources(tmp_path / "src")
    with open(os.path.join(src, "compiler", "ir.c"), "a") as f:
        f.write("\nthis is not C;\n")
    with pytest.raises(toolchain.ExportError, match="compiling ir.c"):
        toolchain.cached_build("pgcc", src=src, root=str(tmp_path / "cache"))
    assert not any(os.path.isfile(os.path.join(tmp_path, "cache", d, "ok")) for d in os.listdir(tmp_path / "cache"))


def test_pgcc_home_and_pgcc_env(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pgcc").write_text("")
    monkeypatch.delenv("PGCC", raising=False)
    monkeypatch.setenv("PGCC_HOME", str(tmp_path))
    assert toolchain.find_pgcc() == str(tmp_path / "bin" / "pgcc")
    monkeypatch.setenv("PGCC", "/somewhere/pgcc")
    assert toolchain.find_pgcc() == "/somewhere/pgcc"


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA headers")
def test_builds_libpgrt_with_its_own_kernels_compiled(tmp_path):
    """libpgrt built from the sources as a wheel builds it: the prebuild tool runs, its
    table of cubins is in the archive, and the tool itself (a main) is not."""
    src = copy_sources(tmp_path / "src")
    dest = toolchain.cached_build("runtime", src=src, root=str(tmp_path / "cache"))
    r = subprocess.run(["nm", "--defined-only", os.path.join(dest, "libpgrt.a")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    defined = {line.split()[-1] for line in r.stdout.splitlines() if len(line.split()) == 3}
    assert {"pgrt_prebuilt_cubins", "pgrt_prebuilt_count", "pgrt_init"} <= defined
    assert "main" not in defined
    table = open(os.path.join(dest, "own_cubins.c")).read()
    assert "own0_sm90[" in table and "own1_sm90[" in table  # the updater and the box kernels for Hopper
    assert os.path.isfile(os.path.join(dest, "include", "own_kernels.h"))


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA headers")
def test_builds_an_export_with_libpgrt(tmp_path, pgcc_bin, monkeypatch):
    monkeypatch.setenv("PGCC_CACHE", str(tmp_path / "cache"))
    lib, inc = toolchain.find_runtime()
    assert os.path.isfile(lib) and os.path.isfile(os.path.join(inc, "pgrt.h"))
    export = tmp_path / "mlp_small"
    shutil.copytree(os.path.join(ROOT, "tests", "corpus", "export", "mlp_small"), export)
    tc = toolchain.Toolchain(pgcc_bin, lib, inc)
    so = toolchain.build_program(str(export), "mlp_small", toolchain=tc)
    assert so == str(export / "build" / "mlp_small.so") and os.path.isfile(so)
    stamp = os.path.getmtime(so)
    assert toolchain.build_program(str(export), "mlp_small", toolchain=tc) == so
    assert os.path.getmtime(so) == stamp  # nothing changed: not rebuilt
    with open(export / "mlp_small.graph", "a") as f:
        f.write("# changed\n")
    toolchain.build_program(str(export), "mlp_small", toolchain=tc)
    assert os.path.getmtime(so) != stamp
    stamp = os.path.getmtime(so)  # pgcc's flags are an input: a build with others is made again, given to pgcc
    toolchain.build_program(str(export), "mlp_small", toolchain=tc, pgcc_flags=["--priorities"])
    assert os.path.getmtime(so) != stamp
    with pytest.raises(ExportError, match="--no-such-option"):
        toolchain.build_program(str(export), "mlp_small", toolchain=tc, pgcc_flags=["--no-such-option"])
    if "pgrt_program_info" not in open(os.path.join(inc, "pgrt.h")).read():
        pytest.skip("this pgcc does not emit NAME_info yet")
    # loading needs libcuda.so.1: the driver's stub stands in (its soname); nothing calls CUDA here
    stub = os.path.join(CUDA, "lib64", "stubs", "libcuda.so")
    if not os.path.exists(stub):
        pytest.skip("no libcuda stub")
    ctypes.CDLL(stub, mode=ctypes.RTLD_GLOBAL)
    from pgcc.loader import read_info
    info, args, weights, dims = read_info(ctypes.CDLL(so), "mlp_small")
    assert dims == [] and all(f.dims == () for f in args)
    assert info.name == b"mlp_small" and info.arena_bytes == 2048
    assert [(f.name, f.role, f.dtype, f.shape, f.size) for f in args] == [
        ("in0", "input", "f32", (1, 256), 1024), ("out0", "output", "f32", (1, 256), 1024)]
    assert [f.offset for f in args] == [0, 8] and info.args_size == 16
    assert [(f.name, f.tensor) for f in weights][0] == ("w_layers_0_weight", "layers.0.weight")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA headers")
def test_a_bucket_export_describes_its_dimension(tmp_path, pgcc_bin, monkeypatch):
    """The bucket fixture (batch 1, 2, 4), built: NAME_info names the dimension, its
    buckets and padding, the size field, and which shape entries are the dimension --
    what the loader binds a call by."""
    monkeypatch.setenv("PGCC_CACHE", str(tmp_path / "cache"))
    lib, inc = toolchain.find_runtime()
    export = tmp_path / "mlp_tiny"
    shutil.copytree(os.path.join(ROOT, "tests", "corpus", "export", "mlp_tiny"), export)
    so = toolchain.build_program(str(export), "mlp_tiny", toolchain=toolchain.Toolchain(pgcc_bin, lib, inc))
    stub = os.path.join(CUDA, "lib64", "stubs", "libcuda.so")
    if not os.path.exists(stub):
        pytest.skip("no libcuda stub")
    ctypes.CDLL(stub, mode=ctypes.RTLD_GLOBAL)
    from pgcc.loader import read_info
    info, args, weights, dims = read_info(ctypes.CDLL(so), "mlp_tiny")
    assert [(d.name, d.values, d.pad) for d in dims] == [("batch", (1, 2, 4), True)]
    assert [(f.name, f.role, f.shape, f.dims) for f in args] == [
        ("batch", "size", (), ()), ("in0", "input", (4, 64), ((0, 0),)), ("out0", "output", (4, 16), ((0, 0),))]
    assert args[1].shape_at(dims, [1]) == (2, 64)
    assert info.arena_bytes == 1536
