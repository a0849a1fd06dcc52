"""A library's .nv_fatbin section made of cubins, for the CPU double of the driver
(run.sh): each cubin wrapped in a fatbin of its own -- a 16-byte header (magic
0xBA55ED50, version 1, header size 16, size of its entries), one entry (kind 2: a
cubin; its SM version from the ELF; flags 0x11, uncompressed), the cubin padded to 8
bytes -- back to back, as nvcc lays them out.  Prints each fatbin's offset in the
section, the `entry` a .graph's library kernel gives.

    python3 tests/fakecuda/mklib.py SECTION CUBIN ...
"""
import struct
import sys


def sm_of(elf):
    """The SM version a CUDA ELF image is for (fakecuda.c's elf_arch)."""
    flags, = struct.unpack_from("<I", elf, 48)
    return (flags >> 8) & 0xFF if elf[8] >= 8 else flags & 0xFF


def fatbin(elf):
    elf += b"\0" * (-len(elf) % 8)
    entry = struct.pack("<HHIQQHHIQQQQ", 2, 0x0101, 64, len(elf), 0, 8, 1, sm_of(elf), 0, 0x11, 0, 0)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entry) + len(elf)) + entry + elf


def main():
    section, offsets = b"", []
    for path in sys.argv[2:]:
        with open(path, "rb") as f:
            offsets.append(len(section))
            section += fatbin(f.read())
    with open(sys.argv[1], "wb") as f:
        f.write(section)
    print(" ".join(map(str, offsets)))


if __name__ == "__main__":
    main()
