"""Our lm-eval task configs (written for training-on-the-test-task).

Load them with `TaskManager(include_path=...)`; see `testtask.lm.evaluation.include_path` and the README of this
folder.
"""
