"""`make assess-model`: the verdict of *Training on the test task* (paper 000) and of train-before-test for a user's
own model(s), read from their lm-eval results laid over the published release (source=published+results).
"""
