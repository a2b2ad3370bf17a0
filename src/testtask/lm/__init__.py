"""Language-model machinery the papers share; a paper package imports from here, never from another paper.

- `hf`: device choice and tokenizer loading (every runner).
- `tiny_llama`: a tiny random Llama for offline smoke runs and tests.
- `finetune`: the fine-tuning recipe (transformers Trainer, LoRA, ZeRO-3), every protocol element a recipe value.
- `evaluation`: LM Evaluation Harness runs writing result files in the published layout; `lm_eval_tasks/`: our
  lm-eval task YAMLs (`testtask action=lm-tasks` lists them).
- `results_layout`: where an lm-eval result file sits in that layout and what the place says it holds.
- `results`: reading the result files of a layout into one checked, tidy table (and the results a source lacks).
- `models`: the checked registry of language models (facts, Hub repo, loading arguments).
- `release`: a release of lm-eval results read through an analysis config (registry, absences, tidy table).
- `scores`: one benchmark's scores from the tidy table, the results missing and why, before/after fine-tuning.
- `benchmarks`: the lm-eval metric each benchmark of a folder of benchmark presets is run with.
"""
