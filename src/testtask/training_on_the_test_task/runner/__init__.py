"""The training-on-the-test-task runner: `main` (fine-tune then evaluate one job), `plan` (the paper sweep's jobs
and GPU hours) and `mini_data` (the CPU mini-replication's evaluation data)."""
