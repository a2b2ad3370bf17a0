"""The preflight's checks, one module per part; importing this package registers them in running order."""

import importlib

MODULES = (
    "device",
    "pretrain_on_test",
    "training_on_the_test_task",
    "train_before_test",
    "distributed",
    "zero3",
)

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
