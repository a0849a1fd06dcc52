"""ModuleWatch.close detaches CUPTI: cuptiFinalize from the exit of a driver call (a
subscriber left attached made every graph launch in the process cost the host ~0.5 µs
per kernel node).  CUPTI and the driver are stand-ins here: no GPU needed."""
import ctypes as C

import pytest

from pgcc import module_watch


class FakeCupti:
    """The CUPTI calls ModuleWatch makes, recorded; the subscriber's callback kept."""

    def __init__(self):
        self.cb, self.enabled, self.finalized, self.unsubscribed = None, set(), 0, 0

    def cuptiSubscribe(self, sub, cb, user):
        self.cb = cb
        C.cast(sub, C.POINTER(C.c_void_p))[0] = 0x1234
        return 0

    def cuptiEnableCallback(self, on, sub, domain, cbid):
        self.enabled.add((domain, cbid))
        return 0

    def cuptiEnableDomain(self, on, sub, domain):
        return 0

    def cuptiFinalize(self):
        self.finalized += 1
        return 0

    def cuptiUnsubscribe(self, sub):
        self.unsubscribed += 1
        return 0


class FakeDriver:
    """cuCtxSynchronize that calls the subscriber back as CUPTI would, at its entry and
    exit, where that callback is enabled (or never, with calls_back=False)."""

    def __init__(self, cupti, calls_back=True):
        self.cupti, self.calls_back = cupti, calls_back

    def CtxSynchronize(self):
        for cbid in module_watch.CBID_CTX_SYNCHRONIZE:
            if self.calls_back and (module_watch.DOMAIN_DRIVER_API, cbid) in self.cupti.enabled:
                for site in (0, 1):  # CUPTI_API_ENTER, CUPTI_API_EXIT
                    data = module_watch.ModuleWatch._Api(site=site, functionName=b"cuCtxSynchronize")
                    self.cupti.cb(None, module_watch.DOMAIN_DRIVER_API, cbid, C.cast(C.pointer(data), C.c_void_p))
                return 0
        return 0


@pytest.fixture
def fake(monkeypatch):
    cupti = FakeCupti()
    monkeypatch.setattr(module_watch.ModuleWatch, "_candidates", staticmethod(lambda: iter(["libcupti-fake.so"])))
    monkeypatch.setattr(module_watch.C, "CDLL", lambda path: cupti)
    return cupti


def test_close_finalizes_at_the_exit_of_a_driver_call(fake, monkeypatch):
    monkeypatch.setattr(module_watch, "cu", lambda: FakeDriver(fake))
    w = module_watch.ModuleWatch()
    assert w.close() is True
    assert fake.finalized == 1  # once, at the exit site only
    assert fake.unsubscribed == 0  # (finalizing ends the subscription)
    assert w.close() is True and fake.finalized == 1  # closing again does nothing


def test_close_without_a_callback_still_unsubscribes(fake, monkeypatch):
    monkeypatch.setattr(module_watch, "cu", lambda: FakeDriver(fake, calls_back=False))
    w = module_watch.ModuleWatch()
    assert w.close() is False
    assert fake.finalized == 0 and fake.unsubscribed == 1


def test_callbacks_after_close_was_asked_do_not_record(fake, monkeypatch):
    """Once detaching, the watch ignores what it would otherwise keep."""
    monkeypatch.setattr(module_watch, "cu", lambda: FakeDriver(fake))
    w = module_watch.ModuleWatch()
    func, result = C.c_void_p(0xF00), C.c_int(0)
    params = (C.c_void_p * 2)(C.cast(C.pointer(func), C.c_void_p), 0xABC)  # (CUfunction *, CUmodule)

    def get_function():
        data = module_watch.ModuleWatch._Api(site=1, functionName=b"cuModuleGetFunction",
                                        params=C.cast(params, C.c_void_p), result=C.cast(C.pointer(result), C.c_void_p))
        fake.cb(None, module_watch.DOMAIN_DRIVER_API, module_watch.CBID_MODULE_GET_FUNCTION, C.cast(C.pointer(data), C.c_void_p))
    get_function()
    assert w.parent == {0xF00: 0xABC}  # (watching: the function's module is kept)
    w.parent.clear()
    w.close()
    get_function()
    assert w.parent == {}


def call(cupti, name, result=0):
    """A driver call as CUPTI reports it to the subscriber: its entry, then its exit."""
    res = C.c_int(result)
    for site in (0, 1):
        data = module_watch.ModuleWatch._Api(site=site, functionName=name.encode(),
                                        result=C.cast(C.pointer(res), C.c_void_p) if site else None)
        cupti.cb(None, module_watch.DOMAIN_DRIVER_API, 0, C.cast(C.pointer(data), C.c_void_p))


def test_node_clock_reads_the_clock_as_each_node_making_call_begins(fake):
    w = module_watch.ModuleWatch()
    w.paused = True  # (captures run paused: the clock still works)
    ticks = iter(range(100))
    with w.node_clock(lambda: next(ticks)) as seen:
        call(fake, "cuLaunchKernelEx")
        call(fake, "cuStreamGetCaptureInfo_v3")  # no node
        call(fake, "cuMemsetD8Async_ptsz")
        call(fake, "cuLaunchKernel", result=1)  # refused: no node
        call(fake, "cuMemcpyAsync")
    assert seen == [(0, "kernel"), (1, "memset"), (3, "memcpy")]
    call(fake, "cuLaunchKernel")  # after: not counted
    assert len(seen) == 3
    assert (module_watch.DOMAIN_DRIVER_API, module_watch.CBID_LIBRARY_LOAD) in fake.enabled


def test_node_made_by():
    made = {"cuLaunchKernel": "kernel", "cuLaunchKernel_ptsz": "kernel", "cuLaunchKernelEx": "kernel",
            "cuLaunchCooperativeKernel": "kernel", "cuLaunchHostFunc": "host", "cuMemsetD32Async": "memset",
            "cuMemsetD2D8Async_ptsz": "memset", "cuMemcpyAsync": "memcpy", "cuMemcpyDtoDAsync_v2": "memcpy",
            "cuMemcpy3DAsync_v2_ptsz": "memcpy"}
    not_made = ["cuMemsetD8", "cuMemcpyDtoD_v2", "cuStreamBeginCapture", "cuEventRecord", "cuModuleGetFunction",
                "cuGraphLaunch", "cuMemAlloc_v2", "cuMemAllocAsync", "cuMemFreeAsync"]
    assert {n: module_watch.node_made_by(n) for n in made} == made
    assert [module_watch.node_made_by(n) for n in not_made] == [None] * len(not_made)
