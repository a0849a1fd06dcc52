"""Shared by the CPU tests of the pgcc package: the repository's root, the fixtures,
and a pgcc binary (the checkout's build/pgcc when it is up to date, else built once
into a temporary cache).  The package itself is imported as installed or from
PYTHONPATH, which tests/python/run.sh points at this tree's python/."""
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


@pytest.fixture(scope="session")
def pgcc_bin(tmp_path_factory):
    os.environ.setdefault("PGCC_CACHE", str(tmp_path_factory.mktemp("pgcc-cache")))
    from pgcc import toolchain
    return toolchain.find_pgcc()


def scale_module(tmp_path):
    """The fixture cubin's kernel `scale` (x, f32, u32) copied under tmp_path/kernels, as the
    module dict export.py's kernels hold."""
    import hashlib
    import shutil
    cubin = os.path.join(FIXTURES, "scale.cubin")
    os.makedirs(tmp_path / "kernels", exist_ok=True)
    shutil.copy(cubin, tmp_path / "kernels" / "scale.cubin")
    with open(cubin, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {"name": "m_scale", "kind": "cubin", "file": "kernels/scale.cubin", "sha256": digest}
