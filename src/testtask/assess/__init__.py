"""`make assess-model`: the verdict of *Training on the test task* (paper 000) and of train-before-test for a user's
own model(s), read from their lm-eval results laid over the published release (source=published+results).

models.py reads the user's model entries; residuals.py holds the statistics; cohort.py and ranks.py make the two
papers' sections; page.py writes one page per model (PNG + JSON + Markdown) and is the action's entry point.
"""
