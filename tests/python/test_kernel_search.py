"""kernel_search.find_in_libraries over stand-in libraries (no driver): each library's
fatbins and what each holds are given, and opening one is counted.  A second search
for kernels found or ruled out before -- in the same process, or in a later one through
the cache on disk (search_cache.py) -- does not open a library again; a new kernel is
searched for where it has not been; a library file that changed is searched anew; the
answers are those of a search from scratch."""
import ctypes as C
import json
import os

import pytest

from pgcc import kernel_search as ks
from pgcc import search_cache

# library (a file under the test's folder) -> its fatbins' offsets -> {symbol: attrs} each holds
HOLDS = {"liba.so": {0: {"ka": [1, 2]}, 64: {"kb": [3, 4], "kx": [9, 9]}},
         "libb.so": {0: {"kc": [5, 6], "ka": [7, 7]}}}


def fresh_process():
    search_cache._FACTS.clear()


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    libs = {}
    for name, held in HOLDS.items():
        (tmp_path / name).write_bytes(name.encode())
        libs[str(tmp_path / name)] = held
    monkeypatch.setenv("PGCC_CACHE", str(tmp_path / "cache"))
    fresh_process()
    opened = []
    monkeypatch.setattr(ks, "loaded_libraries", lambda: list(libs))
    monkeypatch.setattr(ks, "driver_version", lambda: 13000)
    sections = {}

    def read_section(path):
        opened.append(path)
        sections[path] = bytes(128) + path.encode()  # (one object per library: its address is the base)
        return sections[path]
    monkeypatch.setattr(ks, "read_section", read_section)
    monkeypatch.setattr(ks, "fatbins", lambda sec, sm: [(at, True) for at in libs[opened[-1]]])

    def matching(ptr, wanted, skip=()):  # (which library: the one read last, as the search reads one at a time)
        held = libs[opened[-1]][ptr.value - C.cast(C.c_char_p(sections[opened[-1]]), C.c_void_p).value]
        return [s for s, a in wanted.items() if s not in skip and held.get(s) == a]
    monkeypatch.setattr(ks, "matching_kernels", matching)
    yield opened, list(libs)
    fresh_process()


def search(wanted):
    return ks.find_in_libraries(wanted, lambda *_: None, sm=90)


def test_a_second_search_opens_only_what_it_has_not_searched(stand_in):
    opened, (a, b) = stand_in
    first = search({"ka": [1, 2], "kc": [5, 6], "kz": [0, 0]})
    assert first == {"ka": (a, 0), "kc": (b, 0)} and opened == [a, b]
    opened.clear()
    assert search({"ka": [1, 2], "kc": [5, 6], "kz": [0, 0]}) == first and opened == []  # (kz ruled out in both)
    assert search({"ka": [1, 2], "kb": [3, 4], "ka2": [7, 7]}) == {"ka": (a, 0), "kb": (a, 64)}
    assert opened == [a, b]  # (kb and ka2 new: both searched for)
    opened.clear()
    # other attributes are another kernel: searched for, found in the second library
    assert search({"ka": [7, 7]}) == {"ka": (b, 0)} and opened == [a, b]


def test_a_later_process_reads_the_cache_and_a_changed_library_is_searched_again(stand_in):
    opened, (a, b) = stand_in
    first = search({"ka": [1, 2], "kc": [5, 6], "kz": [0, 0]})
    fresh_process()
    opened.clear()
    assert search({"ka": [1, 2], "kc": [5, 6], "kz": [0, 0]}) == first and opened == []
    with open(b, "ab") as f:  # the library file changes (size and time): its facts no longer hold
        f.write(b" rebuilt")
    os.utime(b, ns=(1, 1))
    fresh_process()
    assert search({"ka": [1, 2], "kc": [5, 6], "kz": [0, 0]}) == first and opened == [b]


def test_an_unreadable_cache_is_no_error(stand_in, tmp_path):
    opened, (a, b) = stand_in
    search({"ka": [1, 2]})
    for f in (tmp_path / "cache" / "search").iterdir():
        f.write_text("{not json")
    fresh_process()
    opened.clear()
    assert search({"ka": [1, 2]}) == {"ka": (a, 0)} and opened == [a]


def test_remembered_answers_are_a_fresh_search_answers(stand_in, monkeypatch, tmp_path):
    wanted = [{"ka": [1, 2]}, {"kb": [3, 4], "kc": [5, 6]}, {"ka": [1, 2], "kb": [3, 4], "kc": [5, 6], "kx": [9, 9]}]
    remembered = [search(w) for w in wanted]
    fresh = []
    for k, w in enumerate(wanted):
        monkeypatch.setenv("PGCC_CACHE", str(tmp_path / f"empty{k}"))
        fresh_process()
        fresh.append(search(w))
    assert remembered == fresh


def test_a_damaged_cache_file_is_searched_anew(stand_in, tmp_path):
    """Files that parse as JSON but are not what save() writes -- a frame index of the wrong
    shape, an offset that is no number -- are not followed: the library is searched again."""
    opened, (a, b) = stand_in
    search({"ka": [1, 2]})
    (f,) = (tmp_path / "cache" / "search").iterdir()
    good = json.loads(f.read_text())
    assert search_cache.well_formed(good)
    bad = [dict(good, fatbins={k: "0" for k in good["fatbins"]}), dict(good, frames={"frames": [[".ldata", 1]]}),
           dict(good, frames={"frames": [[".ldata", -1, 5, None]]}), [good]]
    for data in bad:
        assert not search_cache.well_formed(data)
        f.write_text(json.dumps(data))
        fresh_process()
        opened.clear()
        assert search({"ka": [1, 2]}) == {"ka": (a, 0)} and opened == [a]
