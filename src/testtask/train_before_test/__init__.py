"""Analyses of `train-before-test`."""
