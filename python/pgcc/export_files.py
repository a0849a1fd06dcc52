"""Writing an export: what an analysis (model.Analysis) holds, as files beside each
other in the export's directory -- NAME.safetensors (the weights used, and static
blocks' bytes: weights.py), NAME.io.safetensors (the example inputs and capture A's
outputs), NAME.graph (graphfile.py) -- and, with diagnose, the node-by-node diagnosis
(diagnose.py) in the report.

    write_export(a, inputs, "out", "mlp", prog, diagnose=False)

Assumes PyTorch with CUDA, imported when a function is called (torch stays out of
the package's import: the CPU tests import this module without it).
"""
import os
import re
import subprocess

from .cuda import read_device
from .diagnose import diagnose as run_diagnosis
from .errors import ExportError
from .graphfile import node_buffers, write_graph
from .loader import load
from .replay import Replayer
from .toolchain import find_pgcc
from .weights import dtype_of, tensor_bytes, write_safetensors

__all__ = ["check_graph", "graph_of", "refusal", "write_export"]


def write_export(a, inputs, out_dir, name, prog, diagnose):
    """Writes what analyse() found (NAME.safetensors, NAME.io.safetensors, NAME.graph);
    with diagnose, runs the nodes one by one; returns the report."""
    import torch
    log = prog.log
    capA, bufs, nodes, edges, kernels = a.capA, a.bufs, a.nodes, a.edges, a.kernels
    report, write_report, outputs = a.report, a.write_report, a.outputs
    conditions = a.conditions

    # weights file: the model's weights that are used, and static blocks' bytes
    used = {id(b) for n in nodes for b in node_buffers(n)}
    tensors = []
    for b in bufs.list:
        if b.role != "weight" or id(b) not in used:
            continue
        if b.host:
            tensors.append((b.tensor, "u8", [b.size], b.host))
        elif b.static:
            tensors.append((b.tensor, "u8", [b.size], read_device(b.ranges[0], b.size)))
        else:
            tensors.append((b.tensor, b.dtype, b.shape, tensor_bytes(b.value)))
    write_safetensors(os.path.join(out_dir, name + ".safetensors"), tensors)
    io = [(f"in{i}", dtype_of(x), list(x.shape), tensor_bytes(x)) for i, x in enumerate(inputs)]
    io += [(f"out{i}", dtype_of(o), list(o.shape), tensor_bytes(o)) for i, o in enumerate(outputs)]
    write_safetensors(os.path.join(out_dir, name + ".io.safetensors"), io)
    graph_of(a, os.path.join(out_dir, name + ".graph"), name)
    if diagnose and conditions:
        log("  diagnosis: left out for a program with conditional nodes (the node-by-node runs follow one path)")
    elif diagnose:
        prog.status(f"{name}: diagnosis, node by node")
        program = None
        try:
            program = load(out_dir, name=name)
        except ExportError as e:
            log(f"  diagnosis: the export does not load ({e}); the passes with libpgrt's code are left out")
        replayer = Replayer(torch, capA, bufs)
        try:
            report["diagnosis"] = run_diagnosis(torch, capA, bufs, nodes, edges, replayer, log, program)
        finally:
            replayer.close()
            if program is not None:
                program.close()
        write_report()
    prog.done()
    log(f"pgcc-export: {name}: {len(nodes)} nodes, {len(capA.edges)} edges, {len(kernels)} kernels "
        f"({sum(1 for k in kernels.values() if k.module['kind'] == 'library')} from libraries), "
        f"{len(tensors)} weight tensors -> {out_dir}")
    return report


def graph_of(a, path, name):
    """Writes the .graph of analysis a as it stands to path (beside the export's other
    files: the modules and weights are named relative to it)."""
    import torch
    major, minor = torch.cuda.get_device_capability()
    used = {id(b) for n in a.nodes for b in node_buffers(n)}
    write_graph(path, name, a.kernels, a.bufs, used, a.nodes, a.edges, f"sm_{major}{minor}",
                origin=f"a torch {torch.__version__} capture", scalars=a.scalars,
                conditions=a.conditions, dims=a.dims, comms=a.comms,
                edge_kinds=getattr(a.capA, "edge_kinds", None))
    check_graph(path)


def refusal(path, stderr, limit=8):
    """pgcc's diagnostics of the .graph at path (its stderr) as an ExportError's message:
    each error's `NAME.graph:LINE: error: ...` and the start of the line it is on."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError:
        lines = []
    found = []
    for m in re.finditer(r"^(.*?):(\d+):(?:\d+:)? (error|fatal error): (.*)$", stderr, re.M):
        n = int(m.group(2))
        src = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        found.append(f"{os.path.basename(path)}:{n}: {m.group(3)}: {m.group(4)}"
                     + (f"\n      {src[:160]}{' ...' if len(src) > 160 else ''}" if src else ""))
    if not found:
        found = [line for line in stderr.strip().split("\n") if line][:limit] or ["(no message)"]
    more = f"\n    ... and {len(found) - limit} more" if len(found) > limit else ""
    return (f"the .graph written, {path}, is refused by pgcc (an exporter bug: please report it with the .graph):\n    "
            + "\n    ".join(found[:limit]) + more)


def check_graph(path, pgcc=None):
    """Runs pgcc's whole check on the .graph at path (`pgcc --stats`, which reads it, its
    modules and weights, and verifies it, emitting nothing); an ExportError naming the
    .graph's lines where pgcc refuses it -- so that no export, verified or not, leaves a
    .graph pgcc refuses."""
    r = subprocess.run([pgcc or find_pgcc(), "--stats", os.fspath(path)], capture_output=True, text=True)
    if r.returncode != 0:
        raise ExportError(refusal(os.fspath(path), r.stderr or r.stdout))
