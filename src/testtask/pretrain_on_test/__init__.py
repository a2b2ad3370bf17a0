"""Dubey, *Evaluating the fairness of task-adaptive pretraining on unlabeled test data* (key `pretrain-on-test`)."""
