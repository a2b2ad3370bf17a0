"""Fine-tune on the test task and evaluate with lm-eval (Hydra). See conf/training_on_the_test_task_run.yaml."""

from testtask.runners import main

if __name__ == "__main__":
    main("training-on-the-test-task")
