"""A claim's note quotes our numbers by reference and the report reads them from the outputs: a note shows the
value the outputs hold now, under either preset; what cannot be read is shown and listed, never left blank; a
malformed reference is a ledger error naming the file, the claim and the field."""

from __future__ import annotations

import json

import pytest
import yaml

from testtask.report import evaluate, ledger, notes

FIGURE = {
    "panels": [{"benchmark": "mmlu", "theta": 0.06816, "p": 0.00564}, {"benchmark": "gsm8k", "theta": 0.168}]
}


def _render(note: str, values=None, outputs=None) -> notes.Rendered:
    return notes.render(note, values or {}, outputs if outputs is not None else {"authors": {}})


def test_a_note_shows_the_claims_value_under_each_preset_with_its_format():
    shown = _render(
        "ours {ours|.3f}, {paper_text ours|.4f} under the text; plain {ours}",
        values={"authors": 0.07135, "paper_text": 0.07048},
        outputs={"authors": {}, "paper_text": {}},
    )
    assert shown.text == "ours 0.071, 0.0705 under the text; plain 0.07135"
    assert shown.unresolved == ()


def test_a_note_reads_into_the_claims_value_and_other_outputs():
    outputs = {
        "authors": {"figure-1": FIGURE},
        "paper_text": {"figure-1": {"panels": [{"benchmark": "mmlu", "theta": 0.065}]}},
    }
    shown = _render(
        "rise {ours:rise.direct|.3f}; θ̂ {figure-1:panels[benchmark=mmlu].theta|.1%} "
        "({paper_text figure-1:panels[benchmark=mmlu].theta|.3f}); all {figure-1:panels[*].theta|.2f}",
        values={"authors": {"rise": {"direct": 0.0531}}},
        outputs=outputs,
    )
    assert shown.text == "rise 0.053; θ̂ 6.8% (0.065); all [0.07, 0.17]"


def test_a_brace_itself_is_written_twice():
    shown = _render("qwen2-{{0.5b,7b}}-mmlu.json: {ours}, as {{ours}}", values={"authors": 3})
    assert shown.text == "qwen2-{0.5b,7b}-mmlu.json: 3, as {ours}"


def test_a_key_may_hold_the_bar_that_starts_a_format_spec():
    means = {"means": {"family|spearman|p_vocab": {"mean": 0.3181}}}
    outputs = {"authors": {"figure-4": means}}
    shown = _render(
        "{figure-4:means.family|spearman|p_vocab.mean|.2f} / {figure-4:means.family|spearman|p_vocab.mean}",
        outputs=outputs,
    )
    assert shown.text == "0.32 / 0.3181"


def test_what_cannot_be_read_is_shown_and_what_the_outputs_cannot_answer_is_listed(tmp_path):
    (tmp_path / "figure-1.json").write_text(json.dumps(FIGURE))
    outputs = {"authors": evaluate.Sidecars(tmp_path)}
    shown = _render(
        "built {figure-1:panels[benchmark=mmlu].p|.3f}; {figure-9:rows[0].x}; {figure-1:panels[benchmark=bbh].p}; "
        "{paper_text ours}; {ours}",
        values={"authors": None},
        outputs=outputs,
    )
    assert shown.text == (
        "built 0.006; [figure-9:rows[0].x: figure-9.json not built]; [figure-1:panels[benchmark=bbh].p: "
        "panels[benchmark=bbh]: 0 items match [benchmark=bbh] (want exactly one)]; "
        "[paper_text ours: protocol=paper_text not evaluated]; [ours: ours is not computable]"
    )
    # waiting for a build is no error of the note; a path the built output does not hold is
    assert shown.unresolved == (
        "{figure-1:panels[benchmark=bbh].p} (panels[benchmark=bbh]: 0 items match [benchmark=bbh] (want exactly one))",
    )


def test_a_format_for_numbers_on_a_text_value_is_unresolved():
    shown = _render("{ours|.2f}", values={"authors": "yes"})
    assert shown.unresolved and "needs a number" in shown.unresolved[0]


CLAIM = {
    "id": "c.one",
    "where": "§1",
    "statement": "a number",
    "paper": 0.5,
    "ours": {"output": "figure-1", "path": "panels[0].theta"},
    "rule": {"kind": "round", "digits": 2},
}


@pytest.mark.parametrize(
    ("note", "message"),
    [
        ("ours is {ours", r"a brace that is no reference in 'ours is \{ours'"),
        ("a set {1, 2}", "a brace that is no reference"),
        ("{text ours}", "the preset is paper_text or none"),
        ("{figure-1:panels[benchmark].p}", "malformed filter"),
        ("{ours|.3q}", "format spec '.3q'"),
    ],
)
def test_a_malformed_reference_names_file_claim_and_field(tmp_path, note, message):
    file = tmp_path / "claims.yaml"
    file.write_text(yaml.safe_dump({"paper": "p", "claims": [{**CLAIM, "note": note}]}))
    with pytest.raises(ledger.LedgerError, match=rf"claims\.yaml: claim c\.one, field 'note': .*{message}"):
        ledger.load(file)
    category = {"kind": "release-gap", "missing": ["a", note], "toward": "b", "shown_by": "make figure-1"}
    file.write_text(yaml.safe_dump({"paper": "p", "claims": [{**CLAIM, "category": category}]}))
    with pytest.raises(ledger.LedgerError, match=rf"claim c\.one, field 'category\.missing': .*{message}"):
        ledger.load(file)


def test_the_verdicts_carry_their_notes_read_under_both_presets(tmp_path):
    for preset, theta in (("authors", 0.5), ("paper_text", 0.61)):
        (tmp_path / preset).mkdir()
        (tmp_path / preset / "figure-1.json").write_text(json.dumps({"panels": [{"theta": theta}]}))
    file = tmp_path / "claims.yaml"
    note = "ours {ours|.2f}, under the text {paper_text ours|.2f}"
    category = {
        "kind": "release-gap",
        "missing": ["z: {ours|.1f}", "b"],
        "toward": "c",
        "shown_by": "{figure-1:x}",
    }
    file.write_text(yaml.safe_dump({"paper": "p", "claims": [{**CLAIM, "note": note, "category": category}]}))
    loaded = ledger.load(file)
    judged = {p: evaluate.evaluate(loaded, tmp_path / p, tmp_path) for p in ("authors", "paper_text")}
    assert judged["authors"][0].note == note  # unread until both presets are judged
    outputs = {p: evaluate.Sidecars(tmp_path / p) for p in judged}
    shown = evaluate.with_notes(judged, outputs)
    for preset in judged:
        assert shown[preset][0].note == "ours 0.50, under the text 0.61"
        assert shown[preset][0].as_dict()["note"] == "ours 0.50, under the text 0.61"
        assert shown[preset][0].claim.category.fields["missing"] == ("z: 0.5", "b")
        assert shown[preset][0].unresolved == ("category.shown_by: {figure-1:x} (x: no key 'x')",)


def test_the_committed_notes_quote_outputs_the_paper_builds():
    """Every reference of a committed note or category names `ours` or an output its paper builds."""
    from testtask import papers
    from testtask.paths import conf_dir

    for file in sorted((conf_dir() / "claims").glob("*.yaml")):
        loaded = ledger.load(file)
        plugin = papers.get(loaded.paper)
        outputs = {f"figure-{f}" for f in plugin.figures} | {f"table-{t}" for t in plugin.tables}
        for claim in loaded.claims:
            fields = claim.category.fields.values() if claim.category else ()
            texts = [claim.note or "", *(t for f in fields for t in (f if isinstance(f, tuple) else [f]))]
            for _, ref in (r for t in texts if isinstance(t, str) for r in notes.references(t)):
                name = ref.output.removesuffix(".json").removesuffix(".csv")
                assert ref.output == notes.OURS or name in outputs, (file.name, claim.id, ref.output)


def test_a_claim_whose_inputs_are_incomplete_quotes_nothing_from_outputs_of_other_data(tmp_path):
    (tmp_path / "authors").mkdir()
    (tmp_path / "authors" / "figure-1.json").write_text(json.dumps({"panels": [{"theta": 0.5}]}))
    (tmp_path / "m50").mkdir()
    file = tmp_path / "claims.yaml"
    claims = [
        {**CLAIM, "id": "c.whole", "needs": ["m50"], "note": "on all data {ours|.2f}"},
        {
            **CLAIM,
            "id": "c.part",
            "needs": ["m50", "m100"],
            "note": "on all data {ours|.2f} in {figure-1:panels[0].theta}",
        },
    ]
    file.write_text(yaml.safe_dump({"paper": "p", "claims": claims}))
    judged = {"authors": evaluate.evaluate(ledger.load(file), tmp_path / "authors", tmp_path)}
    whole, part = evaluate.with_notes(judged, {"authors": evaluate.Sidecars(tmp_path / "authors")})["authors"]
    assert whole.note == "on all data 0.50"
    assert part.value == 0.5  # computed on the data present, shown but not judged ...
    assert part.note == "on all data [not on this data] in [not on this data]"
    assert part.reason == "missing input m100"
    assert part.unresolved == ()  # ... and no error of the ledger
