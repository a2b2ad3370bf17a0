"""Our lm-eval task configs (written for training-on-the-test-task); see
`testtask.lm.evaluation.include_path`."""
