"""The export, as one list of steps (analyse, like compiler/driver.c's passes): warm the
callable up (warmup.py), capture it four times (capture_set.py: one thrown away, A on
the example inputs, B on copies at other addresses, C on copies in memory far away),
map every pointer word to a (buffer, offset) with a relocation kind (node_mapping.py,
relocate.py), find each kernel's code (kernel_code.py) and, for Inductor's Triton kernels, what
it reads and writes through each pointer (access_sets.py), prove by replay which changing
bytes do not matter (host_words.py, replay.py) and which blocks are workspaces, lay the
intermediates out (slot_layout.py), learn which buffers the library GEMMs write by running
each alone (access_probe.py) -- all of it in memory, a model.Analysis -- and
write NAME.graph, kernels/, NAME.safetensors, NAME.io.safetensors and NAME.export.json
(export_files.py); then, unless told not to, verify the result (verify_export.py).

A callable that reads values back to the host half-way (hostreads.py) is captured in
stretches between its reads, and a fifth capture, D, on other input values tells what
each value read becomes (hostvalues.py): a scalar the C reads at run time, a callback
scalar, or a guard; a guarded read that chose a branch or ended a loop's pass becomes
an IF/ELSE or WHILE node (branches.py, joined here: join_other_path).  Shape buckets
(shape_buckets.py) are an analysis per size, merged (export_buckets).

    import pgcc
    pgcc.export(model, (x,), "out")      # this module's export()

Assumes PyTorch with CUDA and a GPU; torch is imported when export() is called, not
when this module is imported (the package's CPU tests import it without torch).
docs/e2e.md explains each step and why.
"""
import os
import time

from . import verify_branches, verify_export
from .access_probe import Device, is_gemm, probe_access
from .access_sets import mark_access, triton_signatures
from .alone import ALONE, Alone
from .branches import branch_to_export, join, warm_other_path
from .capture import first_trace_difference, host_maps
from .capture_set import outputs_of, take_captures
from .cuda import stuck_error
from .errors import CapturesDiffer, ExportError, entry_point
from .example_inputs import FlatCall, flat_inputs, leaf_grads
from .export_files import write_export
from .graphfile import ident
from .hostvalues import host_computed, host_values
from .host_words import prove_suspects
from .kernel_code import find_kernel_code, prove_code
from .kernel_search import find_in_libraries, forget_generated_kernels
from .kernel_times import measure
from .model import Analysis, BucketExport, WholeLayout, write_report
from .module_watch import ModuleWatch
from .node_mapping import address_spread, copy_aliased_outputs, map_nodes, relocation_counts, relocator, tensor_buffers
from .progress import Progress
from .random_state import find_philox, rng_buffer
from .recompiles import explain, mark, since
from .replay import Replayer, close_unless_stuck, scratch_blocks
from .shape_buckets import bucket_examples, merge, setter_kernel
from .slot_layout import keep_smaller_layout, place_intermediates, whole_regions
from .train_state import (capturable, counted_schedulers, discover, kind_of, needs_first_step, rates_kept, state_objects,
                          state_weights)
from .warmup import compiled_or_eager, on_capture_stream, restore_state, saved_state, training_step, warm_up

__all__ = ["ExportResult", "analyse", "analysis_report", "export", "export_buckets", "export_captured", "in_grad_mode",
           "join_other_path"]


class ExportResult:
    """Where an export went: out_dir, name, and the paths of what it wrote (graph,
    weights, io, report); os.fspath() of it is out_dir."""

    def __init__(self, out_dir, name, report):
        self.out_dir, self.name, self.report = os.path.abspath(out_dir), name, report
        self.graph = os.path.join(self.out_dir, name + ".graph")
        self.weights = os.path.join(self.out_dir, name + ".safetensors")
        self.io = os.path.join(self.out_dir, name + ".io.safetensors")
        self.report_path = os.path.join(self.out_dir, name + ".export.json")
        self.verified = None  # verify's summary line, where it ran

    def __fspath__(self):
        return self.out_dir

    def __str__(self):
        return self.out_dir

    def __repr__(self):
        return f"ExportResult({self.out_dir!r}, name={self.name!r})"


@entry_point("pgcc.export")
def export(fn_or_module, example_inputs, out_dir, *, name=None, weights=None, compile=True, verify=True,
           quiet=False, warmup=3, watch=None, progress=None, diagnose=None, callbacks=None, buckets=None, dim=0,
           dim_name=None, pad=None, state=None):
    """Exports fn_or_module (an nn.Module or a callable) as captured on example_inputs (a
    tuple of arguments: CUDA tensors, Python numbers, or pytrees of them -- tuples, lists,
    dicts) into out_dir; returns an ExportResult.  Its outputs may be a pytree too (a
    tensor, tuples, lists, dicts, a ModelOutput, None, Python numbers: constants), whose
    structure the report records (example_inputs.py) for pgcc.load.  Any failure is an
    ExportError (errors.entry_point), raised before anything is written where the inputs
    are what an export cannot take.

    weights: {name: tensor} the callable reads besides its inputs; for a module, by
    default its named_parameters() and named_buffers() (shared tensors once).  state: a
    training step's modules, optimizers and GradScalers (model, optimizer, scaler), whose
    every state tensor becomes a weight, named for the user (train_state.py); without
    state or weights, those the callable's code refers to, where it refers to an
    optimizer.  Where an optimizer has no state yet, the export takes the first step
    itself (the compiled step, once: the caller's model has then taken it).  A module
    in eval mode runs under torch.no_grad(); one in training mode runs as it is, like
    any callable.  compile: run it under torch.compile (False: eagerly).  warmup: calls
    before the captures (torch.compile compiles on the first; libraries load their
    kernels).  verify: build the export, run it, and compare with the callable
    (verify_export.py; the callable in the grad mode export() was called in, as the
    captures ran it: in_grad_mode).  watch: a ModuleWatch already started (one is started here otherwise,
    which sees only the modules loaded from now on).  quiet: errors only.  diagnose: also
    run the nodes one by one in this process, as captured and as exported, and report the
    first that differs (diagnose.py; default: the PGCC_DIAGNOSE environment variable).
    A training step (fn.train is True, or that of the callable torch.compile wrapped) is
    verified over several steps (verify_export.py).  The weights are left as they were before
    the export (the warm-up calls run for real, so they are saved first and written
    back).  callbacks: {callback scalar name:
    function of the values read back}, for verify, where the program takes values its
    host computes from what it read (the report's host_reads names them; without the
    functions, the export is written but not verified).

    buckets: sizes of dimension `dim` ([1, 2, 4, 8]: the inputs whose size there is the
    example's are cut or repeated to each), or a list of example input tuples that differ
    in the size of one dimension: one program with a variant per size (shape_buckets.py),
    whose C takes the size per call (a field named dim_name, default "batch" for
    dimension 0, else "dimN") and runs the smallest bucket that holds it where the
    callable's rows are independent (pad: None tests it, True requires it, False gives
    exact sizes only).  Inference only; compiled with static shapes."""
    import torch

    prog = progress or Progress(quiet=quiet, prefix="pgcc-export")
    started = time.monotonic()
    inputs, in_spec = flat_inputs(torch, example_inputs)  # (checked before anything runs)
    grad = torch.is_grad_enabled()  # (the captures run in the caller's grad mode: verify's reference too)
    for ex in buckets or ():
        if isinstance(ex, (tuple, list)):  # (buckets' own examples: checked as the example is)
            flat_inputs(torch, ex)
    fn = fn_or_module
    if isinstance(fn_or_module, torch.nn.Module):
        module = fn_or_module
        if weights is None:
            weights = dict(module.named_parameters())  # (each shared tensor once)
            weights.update(module.named_buffers())
        if not module.training:
            def inference(*xs):
                with torch.no_grad():
                    return module(*xs)
            fn = inference
        name = name or type(module).__name__.lower()
    name = ident(name or getattr(fn_or_module, "__name__", None) or "model")
    if state is not None and weights is not None:
        raise ExportError("give a training step's state= or its weights=, not both")
    objs = state_objects(torch, state) if state is not None else (
        discover(torch, fn_or_module) if weights is None and not isinstance(fn_or_module, torch.nn.Module) else [])
    training = training_step(fn_or_module) or any(kind_of(torch, o) == "optimizer" for _, o in objs)
    for label, cls, at in counted_schedulers(torch, fn_or_module)[:1]:
        raise ExportError(f"cannot export: the step steps the LR scheduler '{label}' ({cls})"
                          + (f" at {at}" if at else "") + ": its learning rate follows its step count, a Python "
                          "number the compiled step reads as a constant (StepLR: `last_epoch % step_size`), which the "
                          "program does not have: it would keep the rate of the calls it captured.  Step the "
                          "scheduler outside the exported step, between calls, and give the program its rate: "
                          "prog.weight_tensor(\"optimizer.group0.lr\").fill_(scheduler.get_last_lr()[0]) "
                          "(docs/guide.md); ExponentialLR may stay inside")
    if objs and buckets is not None:
        raise ExportError("buckets of a training step are not exported (a step changes its state; buckets are "
                          "for inference)")
    if objs:
        prog.log("  the step's state: " + ", ".join(f"{label} ({type(o).__name__})" for label, o in objs))
    weights = {} if weights is None else weights
    own_watch = watch is None
    if own_watch:
        try:
            watch = ModuleWatch()
        except ExportError as e:
            prog.warn("no ModuleWatch: library kernels outside .nv_fatbin cannot be exported", e)
            watch = None
    if buckets is not None:
        return _export_buckets(torch, fn, fn_or_module, inputs, in_spec, out_dir, name, weights, watch, own_watch,
                               prog, buckets, dim, dim_name or ("batch" if dim == 0 else f"dim{dim}"), pad, compile,
                               verify, warmup)
    # The warm-up calls run for real: a training step takes steps, a module in training
    # mode updates its running statistics.  The state is saved first (in host memory)
    # and written back after them, so that the captures, the weights file and the
    # verification start from the state the caller gave, and the caller gets it back.
    # (The copy costs what reading the weights for the weights file costs anyway.)
    original = saved_state(torch, weights, device="cpu")
    grads = leaf_grads(torch, inputs)  # (a step may accumulate into its inputs': put back after)
    try:
        call = compiled_or_eager(torch, fn, prog.warn) if compile else fn
        run = FlatCall(torch, call, in_spec, weights)
        if watch and warmup:
            watch.paused = False  # the first runs load the libraries' modules
            forget_generated_kernels(torch.cuda.current_blas_handle(), prog.log)  # and make them again
        if objs:  # (the state once it exists: the first step makes an optimizer's)
            made = capturable(torch, objs)
            if made:
                prog.log(f"  {', '.join(made)}: made capturable (its step counts on the GPU, as CUDA graphs need)")
            for kept in rates_kept(torch, objs):
                prog.warn("an LR scheduler drives a learning rate given as a Python float, which the program keeps as "
                          "exported (give it as a tensor, lr=torch.tensor(...), to change it between calls)", kept)
            if needs_first_step(torch, objs):
                prog.status(f"{name}: the first training step (the optimizer makes its state)")
                with on_capture_stream(torch):
                    run(*inputs)
            weights.update(state_weights(torch, objs))
            original = saved_state(torch, weights, device="cpu")
            prog.log(f"  {len(weights)} state tensors: {', '.join(list(weights)[:6])}"
                     + (", ..." if len(weights) > 6 else ""))
        seen = mark(torch)  # (Dynamo's failed guards so far: those of the export's calls explain captures that differ)
        per_call, drawn = warm_up(torch, run, inputs, weights, warmup, compile, name, prog, original,
                                  fresh_thread=watch is not None)
        if per_call and compile and not training and os.environ.get("PGCC_SCALARS_ON_DEVICE") != "0":
            call, run, per_call, drawn = scalars_on_device(torch, fn, in_spec, inputs, weights, warmup, name, prog,
                                                           original, watch, (call, run, per_call, drawn))
        if diagnose is None:
            diagnose = os.environ.get("PGCC_DIAGNOSE", "") not in ("", "0")
        try:
            a = export_captured(run, inputs, weights, out_dir, name, progress=prog, watch=watch, diagnose=diagnose,
                                split=per_call > 0, rng_increment=drawn, storages=not training)
        except CapturesDiffer as e:
            why = explain(since(torch, seen))
            if not why:
                raise
            raise CapturesDiffer(f"{e}.  {why}") from e
        report = a.report
        if isinstance(call, compiled_or_eager) and call.why:
            report["eager"] = call.why  # (torch.compile could not run it: exported as it runs eagerly)
        if isinstance(call, compiled_or_eager) and call.scalars_on_device:
            report["scalars_on_device"] = True  # (compiled with capture_scalar_outputs: verify it so too)
    except BaseException:
        try:  # the caller's state back, where CUDA still works
            restore_state(original)
        except RuntimeError:
            pass
        raise
    finally:
        for x, g in grads:
            x.grad = g  # (as the caller had it: the warm-ups and captures set it)
        if own_watch and watch:
            watch.close()
        prog.done()
    result = ExportResult(out_dir, name, report)
    report["structure"] = run.structure(inputs)  # (pgcc.load's; the verification below calls flat)
    write_report(result.report_path, report)
    needed = sorted({c for r in report.get("host_reads", []) for c in r.get("callbacks", [])})
    if verify and needed and not callbacks:
        prog.warn(f"not verified: the program takes callback scalars {needed}, values its host computes from the "
                  "values it read back; give pgcc.export(..., callbacks={name: function}) to verify it")
        result.verified = f"NOT VERIFIED {name}: callback scalars {needed} need their functions"
        verify = False
    def check(build_dir=None):
        if training:
            line = verify_export.verify_training(result, run, inputs, weights, progress=prog, build_dir=build_dir)
        else:
            line = verify_export.verify(result, in_grad_mode(torch, run, grad), inputs, progress=prog,
                                        callbacks=callbacks, build_dir=build_dir)
        verify_branches.other_sides(result, run if training else in_grad_mode(torch, run, grad), inputs, weights,
                                    training, prog, callbacks)  # (the side of each IF the calls did not take)
        return line
    try:
        if verify:
            try:
                result.verified = check()
            except ExportError as e:
                # The regions split into slots, or cut, have not run on every program: where
                # the export fails with them, it is written again with every region whole,
                # verified again (built apart: the process holds the first build loaded), and
                # the report says why (intermediates.undone).
                if not whole_regions(a, str(e)):
                    raise
                prog.warn("the export failed verification with its capture memory split into slots or cut; "
                          "written again with every region whole", str(e))
                write_export(a, inputs, out_dir, name, prog, False)
                result.verified = check(build_dir=os.path.join(out_dir, "build-whole"))
        # where the export's time went, its longest steps (the status lines it showed)
        report["time"] = {"total_s": round(time.monotonic() - started, 2),
                          "steps": [[k, round(v, 2)] for k, v in getattr(prog, "time_by_step", list)()]}
        write_report(result.report_path, report)
    except ExportError as e:  # (a verification that failed: what to do next is find the node)
        if diagnose or not str(e).startswith("verify "):
            raise
        raise ExportError(f"{e}; to find the first node that differs, export again with diagnose=True "
                          "(PGCC_DIAGNOSE=1): its report's diagnosis names it") from e
    finally:
        prog.flush()
    return result


def scalars_on_device(torch, fn, in_spec, inputs, weights, warmup, name, prog, original, watch, plain):
    """An inference callable that reads values back to the host, compiled again with its
    scalars traced (compiled_or_eager's scalars_on_device): where that call reads fewer
    values (a scale computed from .item(), fused by Inductor into the kernel that uses
    it: a read less, and a program that serves every value instead of a guarded one),
    (call, run, reads per call, random draws) of it; else plain, those of the compile
    as it was.  A compile that fails with the setting keeps plain, with a warning."""
    prog.status(f"{name}: compiling again with the values read traced (capture_scalar_outputs)")
    call = compiled_or_eager(torch, fn, prog.warn, scalars_on_device=True)
    run = FlatCall(torch, call, in_spec, weights)
    try:
        per_call, drawn = warm_up(torch, run, inputs, weights, warmup, True, name, prog, original,
                                  fresh_thread=watch is not None)
    except Exception as e:  # (torch.compile's own errors, of any class) pylint: disable=broad-except
        if stuck_error():
            raise
        restore_state(original)
        prog.warn("compiled with capture_scalar_outputs, the callable failed: exported as torch.compile compiles it "
                  "by default", f"{type(e).__name__}: {' '.join(str(e).split())[:200]}")
        return plain
    if per_call >= plain[2]:
        prog.log(f"  compiled with capture_scalar_outputs, a call still reads {per_call} values back: exported as "
                 "torch.compile compiles it by default")
        return plain
    prog.log(f"  compiled with capture_scalar_outputs (the values read and the arithmetic on them traced), a call "
             f"reads {per_call} values back instead of {plain[2]}: exported so (the report's scalars_on_device)")
    return call, run, per_call, drawn


def in_grad_mode(torch, fn, enabled):
    """fn, called in grad mode `enabled` whatever the mode it is called in: verify_export
    calls its reference under no_grad, which a callable that calls backward() cannot run
    under (loss.backward(): "element 0 of tensors does not require grad"), and under
    which torch.compile compiles another graph than the one captured; a module in eval
    mode runs under no_grad anyway (export())."""
    def call(*xs):
        with torch.set_grad_enabled(enabled):
            return fn(*xs)
    return call


def _export_buckets(torch, fn, fn_or_module, inputs, in_spec, out_dir, name, weights, watch, own_watch, prog, buckets,
                    dim, dim_name, pad, compile, verify, warmup):
    """export() with buckets (shape_buckets.py)."""
    if training_step(fn_or_module):
        raise ExportError("buckets of a training step are not exported (a step changes its state; buckets are "
                          "for inference)")
    try:
        run = FlatCall(torch, torch.compile(fn, dynamic=False) if compile else fn, in_spec)
        if watch and warmup:
            watch.paused = False
            forget_generated_kernels(torch.cuda.current_blas_handle(), prog.log)
        b = export_buckets(fn, run, inputs, weights, out_dir, name, prog, watch,
                           buckets, dim, ident(dim_name), pad, warmup)
    finally:
        if own_watch and watch:
            watch.close()
        prog.done()
    result = ExportResult(out_dir, name, b.report)
    b.report["structure"] = dict(run.structure(inputs), input_layouts=None, output_layouts=None,
                                 output_aliases=None)  # (sizes vary)
    write_report(result.report_path, b.report)
    try:
        if verify:
            result.verified = verify_export.verify_buckets(result, run, b, progress=prog)
    finally:
        prog.flush()
    return result


def export_buckets(fn, run, inputs, weights, out_dir, name, prog, watch, buckets, dim, dim_name, pad, warmup):
    """Exports `run` (fn compiled with static shapes, or fn) at each bucket: the buckets'
    examples (shape_buckets.bucket_examples), an analysis per bucket, merged
    (shape_buckets.merge) and written (write_export).  Returns a model.BucketExport."""
    import torch  # (imported when called: the package imports without torch)

    values, examples, in_pos, out_pos, pad = bucket_examples(torch, run, inputs, buckets, dim, dim_name, pad, warmup,
                                                             name, prog)
    analyses = []
    for v, ex in zip(values, examples):
        prog.status(f"{name}: bucket {dim_name}={v}")
        prog.log(f"  bucket {dim_name}={v}: inputs {[list(x.shape) for x in ex if isinstance(x, torch.Tensor)]}")
        analyses.append(analyse(run, ex, weights, out_dir, name, prog, watch, split=False))
    a = merge(analyses, values, dim_name, pad, setter_kernel(out_dir))
    a.report["dim"]["in_positions"], a.report["dim"]["out_positions"] = in_pos, out_pos
    a.report_path = os.path.join(out_dir, name + ".export.json")
    a.write_report()
    write_export(a, examples[-1], out_dir, name, prog, diagnose=False)
    return BucketExport(report=a.report, values=values, examples=examples, in_pos=in_pos, out_pos=out_pos,
                        pad=pad, dim_name=dim_name)


def export_captured(fn, inputs, weights, out_dir, name, progress=None, watch=None, diagnose=False, split=False,
                    rng_increment=None, storages=True):
    """The export proper, of a callable that has run (warmed up) already.  watch: a
    ModuleWatch started before fn first ran, for library kernels that are in no fatbin of
    their library (their images are then written beside the .graph).  diagnose: run the
    nodes one by one as captured and as exported (diagnose.py), into the report.  split:
    the callable reads values back to the host (hostreads.py): the captures are cut
    there (and run the call for real, so the state is put back after each), and capture D,
    on other input values, tells which kernel arguments are the values read
    (hostvalues.py).  A read that only chose the path is then tried as a conditional node
    (branches.py): the other path is captured too (the value given to the program
    flipped), and where the two share what came before the read, the program holds both,
    chosen on the device.  rng_increment: how far a call advances PyTorch's Philox offset
    (warmup.py; None: not measured, and a call that draws random numbers is refused).
    storages: weights that are views of one storage kept as one block
    (node_mapping.flat_groups; a training step's state keeps its names instead).
    Returns the analysis (analyse(); its report is the export's)."""
    prog = progress or Progress(prefix="pgcc-export")
    a = analyse(fn, inputs, weights, out_dir, name, prog, watch, split, rng_increment=rng_increment,
                storages=storages)
    if split:
        join_other_path(fn, inputs, weights, out_dir, name, prog, watch, a, storages)
    write_export(a, inputs, out_dir, name, prog, diagnose)
    keep_smaller_layout(a, out_dir, name, prog.log)
    return a


def join_other_path(fn, inputs, weights, out_dir, name, prog, watch, a, storages=True):
    """If analysis `a` holds exactly one guarded read and it is the call's last, exports
    the other path and joins it into `a` as a conditional node (in place); a loop of
    guarded reads becomes a WHILE node; else, or if the paths cannot be joined, leaves `a`
    guarded and warns why (branches.py)."""
    found = branch_to_export(a, out_dir, prog)
    if found is None:
        return
    k, where = found
    prog.status(f"{name}: the other side of the branch at {where[:60]}")
    increment = (a.report.get("random") or {}).get("increment")
    try:
        warm_other_path(fn, inputs, weights, k)
        b = analyse(fn, inputs, weights, out_dir, name, prog, watch, True, force={k: True},
                    rng_increment=increment, storages=storages)
        try:
            how = join(a, b, k, out_dir)
        except ExportError:
            prog.log("  " + first_trace_difference(a.capA, b.capA))
            raise
    except ExportError as e:
        prog.warn(f"the other side of the branch at {where} could not be joined as a conditional node: the read "
                  "stays guarded", str(e))
        return
    a.write_report()
    prog.log(f"  the value read at {where}: both paths exported, an IF/ELSE node chooses on the device "
             f"(the other path's memory put on this one's {how})")


def analyse(fn, inputs, weights, out_dir, name, prog, watch, split, force=None, rng_increment=None, storages=True):
    """Captures, relocations, the kernels' code, replays: everything an export holds, in
    memory (a model.Analysis), step by step.  force: {read index: True}, reads whose
    value the program is given flipped (the other path of a branch, branches.py); its
    report is not written.  rng_increment, storages: export_captured's."""
    import torch  # (imported when called: the package imports without torch)
    log = prog.log
    if watch:
        watch.paused = True  # the captures and searches below load modules of their own
    os.makedirs(os.path.join(out_dir, "kernels"), exist_ok=True)
    report_path = None if force else os.path.join(out_dir, name + ".export.json")

    caps = take_captures(torch, fn, inputs, weights, name, prog, watch, split, force)
    capA = caps.capA
    maps = host_maps()
    bufs = tensor_buffers(inputs, caps, weights, storages)
    philox = find_philox(torch, caps)
    if philox:  # (before the relocator: the generator's tensors are the program's random-number state)
        rng = rng_buffer(bufs, philox, rng_increment)
        log(f"  random numbers: kernels take PyTorch's Philox state (seed at 0x{philox[0][0]:x}, offset at "
            f"0x{philox[0][1]:x}): the program's random-number state, advanced by {rng.increment} a call")
    spread = address_spread(bufs)
    if not spread["high"] or not spread["low"]:
        prog.warn("the captures' buffers do not differ in both their low and high address bits: addresses cut to "
                  "32 bits cannot be told from constants", f"{spread}")
    rel, paired = relocator(caps, bufs, maps)
    problems = rel.problems
    suspects = {}  # node index -> [(parameter byte, length, why)]: proven irrelevant by replay, or problems
    prog.status(f"{name}: mapping the parameters of {len(capA.nodes)} nodes")
    nodes, kernels, comms = map_nodes(torch, caps, rel, bufs, suspects)
    computed = {}
    scalars = host_values(capA, caps.capD, nodes, kernels, suspects, computed, prog.warn, log) if split else []
    edges = copy_aliased_outputs(caps, rel, bufs, nodes, log)
    find_kernel_code(torch, kernels, out_dir, name, prog, watch, problems)
    mark_access(kernels, triton_signatures(), log)
    report = analysis_report(caps, spread, paired, suspects, scalars, kernels, problems)
    if philox:
        report["random"] = {"increment": rng.increment}
    write_report(report_path, report)
    if problems:
        raise ExportError("cannot export; what stands in the way:\n  " + "\n  ".join(problems))

    replayer = Replayer(torch, capA, bufs)
    try:
        if suspects:
            prove_suspects(replayer, caps, maps, bufs, nodes, kernels, suspects, report, report_path, problems, prog,
                           name)
        if computed:
            host_computed(replayer, capA, nodes, kernels, computed, scalars, report, log)
            write_report(report_path, report)
        prog.status(f"{name}: replaying to tell workspaces from data")
        scratch_blocks(replayer, bufs, nodes, log, alone=Alone(Device(capA, ALONE), nodes, kernels),
                       name_of=lambda i: capA.nodes[i]["name"][:80])
        if any(k.module["kind"] == "library" or k.image is not None for k in kernels.values()):
            prog.status(f"{name}: running the library kernels' code found, node by node")
            try:
                prove_code(torch, capA, bufs, nodes, edges, kernels, replayer, log, prog.warn, out_dir, watch)
            except RuntimeError as e:  # a launch refused: the code stays as found, verify_export.py judges it
                if stuck_error():  # (a fault, not a refusal: nothing runs in this process any more)
                    raise ExportError(f"running the library kernels' code found, node by node, made the GPU fault "
                                      f"({e}): a library kernel's code found, or another holding its name that was "
                                      "tried, reads memory it was not given; this process's CUDA context is "
                                      "unusable from here (restart it)") from e
                prog.warn("the library kernels' code could not be run node by node", str(e))
        try:
            times = measure(torch, replayer, log, lambda what: prog.status(f"{name}: {what}"))
        except RuntimeError as e:  # (the times only inform pgcc's cost model: the export goes on without them)
            if stuck_error():
                raise
            prog.warn("the nodes' GPU times could not be measured (PGCC_TIMES=on): none written", str(e))
            times = {}
        for n in nodes:
            n.gpu_us = times.get(n.index) if isinstance(n.index, int) else None
        # the replay's updates to the weights (a training step's) are undone when the replayer closes
        outputs = outputs_of(torch, fn, inputs, capA, comms)
    finally:
        close_unless_stuck(replayer)  # (after a fault: the error that says where, not closing's)
    # (PGCC_SLOTS=off keeps every region whole, as exports before the seventh session had them)
    whole = WholeLayout(nodes=list(nodes), bufs=list(bufs.list), sizes={id(b): b.size for b in bufs.list})
    nodes, report["intermediates"] = place_intermediates(bufs, nodes, capA, log,
                                                         split=not split and os.environ.get("PGCC_SLOTS") != "off")
    library_access(capA, nodes, kernels, set(replayer.fixed), prog, name)
    write_report(report_path, report)
    return Analysis(capA=capA, bufs=bufs, nodes=nodes, edges=edges, kernels=kernels, scalars=scalars, report=report,
                    report_path=report_path, outputs=outputs, comms=list(comms.values()), whole=whole)


def library_access(capA, nodes, kernels, fixed, prog, name):
    """Access sets for the library GEMMs, each run alone on its slots (access_probe.py:
    after place_intermediates, so that one region's tensors are told apart); fixed: nodes
    whose parameter bytes the replays fixed, not run.  PGCC_PROBE=off skips it."""
    if os.environ.get("PGCC_PROBE") == "off" or not any(is_gemm(k.symbol) and not k.access for k in kernels.values()):
        return
    prog.status(f"{name}: running the library GEMMs alone, to learn which buffers each writes")
    try:
        probe_access(kernels, nodes, fixed, Device(capA), prog.log)
    except RuntimeError as e:
        if stuck_error():
            raise ExportError(f"cannot export: a library GEMM run alone with its buffers filled made the GPU fault "
                              f"({e}); this process's CUDA context is unusable from here (restart it; PGCC_PROBE=off "
                              "skips this step)") from e
        prog.warn("the library GEMMs could not be run alone: they keep no access sets (pgcc keeps their order)", str(e))


def analysis_report(captures, spread, paired, suspects, scalars, kernels, problems):
    """The export report (NAME.export.json) as analyse() first writes it, before the
    replays: capture A's counts, the problems, the address bits, the allocations paired,
    the relocations, the don't-care candidates, the host reads and the kernels' code."""
    capA, caps = captures.capA, captures.caps
    report = {"nodes": len(capA.nodes), "edges": len(capA.edges), "programmatic_edges": len(capA.edge_kinds),
              "problems": problems,
              "address_bits_differ": spread,
              "allocations": {"A": len(capA.allocs), **{"ABC"[c]: {"made": len(caps[c].allocs), "paired": len(a.pairs)}
                                                          for c, a in paired.items()}},
              "packed_arguments": sum(1 for n in capA.nodes if n.get("packed")),
              "relocations": relocation_counts(kernels),
              "dontcare": [{"node": i, "bytes": [[a, n, why] for a, n, why in r]} for i, r in suspects.items()],
              "host_memory_read": [],
              "host_reads": [{"where": r["where"], "op": r["op"], "dtype": r["dtype"],
                              "scalars": [s["name"] for s in scalars if s.get("read") == k],
                              "guarded": not any(s.get("read") == k for s in scalars)}
                             for k, r in enumerate(capA.reads)],
              "library_candidates": {s: n for s, n in getattr(find_in_libraries, "candidates", {}).items() if n > 1},
              "kernels": [{"symbol": k.symbol, "entry": k.entry,
                           "module": k.module if not (k.module or {}).get("globals") else
                           dict(k.module, globals={n: b.hex() for n, b in k.module["globals"]})}
                          for k in kernels.values()]}
    return report
