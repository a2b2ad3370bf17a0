"""Train-before-test and direct evaluation of a model × benchmark (Hydra). See conf/train_before_test_run.yaml."""

from testtask.train_before_test.runner.main import main

if __name__ == "__main__":
    main()
