"""tests/gpu/racecheck_widened.py's reading of compute-sanitizer's report: the kernels a
race is reported in (pure: text in, names out)."""
from tests.gpu.racecheck_widened import SUMMARY, hazard_kernels

REPORT = """========= COMPUTE-SANITIZER
========= Error: Race reported between Read access at cudnn_generated_sdpa_kernel0_0+0x2e0
=========     and Write access at cudnn_generated_sdpa_kernel0_0+0x4320 [16 hazards]
=========
========= Warning: Race reported between Write access at triton_poi_fused_0+0x10
=========     and Read access at triton_poi_fused_0+0x20 [2 hazards]
========= Error: Race reported between Read access at cudnn_generated_sdpa_kernel0_0+0x2e0
=========     and Write access at cudnn_generated_sdpa_kernel0_0+0x4320 [16 hazards]
CALLED llama: 2 calls
========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)
"""


def test_names_each_kernel_once_in_order():
    assert hazard_kernels(REPORT) == ["cudnn_generated_sdpa_kernel0_0", "triton_poi_fused_0"]
    assert hazard_kernels("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n") == []
    assert [m.group(0) for m in SUMMARY.finditer(REPORT)] == [
        "RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)"]
