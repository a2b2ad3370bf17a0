"""The train-before-test runner: score matrices of direct evaluation and train-before-test, ourselves.

One job is one cell, a model × benchmark (experiments/train_before_test/run.py, conf/train_before_test_run.yaml):

1. `data`: the benchmark's train / validation / test documents from its lm-eval task (a validation split carved
   from train when the benchmark has none), capped by seeded subsampling (`splits`), saved as local datasets.
2. `scoring`: direct evaluation, the base model scored zero-shot with lm-eval on validation and test.
3. `training`: LoRA fine-tuning on the training documents rendered in lm-eval's own prompt format (`texts`),
   one run per learning rate, a checkpoint per epoch, each scored on validation.
4. `selection`: the best checkpoint over learning rates and epochs by validation score; it is scored on test.
5. `store`: the cell record (counts, validation curve, choice, scores) and the merge into `all_results.json`
   in the published format; a finished cell is skipped, a changed configuration refused.
"""
