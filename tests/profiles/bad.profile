# a profile with mistakes in it (test_partition.c checks the diagnostics)
eager_launch_us 4
warp_us 3
graph_node_us   fast
