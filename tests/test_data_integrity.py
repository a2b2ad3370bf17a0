# ruff: noqa: F811 - the fetch fixtures `mirror` and `checksums` are imported from test_data_fetch
"""The mirror is never shared, failed fetches leave no analysable tree, a figure that was asked for and not built is
an error, corrupt caches are refitted, outputs honour the umask."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SMALL_SAMPLER, model_spec, small_model_data, tmp_config, write_accuracies
from tests.test_data_fetch import CSV, SOURCES, checksums, mirror  # noqa: F401 - fixtures
from testtask.data import fetch as F
from testtask.io import atomic_write_json, atomic_write_text
from testtask.pipeline import UsageError, run

POT = "pretrain-on-test"
REL = "accuracies_from_paper/m50/n50/bert/ag_news/accuracies.csv"
FAST = ["sampler.draws=100", "sampler.tune=100", "sampler.chains=2", "sampler.progressbar=false"]


def verify_release(*args, **kwargs):
    from testtask.data.release import verify_release as verify  # imported here: absent before d6a26a1

    return verify(*args, **kwargs)


def _release_error() -> type[Exception]:
    return F.ReleaseError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _inodes(root: Path) -> set[tuple[int, int]]:
    return {(p.stat().st_dev, p.stat().st_ino) for p in root.rglob("*") if p.is_file()}


def _fetch(dest: Path, mirror: Path, checksums: Path, paper: str = POT) -> dict:
    return F.fetch([paper], SOURCES, dest, mirror, checksums_dir=checksums)[paper]


# ------------------------------------------------------------------------------------ never share the mirror


def test_fetched_files_share_no_inode_with_the_mirror_and_are_read_only(
    tmp_path: Path, mirror: Path, checksums: Path
) -> None:
    dest = tmp_path / "published"
    F.fetch(list(SOURCES), SOURCES, dest, mirror, checksums_dir=checksums)
    assert not _inodes(dest) & _inodes(mirror)
    assert stat.S_IMODE((dest / POT).stat().st_mode) == 0o777 & ~_umask()
    files = [p for p in dest.rglob("*") if p.is_file() and p.name != F.STAMP_NAME]
    assert files and all(not stat.S_IMODE(p.stat().st_mode) & 0o222 for p in files)

    # A pandas-style in-place edit of a fetched file (root ignores the read-only bit, so force it): the mirror
    # keeps its bytes, and the next fetch repairs the copy.
    target = dest / POT / REL
    target.chmod(0o644)
    with open(target, "w") as handle:
        handle.write("base,extra\n0.9,0.9\n")
    assert (mirror / "pretrain_on_test" / REL).read_text() == CSV
    repaired = _fetch(dest, mirror, checksums)
    assert repaired["copied"] == 1 and target.read_text() == CSV


def test_a_tree_hard_linked_by_an_older_fetch_becomes_private_copies(
    tmp_path: Path, mirror: Path, checksums: Path
) -> None:
    dest = tmp_path / "published"
    _fetch(dest, mirror, checksums)
    for path in (dest / POT).rglob("accuracies.csv"):  # what `_link_or_copy` used to leave
        rel = path.relative_to(dest / POT)
        path.unlink()
        os.link(mirror / "pretrain_on_test" / rel, path)
    assert _inodes(dest) & _inodes(mirror)
    report = _fetch(dest, mirror, checksums)
    assert report["status"] == "fetched" and len(report["relinked"]) == 3
    assert not _inodes(dest) & _inodes(mirror)
    verify_release(dest / POT, POT, checksums_dir=checksums)


def test_unchanged_refetch_keeps_the_tree_in_place(tmp_path: Path, mirror: Path, checksums: Path) -> None:
    dest = tmp_path / "published"
    _fetch(dest, mirror, checksums)
    before = _inodes(dest / POT)
    again = _fetch(dest, mirror, checksums)
    assert again["status"] == "up-to-date" and again["copied"] == 0
    assert _inodes(dest / POT) == before
    assert [p.name for p in dest.iterdir()] == [POT]  # no staging or old folders left behind


# ----------------------------------------------------------------------------- no analysable partial tree


def test_failed_fetch_keeps_the_previous_good_tree(tmp_path: Path, mirror: Path, checksums: Path) -> None:
    dest = tmp_path / "published"
    _fetch(dest, mirror, checksums)
    stamp = (dest / POT / F.STAMP_NAME).read_text()
    gpt2 = mirror / "pretrain_on_test" / "accuracies_from_paper/m50/n50/gpt2/ag_news/accuracies.csv"
    gpt2.write_text(CSV.replace("0.6,", "0.9,"))
    extra = mirror / "pretrain_on_test" / "accuracies_from_paper/m50/n50/gpt2/yelp/accuracies.csv"
    extra.parent.mkdir(parents=True)
    extra.write_text(CSV)
    with pytest.raises(F.ChecksumError, match="gpt2/ag_news"):
        _fetch(dest, mirror, checksums)
    assert (dest / POT / F.STAMP_NAME).read_text() == stamp
    verify_release(dest / POT, POT, checksums_dir=checksums)  # still the complete, verified tree
    assert not (dest / POT / "accuracies_from_paper/m50/n50/gpt2/yelp").exists()
    assert sorted(p.name for p in dest.iterdir()) == [POT]


def test_failed_first_fetch_leaves_nothing(tmp_path: Path, mirror: Path, checksums: Path) -> None:
    dest = tmp_path / "published"
    (mirror / "pretrain_on_test" / "accuracies_from_paper/m50/n50/gpt2/ag_news/accuracies.csv").write_text(
        "x\n"
    )
    with pytest.raises(F.ChecksumError):
        _fetch(dest, mirror, checksums)
    assert not dest.exists() or not any(dest.iterdir())


def _cli(tmp_path: Path, *extra: str):
    return tmp_config(tmp_path, "seed=1", *FAST, *extra)


def _partial_tree(tmp_path: Path) -> Path:
    """What the old fetch left after a checksum error: some files, no stamp."""
    root = tmp_path / "published" / POT
    write_accuracies(
        root, "accuracies_from_paper", m=50, n=50, lm_types=["bert", "gpt2"], datasets=3, subsamples=4
    )
    return root


def test_cli_refuses_a_tree_without_a_stamp(tmp_path: Path) -> None:
    _partial_tree(tmp_path)
    with pytest.raises(
        UsageError, match=r"refusing to analyse: .*no \.fetched\.json.*make data PAPER=pretrain"
    ):
        run(_cli(tmp_path, "action=table", "table=1"))
    assert not (tmp_path / "figures").exists()


@pytest.mark.parametrize("damage", ["edited", "added", "removed"])
def test_cli_refuses_a_release_changed_since_the_fetch(
    tmp_path: Path, mirror: Path, checksums: Path, damage: str
) -> None:
    dest = tmp_path / "published"
    _fetch(dest, mirror, checksums)
    target = dest / POT / REL
    if damage == "edited":
        target.chmod(0o644)
        target.write_text(CSV.replace("0.5,", "0.1,"))
    elif damage == "added":
        extra = dest / POT / "accuracies_from_paper/m50/n50/bert/yelp/accuracies.csv"
        extra.parent.mkdir(parents=True)
        extra.write_text(CSV)
    else:
        target.unlink()
    words = {"edited": "changed since the fetch", "added": "not written by the fetch", "removed": "are gone"}
    with pytest.raises(_release_error(), match=words[damage]):
        verify_release(dest / POT, POT, checksums_dir=checksums)


def test_a_release_as_fetched_is_verified_without_hashing_it_again(
    tmp_path: Path, mirror: Path, checksums: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every figure verifies the releases it reads: files with the size and mtime the stamp recorded are not hashed
    (a second for training-on-the-test-task's release); a file with another mtime is."""
    from testtask.data import release

    dest = tmp_path / "published"
    _fetch(dest, mirror, checksums)
    hashed: list[Path] = []
    digest = release.file_digest
    monkeypatch.setattr(release, "file_digest", lambda path, *a: hashed.append(path) or digest(path, *a))
    verify_release(dest / POT, POT, checksums_dir=checksums)
    assert hashed == []
    target = dest / POT / REL
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 1))
    (dest / POT / F.STAMP_NAME).touch()  # a new stamp time: verified again, not from this process's cache
    verify_release(dest / POT, POT, checksums_dir=checksums)
    assert hashed == [target]


def test_release_against_a_changed_manifest_is_refused(tmp_path: Path, mirror: Path, checksums: Path) -> None:
    dest = tmp_path / "published"
    _fetch(dest, mirror, checksums)
    manifest = F.load_manifest(POT, checksums)
    manifest[REL] = "0" * 64
    F.write_manifest(POT, manifest, checksums, merge=False)
    with pytest.raises(_release_error(), match="committed checksum manifest"):
        verify_release(dest / POT, POT, checksums_dir=checksums)


# -------------------------------------------------------------------------- nothing built is not a success


def test_empty_mirror_then_a_numbered_table_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "mirror"
    empty.mkdir()
    monkeypatch.setenv("TESTTASK_DATA_MIRROR", str(empty))
    report = run(_cli(tmp_path, "action=data"))
    assert report[POT]["status"] == "skipped"
    with pytest.raises(SystemExit, match="not built: table 1 of pretrain-on-test") as info:
        run(_cli(tmp_path, "action=table", "table=1"))
    assert info.value.code != 0
    with pytest.raises(SystemExit, match="nothing was built"):
        run(_cli(tmp_path, "action=tables"))


def test_all_figures_build_what_they_can_and_say_what_was_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "results" / POT
    write_accuracies(
        root,
        "accuracies_zero_shot",
        m=100,
        n=100,
        lm_types=["mistral-qlora-zero-shot"],
        datasets=3,
        subsamples=4,
    )
    cfg = _cli(tmp_path, "action=tables", "source=results")  # results_dir under tmp_path, results_run=null
    with caplog.at_level(logging.INFO, logger="testtask"):
        built = run(cfg)
    assert built, "some table is buildable from zero-shot results alone"
    summary = [r.getMessage() for r in caplog.records if "built," in r.getMessage()]
    assert len(summary) == 1 and f"{len(built)} built" in summary[0] and "skipped table 1" in summary[0]


# ------------------------------------------------------------------------------------ corrupt posterior cache


def test_truncated_posterior_cache_is_named_and_refitted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from testtask.pretrain_on_test.fits import fit_cached

    data = small_model_data(0.1, seed=0)
    spec = model_spec(backend="marginal")
    cache = tmp_path / "cache"
    first = fit_cached(data, spec, SMALL_SAMPLER, 3, cache)
    (path,) = cache.glob("*.nc")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 3])
    with caplog.at_level(logging.WARNING):
        again = fit_cached(data, spec, SMALL_SAMPLER, 3, cache)
    assert str(path) in caplog.text and "fitting again" in caplog.text
    assert path.stat().st_size > len(raw) // 3  # written again, whole
    name = next(iter(first.idata.posterior.data_vars))
    assert np.allclose(again.idata.posterior[name].values, first.idata.posterior[name].values)  # same seed


# ----------------------------------------------------------------------------------------------- the umask


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_outputs_honour_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        text = atomic_write_text(tmp_path / "a" / "x.txt", "x")
        obj = atomic_write_json(tmp_path / "a" / "x.json", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE(text.stat().st_mode) == mode
    assert stat.S_IMODE(obj.stat().st_mode) == mode
    assert [p.name for p in (tmp_path / "a").iterdir() if p.name.startswith(".")] == []


def test_figure_outputs_are_readable_by_the_group(tmp_path: Path) -> None:
    from testtask.outputs import save_table

    old = os.umask(0o022)
    try:
        import pandas as pd

        paths = save_table(pd.DataFrame({"a": [1]}), tmp_path, "t")
    finally:
        os.umask(old)
    assert {stat.S_IMODE(p.stat().st_mode) for p in paths.values()} == {0o644}
