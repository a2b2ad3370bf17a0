"""The train-before-test runner: score matrices of direct evaluation and train-before-test, ourselves.

One job is one cell, a model × benchmark (experiments/train_before_test/run.py, conf/train_before_test_run.yaml);
its defaults are what the authors' code ran (docs/protocols/train-before-test.md). `cell` runs the steps: `data`
(with `splits` and `corpora`) prepares the documents, `scoring` scores the base model zero-shot (direct
evaluation), `training` fine-tunes it with LoRA on the texts of `texts`, `selection` picks the checkpoint by
validation score for test, and `store` keeps the cell record and merges `all_results.json`.
"""
