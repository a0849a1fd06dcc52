"""kernel_search.find_in_libraries over stand-in libraries (no driver): each library's
fatbins and what each holds are given, and loading one is counted.  A second search
for kernels found or ruled out before does not open a library again; a new kernel is
searched for where it has not been; the answers are those of a search from scratch."""
import ctypes as C

import pytest

from pgcc import kernel_search as ks

# library -> its fatbins' offsets -> {symbol: attrs} each holds
LIBS = {"/lib/liba.so": {0: {"ka": [1, 2]}, 64: {"kb": [3, 4], "kx": [9, 9]}},
        "/lib/libb.so": {0: {"kc": [5, 6], "ka": [7, 7]}}}


@pytest.fixture
def stand_in(monkeypatch):
    opened, loads = [], []
    monkeypatch.setattr(ks, "SEARCHED", {})
    monkeypatch.setattr(ks, "loaded_libraries", lambda: list(LIBS))
    sections = {}

    def read_section(path):
        opened.append(path)
        sections[path] = bytes(128) + path.encode()  # (one object per library: its address is the base)
        return sections[path]
    monkeypatch.setattr(ks, "read_section", read_section)
    monkeypatch.setattr(ks, "fatbins", lambda sec, sm: [(at, True) for at in LIBS[opened[-1]]])

    def matching(ptr, wanted, skip=()):  # (which library: the one read last, as the search reads one at a time)
        held = LIBS[opened[-1]][ptr.value - C.cast(C.c_char_p(sections[opened[-1]]), C.c_void_p).value]
        loads.append(opened[-1])
        return [s for s, a in wanted.items() if s not in skip and held.get(s) == a]
    monkeypatch.setattr(ks, "matching_kernels", matching)
    return opened, loads


def test_a_second_search_opens_only_what_it_has_not_searched(stand_in):
    opened, _ = stand_in
    first = ks.find_in_libraries({"ka": [1, 2], "kc": [5, 6], "kz": [0, 0]}, lambda *_: None, sm=90)
    assert first == {"ka": ("/lib/liba.so", 0), "kc": ("/lib/libb.so", 0)}
    assert opened == ["/lib/liba.so", "/lib/libb.so"]
    opened.clear()
    again = ks.find_in_libraries({"ka": [1, 2], "kc": [5, 6], "kz": [0, 0]}, lambda *_: None, sm=90)
    assert again == first and opened == []  # (kz: ruled out in both, not searched again)
    more = ks.find_in_libraries({"ka": [1, 2], "kb": [3, 4], "ka2": [7, 7]}, lambda *_: None, sm=90)
    assert more == {"ka": ("/lib/liba.so", 0), "kb": ("/lib/liba.so", 64)}
    assert opened == ["/lib/liba.so", "/lib/libb.so"]  # (kb and ka2 new: both searched for)
    opened.clear()
    # other attributes are another kernel: searched for, found in the second library
    assert ks.find_in_libraries({"ka": [7, 7]}, lambda *_: None, sm=90) == {"ka": ("/lib/libb.so", 0)}
    assert opened == ["/lib/liba.so", "/lib/libb.so"]


def test_memo_gives_what_a_fresh_search_gives(stand_in, monkeypatch):
    wanted = [{"ka": [1, 2]}, {"kb": [3, 4], "kc": [5, 6]}, {"ka": [1, 2], "kb": [3, 4], "kc": [5, 6], "kx": [9, 9]}]
    remembered = [ks.find_in_libraries(w, lambda *_: None, sm=90) for w in wanted]
    fresh = []
    for w in wanted:
        monkeypatch.setattr(ks, "SEARCHED", {})
        fresh.append(ks.find_in_libraries(w, lambda *_: None, sm=90))
    assert remembered == fresh
