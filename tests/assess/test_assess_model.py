"""`assess-model` and source=published+results on the authors' release: a published model copied under new names
(one exact copy, one with raised base scores) into a results run laid over the release."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.assess.raised import TBT, TOTT, make_run, make_tbt_run
from tests.conftest import mirror_dir
from testtask.lm.release import conflicts
from testtask.pipeline import UsageError, build, compose, run
from testtask.sources import OverlayConflict

SOURCE, TBT_SOURCE = "llama-2-7b", "EleutherAI/pythia-1b-deduped"  # a published older model of each release
RAISED, COPY, RUN, DELTA = "student-7b", "copy-7b", "student", 0.05


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """Both releases fetched (`make data`) into a temporary folder."""
    real_mirror = mirror_dir()
    if real_mirror is None:
        pytest.skip("the published-data mirror (../shared/data) is not available")
    for paper in (TOTT, TBT):
        if not (real_mirror / paper.replace("-", "_")).is_dir():
            pytest.skip(f"{paper} not in the mirror")
    data = tmp_path_factory.mktemp("published")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TESTTASK_DATA_MIRROR", str(real_mirror))
        for paper in (TOTT, TBT):
            run(compose([f"paper={paper}", f"data.dest={data}", "action=data"]))
    return data


def _entry(name: str) -> dict:
    """The registry entry of `name` (train date moved to the newer cohort), from the shipped registry."""
    models = OmegaConf.load(Path("conf/training_on_the_test_task/models/paper.yaml"))
    entry = OmegaConf.to_container(models.base[name])
    return {key: entry[key] for key in ("params_b", "tokens_t")} | {"train_date": "2024-06"}


@pytest.fixture(scope="module")
def assessed(release, tmp_path_factory) -> tuple[Path, dict[str, dict], str]:
    """assess-model run once on both copies; the pages' folder, their JSON and what it printed."""
    root = tmp_path_factory.mktemp("assess")
    results = root / "results"
    downstream = {
        b
        for c in OmegaConf.load("conf/train_before_test/analysis.yaml").categories.values()
        for b in c.benchmarks
    }
    for name, delta in ((RAISED, DELTA), (COPY, 0.0)):
        make_run(release, results, RUN, SOURCE, name, delta)
    make_tbt_run(release, results, RUN, TBT_SOURCE, RAISED, DELTA, downstream)
    model_file = root / "models.yaml"
    model_file.write_text(json.dumps({"base": {RAISED: _entry(SOURCE), COPY: _entry(SOURCE)}}))
    cfg = compose(
        [
            "action=assess-model",
            "source=published+results",
            f"data.dest={release}",
            f"results_dir={results}",
            f"results_run={RUN}",
            f"figures_dir={root / 'figures'}",
            f"assess.model_file={model_file}",
        ]
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        pages = run(cfg)
    folder = root / "figures" / "assess-model" / f"published+results-{RUN}"  # per source and run
    return folder, {p["model"]: p for p in pages}, printed.getvalue()


def _by_benchmark(page: dict) -> dict[str, dict]:
    return {r["benchmark"]: r for r in page["training_on_the_test_task"]}


def test_page_written_and_verdict_printed(assessed):
    folder, pages, printed = assessed
    for suffix in ("png", "json", "md"):
        assert (folder / RAISED / f"{RAISED}.{suffix}").stat().st_size > 0
    page = json.loads((folder / RAISED / f"{RAISED}.json").read_text())
    assert page["verdict"] == pages[RAISED]["verdict"]
    assert f"MMLU: {RAISED} scores" in printed and "the adjustment removes" in printed
    assert page["verdict"][0] in (folder / RAISED / f"{RAISED}.md").read_text()
    # both roots of the overlay, each with its checksum
    data = page["provenance"]["data"][TOTT]
    assert [Path(d["root"]).name for d in data] == [TOTT, RUN]
    assert all(d["checksum"].startswith("sha256:") for d in data)
    # the model file the entries came from, by its SHA-256 (another file would assess other entries)
    import hashlib

    read = page["provenance"]["model_file"]
    model_file = folder.parents[2] / "models.yaml"
    assert (
        read["path"] == str(model_file)
        and read["sha256"] == hashlib.sha256(model_file.read_bytes()).hexdigest()
    )


def test_residuals_before_and_after_adjustment(assessed):
    _, pages, _ = assessed
    raised, copy = _by_benchmark(pages[RAISED])["mmlu"], _by_benchmark(pages[COPY])["mmlu"]
    # The older models' fit leaves both copies out, so the raise moves the residual by exactly DELTA ...
    before = raised["before"]["residual"]["residual"] - copy["before"]["residual"]["residual"]
    assert before == pytest.approx(DELTA, abs=1e-9)
    # ... and after fine-tuning on the test task (the same fine-tuned files) by nothing: the adjustment removes it.
    assert raised["adjusted"]["residual"]["residual"] == pytest.approx(
        copy["adjusted"]["residual"]["residual"]
    )
    assert raised["before"]["residual"]["residual"] > raised["adjusted"]["residual"]["residual"]
    removed = raised["removed"]
    assert removed["removed"] > 0 and removed["ci"][0] < removed["removed"] < removed["ci"][1]
    lo, hi = raised["before"]["residual"]["ci"]
    assert lo < raised["before"]["residual"]["residual"] < hi


def test_theta_with_and_without_the_model(assessed):
    _, pages, _ = assessed
    raised, copy = _by_benchmark(pages[RAISED])["mmlu"], _by_benchmark(pages[COPY])["mmlu"]
    assert raised["before"]["theta_without"] == copy["before"]["theta_without"]  # the published cohort alone
    assert raised["before"]["theta_with"]["n_models"] == raised["before"]["theta_without"]["n_models"] + 1
    # a newer model scoring DELTA more pulls the newer cohort up: θ̂ grows by a positive amount
    assert raised["before"]["theta_with"]["theta"] > copy["before"]["theta_with"]["theta"]


def test_train_before_test_ranks(assessed):
    _, pages, printed = assessed
    ranks = pages[RAISED]["train_before_test"]["regimes"]
    assert set(ranks) == {"direct", "train_before_test"}
    assert ranks["direct"]["mean_rank"] <= ranks["train_before_test"]["mean_rank"]
    assert "Train-before-test, student-7b: Direct evaluation: mean rank" in printed
    assert pages[COPY]["train_before_test"] is None  # no scores of it in the run: said, not invented


def test_overlay_figure_1_reads_both_roots(release, tmp_path):
    results = tmp_path / "results"
    make_run(release, results, RUN, SOURCE, RAISED, DELTA)
    # the run's own model joins the registry as the user's own (conf/user/models.yaml): a setting the paper reads,
    # so the outputs go to the variant named after the file, within it to the source's folder
    user = tmp_path / "user"
    user.mkdir()
    fields = _entry(SOURCE) | {"paper_name": RAISED, "family": RAISED, "language": "EN", "hf_repo": None}
    (user / "models.yaml").write_text(json.dumps({"base": {RAISED: fields}}))
    cfg = compose(
        [
            "paper=training-on-the-test-task",
            "source=published+results",
            f"data.dest={release}",
            f"results_dir={results}",
            f"results_run={RUN}",
            f"figures_dir={tmp_path / 'figures'}",
            f"user_dir={user}",
        ]
    )
    build(cfg, "figure", [1])
    # the overlay's outputs have a folder of their own (paths.output_dir), never the release's
    variant = tmp_path / "figures" / "variants" / "own=models"
    assert not (variant / TOTT / "published").exists() and not (tmp_path / "figures" / TOTT).exists()
    figure = json.loads((variant / TOTT / f"published+results-{RUN}" / "figure-1.json").read_text())
    points = {p["model"] for panel in figure["panels"] for p in panel["points"]}
    assert RAISED in points and SOURCE in points
    data = figure["provenance"]["data"]
    assert Path(data["published"]["root"]).name == TOTT and Path(data["results"]["root"]).name == RUN
    assert data["published"]["checksum"] != data["results"]["checksum"]


def test_overlay_conflict_names_both_files(release, tmp_path):
    results = tmp_path / "results"
    published = release / TOTT / "evaluations" / "base" / f"{SOURCE}-mmlu.json"
    copied = results / TOTT / RUN / "evaluations" / "base" / published.name
    copied.parent.mkdir(parents=True)
    copied.write_bytes(published.read_bytes())
    cfg = compose(
        [
            "paper=training-on-the-test-task",
            "source=published+results",
            f"data.dest={release}",
            f"results_dir={results}",
            f"results_run={RUN}",
            f"figures_dir={tmp_path / 'figures'}",
        ]
    )
    with pytest.raises(OverlayConflict) as err:
        build(cfg, "figure", [1])
    assert str(published) in str(err.value) and str(copied) in str(err.value)


def test_a_conflict_written_after_a_clean_check_is_found(release, tmp_path):
    """The overlay check is remembered per pair of trees, and a result written into the run since is seen."""
    published = release / TOTT / "evaluations"
    run = tmp_path / "run"
    (run / "base").mkdir(parents=True)
    conflicts(published, run)  # nothing in common yet
    source = published / "base" / f"{SOURCE}-mmlu.json"
    staged = tmp_path / "staged.json"
    staged.write_bytes(source.read_bytes())
    staged.rename(run / "base" / source.name)  # results are written atomically, by rename
    with pytest.raises(OverlayConflict, match=f"{SOURCE}-mmlu.json"):
        conflicts(published, run)


def test_overlay_refused_for_a_paper_without_it(tmp_path):
    cfg = compose(["paper=downstream-predictability", "source=published+results", f"results_dir={tmp_path}"])
    with pytest.raises(UsageError, match="not supported for paper downstream-predictability"):
        build(cfg, "figure", [3])
