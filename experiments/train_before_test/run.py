"""Train-before-test and direct evaluation of a model × benchmark (Hydra). See conf/train_before_test_run.yaml."""

from testtask.runners import main

if __name__ == "__main__":
    main("train-before-test")
