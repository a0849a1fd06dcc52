# pgcc machine profile, measured by pgcc-calibrate on 2026-11-22
# NVIDIA H200, 132 SMs; driver 13.0, CUDA runtime 13.0
# medians of repeated runs; see compiler/cost.c for how each constant is used
name "NVIDIA H200 (pgcc-calibrate 2026-11-22)"
eager_launch_us      4.748   # GPU time per launch of a launch-bound chain of two alternating
                             # kernels, one taking a 256-byte struct (host: 4.744)
eager_copy_us        5.530   # 256-byte device copies, GPU time per copy of a chain
eager_host_us        2.676   # cudaLaunchHostFunc, GPU time per call of a chain
eager_gap_us         0.794   # GPU time per ~10 us kernel, eager minus in a graph
hostop_us            5.142   # a stream synchronization round trip, beyond the launch
graph_launch_us      2.519   # cudaGraphLaunch host time, fixed (fit over 10 and 1000 nodes)
graph_launch_node_us 0.0025  # cudaGraphLaunch host time, per node
graph_node_us        0.682   # GPU time per kernel node on replay
kernel_us            0.682   # an unmeasured kernel counts as a tiny one
copy_us              0.974   # GPU time per 256-byte copy node on replay
host_node_us         2.631   # GPU time per host node on replay
update_host_node_us  0.773   # cudaGraphExecKernelNodeSetParams, per node
update_device_us     5.640   # not measured by pgcc-calibrate: bench/run_codegen.sh on this H200,
                             # the updater's GPU time in a call (its host time: 2.5)
update_device_node_us 0.322  # not measured by pgcc-calibrate: bench/run_codegen.sh on this H200,
                             # GPU time a device-updatable node adds to every replay
instantiate_node_us  1.902   # cudaGraphInstantiate, per node of a 1000-node chain
upload_us            25.617   # cudaGraphUpload of a 10-node chain
coll_us              10.78    # not measured by pgcc-calibrate: bench/collectives_timing.py on two H200s of one
                             # host (NCCL 2.28.9, NVLink, NVLS off), a 4 KiB fp32 all-reduce in a graph
coll_gbps            274.3    # likewise: a 64 MiB all-reduce's moved bytes (2 (R-1)/R x 64 MiB) over
                             # its time beyond coll_us; the line misses 4 KiB-64 MiB by up to 28%
sms                  132     # streaming multiprocessors (optional: widen.c compares a kernel's grid with it)
