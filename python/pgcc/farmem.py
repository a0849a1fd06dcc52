"""Memory far away: allocations whose addresses differ from the rest of the process's
in their high 32 bits, not only in their low ones.

The export needs a capture whose buffers lie there (to tell an address cut to its low
or high half from a constant), and verification runs the program there once (a
relocation that missed a high half then gives wrong results).  The caching
allocator's expandable segments give it: each pool reserves a virtual address range
of its own, as large as the GPU's memory, past every other.  far(torch) switches that
setting on, routes the block's allocations to a pool of their own (with pool=False,
not: a graph captured inside makes a private pool of its own, far as well), and
switches the setting back off; the pool lives as long as the returned holder.
Where PyTorch has no such setting, allocations happen as usual and the caller's
check of the address bits says so.
"""
import contextlib

__all__ = ["Far", "far"]


class Far:
    """What far() yields: .pool (None where PyTorch has no setting), kept alive by it."""

    def __init__(self, pool):
        self.pool = pool


@contextlib.contextmanager
def far(torch, pool=True):
    setter = getattr(torch._C, "_accelerator_setAllocatorSettings", None) or getattr(
        torch.cuda.memory, "_set_allocator_settings", None)
    if setter is None or not hasattr(torch.cuda, "MemPool"):
        yield Far(None)
        return
    torch.cuda.synchronize()
    setter("expandable_segments:True")
    try:
        holder = Far(torch.cuda.MemPool() if pool else None)
        with torch.cuda.use_mem_pool(holder.pool) if pool else contextlib.nullcontext():
            yield holder
    finally:
        torch.cuda.synchronize()
        setter("expandable_segments:False")
