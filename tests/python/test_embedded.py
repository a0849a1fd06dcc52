"""pgcc.embedded: cubins kept as zstd frames in a library's data sections, found by
architecture and kernel name (pure: synthetic ELF files, compressed with libzstd)."""
import ctypes as C
import random
import struct

from pgcc.embedded import Zstd, cubin_sm, data_sections, embedded_cubins


def compress(data):
    z = Zstd()
    assert z.lib is not None, "libzstd1 is missing (scripts/install-deps.sh installs it)"
    z.lib.ZSTD_compressBound.restype = C.c_size_t
    z.lib.ZSTD_compressBound.argtypes = [C.c_size_t]
    z.lib.ZSTD_compress.restype = C.c_size_t
    z.lib.ZSTD_compress.argtypes = [C.c_void_p, C.c_size_t, C.c_char_p, C.c_size_t, C.c_int]
    cap = z.lib.ZSTD_compressBound(len(data))
    out = C.create_string_buffer(cap)
    n = z.lib.ZSTD_compress(out, cap, data, len(data), 3)
    assert not z.lib.ZSTD_isError(n)
    return out.raw[:n]


def cubin(sm, names, new_abi=False):
    """A CUDA ELF header (e_flags holding sm as the ABI version says) followed by names."""
    head = bytearray(64)
    head[:4] = b"\x7fELF"
    head[4] = 2
    head[8] = 8 if new_abi else 7
    struct.pack_into("<I", head, 48, (sm << 8 | 2) if new_abi else (sm | 0x500 << 8))
    return bytes(head) + b"\0".join(n.encode() for n in names) + b"\0" * 100


def elf(sections):
    """An ELF64 file with sections [(name, type, flags, bytes)], a string table last."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _, _, _ in sections) + b".shstrtab\0"
    body, offs = bytearray(64), []
    for _, _, _, data in sections:
        offs.append(len(body))
        body += data
    stroff = len(body)
    body += names
    while len(body) % 8:
        body += b"\0"
    shoff = len(body)
    sh = bytearray(64)  # the null section
    pos = 1
    for (n, kind, flags, data), off in zip(sections, offs):
        sh += struct.pack("<IIQQQQIIQQ", pos, kind, flags, 0, off, len(data), 0, 0, 8, 0)
        pos += len(n) + 1
    sh += struct.pack("<IIQQQQIIQQ", pos, 3, 0, 0, stroff, len(names), 0, 0, 1, 0)
    body[:4] = b"\x7fELF"
    body[4] = 2
    struct.pack_into("<Q", body, 0x28, shoff)
    struct.pack_into("<HHH", body, 0x3A, 64, len(sections) + 2, len(sections) + 1)
    return bytes(body + sh)


def test_cubin_sm_reads_both_encodings():
    assert cubin_sm(cubin(90, [])) == 90
    assert cubin_sm(cubin(90, [], new_abi=True)) == 90
    assert cubin_sm(cubin(120, [], new_abi=True)) == 120
    assert cubin_sm(b"not an elf" * 10) is None


def test_finds_the_frame_for_this_gpu_holding_the_name(tmp_path):
    want = "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_tn_align1EEvNT_6ParamsE"
    frames = [compress(cubin(80, [want])),                 # another architecture
              compress(cubin(90, ["other_kernel"])),        # another kernel
              compress(cubin(90, [want, "more"], True))]    # the one
    junk = b"\x28\xb5\x2f\xfd" + b"\x01" * 13                # a magic that starts no frame
    ldata = junk + b"".join(f + b"\0" * 3 for f in frames)
    path = tmp_path / "liblt.so"
    path.write_bytes(elf([(".text", 1, 0x6, compress(cubin(90, [want]))),  # code: never searched
                          (".nv_fatbin", 1, 0x2, compress(cubin(90, [want]))),  # the driver's: skipped
                          (".ldata", 1, 0x3, ldata)]))
    assert [n for n, _, _ in data_sections(path.read_bytes())] == [".nv_fatbin", ".ldata"]
    got = list(embedded_cubins(str(path), 90, [want]))
    assert len(got) == 1
    section, offset, image = got[0]
    assert section == ".ldata" and image == cubin(90, [want, "more"], True)
    assert path.read_bytes()[offset:offset + 4] == b"\x28\xb5\x2f\xfd"
    assert list(embedded_cubins(str(path), 100, [want])) == []
    assert list(embedded_cubins(str(path), 90, ["absent"])) == []


def test_not_an_elf_and_empty_files(tmp_path):
    (tmp_path / "a").write_bytes(b"")
    (tmp_path / "b").write_bytes(b"hello" * 100)
    assert list(embedded_cubins(str(tmp_path / "a"), 90, ["k"])) == []
    assert list(embedded_cubins(str(tmp_path / "b"), 90, ["k"])) == []


def test_an_index_from_a_whole_search_reads_only_the_frames_naming_a_wanted_kernel(tmp_path):
    want = "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_tn_align1EEvNT_6ParamsE"
    with_strtab = elf([(".strtab", 3, 0, b"\0.text.x\0" + want.encode() + b"\0other\0")])
    with_strtab = with_strtab[:18] + struct.pack("<H", 190) + with_strtab[20:]  # (EM_CUDA: a cubin)
    struct.pack_into("<I", (b := bytearray(with_strtab)), 48, 90 | 0x500 << 8)
    b[5] = 1  # (little-endian, as fatbin.elf_sections reads only such)
    with_strtab = bytes(b)
    assert cubin_sm(with_strtab) == 90
    frames = [compress(cubin(80, [want])), compress(with_strtab), compress(cubin(90, ["other_kernel"])),
              compress(cubin(90, [want]))]  # (the last has no symbol table: always read)
    path = tmp_path / "liblt.so"
    path.write_bytes(elf([(".ldata", 1, 0x3, b"".join(f + b"\0" * 5 for f in frames))]))
    index = {}
    whole = list(embedded_cubins(str(path), 90, [want], index=index))
    assert [img for _, _, img in whole] == [with_strtab, cubin(90, [want])]
    assert [(held) for _, _, _, held in index["frames"]] == [[want, "other"], None, None]
    read = []

    class Counting(Zstd):
        def frame(self, data, at):
            read.append(len(data))
            return super().frame(data, at)
    again = list(embedded_cubins(str(path), 90, [want], zstd=Counting(), index=index))
    assert again == whole and len(read) == 3  # (the two without a table, and the one naming it)
    read.clear()
    assert list(embedded_cubins(str(path), 90, ["nothing_here"], zstd=Counting(), index=index)) == []
    assert len(read) == 2  # (only the frames without a symbol table)


def test_a_frames_head_and_length_without_decompressing_it_whole():
    z = Zstd()
    big = cubin(90, ["k"]) + bytes(random.Random(1).getrandbits(8) for _ in range(300_000))
    frame = compress(big)
    assert z.length(frame + b"tail", 0) == len(frame)
    assert z.length(b"xx" + frame, 2) == len(frame)
    assert z.length(b"\x28\xb5\x2f\xfd" + b"\x01" * 13, 0) is None  # (a magic that starts no frame)
    assert z.head(frame) == big[:64] and cubin_sm(z.head(frame)) == 90
    assert z.head(compress(b"short")) == b"short"
    assert z.head(b"not a frame at all") is None


def test_only_frames_for_this_gpu_are_decompressed_whole_and_the_threads_agree_with_one_by_one(tmp_path):
    rng = random.Random(7)
    want = ["_Z4wantv", "_Z5want2v"]
    images = []
    for i in range(40):  # frames for three architectures, some naming a wanted kernel, some junk between
        sm = rng.choice((80, 90, 100))
        names = [rng.choice(want)] if rng.random() < 0.3 else [f"_Z5other{i}v"]
        images.append(cubin(sm, names, new_abi=rng.random() < 0.5))
    ldata = b"".join(compress(im) + (b"\x28\xb5\x2f\xfd" + b"\x02" * 9 if i % 7 == 0 else b"\0" * 3)
                     for i, im in enumerate(images))
    path = tmp_path / "liblt.so"
    path.write_bytes(elf([(".ldata", 1, 0x3, ldata)]))
    whole = []

    class Counting(Zstd):
        def frame(self, data, at):
            got = super().frame(data, at)
            if got is not None:
                whole.append(cubin_sm(got[0]))
            return got

    class OneByOne(Zstd):
        peeks = False  # (the path the zstandard package takes: every frame decompressed in turn)
    index_a, index_b = {}, {}
    threaded = list(embedded_cubins(str(path), 90, want, zstd=Counting(), index=index_a))
    sequential = list(embedded_cubins(str(path), 90, want, zstd=OneByOne(), index=index_b))
    expect = [im for im in images if cubin_sm(im) == 90 and any(w.encode() in im for w in want)]
    assert [im for _, _, im in threaded] == expect and expect
    assert threaded == sequential and index_a == index_b
    assert len(index_a["frames"]) == sum(cubin_sm(im) == 90 for im in images)
    assert whole and set(whole) == {90}  # (the other architectures' frames: their heads only)
