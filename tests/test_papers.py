"""The paper plug-in: a new paper is a `PAPER` (with its settings' schema) and one line in `papers.MODULES`; the
pipeline does the rest."""

from __future__ import annotations

import json
import sys
import types
from dataclasses import FrozenInstanceError

import pandas as pd
import pytest

from testtask import papers
from testtask.context import InputsUnavailable
from testtask.io import atomic_write_json
from testtask.outputs import save_table
from testtask.papers import Paper
from testtask.pipeline import NothingBuilt, UsageError, compose, make_context, run
from testtask.schema import ConfigError, UnitInterval, section


@section
class ToySettings:
    threshold: UnitInterval


def table_share(ctx) -> dict:
    """Share of the values in <data_root>/values.txt above the typed threshold."""
    path = ctx.data_root / "values.txt"
    if not path.is_file():
        raise InputsUnavailable(f"{path} does not exist")
    values = [float(v) for v in path.read_text().split()]
    numbers = {"share_above": sum(v > ctx.settings.threshold for v in values) / len(values)}
    save_table(pd.DataFrame([numbers]), ctx.out_dir, "table-1")
    atomic_write_json(ctx.out_dir / "table-1.json", numbers)
    return numbers


def toy_action(ctx, cfg) -> tuple[str, float]:
    return ctx.paper, ctx.settings.threshold


@pytest.fixture
def toy_paper(monkeypatch, tmp_path):
    """Register a sixth paper the way docs/architecture.md's "Adding a paper" says: its config group (in a copy of
    conf/, listed in config.yaml's defaults) and its plug-in."""
    import shutil

    from testtask.paths import repo_root

    root = tmp_path / "repo"
    shutil.copytree(repo_root() / "conf", root / "conf")
    (root / "conf" / "toy_paper").mkdir()
    (root / "conf" / "toy_paper" / "analysis.yaml").write_text("threshold: 0.5\n")
    config = root / "conf" / "config.yaml"
    config.write_text(
        config.read_text().replace(
            "  - proxy_tasks: analysis\n", "  - proxy_tasks: analysis\n  - toy_paper: analysis\n"
        )
    )
    monkeypatch.setenv("TESTTASK_ROOT", str(root))
    module = types.ModuleType("toy_registry")
    module.PAPER = Paper(
        key="toy-paper",
        config_key="toy_paper",
        settings=ToySettings,
        figures={},
        tables={1: table_share},
        actions={"toy": toy_action},
        uses=("pretrain-on-test",),
    )
    monkeypatch.setitem(sys.modules, "toy_registry", module)
    monkeypatch.setitem(papers.MODULES, "toy-paper", "toy_registry")
    return module.PAPER


def _config(tmp_path, *extra):
    cfg = compose(
        [
            "paper=toy-paper",
            "source=results",
            f"results_dir={tmp_path / 'results'}",
            "results_run=null",
            f"figures_dir={tmp_path / 'figures'}",
            *extra,
        ]
    )
    assert cfg.toy_paper.threshold == 0.5  # the paper's config group (conf/toy_paper/analysis.yaml)
    return cfg


def test_a_new_paper_builds_through_the_pipeline(toy_paper, tmp_path):
    (tmp_path / "results" / "toy-paper").mkdir(parents=True)
    (tmp_path / "results" / "toy-paper" / "values.txt").write_text("0.1 0.6 0.7 0.9")
    built = run(_config(tmp_path, "action=table", "table=1"))
    assert [(b["paper"], b["table"]) for b in built] == [("toy-paper", 1)]
    numbers = json.loads((tmp_path / "figures" / "toy-paper" / "results" / "table-1.json").read_text())
    assert numbers["share_above"] == 0.75
    assert run(_config(tmp_path, "action=toy")) == ("toy-paper", 0.5)


def test_settings_are_typed_once_and_frozen(toy_paper, tmp_path):
    ctx = make_context(_config(tmp_path), "toy-paper")
    assert ctx.settings == ToySettings(threshold=0.5)
    with pytest.raises(FrozenInstanceError):
        ctx.settings.threshold = 0.9


def test_a_new_papers_settings_are_checked_with_the_rest(toy_paper, tmp_path):
    cfg = _config(tmp_path, "action=table", "sampler.draws=0")
    cfg.toy_paper = {"threshold": 1.5, "treshold": 0.5}
    with pytest.raises(ConfigError) as err:
        run(cfg)
    assert err.value.violations[0] == "sampler.draws = 0: expected a positive integer"
    assert err.value.violations[1] == "toy_paper.threshold = 1.5: expected a number in [0, 1]"
    assert err.value.violations[2].startswith("toy_paper.treshold: unknown key (did you mean threshold?)")


def test_missing_inputs_of_a_new_paper_are_reported(toy_paper, tmp_path):
    with pytest.raises(NothingBuilt, match="table 1 of toy-paper.*values.txt does not exist"):
        run(_config(tmp_path, "action=table", "table=1"))


def test_a_paper_gets_only_the_contexts_it_declares(toy_paper, tmp_path):
    ctx = make_context(_config(tmp_path), "toy-paper")
    other = ctx.context_of("pretrain-on-test")
    assert other.paper == "pretrain-on-test" and other.data_root == tmp_path / "results" / "pretrain-on-test"
    assert other.settings.collections.few_shot  # that paper's own typed settings
    with pytest.raises(RuntimeError, match="does not list it in its PAPER.uses"):
        ctx.context_of("proxy-tasks")


def test_unknown_and_mislabelled_papers(toy_paper, monkeypatch, tmp_path):
    with pytest.raises(KeyError, match="unknown paper 'nope'"):
        papers.get("nope")
    with pytest.raises(UsageError, match="unknown paper 'nope'"):
        run(_config(tmp_path, "action=figures", "paper=nope"))
    module = types.ModuleType("mislabelled")
    module.PAPER = Paper(key="other", config_key="toy_paper", settings=ToySettings, figures={}, tables={})
    monkeypatch.setitem(sys.modules, "mislabelled", module)
    monkeypatch.setitem(papers.MODULES, "toy-paper", "mislabelled")
    with pytest.raises(RuntimeError, match="has key 'other', registered as 'toy-paper'"):
        papers.get("toy-paper")


def test_every_paper_exports_a_consistent_plugin():
    for key in papers.keys():
        paper = papers.get(key)
        assert paper.key == key
        assert paper.figures or paper.tables
        assert paper.settings is not None and paper.config_key in compose()
        if paper.runner is not None:
            from testtask.runners import load

            assert callable(load(paper.runner.run))


def test_an_unknown_paper_names_the_nearest_key():
    message = papers.unknown("pretrain_on_test", also=" (or all)")
    assert message.startswith(
        "unknown paper 'pretrain_on_test'; did you mean paper=pretrain-on-test? known: "
    )
    assert message.endswith("proxy-tasks (or all)")
    assert "did you mean" not in papers.unknown("nope")
    with pytest.raises(KeyError, match="did you mean paper=train-before-test"):
        papers.get("Train_Before_Test")
