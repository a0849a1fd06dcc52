"""errors.py's entry_point: every failure of pgcc.export and pgcc.load is an ExportError
that says where it came from -- pgcc's own file and line, or the user's (the innermost
frame outside pgcc, torch and Python's library) -- with the original chained; an
ExportError passes as it is, KeyboardInterrupt and SystemExit pass through."""
import os

import pytest

import pgcc
from pgcc.errors import PKG, ExportError, entry_point, located, where_raised

OWN = os.path.join(PKG, "export.py")
TORCH = "/usr/lib/python3/site-packages/torch/nn/modules/module.py"
USER = "/home/me/model.py"


def library(path):
    return "/torch/" in path


def test_an_error_in_pgcc_names_pgcc_file_and_line():
    frames = [(USER, 3), (OWN, 120), (os.path.join(PKG, "capture.py"), 75)]
    assert where_raised(frames, PKG, library) == ("pgcc", "pgcc/capture.py", 75)
    e = AttributeError("'BaseModelOutputWithPooling' object has no attribute 'numel'")
    assert located("pgcc.export", e, frames, PKG, library) == (
        "pgcc.export: AttributeError: 'BaseModelOutputWithPooling' object has no attribute 'numel' "
        "(at pgcc/capture.py:75)")


def test_an_error_in_the_users_code_names_it_through_torch():
    """pgcc called torch, torch the user's forward, which raised inside torch: the user's
    frame is named, not torch's nor pgcc's."""
    frames = [(USER, 3), (OWN, 150), (TORCH, 1500), (USER, 42), (TORCH, 1510)]
    assert where_raised(frames, PKG, library) == ("user", USER, 42)
    assert located("pgcc.export", ValueError("bad"), frames, PKG, library) == \
        f"pgcc.export: ValueError: bad (in your code at {USER}:42)"


def test_the_callers_own_frame_above_pgcc_is_not_blamed():
    """The user's script that called pgcc.export is outermost: an error deeper in pgcc is pgcc's."""
    frames = [(USER, 10), (OWN, 150), (TORCH, 1500)]
    assert where_raised(frames, PKG, library) == ("pgcc", "pgcc/export.py", 150)


def test_entry_point_wraps_and_chains():
    @entry_point("pgcc.thing")
    def boom():
        raise RuntimeError("cuMemcpyDtoH: CUDA error 1 (invalid argument)")

    with pytest.raises(ExportError) as e:
        boom()
    msg = str(e.value)
    assert msg.startswith("pgcc.thing: RuntimeError: cuMemcpyDtoH: CUDA error 1 (invalid argument) (in your code at ")
    assert msg.endswith(f"{__file__}:{boom.__wrapped__.__code__.co_firstlineno + 2})")  # (this test file is "user" code)
    assert isinstance(e.value.__cause__, RuntimeError)


def test_an_error_names_the_step_progress_said_and_only_its_own_calls():
    from io import StringIO

    from pgcc.progress import Progress

    @entry_point("pgcc.thing")
    def work(fail):
        p = Progress(quiet=True, stream=StringIO())
        p.status("m: replaying to tell workspaces from data")
        if fail:
            raise RuntimeError("cuMemcpyHtoD: CUDA error 700 (an illegal memory access was encountered)")

    with pytest.raises(ExportError, match=r"CUDA error 700 .*\), in the step 'm: replaying to tell workspaces "
                                          r"from data'$"):
        work(True)

    @entry_point("pgcc.other")
    def other():
        raise ValueError("no step said here")

    work(False)  # (a call that said a step and returned: the next call does not inherit it)
    with pytest.raises(ExportError) as e:
        other()
    assert "in the step" not in str(e.value)


def test_entry_point_passes_export_errors_and_interrupts():
    mine = ExportError("kernel k8: ...")

    @entry_point("pgcc.thing")
    def raises(x):
        raise x

    with pytest.raises(ExportError) as e:
        raises(mine)
    assert e.value is mine
    for x in (KeyboardInterrupt(), SystemExit(3)):
        with pytest.raises(type(x)):
            raises(x)


def test_the_public_entry_points_are_guarded():
    """pgcc.export and pgcc.load are wrapped: a failure without torch here (the import of
    torch, or the missing export) is an ExportError, not an ImportError or OSError."""
    with pytest.raises(ExportError, match=r"^pgcc\.export: "):
        pgcc.export(lambda x: x, (), "/nonexistent-dir-for-a-test")
    with pytest.raises(ExportError, match=r"no \.graph files"):
        pgcc.load("/nonexistent-dir-for-a-test")


def test_library_frames_are_torchs_tritons_generated_and_pythons():
    import contextlib
    from pgcc.errors import _library
    assert _library(contextlib.__file__)
    assert _library("/usr/lib/python3/site-packages/torch/_dynamo/eval_frame.py")
    assert _library("/tmp/torchinductor_me/ab/cabc123.py") and _library("<eval_with_key>.3")
    assert not _library(USER)
    assert not _library("/usr/lib/python3/site-packages/transformers/models/bert/modeling_bert.py")
