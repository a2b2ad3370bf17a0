"""The train-before-test runner: score matrices of direct evaluation and train-before-test, ourselves.

One job is one cell, a model × benchmark (experiments/train_before_test/run.py, conf/train_before_test_run.yaml);
its defaults are what the authors' code ran (docs/protocols/train-before-test.md):

1. `data`: the benchmark's train / validation / test documents from its lm-eval task (a validation split carved
   from train when the benchmark has none), capped by seeded subsampling (`splits`, the authors' draws), saved as
   local datasets. A perplexity corpus (`corpora`) is loaded from its configured source and cut 8:1:1.
2. `scoring`: direct evaluation, the base model scored zero-shot with lm-eval on validation and test (a corpus:
   rolling log-likelihood in bits per byte, `lm_eval_tasks/`).
3. `training`: LoRA fine-tuning on the training documents in the authors' text format (`texts`: prompt and gold
   answer, or the chat template with its system turn; a corpus: whole documents), one run per learning rate, a
   checkpoint per epoch, each scored on validation.
4. `selection`: the best checkpoint over variants, learning rates and epochs by validation score (the lowest
   bits per byte for a corpus); it is scored on test.
5. `store`: the cell record (counts, validation curve, choice, scores) and the merge into `all_results.json`
   in the published format; a finished cell is skipped, a changed configuration refused.
"""
