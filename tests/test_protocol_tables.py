"""The protocol tables (docs/protocols/<paper>.md, <paper>-analysis.md) and the configs cannot drift apart.

Every row with a config key is checked against the composed default config and against the `paper_text` preset
(`protocol=paper_text`; runners: the runner's entry config; analyses: conf/config.yaml with `paper=<key>`, as
`testtask.pipeline.compose` builds it); which papers have tables is their plug-ins' word; every row without
one must name the test that covers its mechanism; every element of the line-by-line audits
(../shared/reference/protocol-audit/, when present) must have a row.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from testtask import pipeline
from testtask.paths import conf_dir, repo_root
from testtask.protocol_tables import (
    PRESET,
    Row,
    TableError,
    analyses,
    drift,
    read_table,
    runners,
    same_value,
)

DOCS = repo_root() / "docs" / "protocols"
AUDITS = repo_root().parent / "shared" / "reference" / "protocol-audit"


@cache
def composed(entry: str, overrides: tuple[str, ...]) -> dict:
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose(entry, overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)


@cache
def analysis_config(overrides: tuple[str, ...]) -> dict:
    """conf/config.yaml composed as the `testtask` command composes it, plain."""
    return OmegaConf.to_container(pipeline.compose(list(overrides)), resolve=True)


def rows(paper: str) -> list[Row]:
    return read_table(DOCS / f"{paper}.md")


RUNNERS = runners()
ANALYSES = analyses()


@pytest.mark.parametrize("paper", sorted(RUNNERS))
def test_table_matches_default_and_paper_text_configs(paper: str) -> None:
    entry = RUNNERS[paper]
    table = rows(paper)
    assert len(table) >= 15, f"docs/protocols/{paper}.md lists only {len(table)} elements"
    problems = drift(
        table,
        f"docs/protocols/{paper}.md",
        lambda overrides: composed(entry, overrides),
        PRESET,
    )
    assert not problems, "\n".join(problems)


def _analysis_compose(paper: str, extra: tuple[str, ...] = ()):
    return lambda overrides: analysis_config((*ANALYSES[paper], *extra, *overrides))


@pytest.mark.parametrize("paper", sorted(ANALYSES))
def test_analysis_table_matches_default_and_paper_text_configs(paper: str) -> None:
    table = rows(f"{paper}-analysis")
    assert len(table) >= 15, f"docs/protocols/{paper}-analysis.md lists only {len(table)} elements"
    problems = drift(table, f"docs/protocols/{paper}-analysis.md", _analysis_compose(paper), PRESET)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("paper", sorted(ANALYSES))
def test_analysis_table_has_rows_where_the_preset_differs(paper: str) -> None:
    """The preset must change something, and every value it changes must be a row of the table."""
    table = rows(f"{paper}-analysis")
    differing = [row.key for row in table if row.preset not in (None, "same")]
    assert differing, f"docs/protocols/{paper}-analysis.md has no row where paper_text differs"
    default = analysis_config(ANALYSES[paper])
    preset = analysis_config((*ANALYSES[paper], PRESET))
    # The preset group holds every paper's file: a paper's own section must be in its own table, and any other
    # change in some analysis table.
    section = paper.replace("-", "_") + "."
    # `protocol` names the preset (output folder, provenance): not an element of any analysis
    changed = sorted(
        path for path in _changed_paths(default, preset) if path not in ("protocol", "hydra.overrides.task")
    )
    assert preset["protocol"] == "paper_text" and default["protocol"] == "authors"
    missing = [path for path in changed if path.startswith(section) and path not in differing]
    assert not missing, f"the preset changes {missing} but docs/protocols/{paper}-analysis.md has no such row"
    anywhere = {
        row.key for other in ANALYSES for row in rows(f"{other}-analysis") if row.preset not in (None, "same")
    }
    unlisted = [path for path in changed if path not in anywhere]
    assert not unlisted, f"the preset changes {unlisted} but no docs/protocols/*-analysis.md has such a row"


def _changed_paths(a: object, b: object, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            path
            for key in sorted(set(a) | set(b))
            for path in _changed_paths(a.get(key), b.get(key), f"{prefix}{key}.")
        ]
    return [] if a == b else [prefix.rstrip(".")]


@pytest.mark.parametrize(
    ("paper", "override", "element"),
    [
        (
            "training-on-the-test-task",
            "training_on_the_test_task.regression.cov_type=cluster",
            "standard errors (Eq. 1)",
        ),
        (
            "training-on-the-test-task",
            "training_on_the_test_task.model_values=paper",
            "model metadata (N, D, dates)",
        ),
        (
            "training-on-the-test-task",
            "training_on_the_test_task.benchmarks.bbh.chance=0.0",
            "chance r (BBH)",
        ),
        (
            "train-before-test",
            "train_before_test.pca.case_study.max_with_baseline=false",
            "Figure 8 train-before-test cells",
        ),
        ("train-before-test", "train_before_test.kendall_decimals=null", "τ rounding"),
        ("train-before-test", "train_before_test.pca.standardize=false", "PCA preprocessing"),
    ],
)
def test_analysis_drift_is_reported_when_a_default_changes_without_the_table(
    paper: str, override: str, element: str
) -> None:
    table = rows(f"{paper}-analysis")
    problems = drift(table, "t.md", _analysis_compose(paper, (override,)), PRESET)
    assert problems and all(f"({element})" in p for p in problems), problems
    assert any("table default" in p for p in problems)


@pytest.mark.parametrize(
    ("override", "element"),
    [
        ("pretrain_on_test.figure_7.interaction=true", "Figure 7 slice model"),
        ("pretrain_on_test.counts=round", "counts for the model"),
        ("pretrain_on_test.figure_7.chains=4", "Figure 7 chains per slice"),
        ("pretrain_on_test.figure_7.subsample_effect=true", "Figure 7 slice random effects"),
        ("pretrain_on_test.figure_4.strict=false", "Figure 4 comparison"),
        ("pretrain_on_test.predictive.hdi_prob=0.95", "HDI probability"),
        ("pretrain_on_test.model.priors.sigma_W=1.0", "prior σ_W"),
    ],
)
def test_pretrain_on_test_drift_is_reported_when_a_default_changes_without_the_table(
    override: str, element: str
) -> None:
    paper = "pretrain-on-test"
    table = rows(f"{paper}-analysis")
    problems = drift(table, "t.md", _analysis_compose(paper, (override,)), PRESET)
    assert problems and all(f"({element})" in p for p in problems), problems
    assert any("table default" in p for p in problems)


def test_pretrain_on_test_drift_is_reported_when_the_preset_changes_without_the_table() -> None:
    paper = "pretrain-on-test"
    table = [row for row in rows(f"{paper}-analysis") if row.element == "Figure 7 slice model"]
    # The default config stands in for the preset: its slice model without W is not the table's paper_text `true`.
    problems = drift(table, "t.md", _analysis_compose(paper), "paper=pretrain-on-test")
    assert len(problems) == 1 and "table paper_text 'true', preset config False" in problems[0]


def test_analysis_drift_is_reported_when_the_preset_changes_without_the_table() -> None:
    paper = "training-on-the-test-task"
    table = [row for row in rows(f"{paper}-analysis") if row.element == "standard errors (Eq. 1)"]
    # The default config stands in for the preset: its classical SEs are not the table's paper_text `cluster`.
    problems = drift(table, "t.md", _analysis_compose(paper), "paper=training-on-the-test-task")
    assert len(problems) == 1 and "table paper_text 'cluster', preset config 'nonrobust'" in problems[0]


def test_train_before_test_drift_is_reported_when_the_preset_changes_without_the_table() -> None:
    paper = "train-before-test"
    element = "Figure 8 train-before-test cells"
    table = [row for row in rows(f"{paper}-analysis") if row.element == element]
    # The default config stands in for the preset: its max with direct evaluation is not the text's `false`.
    problems = drift(table, "t.md", _analysis_compose(paper), "paper=train-before-test")
    assert len(problems) == 1 and "table paper_text 'false', preset config True" in problems[0]


def _audit_elements(path: Path) -> list[str]:
    elements = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3 or set(cells[0]) <= {"-", ":"}:
            continue
        if cells[0].lower() in {"element", ""}:
            continue
        elements.append(cells[0])
    return elements


@pytest.mark.parametrize("paper", sorted(RUNNERS))
def test_every_audited_element_has_a_decision(paper: str) -> None:
    audit = AUDITS / f"{paper}.md"
    if not audit.is_file():
        pytest.skip(f"{audit} is not available")
    listed = " ".join(row.element.lower() for row in rows(paper))
    missing = [e for e in _audit_elements(audit) if e.lower().replace("*", "") not in listed]
    assert not missing, f"docs/protocols/{paper}.md has no row for audit elements {missing}"


def test_parser_names_the_file_and_line_of_a_bad_row(tmp_path: Path) -> None:
    bad = tmp_path / "x.md"
    bad.write_text(
        "| element | paper text | authors' code | config key | default | paper_text | decision |\n"
        "|---|---|---|---|---|---|---|\n"
        "| lr | 1e-4 | a.py:1 | `lm.lr` | `1.0e-4` | same | authors |\n"
        "| wd | 0 | a.py:2 | lm.wd | `0.0` | same | authors |\n"
    )
    with pytest.raises(TableError, match=r"x\.md:4: config key 'lm\.wd'"):
        read_table(bad)


def test_parser_reads_overrides_escaped_pipes_and_presets(tmp_path: Path) -> None:
    good = tmp_path / "y.md"
    good.write_text(
        "intro\n\n"
        "| element | paper text | authors' code | config key | default | paper_text | decision |\n"
        "|---|---|---|---|---|---|---|\n"
        "| rule | sum | a.py:1 | [lm=mistral_qlora, n=5] `lm.rule` | `mean\\|sum` | `sum` | authors |\n"
        "| mask | — | a.py:2 | — | — | — | test_mask |\n"
    )
    first, second = read_table(good)
    assert first.overrides == ("lm=mistral_qlora", "n=5") and first.key == "lm.rule"
    assert first.default == "mean|sum" and first.preset == "sum"
    assert second.key is None and second.default is None and second.decision == "test_mask"


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        ("1e-4", 1.0e-4, True),
        (5e-5, 1e-4, False),
        (True, 1, False),
        ([1, 2], [1, 2], True),
        ("a", "b", False),
    ],
)
def test_same_value(expected, actual, same: bool) -> None:
    assert same_value(expected, actual) is same
