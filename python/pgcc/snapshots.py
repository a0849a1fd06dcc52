"""Copies of device memory for the replays' proofs (replay.py), kept on the device: the
state a replay starts from, written back before each replay, and what a replay leaves
in the outputs and weights, compared bit for bit with another replay's on the GPU.  A
training step's state is hundreds of MB, which each replay copied to host memory and
back (tens of ms a replay, a hundred replays and more in an export).  Where the GPU has
no room for a copy (beyond HEADROOM), it is kept in host memory, as bytes.

    saved = Snapshot.take(torch, [(address, size), ...])
    saved.restore()                  # the bytes written back where they were
    got == reference, got[:k]        # compared on the device (torch.equal)
    next(k for k, (g, r) in enumerate(zip(got, reference)) if g != r)   # which range

Assumes PyTorch with CUDA (passed in as `torch`: importing this module needs none).
"""
from .cuda import check, cu, read_device, write_device

__all__ = ["HEADROOM", "Snapshot"]

HEADROOM = 1 << 30  # device bytes left free beyond a copy kept on the device


class Snapshot:
    """The bytes of address ranges as they were when taken: on the device in one buffer
    (buf, a uint8 tensor; spans: (address, offset in buf, size) per range), or in host
    memory (host: bytes per range).  Compared by value, range by range as a sequence."""

    def __init__(self, torch, spans, buf=None, host=None):
        self.torch, self.spans, self.buf, self.host = torch, spans, buf, host

    @classmethod
    def take(cls, torch, ranges, on_device=True):
        """The ranges' bytes now, after the device's work so far."""
        ranges = list(ranges)
        total = sum(n for _, n in ranges)
        torch.cuda.synchronize()
        if on_device and torch.cuda.mem_get_info()[0] > total + HEADROOM:
            buf = torch.empty(max(total, 1), dtype=torch.uint8, device="cuda")[:total]
            spans, off = [], 0
            for a, n in ranges:
                if n:
                    check(cu().MemcpyDtoD(buf.data_ptr() + off, a, n), "cuMemcpyDtoD")
                spans.append((a, off, n))
                off += n
            torch.cuda.synchronize()
            return cls(torch, spans, buf=buf)
        return cls(torch, [(a, 0, n) for a, n in ranges], host=[read_device(a, n) for a, n in ranges])

    def restore(self):
        """Writes each range's bytes back to its address; returns after the writes."""
        for k, (a, off, n) in enumerate(self.spans):
            if not n:
                continue
            if self.buf is not None:
                check(cu().MemcpyDtoD(a, self.buf.data_ptr() + off, n), "cuMemcpyDtoD")
            else:
                write_device(a, self.host[k])
        self.torch.cuda.synchronize()

    def sizes(self):
        return [n for _, _, n in self.spans]

    def __len__(self):
        return len(self.spans)

    def __getitem__(self, k):
        if not isinstance(k, slice):
            k = range(len(self.spans))[k]  # (an IndexError past the end, as a list's)
            k = slice(k, k + 1)
        if k.step not in (None, 1):
            raise ValueError("a Snapshot is sliced with step 1")
        spans = self.spans[k]
        if self.buf is None:
            return Snapshot(self.torch, spans, host=self.host[k])
        lo = spans[0][1] if spans else 0
        hi = spans[-1][1] + spans[-1][2] if spans else 0
        return Snapshot(self.torch, [(a, off - lo, n) for a, off, n in spans], buf=self.buf[lo:hi])

    def __iter__(self):
        return (self[k] for k in range(len(self.spans)))

    def bytes(self):
        """Each range's bytes (copied to the host where they are on the device)."""
        if self.buf is None:
            return list(self.host)
        data = self.buf.cpu().numpy().tobytes()
        return [data[off:off + n] for _, off, n in self.spans]

    def __eq__(self, other):
        if not isinstance(other, Snapshot) or self.sizes() != other.sizes():
            return NotImplemented if not isinstance(other, Snapshot) else False
        if self.buf is not None and other.buf is not None:
            return bool(self.torch.equal(self.buf, other.buf))
        return self.bytes() == other.bytes()

    def __ne__(self, other):
        same = self.__eq__(other)
        return same if same is NotImplemented else not same

    __hash__ = None
