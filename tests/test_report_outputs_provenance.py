"""The report says how the outputs it read were built: at which commits, which from uncommitted changes (code that
is in no commit), and whether their data checksums were compared with a release here; the last two are warned
about on the console and at the top of the page, never left to a reader to find in the sidecars."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.conftest import stamp_release
from tests.training_on_the_test_task.test_figures import make_tree
from testtask.data.fetch import STAMP_NAME
from testtask.pipeline import build, compose, run
from testtask.report import provenance

PAPER = "training-on-the-test-task"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A synthetic release with Figure 1 built from it (the claims read more: those are simply not built)."""
    root = tmp_path_factory.mktemp("outputs")
    make_tree(root / "published" / PAPER, seed=0)
    stamp_release(root / "published" / PAPER)
    build(_cfg(root), "figure", [1])
    return root


def _cfg(root: Path, *extra: str):
    return compose(
        [
            f"paper={PAPER}",
            f"data.dest={root / 'published'}",
            f"figures_dir={root / 'figures'}",
            f"report.out_dir={root / 'report'}",
            "report.require_categories=false",
            "report.protocols=[authors]",
            *extra,
        ]
    )


def _sidecar(root: Path) -> Path:
    return root / "figures" / PAPER / "published" / "figure-1.json"


def _set_build(root: Path, commit: str, dirty: bool) -> None:
    path = _sidecar(root)
    document = json.loads(path.read_text())
    document["provenance"].update(git_commit=commit, dirty=dirty)
    path.write_text(json.dumps(document))


def _outputs(summary: dict) -> dict:
    (entry,) = summary["provenance"]["outputs"]
    return entry


def test_outputs_from_committed_code_on_the_release_here_are_reported_without_a_warning(built, caplog):
    _set_build(built, "a" * 40, dirty=False)
    with caplog.at_level(logging.WARNING):
        summary = run(_cfg(built, "action=report"))
    entry = _outputs(summary)
    assert entry["paper"] == PAPER and entry["read"] == 1 and entry["commits"] == ["a" * 40]
    assert entry["uncommitted"] == [] and entry["compared"] is True and len(entry["checksums"]) == 1
    markdown = (built / "report" / "published" / PAPER / "REPRODUCTION.md").read_text()
    assert (
        f"**outputs of {PAPER}**: 1 sidecars read, built at aaaaaaaaaaaa; their data checksum agrees"
        in markdown
    )
    assert "Check the outputs" not in markdown
    assert not [
        r for r in caplog.records if "uncommitted" in r.getMessage() or "not fetched" in r.getMessage()
    ]


def test_outputs_built_from_uncommitted_changes_are_warned_about(built, caplog):
    _set_build(built, "b" * 40, dirty=True)
    with caplog.at_level(logging.WARNING):
        summary = run(_cfg(built, "action=report"))
    assert _outputs(summary)["uncommitted"] == ["authors/figure-1.json"]
    warning = f"{PAPER}: 1 of the 1 outputs read were built from uncommitted changes (authors/figure-1.json)"
    assert any(r.getMessage().startswith(f"report: {warning}") for r in caplog.records)
    out = built / "report" / "published" / PAPER
    markdown = (out / "REPRODUCTION.md").read_text()
    assert markdown.index("**Check the outputs.**") < markdown.index("## Provenance")
    assert f"> - {warning}" in markdown
    page = (out / "index.html").read_text()
    assert "Check the outputs" in page and "authors/figure-1.json" in page


def test_outputs_whose_release_is_not_here_say_their_checksums_were_not_compared(built, caplog, tmp_path):
    _set_build(built, "c" * 40, dirty=False)
    stamp = built / "published" / PAPER / STAMP_NAME
    kept = stamp.read_bytes()
    stamp.unlink()  # the release's fetch stamp is what its checksum is read from
    try:
        with caplog.at_level(logging.WARNING):
            summary = run(_cfg(built, "action=report", f"report.out_dir={tmp_path / 'report'}"))
    finally:
        stamp.write_bytes(kept)
    entry = _outputs(summary)
    assert entry["compared"] is False
    assert any(
        "the release is not fetched here, so the data checksums the outputs record" in r.getMessage()
        and f"make data PAPER={PAPER}" in r.getMessage()
        for r in caplog.records
    )


def test_outputs_state_counts_commits_uncommitted_files_and_checksums():
    blocks = {
        "authors/figure-1.json": {"git_commit": "x1", "dirty": False, "data": {"checksum": "sha256:1"}},
        "paper_text/figure-1.json": {"git_commit": "x2", "dirty": True, "data": {"checksum": "sha256:1"}},
        "authors/table-2.json": {"git_commit": "x1", "dirty": True, "data": {}},
    }
    state = provenance.outputs("toy", blocks, compared=None)
    assert state.read == 3 and state.commits == ("x1", "x2") and state.checksums == ("sha256:1",)
    assert state.uncommitted == ("authors/table-2.json", "paper_text/figure-1.json")
    (warning,) = state.warnings()  # our runs (compared=None) have no release checksum to compare
    assert warning.startswith("toy: 2 of the 3 outputs read were built from uncommitted changes")
    assert provenance.outputs("toy", {}, compared=False).warnings() == []  # nothing read, nothing to say


def test_a_sidecar_built_before_an_own_file_was_edited_is_refused_naming_the_file(tmp_path):
    from testtask.sidecars import Expected, ProvenanceMismatch, check

    block = {
        "source": "published",
        "protocol": "authors",
        "settings": {"fingerprint": "old", "user_files": {"models.yaml": "h1", "benchmarks.yaml": "h2"}},
    }
    expected = Expected.of(
        "published",
        settings="new",
        reader="the report",
        user_files={"models.yaml": "h9", "matrices.yaml": "h3"},
    )
    with pytest.raises(ProvenanceMismatch) as err:
        check(tmp_path / "figure-1.json", {"provenance": block}, expected)
    assert "your own files changed since it was built (benchmarks.yaml removed, matrices.yaml added, " in str(
        err.value
    )
    assert "models.yaml edited)" in str(err.value)
