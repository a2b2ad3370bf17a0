"""lm-eval task configs of `training-on-the-test-task`; load them with `TaskManager(include_path=...)`.

See `testtask.training_on_the_test_task.evaluation.include_path` and the README of this folder.
"""
