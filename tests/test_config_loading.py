"""Composing the same config files again (as the tests do, hundreds of times per worker, and a command three times)
reads each file once and then its current contents: testtask.hydra_loads keeps loaded files per process
(tests/conftest.py installs it in each worker, the command and the runners in theirs), and an edit or an atomic
replacement is seen."""

from __future__ import annotations

import os

import pytest
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


def test_each_load_of_a_kept_file_is_a_copy_of_its_own(tmp_path):
    """Hydra changes the config a source gives it: a kept file's second load equals the file, not what the first
    load's caller made of it, and carries the same header and flags."""
    from hydra._internal.sources_registry import SourcesRegistry
    from omegaconf import OmegaConf

    (tmp_path / "config.yaml").write_text("# @package sub\na: 1\nb: {c: [1, 2]}\nd: ${a}\n")
    source = SourcesRegistry.instance().resolve("file")("test", str(tmp_path))
    first = source.load_config("config.yaml")
    assert getattr(type(source).load_config, "keeps_loads", False)  # the kept loads are what is tested here
    first.config.b.c.append(3)
    first.config.a = 5
    OmegaConf.set_struct(first.config, True)
    second = source.load_config("config.yaml")
    assert OmegaConf.to_container(second.config) == {"a": 1, "b": {"c": [1, 2]}, "d": "${a}"}
    assert second.config.d == 1 and second.header["package"] == "sub"
    assert OmegaConf.is_struct(second.config) is not True
    assert second.config is not first.config


def test_a_config_placed_twice_in_one_compose_gives_two_independent_copies(tmp_path):
    (tmp_path / "grp").mkdir()
    (tmp_path / "grp" / "opt.yaml").write_text("v: 1\nl: [1, 2]\n")
    (tmp_path / "config.yaml").write_text("defaults:\n  - grp: opt\n  - grp@other: opt\n  - _self_\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        for _ in range(2):  # the second compose from the kept loads
            cfg = compose(config_name="config")
            assert cfg.grp == cfg.other == {"v": 1, "l": [1, 2]}
            cfg.grp.v = 2
            cfg.grp.l.append(3)
            assert cfg.other == {"v": 1, "l": [1, 2]}


@pytest.mark.parametrize(
    ("config_name", "overrides"),
    [
        ("config", []),
        ("config", ["protocol=paper_text", "pretrain_on_test.counts=round"]),
        ("pretrain_on_test_run", ["experiment=pretrain_on_test/zero_shot_packing"]),
        ("pretrain_on_test_run", ["protocol=paper_text"]),
        ("training_on_the_test_task_run", []),
        ("train_before_test_run", ["experiment=train_before_test/tiny"]),
    ],
)
def test_kept_loads_compose_what_hydra_composes(config_name, overrides, monkeypatch):
    """The project's configs (packages, `@_global_` presets, optional groups, experiments) compose to the same
    config with the kept loads and without them, Hydra's own loading."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.sources_registry import SourcesRegistry
    from omegaconf import OmegaConf

    from testtask.pipeline import compose as compose_config

    kept = OmegaConf.to_yaml(compose_config(overrides, config_name))
    embed = ConfigLoaderImpl._embed_result_config
    assert hasattr(embed, "original")  # the kept loads are installed, and are what is compared
    monkeypatch.setattr(ConfigLoaderImpl, "_embed_result_config", staticmethod(embed.original))
    for scheme in ("file", "pkg"):
        cls = SourcesRegistry.instance().resolve(scheme)
        monkeypatch.setattr(cls, "load_config", cls.load_config.original)
    assert OmegaConf.to_yaml(compose_config(overrides, config_name)) == kept


def test_libyaml_reads_every_config_as_pyyaml_does():
    """The kept loads parse YAML with LibYAML's C parser under OmegaConf's constructor and resolvers: every file
    under conf/ gives the values PyYAML's Python parser gives, dates stay strings, a duplicate key is an error."""
    import yaml
    from omegaconf import _utils

    from testtask.paths import conf_dir

    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML without LibYAML: OmegaConf's own parser is used")
    assert hasattr(_utils.get_yaml_loader, "original")  # installed, and what is compared
    fast, python = _utils.get_yaml_loader(), _utils.get_yaml_loader.original()
    files = sorted(conf_dir().rglob("*.yaml"))
    assert len(files) > 50
    for path in files:
        text = path.read_text()
        assert yaml.load(text, Loader=fast) == yaml.load(text, Loader=python), path
    assert yaml.load("d: 2023-01-01\nf: 1e3\ng: .5\n", Loader=fast) == {
        "d": "2023-01-01",
        "f": 1000.0,
        "g": 0.5,
    }
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key a"):
        yaml.load("a: 1\na: 2\n", Loader=fast)


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
