"""What a functional all-reduce under torch.compile becomes in a CUDA graph capture:
for the exporter of tensor-parallel programs (issue 20), which must find each
collective among the captured nodes and say it as a `libcall` node.

Two processes (one per GPU, NCCL backend, NCCL_NVLS_ENABLE=0) compile a row-parallel
linear layer followed by `torch.distributed._functional_collectives.all_reduce`,
capture it with pgcc's Capture (torch.cuda.graph, the driver's node-by-node walk) and
rank 0 prints every node: its kind, a kernel's name, grid, parameter layout and how
which of its 8-byte parameter words hold addresses in the capture's private pool
(where the all-reduced tensor lives).

    PYTHONPATH=python:. python3 tests/gpu/probe_collectives.py       (needs 2 GPUs)

What it printed on 2 H200s (torch 2.11.0+cu130, NCCL 2.28.9): the compiled all-reduce
is one kernel node, ncclDevKernel_AllReduce_Sum_f32_RING_LL, whose 4096-byte
parameter (ncclDevKernelArgsStorage<4096>) holds no address in the capture's pool --
the send and receive buffers are in NCCL's own work memory, so the exporter cannot find
them in the node and must learn them from the call (the op and its tensors) -- between
an event wait and an event record node (NCCL's stream joins), its dependencies from
the GEMM before it to the kernel after it.
"""
import os
import sys


def rank_main(rank, world, port):
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc
    from pgcc.capture import Capture
    from pgcc.cuda import NODE_NAMES

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    torch.manual_seed(rank)
    w = torch.randn(256, 128, device="cuda")

    def step(x):
        y = x @ w.t()
        return fc.all_reduce(y, "sum", dist.group.WORLD) * 2

    compiled = torch.compile(step)
    x = torch.randn(8, 128, device="cuda")
    for _ in range(3):
        out = compiled(x)
    torch.cuda.synchronize()
    ref = [torch.empty_like(out) for _ in range(world)]
    cap = Capture(torch, compiled, [x])
    cap.graph.replay()
    torch.cuda.synchronize()
    got = cap.outputs[0].clone()
    dist.all_gather(ref, got)
    if rank == 0:
        print(f"torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, {torch.cuda.get_device_name()} x {world}")
        print(f"the capture's output equals the compiled call's: {torch.equal(got, out)}")
        regions = cap.regions() or []
        for i, n in enumerate(cap.nodes):
            kind = NODE_NAMES.get(n["type"], str(n["type"]))
            line = f"node {i}: {kind}"
            if "name" in n:
                words = [int.from_bytes(n["bytes"][o:o + 8], "little") for o in range(0, len(n["bytes"]) - 7, 8)]
                inside = [o * 8 for o, v in enumerate(words) if any(a <= v < a + z for a, z in regions)]
                line += (f" {n['name'][:90]} grid {n.get('grid')} block {n.get('block')} params "
                         f"{n.get('layout')} ({len(n['bytes'])} bytes; words at {inside[:12]} point into the "
                         "capture's pool)")
            print(line)
        print(f"edges: {cap.edges}")
    # The first run (2 H200s, 2026-11-23) printed everything and then hung here, in the
    # barrier or the process group's teardown, with the captured graph (which holds
    # NCCL's work) alive: each rank now leaves at once after the GPU is done (the next
    # run ended in 21 s, the same nodes printed).
    torch.cuda.synchronize()
    sys.stdout.flush()
    os._exit(0)


def main():
    import torch.multiprocessing as mp
    mp.spawn(rank_main, args=(2, 29512), nprocs=2, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
