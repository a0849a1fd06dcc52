"""module_watch's reading of a kernel launch's host words, over a launch's parameters
laid out as CUPTI passes them (no GPU: the parameter layout given, not asked of the
driver)."""
import ctypes as C
import struct

from pgcc.module_watch import HOST_WINDOW, HostMaps, host_words_in, launch_host_words


def test_host_maps_find_the_mapping_holding_an_address():
    m = HostMaps([(0x1000, 0x2000, "a"), (0x5000, 0x5100, "b")])
    assert m.end_of(0x1000) == 0x2000 and m.end_of(0x1fff) == 0x2000 and m.end_of(0x50ff) == 0x5100
    assert m.end_of(0x2000) is None and m.end_of(0xfff) is None and m.end_of(0x6000) is None


def test_host_words_in_aligned_words_only():
    m = HostMaps([(0x1000, 0x1080, "a")])
    blob = struct.pack("<QQQ", 7, 0x1040, 0x1000) + b"\x00" * 4 + struct.pack("<Q", 0x1010)[:4]
    assert host_words_in(blob, m) == [(8, 0x1040, 0x40), (16, 0x1000, min(HOST_WINDOW, 0x80))]


def test_launch_host_words_reads_the_bytes_behind_a_launchs_words():
    alpha = C.create_string_buffer(struct.pack("<ff", 1.0, 0.0) + bytes(24))
    addr = C.addressof(alpha)
    maps = HostMaps([(addr, addr + 32, "stack")])
    a0 = C.c_uint64(5)  # a parameter that is no host address
    a1 = C.create_string_buffer(struct.pack("<QQ", 9, addr))  # a 16-byte struct holding one
    argv = (C.c_void_p * 2)(C.addressof(a0), C.addressof(a1))
    f = 0x1234
    layouts = {f: [(0, 8), (8, 16)]}
    params = C.create_string_buffer(64)  # cuLaunchKernel_params: f at 0, kernelParams at 48
    struct.pack_into("<Q", params, 0, f)
    struct.pack_into("<Q", params, 48, C.addressof(argv))
    assert launch_host_words("cuLaunchKernel", C.addressof(params), maps, layouts) == [(addr, alpha.raw[:32])]
    ex = C.create_string_buffer(32)  # cuLaunchKernelEx_params: config, f at 8, kernelParams at 16
    struct.pack_into("<QQ", ex, 8, f, C.addressof(argv))
    assert launch_host_words("cuLaunchKernelEx", C.addressof(ex), maps, layouts) == [(addr, alpha.raw[:32])]
    assert launch_host_words("cuMemsetD8Async", C.addressof(params), maps, layouts) == []
