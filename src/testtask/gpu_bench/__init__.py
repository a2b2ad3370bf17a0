"""GPU bench: the runners' real training and evaluation steps at the papers' model sizes (random weights of
the published architectures, conf/gpu_bench/paper.yaml), timed per step into `results/gpu-bench/<gpu>.json`,
which the training-on-the-test-task plan reads (`plan.measured`)."""
