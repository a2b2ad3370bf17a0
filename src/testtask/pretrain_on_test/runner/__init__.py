"""Runners of the pretrain-on-test experiments: they write `accuracies.csv` in the authors' layout."""
