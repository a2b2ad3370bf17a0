"""Dubey, *Evaluating the fairness of task-adaptive pretraining on unlabeled test data* (key `pretrain-on-test`)."""

PAPER_KEY = "pretrain-on-test"
