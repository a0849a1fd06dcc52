"""progress.py: grouped warnings, quiet mode, the status line on a TTY and off it."""
import io

from pgcc.progress import Progress


def test_warnings_grouped_with_count_and_examples():
    out = io.StringIO()
    p = Progress(stream=out, tty=False, prefix="x")
    for i in range(10):
        p.warn("a word written as null", f"node {i}")
    p.warn("another kind")
    p.flush()
    lines = out.getvalue().splitlines()
    assert lines == ["x: warning: a word written as null (10 times): node 0; node 1; node 2; and 7 more",
                     "x: warning: another kind"]
    p.flush()  # flushed: nothing again
    assert out.getvalue().splitlines() == lines


def test_quiet_says_nothing():
    out = io.StringIO()
    p = Progress(quiet=True, stream=out, tty=True)
    p.log("hello")
    p.status("working")
    p.warn("w", "e")
    p.flush()
    assert out.getvalue() == ""


def test_status_rewrites_one_line_on_a_tty():
    out = io.StringIO()
    p = Progress(stream=out, tty=True, prefix="x")
    p.status("step 1")
    p.status("step 2")
    p.log("done")
    text = out.getvalue()
    assert "\n" not in text.split("done")[0]  # the status lines were rewritten in place
    assert text.endswith("\r\033[Kdone\n")


def test_status_off_a_tty_is_plain_and_rate_limited():
    """A plain line at most every Progress.EVERY seconds, on a clock of the test's own (the
    machine's speed does not matter), each with the seconds since the start."""
    now = [100.0]
    out = io.StringIO()
    p = Progress(stream=out, tty=False, prefix="x", clock=lambda: now[0])
    for i in range(100):
        p.status(f"step {i}")
    assert out.getvalue() == "x: [0 s] step 0\n"
    now[0] += Progress.EVERY - 0.1
    p.status("too soon")
    now[0] += 0.1
    p.status("step 100")
    assert out.getvalue() == "x: [0 s] step 0\nx: [5 s] step 100\n"


def test_time_by_step_sums_steps_that_differ_in_their_numbers():
    now = [0.0]
    p = Progress(quiet=True, clock=lambda: now[0])
    for t, msg in ((0.0, "m: capture 1 of 3"), (2.0, "m: capture 2 of 3"), (5.0, "m: replaying 40 words"),
                   (6.5, "verify: call 1/4"), (7.0, "verify: call 2/4")):
        now[0] = t
        p.status(msg)
    got = dict(p.time_by_step(now=10.0))
    assert got == {"m: capture N of N": 5.0, "verify: call N/N": 3.5, "m: replaying N words": 1.5}
    assert [k for k, _ in p.time_by_step(now=10.0)] == ["m: capture N of N", "verify: call N/N",
                                                         "m: replaying N words"]
    assert p.time_by_step(now=10.0, top=1) == [("m: capture N of N", 5.0)]
    assert Progress(quiet=True).time_by_step() == []
