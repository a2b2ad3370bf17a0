"""Every sidecar built through the pipeline says what built it: git commit, seed, source, the data's checksum, the
command; a figure drawn without part of its inputs says so on itself; compare_sidecars leaves provenance out."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import analysis_script, built, stamp_release, tmp_config, write_accuracies
from testtask import provenance
from testtask.context import Context
from testtask.io import atomic_write_json
from testtask.outputs import NOTE_GID, save_numbers
from testtask.pipeline import run
from testtask.pretrain_on_test import boost_bias_figures

FAST = ["sampler.draws=200", "sampler.tune=200", "sampler.chains=2", "sampler.progressbar=false", "seed=5"]


def _config(tmp_path: Path, *extra: str):
    return tmp_config(tmp_path, "pretrain_on_test.permutation_test.permutations=50", *FAST, *extra)


def _sidecar(tmp_path: Path, name: str, folder: str = "results") -> dict:
    """A sidecar built from source `folder` (`results`, results_run=null, or `published`) with the test's small
    settings (a variant folder of the preset's: pipeline.variant)."""
    return json.loads((built(_config(tmp_path, f"source={folder}")) / name).read_text())


def _few_shot(root: Path, ns: tuple[int, ...] = (50,)) -> None:
    for n in ns:
        write_accuracies(
            root,
            "accuracies_from_paper",
            m=50,
            n=n,
            lm_types=["bert", "gpt2"],
            datasets=3,
            subsamples=4,
            seed=n,
        )


def test_table_sidecars_carry_provenance_and_the_checksum_follows_the_data(tmp_path):
    results = tmp_path / "results" / "pretrain-on-test"
    _few_shot(results)
    run(_config(tmp_path, "action=tables", "source=results"))
    first = _sidecar(tmp_path, "table-1.json")
    block = first["provenance"]
    commit, dirty = provenance.code_git_state()
    assert block["git_commit"] == commit and block["dirty"] == dirty
    assert len(block["git_commit"]) == 40, "the tests run from a git checkout"
    assert block["seed"] == 5 and block["source"] == "results"
    assert block["testtask_version"] and isinstance(block["command"], str)
    data = block["data"]
    assert data["present"] and data["checksum"].startswith("sha256:") and data["files"] == 6
    assert data["root"] == str(results)  # outside the repository: the path as it is
    assert data["checksum"] == "sha256:" + provenance.tree_digest(results)[0]
    # Table 2 (written through save_numbers too) has the same block; the existing keys are all still there.
    assert _sidecar(tmp_path, "table-2.json")["provenance"]["data"] == data
    assert {"collection", "units", "rows"} <= set(first)

    # Built again on the same data: the same checksum, though every file's mtime changed.
    for path in results.rglob("*.csv"):
        path.touch()
    run(_config(tmp_path, "action=table", "table=1", "source=results"))
    assert _sidecar(tmp_path, "table-1.json")["provenance"]["data"]["checksum"] == data["checksum"]

    # One input file changes: another checksum.
    one = sorted(results.rglob("accuracies.csv"))[0]
    frame = pd.read_csv(one)
    frame.loc[0, "test"] = 1.0 - frame.loc[0, "test"]
    frame.to_csv(one, index=False)
    run(_config(tmp_path, "action=table", "table=1", "source=results"))
    assert _sidecar(tmp_path, "table-1.json")["provenance"]["data"]["checksum"] != data["checksum"]


def test_published_release_is_identified_by_its_fetch_stamp(tmp_path):
    release = tmp_path / "published" / "pretrain-on-test"
    _few_shot(release)
    stamp_release(release)
    run(_config(tmp_path, "action=table", "table=1"))
    data = _sidecar(tmp_path, "table-1.json", "published")["provenance"]["data"]
    hashes = json.loads((release / ".fetched.json").read_text())["hashes"]
    canonical = json.dumps(hashes, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert data["checksum"] == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert data["files"] == len(hashes) == 6 and data["fetched_from"] == "test:synthetic"
    assert _sidecar(tmp_path, "table-1.json", "published")["provenance"]["source"] == "published"


def test_figure_3_without_m_100_says_so_on_the_figure(tmp_path, monkeypatch):
    _few_shot(tmp_path / "results" / "pretrain-on-test")
    drawn: list[str] = []
    real = boost_bias_figures.save_figure

    def spy(fig, out_dir, name, numbers, notes=()):
        paths = real(fig, out_dir, name, numbers, notes=notes)  # draws the notes, then saves
        drawn.extend(t.get_text() for t in fig.texts if t.get_gid() == NOTE_GID)
        return paths

    monkeypatch.setattr(boost_bias_figures, "save_figure", spy)
    run(_config(tmp_path, "action=figure", "figure=3", "source=results"))
    assert drawn == ["m = 100 not in the data: its panels are absent"]
    numbers = _sidecar(tmp_path, "figure-3.json")
    assert numbers["missing"] == drawn
    assert numbers["units"]["average_difference"].startswith("fraction (0.01 = 1 percentage point)")
    assert numbers["provenance"]["source"] == "results" and numbers["provenance"]["seed"] == 5


def _context(tmp_path: Path) -> Context:
    data = tmp_path / "data" / "toy"
    data.mkdir(parents=True)
    (data / "a.txt").write_text("a")
    return Context("toy", "results", data, tmp_path / "figures" / "toy", {}, 1)


def _stamp(ctx: Context) -> provenance.Stamp:
    return provenance.Stamp(ctx.paper, ctx.source, ctx.seed, ctx.data_root, ctx.out_dir, "abc", False, "cmd")


def test_sidecars_are_stamped_only_inside_a_build_and_only_under_its_output_folder(tmp_path):
    ctx = _context(tmp_path)
    save_numbers(ctx.out_dir / "plain.json", {"x": 1})
    assert json.loads((ctx.out_dir / "plain.json").read_text()) == {"x": 1}
    with provenance.stamping(_stamp(ctx)):
        save_numbers(ctx.out_dir / "table-1.json", {"x": 1})
        atomic_write_json(ctx.out_dir / "table-3.json", {"x": 3})  # a writer not converted to save_numbers
        atomic_write_json(tmp_path / "cache" / "fit.json", {"x": 4})  # not a sidecar
    for name in ("table-1.json", "table-3.json"):
        block = json.loads((ctx.out_dir / name).read_text())["provenance"]
        assert block["git_commit"] == "abc" and block["seed"] == 1 and block["command"] == "cmd"
        assert block["data"]["files"] == 1
    assert "provenance" not in json.loads((tmp_path / "cache" / "fit.json").read_text())


def test_other_papers_data_read_through_the_context_are_listed(tmp_path):
    ctx = _context(tmp_path)
    other = tmp_path / "data" / "other"
    other.mkdir()
    (other / "b.txt").write_text("b")
    with provenance.stamping(_stamp(ctx)) as stamp:
        assert ctx.paper_root("other") == other
        block = stamp.block()
    assert block["data"]["other_papers"]["other"]["checksum"] == "sha256:" + provenance.tree_digest(other)[0]
    assert block["data"]["checksum"] != block["data"]["other_papers"]["other"]["checksum"]


def test_tree_digest_leaves_dot_files_out(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    before = provenance.tree_digest(tmp_path)
    (tmp_path / ".all_results.lock").write_text("")
    assert provenance.tree_digest(tmp_path) == before == (provenance.tree_digest(tmp_path)[0], 1)


def test_tree_digest_reads_a_tree_below_a_dot_folder_and_leaves_out_named_folders(tmp_path):
    """Only names below the root count, so a tree under `~/.work/` is read whole."""
    root = tmp_path / ".work" / "package"
    (root / "__pycache__").mkdir(parents=True)
    (root / "module.py").write_text("x = 1\n")
    (root / "__pycache__" / "module.pyc").write_bytes(b"compiled")
    digest, files = provenance.tree_digest(root, leave_out={"__pycache__"})
    assert files == 1 and provenance.tree_digest(root)[1] == 2
    (root / "__pycache__" / "module.pyc").write_bytes(b"compiled again")
    assert provenance.tree_digest(root, leave_out={"__pycache__"}) == (digest, 1)
    (root / "module.py").write_text("x = 2\n")
    assert provenance.tree_digest(root, leave_out={"__pycache__"})[0] != digest


@pytest.fixture(scope="module")
def compare_sidecars():
    return analysis_script("compare_sidecars")


def test_compare_sidecars_leaves_provenance_out_unless_asked(tmp_path, compare_sidecars, capsys):
    for side, commit in (("old", None), ("new", "abc")):
        numbers = {"value": 1.0, **({"provenance": {"git_commit": commit}} if commit else {})}
        (tmp_path / side).mkdir()
        (tmp_path / side / "figure-1.json").write_text(json.dumps(numbers))
    (tmp_path / "newer").mkdir()
    (tmp_path / "newer" / "figure-1.json").write_text(
        json.dumps({"value": 1.0, "provenance": {"git_commit": "d"}})
    )
    assert compare_sidecars.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 0
    assert "0 difference(s), 0 added key(s)" in capsys.readouterr().out
    assert compare_sidecars.main([str(tmp_path / "new"), str(tmp_path / "newer")]) == 0
    assert compare_sidecars.main([str(tmp_path / "new"), str(tmp_path / "newer"), "--with-provenance"]) == 1
    assert "changed provenance.git_commit" in capsys.readouterr().out


def test_figure_9_drawn_at_another_m_says_so(tmp_path, monkeypatch):
    """Figure 9's (m, n) = (100, 200) is not in the data: the closest configuration is drawn, and said to be."""
    from testtask.pretrain_on_test import model_check_figures

    _few_shot(tmp_path / "results" / "pretrain-on-test")
    drawn: list[str] = []
    real = model_check_figures.save_figure

    def spy(fig, out_dir, name, numbers, notes=()):
        paths = real(fig, out_dir, name, numbers, notes=notes)
        drawn.extend(t.get_text() for t in fig.texts if t.get_gid() == NOTE_GID)
        return paths

    monkeypatch.setattr(model_check_figures, "save_figure", spy)
    run(_config(tmp_path, "action=figure", "figure=9", "source=results"))
    assert drawn == ["m = 100, n = 200 (the paper's) not in the data: drawn at m = 50, n = 50"]
    numbers = _sidecar(tmp_path, "figure-9.json")
    assert (numbers["m"], numbers["n"]) == (50, 50) and numbers["notes"] == drawn
    assert set(numbers["units"]) == {"mean_abs_error", "coverage_89", "beta"}
