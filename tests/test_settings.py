"""The whole `testtask` config is typed by one schema (testtask/settings.py for the top-level keys, each paper's
settings.py for its section): every leaf has a declared type, no setting has a default in code, and every bad,
missing, unknown or misspelled key is reported at once, one line each, before anything runs or is written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from tests.conftest import REPO, tmp_config
from testtask import papers, schema
from testtask.pipeline import check, compose, compose_checked, config_schema, run
from testtask.schema import ConfigError
from testtask.settings import Top


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (REPO / "conf" / group).glob("*.yaml"))


COMPOSITIONS = [
    [],
    ["protocol=paper_text"],
    *([f"sampler={s}"] for s in _options("sampler")),
    ["report=fast"],
    ["source=results"],
    ["results_run=null", "cache_dir=null"],
]


@pytest.mark.parametrize("overrides", COMPOSITIONS, ids=lambda o: " ".join(o) or "default")
def test_every_leaf_of_the_composed_config_is_typed_by_a_schema(overrides):
    cfg = compose(overrides)
    plain = schema.plain(cfg, exclude=("hydra",))
    leaves = schema.leaves(config_schema(), plain)
    untyped = sorted(key for key, declared in leaves.items() if declared is None)
    assert untyped == []
    assert len(leaves) > 300  # every paper's section is walked, not only the top level
    check(cfg)  # and every composition the project ships passes its schema


def test_no_setting_has_a_default_in_code():
    """A setting's value is written once, in YAML: no field of any schema (top level, every paper's section and
    what they hold) has a default a config could silently fall back on."""
    assert schema.defaults_in_code(config_schema()) == []
    for key in papers.keys():
        assert schema.defaults_in_code(papers.get(key).settings) == [], key


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (["sampler.draws=-10"], "sampler.draws = -10: expected a positive integer"),  # was an OverflowError
        (["sampler.chains=0"], "sampler.chains = 0: expected a positive integer"),  # was an AttributeError
        (["sampler.name=hmc"], "sampler.name = 'hmc': expected one of nutpie, pymc, numpyro"),
        (["sampler.tune=-1"], "sampler.tune = -1: expected an integer >= 0"),
        (["sampler.draws=1.5"], "sampler.draws = 1.5: expected a positive integer"),
        (["sampler.draws=true"], "sampler.draws = True: expected a positive integer"),
        (["sampler.target_accept=1.0"], "sampler.target_accept = 1.0: expected a number in (0, 1)"),
        (["sampler.cores=0"], "sampler.cores = 0: expected a positive integer"),
        (
            ["sampler=numpyro", "sampler.chain_method=fast"],
            "sampler.chain_method = 'fast': expected one of parallel, sequential, vectorized (or null)",
        ),
        (["seed=abc"], "seed = 'abc': expected an integer >= 0"),
        (["source=mirror"], "source = 'mirror': expected one of published, results, published+results"),
        (
            ["log_level=LOUD"],
            "log_level = 'LOUD': expected one of CRITICAL, FATAL, ERROR, WARN, WARNING, INFO, DEBUG, NOTSET",
        ),
        (["diagnostics.max_divergences=-1"], "diagnostics.max_divergences = -1: expected an integer >= 0"),
        (["results_run=a/b"], "results_run = 'a/b': expected a folder name (no '/')"),
        (
            ["report.protocols=[]"],
            "report.protocols = []: expected a non-empty list, each item one of authors, paper_text",
        ),
        (["assess.level=1.5"], "assess.level = 1.5: expected a number in (0, 1)"),
        (
            ["data.sources.pretrain-on-test.commit=abc"],
            "data.sources.pretrain-on-test.commit = 'abc': expected a 40-character commit hash",
        ),
    ],
)
def test_a_bad_top_level_value_is_one_line(overrides, line):
    with pytest.raises(ConfigError) as err:
        check(compose(overrides))
    assert err.value.violations == [line]


def test_every_violation_is_listed_one_line_each():
    with pytest.raises(ConfigError) as err:
        check(compose(["sampler.draws=-10", "sampler.chains=0", "pretrain_on_test.model.backend=foo"]))
    assert isinstance(err.value, ValueError)
    assert str(err.value).splitlines() == [
        "invalid config: sampler.draws = -10: expected a positive integer",
        "invalid config: sampler.chains = 0: expected a positive integer",
        "invalid config: pretrain_on_test.model.backend = 'foo': expected one of marginal, bambi",
    ]


def test_compose_itself_does_not_check_and_run_does_before_writing(tmp_path):
    """Notebooks and tests compose configs (even deliberately odd ones) and change them; `run` checks what it is
    given, before anything is read or written."""
    cfg = tmp_config(tmp_path, "action=figure", "figure=3", "sampler.draws=-10")
    assert cfg.sampler.draws == -10
    with pytest.raises(ConfigError, match="sampler.draws = -10"):
        run(cfg)
    assert not (tmp_path / "figures").exists() and not (tmp_path / "cache").exists()
    cfg.sampler.draws = 10  # compose's config stays writable
    check(cfg)


def test_what_hydra_refuses_becomes_config_error_lines():
    cfg, lines = compose_checked(
        [
            "sampler=foo",
            "pretrain_on_test.figure_7.chians=3",
            "protocol=paper_txt",
            "pretrain_on_test.counts=floor",
        ]
    )
    assert sorted(lines) == [
        "protocol = 'paper_txt': expected one of authors, paper_text",
        "sampler = 'foo': expected one of numpyro, nutpie, pymc",
    ]
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert err.value.violations[0] == "pretrain_on_test.counts = 'floor': expected one of truncate, round"
    assert err.value.violations[1].startswith(
        "pretrain_on_test.figure_7.chians: unknown key (did you mean chains?)"
    )


def _testtask(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    command = [sys.executable, "-c", "from testtask.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def test_the_command_reports_every_bad_key_in_one_line_each_and_exits_non_zero():
    """The figure 7 keys and `counts`, which the old central checks missed, and a misspelled key: one clear line
    each, exit status 1, no traceback, nothing else run (`make figure-7 ARGS=...` runs this command)."""
    done = _testtask(
        "action=figure",
        "figure=7",
        "paper=pretrain-on-test",
        "pretrain_on_test.figure_7.chains=0",
        "pretrain_on_test.figure_7.draw=sometimes",
        "pretrain_on_test.figure_7.interaction=maybe",
        "pretrain_on_test.counts=floor",
        "pretrain_on_test.figure_7.chians=4",
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "error: invalid config: pretrain_on_test.counts = 'floor': expected one of truncate, round",
        "invalid config: pretrain_on_test.figure_7.interaction = 'maybe': expected true or false",
        "invalid config: pretrain_on_test.figure_7.chains = 0: expected a positive integer",
        "invalid config: pretrain_on_test.figure_7.draw = 'sometimes': expected one of per_lm_type, per_task",
        "invalid config: pretrain_on_test.figure_7.chians: unknown key (did you mean chains?); the keys here are "
        "slices, m, n, band, band_zero_shot, draws, tune, interaction, subsample_effect, chains, draw",
    ]


def test_the_top_level_schema_declares_no_paper_key():
    """No module outside a paper package names that paper's keys: the top-level schema holds none of them."""
    declared = {f for f in OmegaConf.to_container(compose(), resolve=False) if f != "hydra"}
    sections = {papers.get(k).config_key for k in papers.keys()}
    assert sections <= declared
    assert not sections & set(schema.field_types(Top))


@pytest.mark.parametrize("overrides", COMPOSITIONS, ids=lambda o: " ".join(o) or "default")
def test_plain_values_are_those_of_the_node_by_node_walk(overrides, monkeypatch):
    """`schema.plain` converts a config that resolves in one call; the values are those the walk (which names each
    value that does not resolve) reads."""
    cfg = compose(overrides)
    fast = schema.plain(cfg, exclude=("hydra",))
    monkeypatch.setattr(schema, "_container", lambda node, exclude: 1 / 0)
    assert fast == schema.plain(cfg, exclude=("hydra",))
    assert "hydra" not in fast and fast["pretrain_on_test"]["collections"]["few_shot"]


def test_a_value_that_does_not_resolve_is_named_and_the_others_kept():
    cfg = compose([])
    cfg.seed, cfg.sampler.draws = "${nowhere}", "???"
    problems: list[str] = []
    values = schema.plain(cfg, problems=problems, exclude=("hydra",))
    assert [p.split(":")[0] for p in problems] == ["sampler.draws", "seed"]
    assert "seed" not in values and "draws" not in values["sampler"] and values["figure"] == 3
