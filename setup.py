"""Packaging: pyproject.toml says what; this adds one build step, which copies the C
sources pgcc and libpgrt are built from (compiler/, grammar/gen/, runtime/ and runtime/tool/) into the
wheel as pgcc/_csrc/, where pgcc.toolchain builds them on first use."""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = ["compiler/*.c", "compiler/*.h", "grammar/gen/*", "runtime/*.c", "runtime/*.h", "runtime/tool/*.c"]


class build_py_csrc(build_py):
    def run(self):
        super().run()
        for pattern in CSRC:
            for src in glob.glob(os.path.join(HERE, pattern)):
                dst = os.path.join(self.build_lib, "pgcc", "_csrc", os.path.relpath(src, HERE))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)


setup(cmdclass={"build_py": build_py_csrc})
