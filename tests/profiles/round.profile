# Round numbers, so that break-even points in the tests are exact.
name "round numbers (tests)"
eager_launch_us      4
eager_copy_us        4
eager_host_us        5
eager_gap_us         0
hostop_us            10
graph_launch_us      2
graph_launch_node_us 0
graph_node_us        1
kernel_us            1
copy_us              1
host_node_us         5
update_host_node_us  0.5
update_device_us     3
update_device_node_us 0.25
instantiate_node_us  5
upload_us            10
