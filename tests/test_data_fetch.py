"""`make data`: mirror copy, download from a fake GitHub tarball, checksum verification."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tarfile
import urllib.error
from pathlib import Path

import pytest
import yaml

from tests.conftest import go_offline, tmp_config
from testtask.data import fetch as F

REPO_ROOT = Path(__file__).resolve().parents[1]

SOURCES = {
    "pretrain-on-test": {
        "repo": "kddubey/pretrain-on-test",
        "commit": "a" * 40,
        "subdir": "analysis",
        "mirror_subdir": "pretrain_on_test",
        "include": ["**/accuracies.csv"],
        "json_drop_keys": [],
    },
    "training-on-the-test-task": {
        "repo": "socialfoundations/training-on-the-test-task",
        "commit": "b" * 40,
        "subdir": "notebooks/evaluations",
        "mirror_subdir": "training_on_the_test_task/evaluations",
        "dest_subdir": "evaluations",
        "include": ["**/*.json"],
        "json_drop_keys": ["configs", "pretty_env_info"],
    },
    "train-before-test": {
        "repo": "socialfoundations/lm-harmony",
        "commit": "c" * 40,
        "subdir": "notebooks",
        "mirror_subdir": "train_before_test",
        "include": ["all_results.json"],
        "json_drop_keys": [],
    },
}

CSV = "base,extra,test,majority,num_classes,majority_all\n0.5,0.6,0.61,0.25,4,0.25\n"
CSVS = {
    "accuracies_from_paper/m50/n50/bert/ag_news/accuracies.csv": CSV,
    "accuracies_from_paper/m50/n50/gpt2/ag_news/accuracies.csv": CSV.replace("0.61", "0.62"),
    "accuracies_zero_shot/m100/n100/mistral-qlora-zero-shot/ag_news/accuracies.csv": CSV.replace(
        "0.5,", "0.4,"
    ),
}
# Upstream lm-eval output, with the bulky keys the mirror drops.
EVAL = {
    "results": {"mmlu": {"acc,none": 0.5, "alias": "mmlu"}},
    "n-shot": {"mmlu": 5},
    "configs": {"mmlu": {"task": "mmlu", "num_fewshot": 5}},
    "pretty_env_info": "PyTorch version: 2.1\nCUDA: 12.1",
    "git_hash": None,
}
TRIMMED = {k: v for k, v in EVAL.items() if k not in ("configs", "pretty_env_info")}
HARMONY = {
    "train_before_test": {"mnli": {"google/gemma-2-2b": 0.87}},
    "direct_eval": {"mnli": {"google/gemma-2-2b": 0.5}},
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture()
def mirror(tmp_path: Path) -> Path:
    """A small mirror laid out like ../shared/data, JSON re-serialised with the drop keys removed."""
    root = tmp_path / "mirror"
    for rel, text in CSVS.items():
        _write(root / "pretrain_on_test" / rel, text)
    evals = root / "training_on_the_test_task" / "evaluations"
    _write(evals / "base" / "m1-mmlu.json", json.dumps(TRIMMED, indent=1))
    _write(evals / "e1" / "mmluaux" / "m1-mmlu.json", json.dumps(TRIMMED, indent=4, sort_keys=True))
    # One mirror file still carrying the keys: the fetch must drop them too.
    _write(evals / "e2" / "mmluaux" / "m1-mmlu.json", json.dumps(EVAL))
    _write(root / "train_before_test" / "all_results.json", json.dumps(HARMONY, indent=4))
    return root


def _tarball(path: Path, repo: str, commit: str, files: dict[str, str]) -> Path:
    """A GitHub-style tarball: everything under `<repo-name>-<commit>/`."""
    top = f"{repo.split('/')[1]}-{commit}"
    with tarfile.open(path, "w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture()
def upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Serve fake tarballs for the three repos instead of GitHub; returns download counts per repo."""
    archives = {
        "pretrain-on-test": {
            **{f"analysis/{rel}": text for rel, text in CSVS.items()},
            # Upstream holds folders the mirror lacks, and files the include glob must leave out.
            "analysis/accuracies_from_paper/m100/n50/bert/ag_news/accuracies.csv": CSV,
            "analysis/accuracies_from_paper/m50/n50/bert/ag_news/notes.txt": "not data",
            "src/model.py": "print('hi')\n",
        },
        "training-on-the-test-task": {
            "notebooks/evaluations/base/m1-mmlu.json": json.dumps(EVAL, indent=2),
            "notebooks/evaluations/e1/mmluaux/m1-mmlu.json": json.dumps(EVAL, indent=2),
            "notebooks/evaluations/e2/mmluaux/m1-mmlu.json": json.dumps(EVAL, indent=2),
            "notebooks/plots.ipynb": "{}",
        },
        "train-before-test": {
            "notebooks/all_results.json": json.dumps(HARMONY, indent=4),
            "notebooks/other/all_results.json": "{}",
        },
    }
    by_url = {}
    for paper, files in archives.items():
        spec = SOURCES[paper]
        url = F.URL_TEMPLATE.format(repo=spec["repo"], commit=spec["commit"])
        by_url[url] = _tarball(tmp_path / f"{paper}.tar.gz", spec["repo"], spec["commit"], files)
    calls: dict[str, int] = {}

    def fake_download(url: str, path: Path, timeout: float = 0) -> None:
        calls[url] = calls.get(url, 0) + 1
        path.write_bytes(by_url[url].read_bytes())

    monkeypatch.setattr(F, "download", fake_download)
    return calls


@pytest.fixture()
def checksums(tmp_path: Path, mirror: Path) -> Path:
    """Manifests generated from the fake mirror, as the committed ones were from the real one."""
    out = tmp_path / "checksums"
    F.fetch(list(SOURCES), SOURCES, tmp_path / "scratch", mirror, write_checksums=True, checksums_dir=out)
    return out


def test_glob_matching() -> None:
    assert F.matches("a/b/accuracies.csv", ["**/accuracies.csv"])
    assert F.matches("accuracies.csv", ["**/accuracies.csv"])
    assert not F.matches("a/accuracies.csv.bak", ["**/accuracies.csv"])
    assert F.matches("all_results.json", ["all_results.json"])
    assert not F.matches("x/all_results.json", ["all_results.json"])
    assert F.matches("e1+2/mmluaux/m-x_mc.json", ["**/*.json"])


def test_manifest_roundtrip(tmp_path: Path) -> None:
    F.write_manifest("p", {"b/x.csv": "1" * 64, "a y.json": "2" * 64}, tmp_path)
    F.write_manifest("p", {"c.csv": "3" * 64}, tmp_path)  # merges
    assert F.load_manifest("p", tmp_path) == {"a y.json": "2" * 64, "b/x.csv": "1" * 64, "c.csv": "3" * 64}
    assert (tmp_path / "p.sha256").read_text().splitlines()[0] == f"{'2' * 64}  a y.json"


def test_mirror_copy_is_verified_and_idempotent(tmp_path: Path, mirror: Path, checksums: Path) -> None:
    dest = tmp_path / "published"
    reports = F.fetch(list(SOURCES), SOURCES, dest, mirror, checksums_dir=checksums)
    assert {r["status"] for r in reports.values()} == {"fetched"}
    assert reports["pretrain-on-test"]["files"] == reports["pretrain-on-test"]["verified"] == 3
    assert reports["training-on-the-test-task"]["verified"] == 3
    assert all(not r["unverified"] and not r["missing"] for r in reports.values())
    rel = "accuracies_from_paper/m50/n50/bert/ag_news/accuracies.csv"
    assert (dest / "pretrain-on-test" / rel).read_text() == CSV
    assert (dest / "training-on-the-test-task/evaluations/e1/mmluaux/m1-mmlu.json").is_file()
    assert (dest / "train-before-test/all_results.json").is_file()
    stamp = json.loads((dest / "pretrain-on-test" / F.STAMP_NAME).read_text())
    assert stamp["files"] == 3 and stamp["source"].startswith("mirror:")

    again = F.fetch(list(SOURCES), SOURCES, dest, mirror, checksums_dir=checksums)
    assert all(r["copied"] == 0 for r in again.values())

    # A damaged destination file is repaired (replaced, not edited: it may be a hard link into the mirror).
    target = dest / "pretrain-on-test" / rel
    target.unlink()
    target.write_text("garbage\n")
    repaired = F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    assert repaired["pretrain-on-test"]["copied"] == 1
    assert target.read_text() == CSV


def test_relative_mirror_resolves_against_cwd(
    tmp_path: Path, mirror: Path, checksums: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(mirror.parent)
    monkeypatch.setenv("TESTTASK_DATA_MIRROR", mirror.name)
    assert F.mirror_from_env() == mirror
    reports = F.fetch(
        ["train-before-test"], SOURCES, tmp_path / "out", Path(mirror.name), checksums_dir=checksums
    )
    assert reports["train-before-test"]["verified"] == 1


def test_tampered_mirror_file_raises(tmp_path: Path, mirror: Path, checksums: Path) -> None:
    rel = "accuracies_from_paper/m50/n50/gpt2/ag_news/accuracies.csv"
    (mirror / "pretrain_on_test" / rel).write_text(CSV.replace("0.6,", "0.9,"))
    dest = tmp_path / "published"
    with pytest.raises(F.ChecksumError, match="gpt2/ag_news/accuracies.csv") as info:
        F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    assert info.value.expected == F.load_manifest("pretrain-on-test", checksums)[rel]
    assert info.value.expected in str(info.value) and info.value.actual in str(info.value)
    assert not (dest / "pretrain-on-test" / rel).exists()  # never written


def test_json_keys_dropped_and_download_matches_mirror(
    tmp_path: Path, mirror: Path, checksums: Path, upstream: dict[str, int]
) -> None:
    mirrored = F.fetch(list(SOURCES), SOURCES, tmp_path / "from-mirror", mirror, checksums_dir=checksums)
    downloaded = F.fetch(list(SOURCES), SOURCES, tmp_path / "from-github", None, checksums_dir=checksums)
    for paper in SOURCES:
        # Equal canonical hashes although the mirror's JSON is indented differently from upstream's.
        got, want = downloaded[paper]["hashes"], mirrored[paper]["hashes"]
        assert set(want) <= set(got) and {k: got[k] for k in want} == want
        assert downloaded[paper]["source"].startswith(f"github:{SOURCES[paper]['repo']}@")
    ttt = downloaded["training-on-the-test-task"]
    assert ttt["verified"] == ttt["files"] == 3
    for sub in ("base", "e1/mmluaux", "e2/mmluaux"):
        for root in ("from-mirror", "from-github"):
            obj = json.loads(
                (tmp_path / root / "training-on-the-test-task/evaluations" / sub / "m1-mmlu.json").read_text()
            )
            assert obj == TRIMMED
    assert set(downloaded["train-before-test"]["hashes"]) == {"all_results.json"}
    assert not (
        tmp_path / "from-github/pretrain-on-test/accuracies_from_paper/m50/n50/bert/ag_news/notes.txt"
    ).exists()


def test_download_unverified_files_reported_and_rerun_skips_download(
    tmp_path: Path, checksums: Path, upstream: dict[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    dest = tmp_path / "published"
    with caplog.at_level(logging.WARNING, logger=F.__name__):
        report = F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)[
            "pretrain-on-test"
        ]
    extra = "accuracies_from_paper/m100/n50/bert/ag_news/accuracies.csv"
    assert report["unverified"] == [extra] and report["verified"] == 3
    assert (dest / "pretrain-on-test" / extra).is_file()
    assert "unverified" in caplog.text and extra in caplog.text

    again = F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)["pretrain-on-test"]
    assert again["status"] == "up-to-date" and again["unverified"] == [extra] and again["verified"] == 3
    assert sum(upstream.values()) == 1


def test_a_downloaded_release_in_place_is_not_hashed_again(
    tmp_path: Path, checksums: Path, upstream: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a mirror, `make data` before every figure checks the release in place: files with the size and mtime
    the stamp recorded are not hashed; an older stamp without them is hashed once and gains them."""
    dest = tmp_path / "published"
    F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)
    path = dest / "pretrain-on-test" / F.STAMP_NAME
    stamp = json.loads(path.read_text())
    path.write_text(
        json.dumps({k: v for k, v in stamp.items() if k != "stats"})
    )  # as an older fetch wrote it
    hashed: list[str] = []
    prepare = F.prepare
    monkeypatch.setattr(F, "prepare", lambda raw, name, *a: hashed.append(name) or prepare(raw, name, *a))
    first = F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)["pretrain-on-test"]
    assert first["status"] == "up-to-date" and len(hashed) == 4
    assert json.loads(path.read_text())["stats"] == stamp["stats"]
    hashed.clear()
    again = F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)["pretrain-on-test"]
    assert again["status"] == "up-to-date" and hashed == [] and sum(upstream.values()) == 1
    target = dest / "pretrain-on-test" / "accuracies_from_paper/m50/n50/bert/ag_news/accuracies.csv"
    target.unlink()
    target.write_text(CSV.replace("0.6,", "0.1,"))  # replaced: another mtime, so it is hashed and refetched
    F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)
    assert sum(upstream.values()) == 2 and target.read_text() == CSV


def test_unverified_mirror_file_reported(tmp_path: Path, mirror: Path, checksums: Path) -> None:
    extra = "accuracies_gpt2_epochs_2/m50/n50/gpt2/ag_news/accuracies.csv"
    _write(mirror / "pretrain_on_test" / extra, CSV)
    report = F.fetch(["pretrain-on-test"], SOURCES, tmp_path / "p", mirror, checksums_dir=checksums)[
        "pretrain-on-test"
    ]
    assert report["unverified"] == [extra] and report["verified"] == 3


def test_missing_mirror_folder_is_skipped(tmp_path: Path, mirror: Path, checksums: Path) -> None:
    for path in sorted((mirror / "train_before_test").iterdir()):
        path.unlink()
    (mirror / "train_before_test").rmdir()
    # A manifest entry the mirror lacks is only reported.
    (mirror / "pretrain_on_test" / next(iter(CSVS))).unlink()
    reports = F.fetch(list(SOURCES), SOURCES, tmp_path / "out", mirror, checksums_dir=checksums)
    assert reports["train-before-test"]["status"] == "skipped"
    assert reports["pretrain-on-test"]["missing"] == [next(iter(CSVS))]
    assert reports["training-on-the-test-task"]["status"] == "fetched"


def test_download_missing_manifest_file_is_an_error(
    tmp_path: Path, checksums: Path, upstream: dict[str, int]
) -> None:
    F.write_manifest("train-before-test", {"gone.json": "0" * 64}, checksums)
    with pytest.raises(F.FetchError, match="gone.json"):
        F.fetch(["train-before-test"], SOURCES, tmp_path / "out", None, checksums_dir=checksums)


def test_offline_error_names_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(F.urllib.request, "urlopen", refuse)
    url = "https://codeload.github.com/o/r/tar.gz/abc"
    with pytest.raises(F.FetchError, match=url.replace(".", r"\.")):
        F.download(url, tmp_path / "x.tar.gz")


def test_config_file_matches_fetch_expectations() -> None:
    cfg = yaml.safe_load((REPO_ROOT / "conf/data/sources.yaml").read_text())
    assert cfg["dest"] == "data/published" and cfg["mirror_env"] == "TESTTASK_DATA_MIRROR"
    assert set(cfg["sources"]) == {"pretrain-on-test", "training-on-the-test-task", "train-before-test"}
    for paper, spec in cfg["sources"].items():
        assert len(spec["commit"]) == 40 and spec["include"]
        assert F.manifest_path(paper).is_file(), f"no committed manifest for {paper}"


@pytest.mark.skipif(
    not os.environ.get("TESTTASK_DATA_MIRROR") or not Path(os.environ["TESTTASK_DATA_MIRROR"]).is_dir(),
    reason="TESTTASK_DATA_MIRROR does not point to a data mirror",
)
def test_real_mirror_matches_committed_manifest(tmp_path: Path) -> None:
    sources = yaml.safe_load((REPO_ROOT / "conf/data/sources.yaml").read_text())["sources"]
    mirror = F.mirror_from_env()
    report = F.fetch(["pretrain-on-test"], sources, tmp_path, mirror)["pretrain-on-test"]
    manifest = F.load_manifest("pretrain-on-test")
    # The mirror may hold part of the release (it lacks m = 100 and more); every file it has must be verified.
    assert report["status"] == "fetched" and not report["unverified"]
    assert 0 < report["verified"] == report["files"] <= len(manifest)


def test_offline_keeps_a_partial_mirror_copy_when_the_manifest_covers_the_whole_release(
    tmp_path: Path, mirror: Path, checksums: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The committed manifest lists the complete release (m = 100 too) while the offline mirror holds part of it:
    offline, the verified mirror copy is still kept; a download that lacks a manifest file is still refused."""
    extra = "accuracies_from_paper/m100/n50/bert/ag_news/accuracies.csv"
    F.write_manifest("pretrain-on-test", {extra: hashlib.sha256(CSV.encode()).hexdigest()}, checksums)
    dest = tmp_path / "published"
    F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)

    go_offline(monkeypatch)
    report = F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)["pretrain-on-test"]
    assert report["status"] == "kept (offline)" and report["verified"] == 3
    # The same files stamped as a download: incomplete against the manifest, so not up to date.
    paper_dest, manifest = dest / "pretrain-on-test", F.load_manifest("pretrain-on-test", checksums)
    stamp_path = paper_dest / F.STAMP_NAME
    stamp = json.loads(stamp_path.read_text())
    assert F._up_to_date(paper_dest, stamp["source"], manifest, [])
    stamp_path.chmod(0o644)
    stamp_path.write_text(json.dumps({**stamp, "source": "github:kddubey/pretrain-on-test@x/analysis"}))
    assert not F._up_to_date(paper_dest, "github:kddubey/pretrain-on-test@x/analysis", manifest, [])


def test_a_partial_mirror_never_shrinks_a_more_complete_release_in_place(
    tmp_path: Path, mirror: Path, checksums: Path, upstream: dict[str, int]
) -> None:
    """A complete download, then `make data` with a mirror holding part of the release: the verified files the
    mirror lacks (m = 100) stay, and the release in place is kept as it was; `force` replaces it."""
    extra = "accuracies_from_paper/m100/n50/bert/ag_news/accuracies.csv"
    F.write_manifest("pretrain-on-test", {extra: hashlib.sha256(CSV.encode()).hexdigest()}, checksums)
    dest = tmp_path / "published"
    downloaded = F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)[
        "pretrain-on-test"
    ]
    assert downloaded["status"] == "fetched" and (dest / "pretrain-on-test" / extra).is_file()

    report = F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)["pretrain-on-test"]
    assert report["status"] == "kept (more complete)" and report["source"].startswith("github:")
    assert (dest / "pretrain-on-test" / extra).read_text() == CSV

    forced = F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums, force=True)
    assert forced["pretrain-on-test"]["source"].startswith("mirror:")
    assert not (dest / "pretrain-on-test" / extra).exists()


def test_offline_keeps_verified_data_from_a_mirror(
    tmp_path: Path, mirror: Path, checksums: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make data` without the mirror variable, offline, after a mirror copy: keep the verified files."""
    dest = tmp_path / "published"
    F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)

    go_offline(monkeypatch)
    report = F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)["pretrain-on-test"]
    assert report["status"] == "kept (offline)" and report["source"].startswith("mirror:")
    assert report["verified"] == 3

    # Damaged data is not kept: the download error stands.
    rel = "accuracies_from_paper/m50/n50/bert/ag_news/accuracies.csv"
    (dest / "pretrain-on-test" / rel).write_text("garbage\n")
    with pytest.raises(F.FetchError, match="could not download"):
        F.fetch(["pretrain-on-test"], SOURCES, dest, None, checksums_dir=checksums)


def test_papers_reading_other_releases_fetch_them(
    tmp_path: Path, mirror: Path, checksums: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make data PAPER=proxy-tasks` fetches the releases its analyses read (its plug-in's `uses`), and a paper
    without a release of its own fetches nothing of its own."""
    from testtask.pipeline import run

    fetched: list[list[str]] = []
    monkeypatch.setattr(F, "fetch", lambda papers, *args, **kwargs: fetched.append(papers) or {})
    for paper in ("proxy-tasks", "train-before-test", "all"):
        run(tmp_config(tmp_path, "action=data", f"paper={paper}"))
    assert fetched == [
        ["train-before-test", "training-on-the-test-task"],
        ["train-before-test"],
        ["pretrain-on-test", "training-on-the-test-task", "train-before-test"],
    ]


def test_checksums_then_data_actions_end_to_end_on_a_mirror(
    tmp_path: Path, mirror: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`testtask action=checksums` records every mirror file in the manifests (here a scratch folder for
    src/testtask/data/checksums); `testtask action=data` then fetches and verifies against them, refuses a file
    changed since, unless `data.verify=false` (it then keeps the file with a warning)."""
    from testtask.pipeline import compose, run

    manifests = tmp_path / "checksums"
    monkeypatch.setattr(F, "CHECKSUMS_DIR", manifests)
    monkeypatch.setenv("TESTTASK_DATA_MIRROR", str(mirror))
    dest = tmp_path / "published"

    def action(*extra: str) -> dict:
        return run(compose([f"data.dest={dest}", f"figures_dir={tmp_path / 'figures'}", *extra]))

    written = action("action=checksums")
    assert set(written) == set(SOURCES) and {r["status"] for r in written.values()} == {"fetched"}
    assert sorted(p.name for p in manifests.iterdir()) == sorted(f"{k}.sha256" for k in SOURCES)
    assert len(F.load_manifest("training-on-the-test-task")) == 3

    fetched = action("action=data", "paper=pretrain-on-test")
    report = fetched["pretrain-on-test"]
    assert list(fetched) == ["pretrain-on-test"] and report["status"] == "up-to-date"
    assert (
        report["verified"] == len(CSVS)
        and report["unverified"] == []
        and report["dest"] == str(dest / "pretrain-on-test")
    )

    rel = next(iter(CSVS))
    target = mirror / "pretrain_on_test" / rel
    target.write_text(target.read_text().replace("0.5,", "0.9,"))
    with pytest.raises(F.ChecksumError, match="accuracies.csv"):
        action("action=data", "paper=pretrain-on-test")
    kept = action("action=data", "paper=pretrain-on-test", "data.verify=false")["pretrain-on-test"]
    assert kept["status"] == "fetched" and (dest / "pretrain-on-test" / rel).read_text() == target.read_text()


def test_an_unchanged_mirror_is_not_read_again_and_a_changed_one_is(
    tmp_path: Path, mirror: Path, checksums: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make data` runs before every figure: with the mirror and the tree in place as the stamp recorded them
    (names, sizes, mtimes), it hashes nothing; a mirror file changed since is read, checked and refused."""
    dest = tmp_path / "published"
    F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    hashed: list[str] = []
    prepare = F.prepare
    monkeypatch.setattr(F, "prepare", lambda raw, name, *a: hashed.append(name) or prepare(raw, name, *a))
    again = F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    assert again["pretrain-on-test"]["status"] == "up-to-date" and hashed == []
    assert again["pretrain-on-test"]["verified"] == 3 and again["pretrain-on-test"]["copied"] == 0

    rel = "accuracies_from_paper/m50/n50/gpt2/ag_news/accuracies.csv"
    fetched = (dest / "pretrain-on-test" / rel).read_text()
    (mirror / "pretrain_on_test" / rel).write_text(fetched.replace("0.6,", "0.9,"))
    with pytest.raises(F.ChecksumError, match="gpt2/ag_news/accuracies.csv"):
        F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    assert (dest / "pretrain-on-test" / rel).read_text() == fetched  # the verified tree stays


def test_a_tree_changed_since_the_fetch_is_checked_again_not_trusted(
    tmp_path: Path, mirror: Path, checksums: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stats fast path looks at the tree too: an extra file, or a file replaced, means every file is read and
    checked again, and a replaced one is repaired."""
    dest = tmp_path / "published"
    F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    hashed: list[str] = []
    prepare = F.prepare
    monkeypatch.setattr(F, "prepare", lambda raw, name, *a: hashed.append(name) or prepare(raw, name, *a))
    extra = dest / "pretrain-on-test" / "notes.txt"
    extra.write_text("mine\n")
    F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    assert len(hashed) >= 3  # every mirror file at least
    extra.unlink()
    rel = "accuracies_from_paper/m50/n50/bert/ag_news/accuracies.csv"
    target = dest / "pretrain-on-test" / rel
    target.unlink()
    target.write_text(CSV.replace("0.6,", "0.1,"))
    repaired = F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    assert repaired["pretrain-on-test"]["copied"] == 1 and target.read_text() == CSV


def test_a_stamp_without_stats_gains_them_on_the_next_fetch(
    tmp_path: Path, mirror: Path, checksums: Path
) -> None:
    """Trees fetched before the stamp recorded sizes and mtimes get them from an unchanged refetch."""
    dest = tmp_path / "published"
    F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    path = dest / "pretrain-on-test" / F.STAMP_NAME
    old = {k: v for k, v in json.loads(path.read_text()).items() if k not in ("stats", "source_stats")}
    path.write_text(json.dumps(old))
    again = F.fetch(["pretrain-on-test"], SOURCES, dest, mirror, checksums_dir=checksums)
    assert again["pretrain-on-test"]["copied"] == 0
    stamp = json.loads(path.read_text())
    assert stamp["hashes"] == old["hashes"] and set(stamp["stats"]) == set(old["hashes"])
    assert len(stamp["source_stats"]) == 3
