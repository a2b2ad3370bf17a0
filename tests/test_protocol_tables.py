"""The protocol tables (docs/protocols/<paper>.md) and the runners' configs cannot drift apart.

Every row with a config key is checked against the composed default config and against the `paper_text` preset;
every row without one must name the test that covers its mechanism; every element of the line-by-line audits
(../shared/reference/protocol-audit/, when present) must have a row.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from testtask.paths import conf_dir, repo_root
from testtask.protocol_tables import RUNNERS, Row, TableError, parse_literal, read_table, same_value

DOCS = repo_root() / "docs" / "protocols"
AUDITS = repo_root().parent / "shared" / "reference" / "protocol-audit"
MISSING = object()


@cache
def composed(entry: str, overrides: tuple[str, ...]) -> dict:
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose(entry, overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)


def lookup(config: dict, path: str):
    node = config
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def rows(paper: str) -> list[Row]:
    return read_table(DOCS / f"{paper}.md")


@pytest.mark.parametrize("paper", sorted(RUNNERS))
def test_table_matches_default_and_paper_text_configs(paper: str) -> None:
    entry, prefix = RUNNERS[paper]
    table = rows(paper)
    assert len(table) >= 15, f"docs/protocols/{paper}.md lists only {len(table)} elements"
    problems = []
    for row in table:
        where = f"docs/protocols/{paper}.md:{row.line} ({row.element})"
        if not row.decision or not row.authors_code:
            problems.append(f"{where}: no decision or no authors' code reference")
        if row.key is None:
            if "test" not in row.decision:
                problems.append(f"{where}: a mechanism row must name the test that covers it")
            continue
        default = lookup(composed(entry, row.overrides), row.key)
        if default is MISSING:
            problems.append(f"{where}: `{row.key}` is not in the composed {entry} config")
            continue
        if row.default is None or not same_value(parse_literal(row.default), default):
            problems.append(f"{where}: table default {row.default!r}, config {default!r}")
        if row.preset is None:
            continue
        preset_cfg = composed(entry, (*row.overrides, f"protocol={prefix}/paper_text"))
        preset = lookup(preset_cfg, row.key)
        wanted = row.default if row.preset == "same" else row.preset
        if wanted is None or not same_value(parse_literal(wanted), preset):
            problems.append(f"{where}: table paper_text {row.preset!r}, preset config {preset!r}")
    assert not problems, "\n".join(problems)


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
