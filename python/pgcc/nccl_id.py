"""The NCCL id a loaded program that runs collectives (collectives.py) takes at init:
rank 0 makes it with libpgrt (pgrt_nccl_unique_id) and torch.distributed's broadcast
gives it to the other ranks, one process each.  The run side (loader.py) calls it;
torch is the program's (prog.torch).
"""
import ctypes as C

from .errors import ExportError

__all__ = ["nccl_id"]


def nccl_id(prog):
    """(the NCCL id for a loaded program's NAME_init, as a ctypes address): rank 0 makes it
    with libpgrt and torch.distributed gives it to the others; sets prog.rank, this
    process's rank."""
    dist = prog.torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        raise ExportError(f"{prog.name}: the program runs NCCL collectives on comm {prog.comms[0][0]} of "
                          f"{prog.comms[0][1]} ranks: initialise torch.distributed first (one process per rank)")
    if dist.get_world_size() != prog.comms[0][1]:
        raise ExportError(f"{prog.name}: exported for {prog.comms[0][1]} ranks, running on {dist.get_world_size()}")
    prog.rank = dist.get_rank()
    idbuf = C.create_string_buffer(128)
    if prog.rank == 0 and prog.lib.pgrt_nccl_unique_id(idbuf) != 0:
        raise ExportError(f"pgrt_nccl_unique_id: {prog.err()}")
    box = [bytes(idbuf.raw)]
    dist.broadcast_object_list(box, src=0)
    prog._id = C.create_string_buffer(box[0], 128)  # (alive as long as the program)
    return (C.addressof(prog._id),)
