"""The worked example's copy helper (`python -m tests.assess.raised`, docs/extending.md example 1) copies exactly
one model's files: a model whose name starts another's (openllama-3b, openllama-3b-v2) takes only its own."""

from __future__ import annotations

import json
from pathlib import Path

from tests.assess.raised import TOTT, make_run, model_files

BENCHMARKS = ("mmlu", "arc_challenge_mc", "truthfulqa_mc2_mc")


def _release(root: Path) -> Path:
    """A release whose evaluations hold openllama-3b and openllama-3b-v2, base and e3, with accuracies of 0.5."""
    evaluations = root / TOTT / "evaluations"
    for model in ("openllama-3b", "openllama-3b-v2"):
        for folder in ("base", "e3/mmluaux"):
            for bench in BENCHMARKS:
                path = evaluations / folder / f"{model}-{bench}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"results": {bench: {"acc,none": 0.5}}}), encoding="utf-8")
    return evaluations


def test_copies_only_the_named_model_not_one_it_prefixes(tmp_path):
    _release(tmp_path / "published")
    written = make_run(tmp_path / "published", tmp_path / "results", "student", "openllama-3b", "mine", 0.05)
    run = tmp_path / "results" / TOTT / "student" / "evaluations"
    names = sorted(str(path.relative_to(run)) for path in written)
    assert names == sorted(
        f"{folder}/mine-{bench}.json" for folder in ("base", "e3/mmluaux") for bench in BENCHMARKS
    )
    # the copies are openllama-3b's, not openllama-3b-v2's: every file the run holds is one of these
    assert sorted(str(p.relative_to(run)) for p in run.rglob("*.json")) == names
    raised = json.loads((run / "base" / "mine-mmlu.json").read_text(encoding="utf-8"))
    assert raised["results"]["mmlu"]["acc,none"] == 0.55


def test_the_longer_name_takes_its_own_files(tmp_path):
    evaluations = _release(tmp_path)
    files = model_files(evaluations, "openllama-3b-v2")
    assert sorted(bench for _, bench in files) == sorted(BENCHMARKS * 2)
    assert all(path.name.startswith("openllama-3b-v2-") for path, _ in files)


def test_a_benchmark_name_with_dashes_is_kept_whole(tmp_path):
    evaluations = tmp_path / "evaluations"
    for stem in ("student-7b-code-x_y", "student-7b-v2-code-x_y"):
        (evaluations / "base").mkdir(parents=True, exist_ok=True)
        (evaluations / "base" / f"{stem}.json").write_text("{}", encoding="utf-8")
    files = model_files(evaluations, "student-7b", known=["student-7b-v2"])
    assert [(path.name, bench) for path, bench in files] == [("student-7b-code-x_y.json", "code-x_y")]
