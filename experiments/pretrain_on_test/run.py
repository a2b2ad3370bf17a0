"""Run pretrain-on-test experiments (Hydra). See conf/pretrain_on_test_run.yaml and conf/experiment/pretrain_on_test/.

python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/cpu_mini          # CPU mini-replication
python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/paper hydra/launcher=slurm
"""

from testtask.runners import main

if __name__ == "__main__":
    main("pretrain-on-test")
