"""GPU preflight: every GPU code path of the three runners, on tiny random models, in a few minutes.

`python -m testtask.preflight` (`make gpu-preflight`) runs, with no Hub access, the pretrain-on-test zero-shot
protocol with QLoRA NF4 (padding and packing) and its few-shot protocol on tiny BERT/GPT-2, the
training-on-the-test-task fine-tuning recipe in each precision and lm-eval scoring one of our tasks, the
train-before-test LoRA cell, and with two GPUs the 2-rank fine-tunes; it writes
`results/gpu-preflight/<gpu>.json`. `--cpu` runs the subset that works on a CPU (`cpu.json`), `--list` names
the checks.

Modules: `registry` (the checks and what they need), `runner` (timing, failures, progress), `report` (versions,
GPU, commit, the JSON), `models`/`data` (tiny models and data), `checks/` (one module per part), `worker` (one
rank of the 2-rank checks), `cli`.
"""
