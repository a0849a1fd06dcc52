"""The training suite on a GPU: each program of tests/training/training_steps.py run the
way a user runs it -- built (and, where its author did, stepped eagerly once), then
`import pgcc`, pgcc.export(step, batch, out[, state=...]) (which verifies by default;
with no state, the export finds the model and optimizer in the step's own code),
pgcc.load(out) -- and then `--steps` steps on fresh batches taken three ways from the same
state and the same seeds: by the loaded program, by the step under torch.compile on a
twin, eagerly on another twin.  Every loss, and after the last step every state tensor,
is compared: with the compiled step (bit-identical where the kernels are the same, else
the dtype's tolerance: fp32 1e-5, fp16 1e-3, bf16 1e-2 of the largest value) and with
eager PyTorch (reported; the issue's bar for fp32 is 1e-5).  A measurement: it exits 0
whatever the programs did, and writes a table.

    PYTHONPATH=python:. python3 -m tests.training.run_training [--jobs N] [--timeout S] [--out DIR] [KEY ...]

Each program runs in a child process of its own (a fresh Inductor cache), killed with
its process group after S seconds; the child prints one line `TRAIN {json}`.  Statuses:
PASS (matches the compiled step), WRONG (exported and loaded, differs; or exported a
step the C program cannot follow), REFUSED (pgcc.ExportError: the reason's first line;
"as it must" for such a step refused with the words its Program gives), ERROR (another
exception), TIMEOUT, CRASH.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from tests.training.training_steps import PROGRAMS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TAG = "TRAIN "
TOLERANCE = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 1e-2}
EXTRA_TWINS = 2  # reference runs beyond the first pair, taken where the pair's spread does not cover pgcc


def rel_err(torch, got, ref):
    """max |got - ref| / max |ref| (0 where both are zero), as a float; inf on NaN."""
    g, r = got.detach().double(), ref.detach().double()
    if g.shape != r.shape:
        return float("inf")
    scale = r.abs().max().item() if r.numel() else 0.0
    err = (g - r).abs().max().item() if r.numel() else 0.0
    if err != err:
        return float("inf")
    return err / scale if scale else err


def run_distance(torch, a, b):
    """The largest rel_err between two runs (losses [tensor per step], state {name: tensor})
    over their losses and the state tensors both hold."""
    (la, sa), (lb, sb) = a, b
    return max([rel_err(torch, x, y) for x, y in zip(la, lb)] +
               [rel_err(torch, sa[n], sb[n]) for n in sa if n in sb], default=0.0)


def child(key, out, steps):
    import torch

    def build():
        torch.manual_seed(0)
        return PROGRAMS[key]()
    rec = {"program": key, "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    t_all = time.time()
    refuses = None
    try:
        # twin2: the reference again, to measure how far it differs from itself (a step
        # that is not deterministic: atomic adds); `extra`: more runs of it, taken only where
        # the program is outside what the first pair's spread covers (one pair may agree far
        # better than most: BERT's twins differed by 3.9e-5 in one run, 0.0114 in another)
        mine, twin, eager, twin2 = build(), build(), build(), build()
        refuses = mine.refuses
        extra = [build() for _ in range(EXTRA_TWINS)]
        example = mine.batch(1000)
        if mine.eager_first:  # (the user checks the step eagerly: the optimizer makes its state)
            for p in (mine, twin, eager, twin2, *extra):
                torch.manual_seed(1)
                p.step(*twin.batch(1000))
        torch.cuda.synchronize()
        import pgcc  # (after torch, as users import it)
        from pgcc.train_state import discover, needs_first_step, state_objects, state_weights

        def objs(p):
            return state_objects(torch, p.state) if p.state is not None else discover(torch, p.step)
        first = needs_first_step(torch, objs(mine))
        rec["state_given"], rec["first_step_by_export"] = mine.state is not None, first
        t0 = time.time()
        torch.manual_seed(2)
        # (PGCC_TRAIN_VERBOSE=1: the export's account and status lines in the program's log)
        r = pgcc.export(mine.step, example, out, quiet=not os.environ.get("PGCC_TRAIN_VERBOSE"),
                        **({"state": mine.state} if mine.state else {}))
        rec["export_s"], rec["verified"] = round(time.time() - t0, 1), r.verified
        if refuses:  # (exported a step the program cannot follow: WRONG, whatever its steps below show)
            rec["must_refuse"] = refuses
        prog = pgcc.load(out)
        # the step as the export ran it: compiled, or eagerly where torch.compile cannot run it
        rec["eager_export"] = r.report.get("eager")
        rec["judged_alone"] = len(r.report.get("judged_alone", []))
        rec["export_time"] = r.report.get("time")  # (the export's total and its longest steps)
        start = {}  # (the program's state before its first step: the state every way starts from)
        for n, t in state_weights(torch, objs(twin)).items():
            try:
                start[n] = prog.weight(n, like=t)
            except KeyError:
                pass  # (a state tensor the step does not use)

        def prepare(p, fn):
            """p's step as fn takes it, from the program's state: where the export took the
            first step, p takes it too on the same draws (its optimizer makes its state),
            then gets the program's state -- p's own first step need not agree with it
            (cuDNN's weight gradients, say, are not deterministic by default), and a step
            that differs by rounding would be judged as pgcc's error."""
            if first:
                torch.manual_seed(2)
                fn(*twin.batch(1000))
            with torch.no_grad():
                for n, t in state_weights(torch, objs(p)).items():
                    if n in start:
                        t.copy_(start[n])
            return fn

        def compiled_step(p):
            return p.step if rec["eager_export"] else torch.compile(p.step)
        compiled, compiled2 = prepare(twin, compiled_step(twin)), prepare(twin2, compiled_step(twin2))
        prepare(eager, eager.step)
        worst = {"compiled": 0.0, "eager": 0.0, "itself": 0.0}
        identical = True
        tol = 1e-5
        losses = {"compiled": [], "again": []}  # (each reference run's, for the spread among them)

        def one_step(s, who, fn, p):
            torch.manual_seed(100 + s)
            o = fn(*mine.batch(s))
            if p.between is not None:  # (the user's own code between steps: a scheduler's epoch)
                p.between(prog if who == "pgcc" else None)
            return o if isinstance(o, torch.Tensor) else torch.as_tensor(o)
        for s in range(steps):
            got, ref_c, ref_e, ref_2 = (one_step(s, *w) for w in (
                ("pgcc", prog, mine), ("compiled", compiled, twin), ("eager", eager.step, eager),
                ("again", compiled2, twin2)))
            losses["compiled"].append(ref_c)
            losses["again"].append(ref_2)
            worst["itself"] = max(worst["itself"], rel_err(torch, ref_2, ref_c))
            tol = max(tol, TOLERANCE.get(str(ref_c.dtype).replace("torch.", ""), 1e-5))
            identical = identical and torch.equal(got.detach().to(ref_c.dtype), ref_c.detach())
            worst["compiled"] = max(worst["compiled"], rel_err(torch, got, ref_c))
            worst["eager"] = max(worst["eager"], rel_err(torch, got, ref_e))
        names = state_weights(torch, objs(mine))
        theirs_c, theirs_e = state_weights(torch, objs(twin)), state_weights(torch, objs(eager))
        theirs_2 = state_weights(torch, objs(twin2))
        rec["state_tensors"] = len(names)
        state_worst = {"compiled": 0.0, "eager": 0.0}
        for n in names:
            if n not in theirs_c or n not in theirs_e:
                continue  # (an eager twin's optimizer keeps its step counts on the host: not compared)
            try:
                mine_t = prog.weight(n, like=theirs_c[n])
            except KeyError:
                continue  # (a state tensor the step does not use)
            state_worst["compiled"] = max(state_worst["compiled"], rel_err(torch, mine_t, theirs_c[n]))
            state_worst["eager"] = max(state_worst["eager"], rel_err(torch, mine_t, theirs_e[n]))
            if n in theirs_2:
                worst["itself"] = max(worst["itself"], rel_err(torch, theirs_2[n], theirs_c[n]))
            identical = identical and torch.equal(mine_t, theirs_c[n].detach())
        rec.update(loss_err=worst, state_err=state_worst, identical=identical, steps=steps)
        # a reference that differs from itself (not deterministic) is matched within
        # NOISE_FACTOR times that, as the export's verification judges it
        from pgcc.verify_export import NOISE_FACTOR
        err, noise = max(worst["compiled"], state_worst["compiled"]), worst["itself"]
        ok = err <= tol or (noise > 0 and err <= NOISE_FACTOR * noise)
        runs = [(losses["compiled"], theirs_c), (losses["again"], theirs_2)]
        for x in extra:
            if ok or not noise:
                break  # (passed, or deterministic: another run would not differ)
            cx = prepare(x, compiled_step(x))
            runs.append(([one_step(s, "extra", cx, x) for s in range(steps)], state_weights(torch, objs(x))))
            noise = max([noise] + [run_distance(torch, runs[-1], r) for r in runs[:-1]])
            ok = err <= NOISE_FACTOR * noise
        rec["itself"], rec["reference_runs"] = noise, len(runs)
        rec["status"] = "PASS" if ok and not refuses else "WRONG"
        rec["detail"] = (f"{steps} steps: losses and {len(names)} state tensors "
                         f"{'bit-identical to' if identical else 'within ' + format(tol, 'g') + ' of' if err <= tol else f'within {NOISE_FACTOR}x its own spread of' if ok else 'differ from'}"
                         f" the {'step run eagerly (as exported: torch.compile cannot run it)' if rec['eager_export'] else 'compiled step'}"
                         f" (max {max(worst['compiled'], state_worst['compiled']):.3g}); against eager "
                         f"max {max(worst['eager'], state_worst['eager']):.3g}"
                         + (f"; the reference's {len(runs)} runs differ by up to {noise:.3g} (not deterministic)"
                            if noise else "")
                         + f"; export {rec['export_s']} s")
    except Exception as e:  # noqa: BLE001 -- one line per program
        import traceback
        traceback.print_exc()
        refused = any(c.__name__ == "ExportError" for c in type(e).__mro__)
        if refused and refuses and refuses in str(e):
            rec["expected"] = True  # (a step the C program cannot follow, refused as it must be)
        rec.update(status="REFUSED" if refused else "ERROR",
                   detail=(f"{type(e).__name__}: " if not refused else "") + " ".join(str(e).split())[:600]
                   if str(e).strip() else type(e).__name__)
    rec["seconds"] = round(time.time() - t_all, 1)
    print(TAG + json.dumps(rec), flush=True)
    return 0


def run_one(key, args, work):
    out = os.path.join(work, key)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(out, "inductor"),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), ROOT, os.environ.get("PYTHONPATH", "")]),
               TORCHINDUCTOR_COMPILE_THREADS=str(max(1, (os.cpu_count() or 2) // args.jobs)))
    cmd = [sys.executable, "-m", "tests.training.run_training", "--child", key, "--child-out", out,
           "--steps", str(args.steps)]
    t0 = time.time()
    with open(os.path.join(out, "stdout"), "w") as so, open(os.path.join(out, "stderr"), "w") as se:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=so, stderr=se, start_new_session=True)
    try:
        p.wait(timeout=args.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    stdout = open(os.path.join(out, "stdout"), errors="replace").read()
    stderr = open(os.path.join(out, "stderr"), errors="replace").read()
    lines = [ln[len(TAG):] for ln in stdout.splitlines() if ln.startswith(TAG)]
    if timed_out:
        rec = {"program": key, "status": "TIMEOUT", "detail": f"over {args.timeout} s"}
    elif not lines:
        rec = {"program": key, "status": "CRASH", "detail": f"exit {p.returncode}, no result line: "
                                                            f"{stderr.strip()[-300:]}"}
    else:
        rec = json.loads(lines[-1])
    rec.setdefault("seconds", round(time.time() - t0, 1))
    with open(os.path.join(args.out, "logs", key + ".log"), "w") as f:
        f.write(stdout + "\n---- stderr ----\n" + stderr)
    shutil.rmtree(out, ignore_errors=True)
    print(f"{rec['status']:8} {key:26} {rec['seconds']:6.1f} s  {rec.get('detail', '')[:220]}", flush=True)
    return rec


def markdown(recs, command):
    """The suite's table: the counts, then a row a program; the repository's own paths in a
    detail made relative to it (the same table from any checkout)."""
    counts = {s: sum(r["status"] == s for r in recs) for s in ("PASS", "WRONG", "REFUSED", "ERROR", "TIMEOUT", "CRASH")}
    out = [command, "", "| " + " | ".join(counts) + " | total |", "|" + "---|" * (len(counts) + 1),
           "| " + " | ".join(str(v) for v in counts.values()) + f" | {len(recs)} |", "",
           "| program | status | export s | loss vs compiled | state vs compiled | vs eager (max) | detail |",
           "|---|---|---|---|---|---|---|"]
    for r in recs:
        le, se = r.get("loss_err") or {}, r.get("state_err") or {}
        eager = max(le.get("eager", 0), se.get("eager", 0)) if le else None
        status = r["status"] + (" (as it must)" if r.get("expected") else "")
        cells = [f"`{r['program']}`", status, str(r.get("export_s", "-")),
                 f"{le['compiled']:.3g}" if le else "-", f"{se['compiled']:.3g}" if se else "-",
                 f"{eager:.3g}" if eager is not None else "-",
                 str(r.get("detail", "")).replace(ROOT + os.sep, "").replace("|", "\\|").replace("\n", " ")[:300]]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tests.training.run_training", description=__doc__.splitlines()[0])
    ap.add_argument("keys", nargs="*")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--out", default="build/training")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--child-out")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if args.child:
        return child(args.child, args.child_out, args.steps)
    if args.list:
        print("\n".join(PROGRAMS))
        return 0
    unknown = [k for k in args.keys if k not in PROGRAMS]
    if unknown:
        print(f"run_training: no program {unknown} (keys: --list)", file=sys.stderr)
        return 2
    keys = args.keys or list(PROGRAMS)
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="pgcc-training-")
    print(f"training: {len(keys)} programs, {args.jobs} at a time, {args.timeout} s each", flush=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        recs = list(pool.map(lambda k: run_one(k, args, work), keys))
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump(recs, f, indent=1)
    torch_version = next((r["torch"] for r in recs if r.get("torch")), "?")
    with open(os.path.join(args.out, "training.md"), "w") as f:
        f.write(markdown(recs, f"torch {torch_version}; `python3 -m tests.training.run_training --jobs {args.jobs} "
                               f"--timeout {args.timeout} --steps {args.steps}`"))
    print(f"training: {sum(r['status'] == 'PASS' for r in recs)} of {len(recs)} PASS; {args.out}/training.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
