"""Outputs can never be read under the wrong source.

Replayed: a figure built from our own run (source=results) wrote the same `figure-1.json` as the published build,
and a later `make report` (source=published) evaluated it without a warning. Now each source and run has its own
output folder (paths.output_dir), and every reader checks a sidecar's provenance (sidecars.check).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from tests.conftest import analysis_script, stamp_release
from tests.training_on_the_test_task.test_figures import make_tree
from testtask.paths import output_dir, source_folder
from testtask.pipeline import build, compose, run
from testtask.report.main import load_ledger
from testtask.sidecars import Expected, ProvenanceMismatch, check

PAPER = "training-on-the-test-task"
RUN = "student"  # our own run, with other scores than the release (another seed)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sources")
    make_tree(root / "published" / PAPER, seed=0)
    stamp_release(root / "published" / PAPER)
    make_tree(root / "results" / PAPER / RUN, seed=1)
    return root


def _cfg(root: Path, *extra: str):
    return compose(
        [
            f"paper={PAPER}",
            f"data.dest={root / 'published'}",
            f"results_dir={root / 'results'}",
            f"results_run={RUN}",
            f"figures_dir={root / 'figures'}",
            f"report.out_dir={root / 'report'}",
            *extra,
        ]
    )


def _figure_1_claims(summary: dict) -> list[dict]:
    """The report's verdicts on the claims that read figure-1.json by path."""
    ids = {c.id for c in load_ledger(PAPER).claims if c.ours.file == "figure-1.json"}
    claims = [c for c in summary["papers"][PAPER]["claims"] if c["id"] in ids]
    assert len(claims) == len(ids) >= 5
    return claims


def _theta(figure: Path) -> float:
    panels = json.loads(figure.read_text())["panels"]
    (mmlu,) = [p for p in panels if p["benchmark"] == "mmlu" and not p["adjusted"]]
    return mmlu["theta"]


def _built(figures: Path, source: str) -> Path:
    """The one figure-1.json under `figures` built from `source` (found by its provenance, whatever the layout)."""
    (found,) = [
        p
        for p in figures.rglob("figure-1.json")
        if json.loads(p.read_text())["provenance"]["source"] == source
    ]
    return found


def test_a_results_build_is_never_read_by_the_published_report(root):
    build(_cfg(root, "source=results"), "figure", [1])
    results_figure = _built(root / "figures", "results")

    # The published report before any published build: figure 1 is not built for it (never the results one).
    summary = run(_cfg(root, "action=report", "source=published", "report.require_categories=false"))
    for claim in _figure_1_claims(summary):
        assert claim["status"] == "not computable" and claim["missing"] == ["figure-1.json"], claim

    # Published build, then the results build again (it used to overwrite the published file), then the report:
    # it reads the published sidecar's numbers.
    build(_cfg(root, "source=published"), "figure", [1])
    build(_cfg(root, "source=results"), "figure", [1])
    results_figure, published_figure = (
        _built(root / "figures", "results"),
        _built(root / "figures", "published"),
    )
    assert _theta(published_figure) != _theta(results_figure)  # the two sources differ: the test can tell
    summary = run(_cfg(root, "action=report", "source=published", "report.require_categories=false"))
    (theta,) = [c for c in _figure_1_claims(summary) if c["id"] == "tott.fig1.mmlu.theta"]
    assert theta["value"] == pytest.approx(_theta(published_figure))
    assert (root / "report" / "published" / PAPER / "index.html").is_file()
    assert results_figure.parent == output_dir(root / "figures", "results", RUN, PAPER)
    assert published_figure.parent == output_dir(root / "figures", "published", None, PAPER)


def test_a_results_sidecar_in_the_published_folder_is_refused(root, tmp_path):
    figures = tmp_path / "figures"
    build(_cfg(root, "source=results", f"figures_dir={figures}"), "figure", [1])
    published = output_dir(figures, "published", None, PAPER)
    published.mkdir(parents=True)
    shutil.copy(output_dir(figures, "results", RUN, PAPER) / "figure-1.json", published / "figure-1.json")
    with pytest.raises(ProvenanceMismatch) as err:
        run(
            _cfg(
                root,
                "action=report",
                "source=published",
                f"figures_dir={figures}",
                "report.require_categories=false",
            )
        )
    message = str(err.value)
    assert "figure-1.json was built from source=results (run student)" in message
    assert "the report was asked for source=published" in message


def test_output_folders_per_source_and_run():
    assert source_folder("published", "cpu-mini") == "published"  # results_run names our runs only
    assert source_folder("results", "cpu-mini") == "results-cpu-mini"
    assert source_folder("results", None) == "results"
    assert output_dir("/f", "results", "a", "p") == Path("/f/p/results-a")
    assert output_dir("/r", "published") == Path("/r/published")
    # the other analysis preset's outputs go beside the default's, never into its folder
    assert output_dir("/f", "published", None, "p", "authors") == Path("/f/p/published")
    assert output_dir("/f", "published", None, "p", "paper_text") == Path("/f/p/published.paper_text")
    assert output_dir("/f", "results", "a", "p", "paper_text") == Path("/f/p/results-a.paper_text")
    with pytest.raises(ValueError, match="'mine' is not a valid Protocol"):
        output_dir("/f", "published", None, "p", "mine")
    assert output_dir("/f", "published", None, "p", variant="x=1") == Path("/f/variants/x=1/p/published")
    for source, run_name in (("nonsense", None), ("results", "../x")):
        with pytest.raises(ValueError):
            source_folder(source, run_name)


def _block(source: str, run_name: str | None = None, checksum: str | None = None, **extra) -> dict:
    return {
        "x": 1,
        "provenance": {"source": source, "run": run_name, "data": {"checksum": checksum}, **extra},
    }


def test_check_accepts_the_same_and_refuses_another_source_run_or_data():
    asked = Expected.of("results", "a", "sha256:1", reader="the test")
    assert check("f.json", _block("results", "a", "sha256:1"), asked)["x"] == 1
    assert (
        check("f.json", _block("results", "a", None), asked)["x"] == 1
    )  # no checksum recorded: not compared
    for wrong, said in (
        (_block("published"), "built from source=published, the test was asked for source=results (run a)"),
        (_block("results", "b"), "built from source=results (run b), the test"),
        (_block("results", "a", "sha256:2"), "built from other data"),
    ):
        with pytest.raises(ProvenanceMismatch, match=said.replace("(", r"\(").replace(")", r"\)")):
            check("f.json", wrong, asked)
    # Sidecars built before `run` was recorded: the source is still checked.
    old = {"provenance": {"source": "results", "data": {}}}
    assert check("f.json", old, asked) is old
    with pytest.raises(ProvenanceMismatch):
        check("f.json", old, Expected.of("published"))


def test_a_sidecar_of_the_other_protocol_preset_is_refused():
    text = Expected.of("published", preset="paper_text", reader="the report")
    assert check("f.json", _block("published", protocol="paper_text"), text)["x"] == 1
    with pytest.raises(ProvenanceMismatch) as err:
        check("f.json", _block("published", protocol="authors"), text)
    assert "built from source=published, the report was asked for source=published under " in str(err.value)
    assert "protocol=paper_text" in str(err.value)
    with pytest.raises(
        ProvenanceMismatch, match="built from source=published under protocol=paper_text"
    ) as err:
        check("f.json", _block("published", protocol="paper_text"), Expected.of("published"))
    assert str(err.value).endswith("or read the folder of the source and preset it was built for")
    # built before the preset was recorded: not compared
    assert check("f.json", _block("published"), text)["x"] == 1


def test_a_sidecar_built_with_other_settings_is_refused_naming_them():
    """A variant's sidecar copied into its preset's folder: the reader asks for the preset's fingerprint."""
    asked = Expected.of("published", reader="the report", settings="f" * 64)
    variant = {
        "fingerprint": "a" * 64,
        "preset_fingerprint": "f" * 64,
        "variant": "pretrain_on_test.model.priors.treatment_sigma=2.0",
        "differs": {"pretrain_on_test.model.priors.treatment_sigma": 2.0},
    }
    with pytest.raises(ProvenanceMismatch) as err:
        check("figure-3.json", _block("published", settings=variant), asked)
    assert "pretrain_on_test.model.priors.treatment_sigma=2.0" in str(err.value)
    stale = {"fingerprint": "b" * 64, "preset_fingerprint": "b" * 64, "variant": None, "differs": {}}
    with pytest.raises(ProvenanceMismatch, match="the preset's settings changed since it was built"):
        check("figure-3.json", _block("published", settings=stale), asked)
    same = {"fingerprint": "f" * 64, "preset_fingerprint": "f" * 64, "variant": None, "differs": {}}
    assert check("figure-3.json", _block("published", settings=same), asked)["x"] == 1


def test_a_paper_text_build_goes_to_its_own_folder_and_says_so(root, tmp_path):
    figures = tmp_path / "figures"
    build(
        _cfg(root, "source=published", f"figures_dir={figures}", "protocol=paper_text"),
        "figure",
        [1],
    )
    (built,) = figures.rglob("figure-1.json")
    assert built.parent == output_dir(figures, "published", None, PAPER, "paper_text")
    assert json.loads(built.read_text())["provenance"]["protocol"] == "paper_text"


def test_a_sidecar_without_provenance_is_accepted_with_a_warning(caplog):
    """The documented decision (sidecars.py): hand-written sidecars have no block; they are read, loudly."""
    with caplog.at_level(logging.WARNING, logger="testtask.sidecars"):
        assert check("hand-written.json", {"x": 1}, Expected.of("published")) == {"x": 1}
    assert "hand-written.json has no provenance block" in caplog.text


def test_compare_sidecars_refuses_a_pair_from_two_sources(tmp_path, capsys):
    compare = analysis_script("compare_sidecars")
    for side, block in (("old", _block("published")), ("new", _block("results", "a"))):
        (tmp_path / side).mkdir()
        (tmp_path / side / "figure-1.json").write_text(json.dumps(block))
    assert compare.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 2
    assert "was built from source=results (run a)" in capsys.readouterr().out
    (tmp_path / "new" / "figure-1.json").write_text(json.dumps(_block("published")))
    assert compare.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 0
    assert (
        compare.main([str(tmp_path / "old"), str(tmp_path / "new"), "--source", "results", "--run", "a"]) == 2
    )


def test_the_notebook_refuses_a_sidecar_of_another_source(tmp_path, monkeypatch):
    from testtask.notebook import Walkthrough

    monkeypatch.setenv("TESTTASK_NOTEBOOK_FIGURES", str(tmp_path / "figures"))
    walk = Walkthrough(PAPER, {})
    assert walk.out == output_dir(tmp_path / "figures", "published", None, PAPER)
    walk.out.mkdir(parents=True)
    (walk.out / "figure-1.json").write_text(json.dumps(_block("results", "cpu-mini")))
    with pytest.raises(ProvenanceMismatch, match="the notebook was asked for source=published"):
        walk.numbers("figure-1")


def test_a_variant_build_leaves_the_presets_folder_alone_and_the_report_refuses_it_there(tmp_path, caplog):
    """A build with a changed setting goes to its own variant folder, named after the override, and says so; its
    sidecar copied into the preset's folder is refused by the report, naming the setting."""
    root = tmp_path / "sources"
    make_tree(root / "published" / PAPER, seed=0)
    stamp_release(root / "published" / PAPER)
    (root / "results").mkdir()
    build(_cfg(root, "source=published"), "figure", [1])
    preset = output_dir(root / "figures", "published", None, PAPER)
    before = {p.name: p.read_bytes() for p in preset.iterdir()}
    override = "training_on_the_test_task.regression.alpha_level=0.1"
    with caplog.at_level(logging.INFO, logger="testtask"):
        build(_cfg(root, "source=published", override), "figure", [1])
    said = f"settings differ from those of protocol=authors ({override}): outputs go to the variant folder {override}"
    assert said in caplog.text
    assert {p.name: p.read_bytes() for p in preset.iterdir()} == before  # byte for byte
    variant = output_dir(root / "figures", "published", None, PAPER, variant=override)
    settings = json.loads((variant / "figure-1.json").read_text())["provenance"]["settings"]
    assert settings["variant"] == override
    assert settings["differs"] == {"training_on_the_test_task.regression.alpha_level": 0.1}
    assert settings["fingerprint"] != settings["preset_fingerprint"]
    shutil.copy(variant / "figure-1.json", preset / "figure-1.json")
    with pytest.raises(ProvenanceMismatch, match=r"training_on_the_test_task\.regression\.alpha_level=0\.1"):
        run(_cfg(root, "action=report", "source=published", "report.require_categories=false"))
