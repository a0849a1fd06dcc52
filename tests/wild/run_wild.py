"""The wild suite on a GPU: each program of tests/wild (wild_programs.py lists them) run
the way a user runs it -- built, called eagerly once, then `import pgcc`,
pgcc.export(model, inputs, out) (which verifies by default), pgcc.load(out) and one call,
then the torch.compile'd callable once (as pgcc.export compiles it) -- and the loaded
program's outputs compared with the compiled callable's: pgcc is judged against what
it exported, torch.compile's program, not against eager PyTorch (whose algorithms
differ: cuDNN's TF32, Inductor's fusions).  Both programs' errors against the eager
call are measured and shown too.  A measurement, not a test: it exits 0 whatever the
programs did, and writes a table.

    PYTHONPATH=python:. python3 -m tests.wild.run_wild [--jobs N] [--timeout S] [--out DIR] [PATTERN ...]

PATTERN: fnmatch patterns over the keys ("hf:*", "cg:alias*"; default: all).  Each
program runs in a child process of its own (`python3 -m tests.wild.run_wild --child
KEY`, a fresh Inductor cache), N at a time, killed (with its process group) after S
seconds.  The child prints one line `WILD {json}`: key, status, stage, seconds, max
error (the loaded program's against the compiled callable's), its and the compiled
callable's errors against the eager call (pgcc_vs_eager, compiled_vs_eager), detail.
Statuses (STATUSES):

  VERIFIED  exported, verified by pgcc, loaded, and its outputs (and inputs, which a
            program may change in place) within tolerance of the compiled callable's
  WRONG     exported and loaded, but the loaded program's outputs differ from the
            compiled callable's (count, shape, dtype, or values beyond tolerance: fp32
            1e-4, fp16 and bf16 2e-2 of the largest value; integers and booleans exactly)
  REFUSED   pgcc.ExportError from the export or the load: the reason's first line (a
            verification that failed, too)
  ERROR     any other exception (in building, the eager call, the export, load,
            call or the compiled call), and pgcc's own in the loaded program's call
            (ArgumentError, RunError): its type, message, and the last traceback frame
            in pgcc or tests/wild
  TIMEOUT   over S seconds
  CRASH     the child died without its line (a signal, a CUDA abort)

The table goes to stdout, DIR/wild.json and DIR/wild.md (DIR: --out, default
build/wild), each child's output to DIR/logs/KEY.log; a child's export and Inductor cache
are removed after it ran (--keep keeps them).  Everything but child() imports
without torch (tests/wild/test_runner.py tests it on the CPU).
"""
import argparse
import contextlib
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from tests.wild import wild_programs

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STATUSES = ("VERIFIED", "WRONG", "REFUSED", "ERROR", "TIMEOUT", "CRASH")
TAG = "WILD "
# max |got - ref| / max |ref| allowed, by dtype name (torch's str(dtype) without "torch.")
TOLERANCE = {"float64": 1e-4, "float32": 1e-4, "float16": 2e-2, "bfloat16": 2e-2}
# where a traceback frame is worth naming: pgcc's package, or the user's code (the programs)
OWN_CODE = (os.sep + os.path.join("python", "pgcc") + os.sep, os.sep + os.path.join("tests", "wild") + os.sep)


# ---- pure parts (no torch) ----

def parse_args(argv):
    ap = argparse.ArgumentParser(prog="python3 -m tests.wild.run_wild", description=__doc__.splitlines()[0])
    ap.add_argument("patterns", nargs="*", metavar="PATTERN", help="fnmatch patterns over the keys (default: all)")
    ap.add_argument("--jobs", type=positive, default=4, help="children at a time (default 4)")
    ap.add_argument("--timeout", type=positive, default=600, help="seconds per program (default 600)")
    ap.add_argument("--out", default=os.path.join("build", "wild"), help="folder for wild.json, wild.md, logs/")
    ap.add_argument("--keep", action="store_true", help="keep each program's export and Inductor cache "
                    "(in the temporary folder printed first; by default each is removed after its run)")
    ap.add_argument("--list", action="store_true", help="print the keys and exit")
    ap.add_argument("--child", metavar="KEY", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def positive(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return n


def select(keys, patterns):
    """The keys matching any pattern (all for none), in the keys' order; ValueError naming
    each pattern that matches nothing."""
    if not patterns:
        return list(keys)
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(k, p) for k in keys)]
    if unmatched:
        raise ValueError("no program matches " + ", ".join(repr(p) for p in unmatched))
    return [k for k in keys if any(fnmatch.fnmatchcase(k, p) for p in patterns)]


def tolerance(dtype_name):
    """The relative tolerance for an output of this dtype ("float32", "torch.float16", ...):
    0 (exact) for integers and booleans."""
    return TOLERANCE.get(dtype_name.replace("torch.", ""), 0.0)


def first_line(text):
    """The first non-blank line of text, stripped ('' for none)."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def last_own_frame(frames):
    """The last of [(filename, line, function)] in pgcc or tests/wild, as "path:line in
    function" with the path from python/ or tests/; None if none is."""
    for filename, line, func in reversed(frames):
        for own in OWN_CODE:
            i = filename.rfind(own)
            if i >= 0:
                return f"{filename[i + 1:]}:{line} in {func}"
    return None


def classify(is_export_error, type_name, message, frames):
    """(status, detail) of an exception: REFUSED with the reason's first line for an
    ExportError, else ERROR with the type, the message's first line and the last frame
    in pgcc or the user's code."""
    if is_export_error:
        return "REFUSED", first_line(message) or type_name
    where = last_own_frame(frames)
    detail = f"{type_name}: {first_line(message)}"
    return "ERROR", detail + (f" (at {where})" if where else "")


def parse_child(key, stdout, returncode, timed_out, timeout, seconds):
    """The record of one child from its stdout: its last WILD line, else TIMEOUT or CRASH
    (with the exit status)."""
    recs = []
    for line in stdout.splitlines():
        if line.startswith(TAG):
            try:
                recs.append(json.loads(line[len(TAG):]))
            except ValueError:
                pass
    if recs:
        rec = recs[-1]
    elif timed_out:
        rec = {"status": "TIMEOUT", "detail": f"over {timeout} s"}
    else:
        tail = [l.strip() for l in stdout.strip().splitlines()[-2:]]
        how = f"killed by signal {-returncode}" if returncode is not None and returncode < 0 else f"exit {returncode}"
        rec = {"status": "CRASH", "detail": how + (": " + " | ".join(tail) if tail else "")}
    rec["key"] = key
    rec.setdefault("seconds", round(seconds, 1))
    for k in ("max_error", "pgcc_vs_eager", "compiled_vs_eager", "stage"):
        rec.setdefault(k, None)
    if rec.get("status") not in STATUSES:
        rec = {**rec, "status": "CRASH", "detail": f"the child's line has status {rec.get('status')!r}"}
    return rec


def counts(recs):
    """{status: how many}, every status, in STATUSES order."""
    return {s: sum(r["status"] == s for r in recs) for s in STATUSES}


def fmt_error(e):
    return "-" if e is None else f"{e:.2g}"


def text_table(recs):
    lines = [f"{'program':34} {'status':9} {'stage':8} {'seconds':>7} {'vs comp':>8} {'pgcc/eag':>8} {'comp/eag':>8}"
             "  detail"]
    for r in recs:
        lines.append(f"{r['key']:34} {r['status']:9} {str(r.get('stage') or '-'):8} {r['seconds']:7.1f} "
                     f"{fmt_error(r.get('max_error')):>8} {fmt_error(r.get('pgcc_vs_eager')):>8} "
                     f"{fmt_error(r.get('compiled_vs_eager')):>8}  {str(r.get('detail', ''))[:150]}")
    c = counts(recs)
    lines.append(f"\nwild: {len(recs)} programs: " + ", ".join(f"{n} {s}" for s, n in c.items()))
    return "\n".join(lines)


def md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(recs, header=""):
    """The table as Markdown: counts per status, then one row per program (its errors:
    the loaded program's against the compiled callable's, which judges, then the
    loaded program's and the compiled callable's against the eager call's)."""
    c = counts(recs)
    out = ["# The wild suite", ""]
    if header:
        out += [header, ""]
    out += ["| " + " | ".join(STATUSES) + " | total |", "|" + "---|" * (len(STATUSES) + 1),
            "| " + " | ".join(str(c[s]) for s in STATUSES) + f" | {len(recs)} |", "",
            "| program | status | stage | seconds | vs compiled | pgcc vs eager | compiled vs eager | detail |",
            "|---|---|---|---|---|---|---|---|"]
    for r in recs:
        out.append(f"| `{r['key']}` | {r['status']} | {r.get('stage') or '-'} | {r['seconds']:.1f} | "
                   f"{fmt_error(r.get('max_error'))} | {fmt_error(r.get('pgcc_vs_eager'))} | "
                   f"{fmt_error(r.get('compiled_vs_eager'))} | "
                   f"{md_cell(str(r.get('detail', '')).replace(ROOT + os.sep, '')[:300])} |")  # (paths relative)
    return "\n".join(out) + "\n"


def label(key):
    """A file name for a key ("hf:bert_mask" -> "hf_bert_mask")."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in key)


def child_env(environ, root, cache, jobs, cpus):
    """The child's environment: the tree's pgcc and tests on PYTHONPATH (whatever the
    parent's working directory), its own Inductor cache, and Inductor's compile workers
    shared out among the jobs (unless set already)."""
    env = dict(environ)
    path = [os.path.join(root, "python"), root] + [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(path)
    env["TORCHINDUCTOR_CACHE_DIR"] = cache
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (cpus or 1) // jobs)))
    return env


# ---- the child (torch) ----

def copy_like(torch, x, memo):
    """A copy of x with its layout: the same sizes, strides and storage offset in a copy of
    its storage (channels_last, expanded, sliced inputs stay so); inputs that shared a
    storage share the copy.  Non-tensors are returned as they are."""
    if not isinstance(x, torch.Tensor):
        return x
    st = x.untyped_storage()
    k = (st.data_ptr(), x.device.type, x.device.index, st.nbytes())
    if k not in memo:
        memo[k] = st.clone()
    y = torch.empty(0, dtype=x.dtype, device=x.device)
    y.set_(memo[k], x.storage_offset(), x.size(), x.stride())
    return y.requires_grad_(x.requires_grad) if x.is_leaf and x.is_floating_point() else y


def copy_inputs(torch, inputs):
    memo = {}
    return tuple(copy_like(torch, x, memo) for x in inputs)


def leaves(torch, value):
    """The tensors of a (nested) output, in order, as pgcc flattens them (structure.py:
    ModelOutputs, transformers' caches), or where pgcc cannot, in pytree order (None,
    numbers and other non-tensors dropped)."""
    from pgcc.errors import ExportError
    from pgcc.structure import flatten
    try:
        return flatten(value, lambda x: isinstance(x, torch.Tensor))[0]
    except ExportError:
        import torch.utils._pytree as pytree
        return [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def compare(torch, ref, got, ref_inputs, got_inputs, what=("the loaded program", "the eager call")):
    """(max relative error, where, None) when outputs got and the inputs after that call
    match ref's within tolerance, else (the largest error, where, why: the first beyond
    tolerance); what names the two calls."""
    ref_t, got_t = leaves(torch, ref), leaves(torch, got)
    if len(ref_t) != len(got_t):
        return None, None, f"{what[0]} gives {len(got_t)} tensors, {what[1]} {len(ref_t)}"
    pairs = [(f"out{i}", g, r) for i, (g, r) in enumerate(zip(got_t, ref_t))]
    pairs += [(f"in{i}", g, r) for i, (g, r) in enumerate(zip(got_inputs, ref_inputs))
              if isinstance(r, torch.Tensor) and isinstance(g, torch.Tensor)]
    worst, where, why = 0.0, None, None
    for name, g, r in pairs:
        g, r = g.detach(), r.detach()
        if tuple(g.shape) != tuple(r.shape) or g.dtype != r.dtype:
            return None, name, (f"{name}: {what[0]}'s is {g.dtype} {list(g.shape)}, {what[1]}'s "
                                f"{r.dtype} {list(r.shape)}")
        if r.numel() == 0:
            continue
        g, r = g.cpu(), r.cpu()
        tol = tolerance(str(r.dtype))
        if r.is_floating_point():
            g, r = g.double(), r.double()
            if not torch.equal(torch.isnan(g), torch.isnan(r)):
                err = float("inf")
            else:
                scale = r.nan_to_num(0.0).abs().max().item()
                err = (g - r).abs().nan_to_num(0.0).max().item() / (scale if scale > 0 else 1.0)
        else:
            err = 0.0 if torch.equal(g, r) else float("inf")
        if where is None or err > worst:
            worst, where = err, name
        if not err <= tol and why is None:
            why = f"{name} differs from {what[1]}'s: max error {err:.3g} of its largest value, tolerance {tol:g}"
    return worst, where, why


def judged(pc, pe, ce):
    """(status, detail or None) of a program loaded and called, from compare()'s answers
    for the loaded program against the compiled callable (pc), against the eager call
    (pe) and the compiled callable against the eager call (ce): VERIFIED when pc found
    nothing beyond tolerance, else WRONG with its reason; the errors against eager say
    whose difference it is, and do not judge."""
    if pc[2] is None:
        return "VERIFIED", None
    both = f" (against eager: pgcc {fmt_error(pe[0])}, compiled {fmt_error(ce[0])})"
    return "WRONG", pc[2] + both


def child(key, out_dir):
    """Runs in the child: the user's flow, then one WILD line on stdout."""
    import traceback

    import torch  # first, as a user's script does; pgcc only after the eager call

    t0 = time.time()
    rec = {"key": key, "stage": "build"}
    pgcc = None
    try:
        torch.manual_seed(0)
        model, inputs = wild_programs.builder(key)()
        inputs = tuple(inputs)
        rec["form"] = type(model).__name__ if isinstance(model, torch.nn.Module) else "callable"
        pristine = copy_inputs(torch, inputs)  # (a program may change its inputs in place)
        rec["stage"] = "eager"
        ref_inputs = copy_inputs(torch, pristine)
        ref = model(*ref_inputs)
        torch.cuda.synchronize()
        rec["stage"] = "export"
        import pgcc
        export_dir = os.path.join(out_dir, "export")
        res = pgcc.export(model, copy_inputs(torch, pristine), export_dir)
        rec["pgcc_verified"] = first_line(getattr(res, "verified", "") or "")
        rec["stage"] = "load"
        f = pgcc.load(export_dir)
        rec["stage"] = "call"
        got_inputs = copy_inputs(torch, pristine)
        torch.manual_seed(1)  # (a program that draws random numbers: the same draws as the compiled call's below)
        got = f(*got_inputs)
        torch.cuda.synchronize()
        rec["stage"] = "compiled"  # (the callable as pgcc.export compiles it: in eval mode, under no_grad,
        traced = (res.report or {}).get("scalars_on_device")  # with its scalars traced where the report says so,
        rec["scalars_on_device"] = bool(traced)  # from a copy of its code: the export compiled it without too)
        from pgcc.warmup import own_code
        compiled = torch.compile(own_code(model) if traced else model)
        comp_inputs = copy_inputs(torch, pristine)
        inference = isinstance(model, torch.nn.Module) and not model.training
        torch.manual_seed(1)
        with torch.no_grad() if inference else contextlib.nullcontext(), \
                torch._dynamo.config.patch(capture_scalar_outputs=True) if traced else contextlib.nullcontext():
            comp = compiled(*comp_inputs)
        torch.cuda.synchronize()
        rec["stage"] = "compare"
        pc = compare(torch, comp, got, comp_inputs, got_inputs, ("the loaded program", "the compiled callable"))
        pe = compare(torch, ref, got, ref_inputs, got_inputs, ("the loaded program", "the eager call"))
        ce = compare(torch, ref, comp, ref_inputs, comp_inputs, ("the compiled callable", "the eager call"))
        rec.update(max_error=pc[0], worst=pc[1], pgcc_vs_eager=pe[0], compiled_vs_eager=ce[0])
        print(f"wild: {key}: max error {fmt_error(pc[0])} (at {pc[1]}) against the compiled callable; against the "
              f"eager call: pgcc {fmt_error(pe[0])}, compiled {fmt_error(ce[0])}", flush=True)
        status, why = judged(pc, pe, ce)
        rec.update(status=status, detail=rec["pgcc_verified"] if why is None else why)
    except Exception as e:  # noqa: BLE001 -- the table reports every failure
        traceback.print_exc()
        frames = [(fr.filename, fr.lineno, fr.name) for fr in traceback.extract_tb(e.__traceback__)]
        # (refused: by the export or the load; the loaded program's call failing is an error)
        is_export_error = pgcc is not None and isinstance(e, pgcc.ExportError) and rec["stage"] in ("export", "load")
        rec["status"], rec["detail"] = classify(is_export_error, type(e).__name__, str(e), frames)
    rec["seconds"] = round(time.time() - t0, 1)
    rec["torch"] = torch.__version__
    if torch.cuda.is_initialized():
        rec["peak_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
    sys.stderr.flush()
    print(TAG + json.dumps(rec), flush=True)
    # (no interpreter teardown: a library's exit-time trouble is not the program's result)
    os._exit(0)


# ---- the parent ----

LIVE = set()  # the children running now (killed, with their groups, on Ctrl-C)


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)  # the child and its compile workers
    except ProcessLookupError:
        pass


def exited(p, timeout):
    """Whether child p exits within timeout seconds; it is left unreaped (a zombie holds
    its process group's id, so that kill_group cannot reach a process that took the id
    over)."""
    end = time.time() + timeout
    while True:
        if os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        if time.time() >= end:
            return False
        time.sleep(0.1)


def child_command(key, out):
    return [sys.executable, "-m", "tests.wild.run_wild", "--child", key, "--child-out", out]


def run_one(key, args, work):
    out = os.path.join(work, label(key))
    os.makedirs(out, exist_ok=True)
    env = child_env(os.environ, ROOT, os.path.join(out, "inductor"), args.jobs, os.cpu_count())
    cmd = child_command(key, out)
    t0 = time.time()
    # (to files, not pipes: a compile worker left behind would hold a pipe open)
    paths = os.path.join(out, "stdout"), os.path.join(out, "stderr")
    with open(paths[0], "w") as so, open(paths[1], "w") as se:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=so, stderr=se, start_new_session=True)
    LIVE.add(p)
    try:
        timed_out = not exited(p, args.timeout)
        kill_group(p)  # what is left of its group (compile workers), and the child itself after a timeout
        p.wait()
    finally:
        LIVE.discard(p)
    stdout, stderr = (open(path, errors="replace").read() for path in paths)
    rec = parse_child(key, stdout, p.returncode, timed_out, args.timeout, time.time() - t0)
    with open(os.path.join(args.out, "logs", label(key) + ".log"), "w") as f:
        f.write(stdout + "\n---- stderr ----\n" + stderr)
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)  # (an export's weights, an Inductor cache: 60 of them add up)
    print(f"{rec['status']:9} {key:34} {rec['seconds']:7.1f} s  vs compiled {fmt_error(rec.get('max_error')):>7}  "
          f"{str(rec.get('detail', ''))[:150]}", flush=True)
    return rec


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.child:
        return child(args.child, args.child_out)
    if args.list:
        print("\n".join(wild_programs.keys()))
        return 0
    try:
        keys = select(wild_programs.keys(), args.patterns)
    except ValueError as e:
        print(f"run_wild: {e} (keys: python3 -m tests.wild.run_wild --list)", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="pgcc-wild-")
    print(f"wild: {len(keys)} programs, {args.jobs} at a time, {args.timeout} s each, in {work}", flush=True)
    pool = ThreadPoolExecutor(args.jobs)
    try:
        recs = list(pool.map(lambda k: run_one(k, args, work), keys))
    except KeyboardInterrupt:  # (the children run in sessions of their own: Ctrl-C does not reach them)
        pool.shutdown(wait=False, cancel_futures=True)
        for p in list(LIVE):
            kill_group(p)
        raise
    pool.shutdown()
    print("\n" + text_table(recs))
    with open(os.path.join(args.out, "wild.json"), "w") as f:
        json.dump(recs, f, indent=1)
    torch_version = next((r["torch"] for r in recs if r.get("torch")), "?")
    with open(os.path.join(args.out, "wild.md"), "w") as f:
        f.write(markdown(recs, f"torch {torch_version}; `python3 -m tests.wild.run_wild --jobs {args.jobs} "
                               f"--timeout {args.timeout}`"))
    print(f"wild: table in {os.path.join(args.out, 'wild.md')} and wild.json, logs in "
          f"{os.path.join(args.out, 'logs')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
