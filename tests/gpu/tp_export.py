"""Tensor-parallel programs on two GPUs (one process per rank, NCCL, NVLink multicast
off), exported per rank by pgcc.export and run from the generated C through pgcc.load:

    PYTHONPATH=python:. python3 tests/gpu/tp_export.py [mlp] [sp_mlp] [llama]
        (needs 2 GPUs; exit status 0: every rank passed)

The programs are tests/models/tp_models.py's: each rank keeps its shards of one seeded model and
ends every block with torch.distributed._functional_collectives.all_reduce -- under
torch.compile, the _c10d_functional ops that the exporter records in place of running
them (collectives.py), so the export holds `libcall` nodes (ncclAllReduce; sp_mlp's
ncclAllGather and ncclReduceScatter) that libpgrt runs inside its graphs.  The export's own verify runs on both ranks in step.  Then:
- `pgcc --report=json` must list every collective the step makes (mlp: 1 all-reduce;
  sp_mlp: 1 all-gather, 1 reduce-scatter; llama: 8 all-reduces) over 2 ranks, each in a
  region launched as a graph;
- on 3 fresh inputs (the same on both ranks), with the arena poisoned before each
  call, each rank's output from C is compared with the compiled step's on that rank (bit
  for bit, or within the dtype's tolerance) and with the whole model on one GPU: within
  1e-5 for fp32; for bf16, pgcc's error against the whole model in fp32 must be at most
  twice the bf16 whole model's own (max errors printed).
Then, in fresh processes per rank, the other order (load-first): the default group is
"cpu:gloo,cuda:nccl", so PyTorch makes no NCCL communicator until its first CUDA collective;
each rank loads its export (pgcc's communicator first, the id sent over gloo) and calls it
on 3 inputs, then runs the compiled step (PyTorch's communicator beside pgcc's) and the
export again; every call is checked as above, and NCCL must be mapped from one file.
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

COLLECTIVES = {"mlp": {"ncclAllReduce": 1}, "sp_mlp": {"ncclAllGather": 1, "ncclReduceScatter": 1},
               "llama": {"ncclAllReduce": 8}}


def check_report(graph, name, failures, show):
    """The report's collectives: the ones the step makes (by NCCL function, over 2 ranks),
    each in a region that is launched as a graph."""
    r = subprocess.run([os.path.join(ROOT, "build", "pgcc"), "--report=json", graph], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{name}: pgcc --report failed: {r.stderr.strip()[:300]}")
        return
    rep = json.loads(r.stdout)
    graphed = {g["id"] for g in rep["regions"] if g["decision"] == "graph"}
    colls = rep["collectives"]
    if show:
        print(f"{name}: {len(colls)} collectives, regions {[g['decision'] for g in rep['regions']]}", flush=True)
    counts = {}
    for c in colls:
        counts[c["fn"]] = counts.get(c["fn"], 0) + 1
    if counts != COLLECTIVES[name] or any(c["ranks"] != 2 for c in colls):
        failures.append(f"{name}: the report lists {[(c['fn'], c['ranks']) for c in colls]}, not "
                        f"{COLLECTIVES[name]} over 2 ranks")
    outside = [c["node"] for c in colls if c["region"] not in graphed]
    if outside:
        failures.append(f"{name}: collectives outside a graph: {outside}")


def run_program(name, rank, world, out_root, failures):
    import torch
    import pgcc
    from tests.models import tp_models

    prog = tp_models.program(name, rank, world)
    out = os.path.join(out_root, f"{name}_rank{rank}")
    watch = pgcc.ModuleWatch()
    try:
        res = pgcc.export(prog.step, prog.inputs, out, name=name, weights=prog.weights, watch=watch, quiet=rank != 0)
    finally:
        watch.close()
    print(f"{name} rank {rank}: {res.verified}", flush=True)
    check_report(res.graph, name, failures, rank == 0)
    compiled = torch.compile(prog.step)
    p = pgcc.load(out, name=name)
    try:
        g = torch.Generator(device="cuda").manual_seed(99)
        for call in range(3):
            xs = prog.fresh(g)
            p.fill_arena(0xFF)
            got = p(*xs)
            check_call(prog, name, rank, f"call {call}", got, compiled(*xs), xs, failures)
    finally:
        p.close()


def check_call(prog, name, rank, what, got, ref, xs, failures):
    """One call's output from C against the compiled step's on this rank (ref) and against
    the whole model on one GPU (printed; a failure appended where out of tolerance)."""
    import torch
    from pgcc.verify_export import compare, rel_err
    whole, whole32 = prog.whole(*xs), prog.whole_fp32(*xs)
    torch.cuda.synchronize()
    same, err, tol = compare(got, ref)
    line = (f"{name} rank {rank} {what}: "
            f"{'bit-identical to' if same else f'max error {err:.3g} against'} the compiled step")
    if not same and err > tol:
        failures.append(f"{name} {what}: max error {err:.3g} against the compiled step")
    if got.dtype == torch.float32:
        e = rel_err(got, whole)
        line += f"; max error {e:.3g} against the whole model on one GPU"
        if e > 1e-5:
            failures.append(f"{name} {what}: max error {e:.3g} against the whole model")
    else:
        e, e_eager = rel_err(got.float(), whole32), rel_err(whole.float(), whole32)
        line += (f"; against the whole model in fp32 on one GPU: max error {e:.3g} "
                 f"(the whole {got.dtype} model's: {e_eager:.3g})")
        if e > 2 * e_eager:
            failures.append(f"{name} {what}: max error {e:.3g} against the whole model in fp32, more "
                            f"than twice the whole {got.dtype} model's {e_eager:.3g}")
    print(line, flush=True)


def nccl_files():
    """The NCCL files this process maps (/proc/self/maps)."""
    with open("/proc/self/maps") as f:
        return sorted({line.split(None, 5)[5].strip() for line in f
                       if len(line.split(None, 5)) == 6 and "/libnccl" in line})


def load_first(name, rank, world, out_root, failures):
    """The export loaded, its communicator made and the program called before PyTorch has
    made any NCCL communicator (the default group is "cpu:gloo,cuda:nccl": the NCCL id goes
    over gloo, and PyTorch's NCCL starts on its first CUDA collective); then the compiled
    step and the eager model (PyTorch's communicator beside pgcc's); then the export again."""
    import torch
    import pgcc
    from tests.models import tp_models

    prog = tp_models.program(name, rank, world)
    p = pgcc.load(os.path.join(out_root, f"{name}_rank{rank}"), name=name)
    try:
        g = torch.Generator(device="cuda").manual_seed(7)
        xs_all = [prog.fresh(g) for _ in range(3)]
        firsts = []
        for xs in xs_all:
            p.fill_arena(0xFF)
            firsts.append(p(*xs).clone())
        torch.cuda.synchronize()
        files = nccl_files()
        print(f"{name} rank {rank} load-first: the export's 3 calls ran before PyTorch's NCCL; NCCL mapped "
              f"from {files}", flush=True)
        compiled = torch.compile(prog.step)
        for k, xs in enumerate(xs_all):
            check_call(prog, name, rank, f"load-first call {k}", firsts[k], compiled(*xs), xs, failures)
        for k, xs in enumerate(xs_all):
            p.fill_arena(0xFF)
            check_call(prog, name, rank, f"load-first call {k} again, after PyTorch's NCCL", p(*xs),
                       compiled(*xs), xs, failures)
        if len(files) != 1 or nccl_files() != files:
            failures.append(f"{name} load-first: NCCL mapped from {files}, then {nccl_files()}: not one file")
    finally:
        p.close()


def rank_main(rank, world, names, out_root, port, phase, results):
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    timeout = datetime.timedelta(seconds=180)
    if phase == "export":  # (PyTorch's communicator made at once, before the export)
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank),
                                timeout=timeout)
    else:  # (none made until PyTorch's first CUDA collective)
        dist.init_process_group("cpu:gloo,cuda:nccl", rank=rank, world_size=world, timeout=timeout)
    failures = []
    for name in names:
        try:
            (run_program if phase == "export" else load_first)(name, rank, world, out_root, failures)
        except Exception as e:  # noqa: BLE001 -- the rank's failure is reported by the parent
            import traceback
            traceback.print_exc()
            failures.append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
    results[rank] = failures
    sys.stdout.flush()
    os._exit(0)  # (not dist.destroy_process_group: it hung once with captured NCCL work alive)


def main():
    names = sys.argv[1:] or list(COLLECTIVES)
    unknown = [n for n in names if n not in COLLECTIVES]
    if unknown:
        sys.exit(f"tp_export.py: no TP program {', '.join(unknown)} (there are {', '.join(COLLECTIVES)})")
    from tests.models.tp_models import run_ranks
    with tempfile.TemporaryDirectory() as out:
        failed = False
        for phase, port in (("export", 29513), ("load-first", 29523)):
            results = run_ranks(rank_main, (names, out, port, phase), timeout=540)
            for r in range(2):
                got = results.get(r)
                if got is None:
                    print(f"FAIL rank {r} ({phase}): no result (it died or hung)")
                    failed = True
                for f in got or []:
                    print(f"FAIL rank {r} ({phase}): {f}")
                    failed = True
    print("FAIL" if failed else f"PASS ({' '.join(names)}): both ranks, from C, every collective in a graph; "
          f"the exports loaded and called before PyTorch's NCCL, then beside it")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
