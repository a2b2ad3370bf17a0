"""GPU bench: the runners' real training and evaluation steps at the papers' model sizes, timed per step.

`python -m testtask.gpu_bench` (`make gpu-bench`) builds random models from the architectures' published
configurations (conf/gpu_bench/paper.yaml; nothing is downloaded), runs each step kind of `steps.STEPS` through the
runners' own code for warm-up + measured steps and writes, per step kind, tokens per second, peak GPU memory,
achieved TFLOP/s and model-FLOP utilisation to `results/gpu-bench/<gpu-name-slug>.json`; `--cpu preset=tiny` runs
the same steps on tiny versions of the architectures on the CPU (the tests). The training-on-the-test-task plan
reads the file (`plan.measured`). It reuses the preflight's runner (failure isolation, CUDA peak memory) and
record (device, versions, commit).

Modules: `settings` (the schema), `timing` (step timer, FLOP arithmetic), `steps` (the step kinds), `cli`.
"""
