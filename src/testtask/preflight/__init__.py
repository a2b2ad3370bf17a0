"""GPU preflight: every GPU code path of the three runners, on tiny random models with no Hub access, in a few
minutes (`python -m testtask.preflight`, `--cpu` for the CPU subset); writes
`results/gpu-preflight/<gpu>.json`."""
