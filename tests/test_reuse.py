"""An output is built once and copied to another build that would make the same (testtask.reuse): the settings a
build reads are recorded by key (testtask.reads), and the other protocol preset copies exactly the outputs whose
read settings, inputs and code are equal, with its own provenance; anything else is built."""

from __future__ import annotations

import functools
import json
import pickle
from pathlib import Path

import pytest

from tests.conftest import tmp_config, write_accuracies
from tests.train_before_test.conftest import (
    SMALL_BENCHMARKS,
    output_folder,
    small_config,
    synthetic_results,
    write_release,
)
from testtask import provenance, reads, reuse, schema
from testtask.pipeline import build


@schema.section
class Inner:
    a: schema.Int
    b: list[schema.Int]


@schema.section
class Outer:
    inner: Inner
    named: dict[str, Inner]
    x: schema.Int

    @functools.cached_property
    def total(self) -> int:
        return self.x + self.inner.a


def _outer() -> Outer:
    config = Outer(inner=Inner(a=1, b=[2]), named={"model-1.5b": Inner(a=3, b=[4])}, x=5)
    reads.label(config)
    return config


def test_reads_are_recorded_by_key_and_a_section_handed_on_whole_is_read_whole():
    config = _outer()
    assert config.x == 5  # outside a record: nothing is noted
    with reads.recording() as read:
        assert config.inner.a == 1  # walking into `inner` is no read of it
        assert config.named["model-1.5b"].b == [4]  # a mapping is read whole; a dotted name stays one name
    assert read.keys == {("inner", "a"), ("named",), ("named", "model-1.5b", "b")} and read.exact
    assert reads.value_at(schema.to_plain(config), ("named", "model-1.5b", "b")) == (True, [4])

    with reads.recording() as read:
        pickle.dumps(config.inner)  # e.g. sent to a worker process, which reads it unobserved
    assert read.keys == {("inner",)}

    with reads.recording() as read:
        assert config.total == 6  # computed now: its reads are noted as they happen
    assert read.keys == {("x",), ("inner", "a")}
    with reads.recording() as read:
        assert config.total == 6  # cached before: what it read is not known, so all of the section counts
    assert read.keys == {()}


def test_a_section_reached_at_two_keys_makes_the_record_inexact():
    shared = Inner(a=1, b=[2])
    config = Outer(inner=shared, named={"m": shared}, x=5)
    reads.label(config)
    with reads.recording() as read:
        assert config.inner.a == 1
    assert not read.exact


FIGURES = [2, 7, 8]  # Figure 8 reads pca.case_study.max_with_baseline, which paper_text sets; 2 and 7 do not


def _build(root: Path, *extra: str, figures: Path | None = None) -> dict[str, dict]:
    cfg = small_config(root, *extra)
    if figures is not None:
        cfg.figures_dir = str(figures)
    done = build(cfg, "figure", FIGURES) + build(cfg, "table", [1])
    return {f"{'figure' if 'figure' in d else 'table'}-{d.get('figure', d.get('table'))}": d for d in done}


def _numbers(folder: Path, name: str) -> dict:
    data = json.loads((folder / f"{name}.json").read_text())
    data.pop(provenance.KEY)
    return data


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return write_release(tmp_path / "data", synthetic_results(SMALL_BENCHMARKS))


def test_the_other_preset_copies_what_reads_equal_settings_and_builds_the_rest(release, tmp_path):
    first = _build(release)
    assert not any(d.get("reused") for d in first.values())
    second = _build(release, "protocol=paper_text")
    assert {name for name, d in second.items() if d.get("reused")} == {"figure-2", "figure-7", "table-1"}

    fresh = _build(release, "protocol=paper_text", figures=tmp_path / "alone")  # nothing to reuse
    assert not any(d.get("reused") for d in fresh.values())

    authors, copied = output_folder(release), output_folder(release, "published.paper_text")
    (built,) = (tmp_path / "alone").glob("variants/*/train-before-test/published.paper_text")
    assert sorted(p.name for p in copied.iterdir()) == sorted(p.name for p in built.iterdir())
    for name in second:
        assert _numbers(copied, name) == _numbers(built, name), name
        ours = json.loads((copied / f"{name}.json").read_text())[provenance.KEY]
        theirs = json.loads((built / f"{name}.json").read_text())[provenance.KEY]
        assert ours["protocol"] == "paper_text" and ours["settings"] == theirs["settings"]
        assert ours["data"]["checksum"] == theirs["data"]["checksum"]
        assert (reuse.REUSED_FROM in ours) == (name != "figure-8")
    assert json.loads((copied / "figure-2.json").read_text())[provenance.KEY][reuse.REUSED_FROM] == str(
        authors.resolve()
    )
    assert (copied / "figure-2.png").read_bytes() == (built / "figure-2.png").read_bytes()


def test_a_changed_file_or_changed_code_is_built_again(release, tmp_path, monkeypatch):
    _build(release)
    png = output_folder(release) / "figure-2.png"
    png.write_bytes(png.read_bytes() + b"\0")  # edited after its build: its digest no longer matches
    second = _build(release, "protocol=paper_text")
    assert not second["figure-2"].get("reused") and second["figure-7"].get("reused")

    monkeypatch.setattr(reuse, "code_version", lambda: "another version of the code")
    third = _build(release, "protocol=paper_text")  # the same folders: only the code differs
    assert not any(d.get("reused") for d in third.values())


def test_what_fits_no_model_does_not_read_the_counts_rule_and_is_shared(tmp_path):
    """pretrain-on-test's presets differ in the counts the §6.1 model is fitted to; Table 1 (observed accuracies)
    does not read that rule, so the paper_text build copies it."""
    results = tmp_path / "results" / "pretrain-on-test"
    write_accuracies(
        results, "accuracies_from_paper", m=50, n=50, lm_types=["bert", "gpt2"], datasets=4, subsamples=3
    )
    done = {
        protocol: build(tmp_config(tmp_path, "source=results", f"protocol={protocol}"), "table", [1])
        for protocol in ("authors", "paper_text")
    }
    assert not done["authors"][0].get("reused") and done["paper_text"][0].get("reused")
    (index,) = (tmp_path / "figures" / reuse.INDEX / "pretrain-on-test").glob("table-1-*.json")
    keys = [key for entry in json.loads(index.read_text())["entries"] for key, _ in entry["reads"]]
    assert keys and ["pretrain_on_test", "counts"] not in keys


def test_the_code_version_reads_a_checkout_below_a_dot_folder_but_not_its_caches(tmp_path, monkeypatch):
    """A checkout under `~/.work/` is hashed whole; bytecode and numba caches (`__pycache__`) are not code."""
    import testtask

    package, conf = tmp_path / ".work" / "src" / "testtask", tmp_path / ".work" / "conf"
    (package / "__pycache__").mkdir(parents=True)
    conf.mkdir()
    (package / "__init__.py").write_text("")
    (package / "figure.py").write_text("BINS = 10\n")
    (package / "__pycache__" / "figure.cpython-311.pyc").write_bytes(b"compiled")
    (conf / "config.yaml").write_text("seed: 1\n")
    monkeypatch.setattr(testtask, "__file__", str(package / "__init__.py"))
    monkeypatch.setattr(reuse, "conf_dir", lambda: conf)
    version = reuse.code_version.__wrapped__()
    (package / "__pycache__" / "figure.cpython-311.pyc").write_bytes(b"compiled again")
    assert reuse.code_version.__wrapped__() == version
    (package / "figure.py").write_text("BINS = 20\n")
    changed = reuse.code_version.__wrapped__()
    assert changed != version
    (conf / "config.yaml").write_text("seed: 2\n")
    assert reuse.code_version.__wrapped__() not in {version, changed}
