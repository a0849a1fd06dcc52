# pgcc machine profile, measured by pgcc-calibrate on 2026-11-22
# NVIDIA H100 80GB HBM3, 132 SMs; driver 13.0, CUDA runtime 13.0
# medians of repeated runs; see compiler/cost.c for how each constant is used
name "NVIDIA H100 80GB HBM3 (pgcc-calibrate 2026-11-22)"
eager_launch_us      2.905   # GPU time per launch of a launch-bound chain of two alternating
                             # kernels, one taking a 256-byte struct (host: 2.901)
eager_copy_us        3.753   # 256-byte device copies, GPU time per copy of a chain
eager_host_us        2.092   # cudaLaunchHostFunc, GPU time per call of a chain
eager_gap_us         1.185   # GPU time per ~10 us kernel, eager minus in a graph
hostop_us            5.882   # a stream synchronization round trip, beyond the launch
graph_launch_us      1.142   # cudaGraphLaunch host time, fixed (fit over 10 and 1000 nodes)
graph_launch_node_us 0.0012  # cudaGraphLaunch host time, per node
graph_node_us        0.960   # GPU time per kernel node on replay
kernel_us            0.960   # an unmeasured kernel counts as a tiny one
copy_us              1.092   # GPU time per 256-byte copy node on replay
host_node_us         2.390   # GPU time per host node on replay
update_host_node_us  0.657   # cudaGraphExecKernelNodeSetParams, per node
update_device_us     6.900   # not measured here: bench/run_codegen.sh on an H100 (the updater
                             # call's GPU time; its host time is 4.6)
update_device_node_us 0.314  # not measured here: bench/run_codegen.sh on an H100, GPU time a
                             # device-updatable node adds to every replay
instantiate_node_us  1.002   # cudaGraphInstantiate, per node of a 1000-node chain
upload_us            13.893   # cudaGraphUpload of a 10-node chain
sms                  132     # streaming multiprocessors (optional: widen.c compares a kernel's grid with it)
