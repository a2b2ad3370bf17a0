"""A student's own claims state the source they are about and are judged there only: a claim about an own model
read from the release is "not computable" (never "matches" on data that lacks the model), and the report of
`SOURCE=published+results RUN=<run>` judges it on the run laid over the release, beside the paper's claims on the
release alone; an own claim can read `make assess-model`'s page; the report says which own files a verdict read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.assess.raised import make_run
from tests.conftest import stamp_release
from tests.training_on_the_test_task.test_figures import make_tree
from testtask.pipeline import build, compose, run

PAPER = "training-on-the-test-task"
RUN = "student"
MODEL = "student-7b"
ENTRY = {
    "paper_name": "Student-7B",
    "train_date": "2024-06",
    "params_b": 7,
    "tokens_t": 2.0,
    "hf_repo": None,
    "family": "student",
    "language": "EN",
}
CLAIM = {
    "id": "own.fig1.student_is_newer",
    "where": "Figure 1 (our own model)",
    "statement": "student-7b is among Figure 1's newer models on MMLU",
    "paper": 1,
    "ours": {
        "output": "figure-1",
        "path": f"panels[benchmark=mmlu,adjusted=False].points[model={MODEL}].group",
    },
    "rule": {"kind": "equal"},
}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("own")
    make_tree(root / "published" / PAPER, seed=0)
    stamp_release(root / "published" / PAPER)
    make_run(root / "published", root / "results", RUN, "llama-2-7b", MODEL, 0.05)
    user = root / "user"
    (user / "claims").mkdir(parents=True)
    (user / "models.yaml").write_text(yaml.safe_dump({"base": {MODEL: ENTRY}}))
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
            f"user_dir={root / 'user'}",
            "report.require_categories=false",
            "report.protocols=[authors]",
            *extra,
        ]
    )


def _own(root: Path, claims: list[dict], source: str = "published+results") -> None:
    ledger = {"paper": PAPER, "source": source, "claims": claims}
    (root / "user" / "claims" / f"{PAPER}.yaml").write_text(yaml.safe_dump(ledger, sort_keys=False))


def _claim(summary: dict, claim_id: str) -> dict:
    return next(c for c in summary["papers"][PAPER]["claims"] if c["id"] == claim_id)


def test_an_own_claim_about_the_run_is_judged_on_it_and_nowhere_else(root):
    _own(root, [{**CLAIM, "note": "the group is {ours}"}])
    build(_cfg(root, "source=published+results"), "figure", [1])
    published = run(_cfg(root, "action=report", "source=published"))
    own = _claim(published, CLAIM["id"])
    assert own["status"] == "not computable"
    assert "make report PAPER=training-on-the-test-task SOURCE=published+results RUN=<run>" in own["reason"]
    assert (
        own["note"] == "the group is [not on this data]"
    )  # its note quotes nothing from the release's outputs
    overlay = run(_cfg(root, "action=report", "source=published+results"))
    own = _claim(overlay, CLAIM["id"])
    assert own["status"] == "matches" and own["value"] == 1 and own["note"] == "the group is 1"
    assert own["user_files"]["models.yaml"]  # its sidecar was built with the student's registry entry
    paper_claims = [c for c in overlay["papers"][PAPER]["claims"] if not c["id"].startswith("own.")]
    # the paper's claims are read from the release's own folder (not built here), never from the overlay's
    assert all(c["status"] == "not computable" for c in paper_claims)
    # built without the student's registry entry, which would make the command build a variant instead
    assert "make figure-1 PAPER=training-on-the-test-task ARGS='own_files=false'" in {
        c["command"] for c in paper_claims
    }
    page = (root / "report" / "published+results-student" / PAPER / "REPRODUCTION.md").read_text()
    assert "built with your own files: models.yaml (sha256 " in page


def test_own_claims_state_their_source(root):
    from testtask.report.ledger import LedgerError

    _own(root, [CLAIM], source=None)
    with pytest.raises(LedgerError, match=r"field 'source': own claims state the source they are about"):
        run(_cfg(root, "action=report", "source=published"))


def test_an_own_claim_reads_the_assess_model_page(root):
    page = root / "figures" / "assess-model" / f"published+results-{RUN}" / MODEL
    page.mkdir(parents=True)
    verdict = {
        "model": MODEL,
        "training_on_the_test_task": [{"benchmark": "mmlu", "adjusted": {"theta": 0.011}}],
    }
    (page / f"{MODEL}.json").write_text(json.dumps(verdict))
    claim = {
        "id": "own.assess.mmlu_advantage_gone",
        "where": "make assess-model (our own model)",
        "statement": "after the adjustment student-7b's MMLU advantage is below 0.02",
        "paper": "below 0.02",
        "ours": {"page": MODEL, "path": "training_on_the_test_task[benchmark=mmlu].adjusted.theta"},
        "rule": {"kind": "all", "op": "<", "than": 0.02},
    }
    _own(root, [claim])
    summary = run(_cfg(root, "action=report", "source=published+results"))
    own = _claim(summary, claim["id"])
    assert own["status"] == "matches" and own["value"] == pytest.approx(0.011)


def test_an_own_claims_note_quotes_the_outputs_and_names_what_it_cannot_read(root):
    note = (
        "{ours} is the group; θ̂ {figure-1:panels[benchmark=mmlu,adjusted=False].theta|.3f}; {figure-2:x}; "
        "{figure-1:panels[benchmark=none].theta}"
    )
    _own(root, [{**CLAIM, "note": note}])
    build(_cfg(root, "source=published+results"), "figure", [1])
    summary = run(_cfg(root, "action=report", "source=published+results"))
    # the student's registry entry changes the settings: a variant of the paper's build, named after the file
    variant = root / "figures" / "variants" / "own=models" / PAPER / f"published+results-{RUN}"
    figure = json.loads((variant / "figure-1.json").read_text(encoding="utf-8"))
    theta = next(p["theta"] for p in figure["panels"] if p["benchmark"] == "mmlu" and not p["adjusted"])
    shown = _claim(summary, CLAIM["id"])["note"]
    assert shown.startswith(f"1 is the group; θ̂ {theta:.3f}; [figure-2:x: figure-2.json not built]; ")
    # the paper's claims read outputs not built here: their notes wait for them; this one names a row none holds
    assert list(summary["unresolved_notes"]) == [PAPER]
    [(claim_id, [why])] = summary["unresolved_notes"][PAPER].items()
    assert claim_id == CLAIM["id"] and "0 items match [benchmark=none]" in why
