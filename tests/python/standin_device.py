"""A stand-in for the GPU that access_probe.Device and alone.Alone launch nodes on:
device memory as a bytearray from BASE on, and kernels as Python functions of it."""

BASE = 0x7F00_0000_0000


class Memory:
    """Device memory from BASE on; kernels: {node index: f(memory, parameter bytes or None)};
    launched: the node indices launched, blobs: the parameter bytes each was given."""

    def __init__(self, size=1 << 16):
        self.mem = bytearray(size)
        self.kernels, self.launched, self.blobs = {}, [], []

    def read(self, a, n):
        return bytes(self.mem[a - BASE:a - BASE + n])

    def write(self, a, data):
        self.mem[a - BASE:a - BASE + len(data)] = data

    def fill(self, a, byte, n):
        self.write(a, bytes([byte]) * n)

    def launch(self, i, what, blob=None):
        self.launched.append(i)
        self.blobs.append(blob)
        self.kernels[i](self, blob)
