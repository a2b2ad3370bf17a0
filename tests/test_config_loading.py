"""Composing the same config files again (as the tests do, hundreds of times per worker, and a command three times)
reads each file once and then its current contents: testtask.hydra_loads keeps loaded files per process
(tests/conftest.py installs it in each worker, the command and the runners in theirs), and an edit or an atomic
replacement is seen."""

from __future__ import annotations

import os

from hydra import compose, initialize_config_dir


def test_a_config_file_changed_between_composes_is_read_again(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: 1\nb: {c: 2}\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        first = compose(config_name="config")
        first.b.c = 99  # what a caller does to its config stays in it
        assert compose(config_name="config").b.c == 2
        path.write_text("a: 22\nb: {c: 2}\n")  # edited in place, another size
        assert compose(config_name="config").a == 22
        staged = tmp_path / "staged.txt"
        staged.write_text("a: 33\nb: {c: 2}\n")  # the same size, written by rename
        os.replace(staged, path)
        assert compose(config_name="config").a == 33


COUNT_LOADS = """
import collections, sys
from omegaconf import OmegaConf
loads = collections.Counter()
load = OmegaConf.load
def counting(file_, *args, **kwargs):
    loads[getattr(file_, "name", str(file_))] += 1
    return load(file_, *args, **kwargs)
OmegaConf.load = counting
from testtask import cli
sys.argv = ["testtask", *sys.argv[1:]]
try:
    cli.main()
finally:
    print(json.dumps(loads))
"""


def test_a_command_reads_each_config_file_once(tmp_path):
    """`testtask` composes three times (its own check, Hydra's run mode, Hydra's run); each file is parsed once."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json\n" + COUNT_LOADS,
            "action=data",
            "paper=downstream-predictability",
        ]
        + [f"data.dest={tmp_path}"],
        capture_output=True,
        text=True,
        check=True,
    )
    loads = json.loads(done.stdout.strip().splitlines()[-1])
    assert any(name.endswith("config.yaml") for name in loads), loads
    assert {name: n for name, n in loads.items() if n > 1} == {}


def test_without_hydras_internal_registry_configs_are_loaded_as_hydra_does(monkeypatch, tmp_path):
    """The cache uses Hydra's internal source registry; a Hydra without it leaves composing as it is."""
    import builtins

    from testtask import hydra_loads

    real_import = builtins.__import__

    def no_registry(name, *args, **kwargs):
        if name == "hydra._internal.sources_registry":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_registry)
    hydra_loads.keep_loaded_configs()  # no error
    monkeypatch.undo()
    (tmp_path / "config.yaml").write_text("a: 1\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        assert compose(config_name="config").a == 1
