"""The reproduction report's machinery: the sidecar path language, the rule kinds (rounding edge cases
and the one zero rule), ledger validation, evaluation of claims on synthetic sidecars, provenance and rendering."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from testtask.report import evaluate, ledger, paths, provenance, render, rules

DOC = {
    "rows": [
        {"m": 50, "n": 50, "lm_type": "bert", "boost_mean": 0.041272},
        {"m": 50, "n": 50, "lm_type": "gpt2", "boost_mean": 0.03832},
        {"m": 50, "n": 100, "lm_type": "bert", "boost_mean": 0.03886},
    ],
    "panels": [
        {"effect": "boost", "band": 0.04, "label": "a (b, c)", "hdi": [0.1, 0.2], "divergences": 0},
        {"effect": "bias", "band": 0.08, "label": "d", "hdi": [-0.1, 0.2], "divergences": 2},
    ],
    "counts": {"accuracies_from_paper": {"zero_bias": {"count": 1}}, "1|dataset_sigma": 3},
}


# ---------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("rows[lm_type=bert,m=50,n=50].boost_mean", 0.041272),
        ("rows[m=50.0,lm_type=gpt2].boost_mean", 0.03832),  # numbers compare as numbers
        ("rows[?lm_type=bert].n", [50, 100]),
        ("rows[*].lm_type", ["bert", "gpt2", "bert"]),
        ("rows[-1].n", 100),
        ("panels[band=0.04].hdi[1]", 0.2),  # a dot inside brackets is part of the value
        ("panels[?effect=bias].hdi", [[-0.1, 0.2]]),
        ("counts.accuracies_from_paper.zero_bias.count", 1),
        ("counts.1|dataset_sigma", 3),
        ("rows[?lm_type=none].n", []),
    ],
)
def test_path_language_known_answers(path, expected):
    assert paths.resolve(DOC, path) == expected


def test_path_on_a_list_root():
    rows = [{"collection": "a", "p": 0.1}, {"collection": "b", "p": 0.7}, {"collection": "a", "p": 0.9}]
    assert paths.resolve(rows, "[?collection=a].p") == [0.1, 0.9]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("rows[lm_type=bert].n", "2 items match"),  # a single-item filter must match exactly one
        ("rows[lm_type=gpt2,m=100].n", "0 items match"),
        ("counts.missing", "no key 'missing'"),
        ("rows[7]", "no item [7]"),
        ("rows.n", "no key 'n' (found list)"),
        ("rows[lm_type]", "malformed filter"),
        ("rows[m=50", "unbalanced"),
        ("", "empty path"),
    ],
)
def test_path_errors_name_the_segment(path, message):
    with pytest.raises(
        paths.PathError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    ):
        paths.resolve(DOC, path)


# ---------------------------------------------------------------- rules


@pytest.mark.parametrize(
    ("x", "digits", "expected"),
    [
        (0.125, 2, "0.13"),  # half away from zero, not banker's rounding
        (2.675, 2, "2.68"),  # on the shortest decimal form (binary 2.67499999... would give 2.67)
        (-0.125, 2, "-0.13"),
        (-0.001, 2, "0.00"),  # -0 is 0
        (0.1848, 2, "0.18"),
        (42.6, 0, "43"),
        (4.05, 1, "4.1"),
    ],
)
def test_rounding_edge_cases(x, digits, expected):
    assert str(rules.round_half_away(x, digits)) == expected


def test_round_rule_matches_and_differs_by_how_much():
    assert rules.apply("round", 0.1832, 0.18, {"digits": 2}).matches
    assert rules.apply("round", -0.001, 0.0, {"digits": 2}).matches  # "-0.00" is the paper's 0.00
    out = rules.apply("round", 0.1848, 0.19, {"digits": 2})
    assert not out.matches
    assert out.ours == "0.18 (0.1848 before rounding)"
    assert out.difference == "-0.0052"
    pair = rules.apply("round", [4.127, 0.1848], [4.13, 0.19], {"digits": 2})
    assert not pair.matches and pair.difference == "1: -0.0052"


def test_zero_rule_is_one_definition():
    assert rules.ZERO_TOLERANCE == 1e-12
    assert rules.is_zero(-2.8e-18) and rules.is_zero(0.0) and not rules.is_zero(1e-9)
    assert rules.sign(-2.8e-18) == 0 and rules.sign(-1e-9) == -1 and rules.sign(3e-4) == 1
    # the kinds use it: a −1.8e−19 boost is not negative, and an interval ending at −1e−15 contains 0
    assert not rules.apply("sign", [-0.5, -1.8e-19], "negative", {}).matches
    assert rules.apply("sign", [-1.8e-19], "zero", {}).matches
    assert rules.apply("all", [[-0.2, -1e-15]], "no bias", {"op": "contains_zero"}).matches
    assert rules.apply("count", [1.0, -3e-18, -0.5], 1, {"op": "negative"}).matches


def test_tolerance_equal_all_count_share_significance():
    assert rules.apply("tolerance", 0.164, 0.16, {"abs": 0.005}).matches
    assert not rules.apply("tolerance", 0.17, 0.16, {"rel": 0.05}).matches
    assert rules.apply("tolerance", [1.0, 2.0], [1.01, 2.02], {"rel": 0.011}).matches
    assert rules.apply(
        "equal", {"positive": 12, "negative": 13, "zero": 0}, {"positive": 12, "negative": 13}, {}
    ).matches
    out = rules.apply("equal", {"positive": 12, "negative": 12}, {"positive": 12, "negative": 13}, {})
    assert not out.matches and out.difference == "negative: -1"
    assert rules.apply("equal", ["b", "a"], ["a", "b"], {"as_set": True}).matches
    assert not rules.apply("equal", ["b", "a"], ["a", "b"], {}).matches
    diff = rules.apply("equal", ["a", "c"], ["a", "b"], {"as_set": True}).difference
    assert "adds [c]" in diff and "lacks [b]" in diff
    assert rules.apply("equal", 3.0, 3, {}).matches
    assert rules.apply("all", [0.6, 0.9], "all", {"op": ">", "than": 0.5}).ours == "2 of 2 > 0.5: [0.6, 0.9]"
    assert not rules.apply("all", [], "all", {"op": ">", "than": 0.5}).matches  # nothing is not "all"
    assert not rules.apply("count", [0.6, 0.4], 2, {"op": ">", "than": 0.5}).matches
    assert rules.apply("share", [0.05, -0.01, 0.0, -0.06], 50, {"op": "nonzero"}).matches is False
    assert rules.apply("share", [0.05, -0.01, 0.0, -0.06], 75, {"op": "nonzero"}).matches
    assert rules.apply("all", [[0.1, 0.2]], "yes", {"op": "excludes_zero"}).matches
    assert rules.apply("significance", [0.2, 0.07], "none", {"alpha": 0.05}).matches
    assert not rules.apply("significance", [0.2, 0.01], "none", {"alpha": 0.05}).matches
    assert rules.apply("significance", [0.01], "yes", {"alpha": 0.05, "expect": "significant"}).matches


def test_within_se_judges_a_monte_carlo_estimate_by_its_standard_error():
    # 44.0 against a printed 47 with a standard error of 2.2: 1.4 standard errors, inside 2 (exact rounding
    # would call it a difference), outside 1
    assert rules.apply("within_se", 44.0, 47, {"se": 2.2}).matches
    outcome = rules.apply("within_se", 44.0, 47, {"se": 2.2, "k": 1})
    assert not outcome.matches and "1.4 standard errors" in outcome.difference
    assert rules.apply("within_se", [1.0, 5.0], [1.5, 5.1], {"se": 0.3}).matches
    assert not rules.apply("within_se", [1.0, 5.0], [1.7, 5.1], {"se": 0.3}).matches


def test_categories_load_with_their_fields(tmp_path):
    category = {
        "kind": "inconsistent",
        "places": ["§3.3: four Gemma models", "Table 3: eight"],
        "arithmetic": "4 + 4 = 8, not 4",
    }
    (claim,) = ledger.load(_write(tmp_path, [_claim(category=category)]), "toy").claims
    assert claim.category.kind == "inconsistent"
    assert (
        claim.category.summary()
        == "the paper disagrees with itself: §3.3: four Gemma models vs Table 3: eight; 4 + 4 = 8, not 4"
    )
    assert claim.category.evidence == "4 + 4 = 8, not 4"
    assert set(ledger.CATEGORIES) == {
        "text-vs-code",
        "release-gap",
        "inconsistent",
        "implementation",
        "misrounded",
        "within-error",
        "unexplained",
    }


def test_rule_shape_errors():
    with pytest.raises(rules.RuleError, match="lists 2 values"):
        rules.apply("round", 1.0, [1.0, 2.0], {"digits": 1})
    with pytest.raises(rules.RuleError, match="not a number"):
        rules.apply("round", "x", 1.0, {"digits": 1})
    assert rules.check_params("round", {}) == "rule round needs digits"
    assert "unknown rule kind" in rules.check_params("nearly", {})
    assert "needs than" in rules.check_params("all", {"op": ">"})
    assert "takes no" in rules.check_params("sign", {"digits": 1})


# ---------------------------------------------------------------- ledger


TEXT_VS_CODE = {
    "kind": "text-vs-code",
    "text": "§2.2",
    "code": "a/b@c357810:f.py:46: OLS",
    "shown_by": "make x",
}
GAP = {"kind": "release-gap", "missing": ["qwen2"], "toward": "newer models raise θ̂", "shown_by": "ls base"}
INCONSISTENT = {"kind": "inconsistent", "places": ["Table 4", "Table 5"], "arithmetic": "54.70 ≠ 51.97"}
ROUNDING = {"kind": "within-error", "basis": "rounding", "printed": "0.19", "shown_by": "make table-1"}
MONTE_CARLO = {
    "kind": "within-error",
    "basis": "monte-carlo",
    "se": 2.2,
    "varies": "unseeded",
    "shown_by": "x",
}
MISROUNDED = {
    "kind": "misrounded",
    "output": "a/b@80fd183:README.md:40 prints 0.001848",
    "printed": "0.19",
    "steps": [3],
    "shown_by": "make table-1",
}


def _claim(**overrides) -> dict:
    claim = {
        "id": "t.cell",
        "where": "Table 1",
        "statement": "a cell",
        "paper": 4.1,
        "ours": {"output": "table-1", "path": "rows[lm_type=bert,m=50,n=50].boost_mean", "scale": 100},
        "rule": {"kind": "round", "digits": 1},
        "needs": ["few/m50"],
    }
    claim.update(overrides)
    return claim


def _write(tmp_path: Path, claims: list[dict], paper: str = "toy") -> Path:
    import yaml

    file = tmp_path / f"{paper}.yaml"
    file.write_text(yaml.safe_dump({"paper": paper, "claims": claims}, sort_keys=False))
    return file


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"id": "Bad Id"}, "id", "must match"),
        ({"where": ""}, "where", "non-empty string"),
        ({"paper": None}, "paper", "required"),
        ({"ours": {"output": "table-1"}}, "ours", "either path"),
        ({"ours": {"path": "rows[0]"}}, "ours.output", "needs the output"),
        ({"ours": {"output": "table-1", "path": "rows[m=5"}}, "ours.path", "unbalanced"),
        ({"ours": {"function": "f", "path": "a", "output": "t"}}, "ours", "not both"),
        ({"ours": {"function": "f"}}, "figure", "must name the output it reads"),
        ({"ours": {"output": "table-1", "path": "a", "scale": "x"}}, "ours.scale", "must be a number"),
        ({"ours": {"output": "table-1", "path": "a", "units": "%"}}, "ours.units", "unknown field"),
        ({"rule": {"kind": "round"}}, "rule", "needs digits"),
        ({"rule": {"kind": "approx"}}, "rule", "unknown rule kind"),
        ({"rule": {"kind": "sign"}}, "paper", "positive, negative or zero"),
        # a paper value that does not fit its rule is a ledger error, not missing data.
        (
            {
                "paper": 0,
                "ours": {"output": "t", "path": ["a", "b"]},
                "rule": {"kind": "tolerance", "abs": 1},
            },
            "paper",
            "ours.path lists 2 paths, so ours is a list of 2 values: the paper's value must be a list of 2, got 0",
        ),
        ({"paper": [1.0], "ours": {"output": "t", "path": ["a", "b"]}}, "paper", "must be a list of 2"),
        (
            {"paper": 3, "ours": {"output": "t", "path": ["a", "b"]}, "rule": {"kind": "equal"}},
            "paper",
            "list of 2",
        ),
        ({"paper": "4.1"}, "paper", "rule round: the paper's value must be a number"),
        ({"paper": [4.1, "x"]}, "paper", "rule round: the paper's value holds 'x', which is not a number"),
        ({"paper": {}, "rule": {"kind": "tolerance", "rel": 0.1}}, "paper", "the paper's value is empty"),
        ({"paper": True, "rule": {"kind": "tolerance", "rel": 0.1}}, "paper", "must be a number"),
        ({"paper": 2.5, "rule": {"kind": "count", "op": "positive"}}, "paper", "non-negative whole number"),
        ({"paper": -1, "rule": {"kind": "count", "op": "positive"}}, "paper", "non-negative whole number"),
        ({"paper": "half", "rule": {"kind": "share", "op": "positive"}}, "paper", "rule share wants"),
        ({"paper": 0, "rule": {"kind": "all", "op": "positive"}}, "paper", "the paper's words (a string)"),
        ({"paper": 0.05, "rule": {"kind": "significance", "alpha": 0.05}}, "paper", "the paper's words"),
        ({"needs": "few/m50"}, "needs", "a list"),
        ({"needs": ["../up"]}, "needs", "without '..'"),
        ({"colour": "red"}, "colour", "unknown field"),
        # the fixed category list, each kind with its fields
        ({"category": "rounding"}, "category", "a mapping with kind"),
        ({"category": {"kind": "rounding", "error": "x"}}, "category.kind", "is not a category"),
        ({"category": {"kind": "text-vs-code", "text": "§2.2"}}, "category.code", "needs code"),
        (
            {"category": {**TEXT_VS_CODE, "code": "notebooks/figures.ipynb: OLS"}},
            "category.code",
            "owner/repo@",
        ),
        ({"category": {**TEXT_VS_CODE, "code": "a/b@c357810:f.py"}}, "category.code", "path:line"),
        ({"category": {**TEXT_VS_CODE, "shown_by": ""}}, "category.shown_by", "needs shown_by"),
        ({"category": {**GAP, "missing": "qwen2"}}, "category.missing", "at least 1"),
        ({"category": {"kind": "release-gap", "missing": ["qwen2"]}}, "category.toward", "needs toward"),
        (
            {"category": {"kind": "inconsistent", "places": ["Table 4"]}},
            "category.arithmetic",
            "needs arithmetic",
        ),
        ({"category": {**INCONSISTENT, "places": ["Table 4"]}}, "category.places", "at least 2"),
        (
            {"category": {**INCONSISTENT, "arithmetic": "they differ"}},
            "category.arithmetic",
            "with its numbers",
        ),
        ({"category": {"kind": "within-error", "error": "MC"}}, "category.error", "takes basis"),
        ({"category": {**MONTE_CARLO, "se": -1}}, "category.se", "positive number"),
        (
            {"category": {**MONTE_CARLO, "basis": "sampling"}},
            "category.basis",
            "choose rounding or monte-carlo",
        ),
        (
            {"category": {"kind": "within-error", "basis": "rounding", "shown_by": "x"}},
            "category.printed",
            "needs",
        ),
        ({"category": {**ROUNDING, "printed": 0.19}}, "category.printed", "quoted numeral"),
        ({"category": {**ROUNDING, "se": 0.1}}, "category.se", "on rounding takes no se"),
        (
            {"category": {k: v for k, v in MONTE_CARLO.items() if k != "varies"}},
            "category.varies",
            "on monte-carlo needs varies",
        ),
        ({"category": {**ROUNDING, "of": "rows[x"}}, "category.of", "unbalanced"),
        ({"category": {**MISROUNDED, "steps": []}}, "category.steps", "needs steps"),
        ({"category": {**MISROUNDED, "steps": [1.5]}}, "category.steps", "whole numbers"),
        ({"category": {**MISROUNDED, "output": "summary.py prints it"}}, "category.output", "owner/repo@"),
        ({"category": {"kind": "implementation", "ours": "x", "shown_by": "y"}}, "category.authors", "needs"),
        ({"category": {"kind": "unexplained", "tried": "x", "why": "y"}}, "category.why", "takes tried"),
        (
            {"category": {"kind": "unexplained", "tried": "", "shown_by": "x"}},
            "category.tried",
            "needs tried",
        ),
        ({"rule": {"kind": "within_se"}}, "rule", "needs se"),
        ({"rule": {"kind": "within_se", "se": 0}}, "rule", "se must be a positive number"),
    ],
)
def test_a_bad_field_names_file_id_and_field(tmp_path, overrides, field, message):
    file = _write(tmp_path, [_claim(**overrides)])
    with pytest.raises(ledger.LedgerError) as err:
        ledger.load(file, "toy")
    text = str(err.value)
    assert str(file) in text and f"field {field!r}" in text and message in text
    if "id" in overrides and field == "id":
        assert "claim #1" in text
    else:
        assert "claim t.cell" in text


def test_ledger_level_errors(tmp_path):
    file = _write(tmp_path, [_claim(), _claim()])
    with pytest.raises(ledger.LedgerError, match="claim t.cell, field 'id': duplicate id"):
        ledger.load(file)
    with pytest.raises(ledger.LedgerError, match="ledger of 'other'"):
        ledger.load(_write(tmp_path, [_claim()]), "other")
    loaded = ledger.load(_write(tmp_path, [_claim(ours={"function": "nope"}, figure="table-1")]))
    with pytest.raises(ledger.LedgerError, match="claim t.cell, field 'ours.function': no function 'nope'"):
        ledger.check_functions(loaded, {"known": lambda s: 1})
    file = _write(tmp_path, [_claim()])
    text = file.read_text()
    file.write_text(text.replace("claims:", "source: results\nclaims:", 1))
    assert ledger.load(file).source == "results"
    file.write_text(text.replace("claims:", "source: nowhere\nclaims:", 1))
    with pytest.raises(
        ledger.LedgerError,
        match="field 'source': 'nowhere': expected one of published, results, published\\+results",
    ):
        ledger.load(file)
    (tmp_path / "bad.yaml").write_text("paper: [unclosed")
    with pytest.raises(ledger.LedgerError, match="not valid YAML"):
        ledger.load(tmp_path / "bad.yaml")


@pytest.mark.parametrize(
    "overrides",
    [
        {"paper": [4.1, 0.2], "ours": {"output": "t", "path": ["a", "b"]}},
        {"paper": {"x": 1, "y": 2.5}, "rule": {"kind": "tolerance", "abs": 0.1}},
        {
            "paper": ["a", "b", "c"],
            "ours": {"output": "t", "path": ["a", "b"]},
            "rule": {"kind": "equal", "as_set": True},
        },
        {"paper": 3, "rule": {"kind": "count", "op": "positive"}},
        {"paper": 12.5, "rule": {"kind": "share", "op": "positive"}},
        {"paper": "not significant", "rule": {"kind": "significance", "alpha": 0.05}},
        {"paper": "negative", "rule": {"kind": "sign"}, "ours": {"output": "t", "path": ["a", "b", "c"]}},
    ],
)
def test_paper_values_that_fit_their_rule_load(tmp_path, overrides):
    loaded = ledger.load(_write(tmp_path, [_claim(**overrides)]), "toy")
    assert loaded.claims[0].id == "t.cell"


def test_committed_ledgers_fit_their_rules():
    """Every committed claim's paper value has the shape its rule needs (checked when the ledger is read)."""
    from testtask.report.main import ledger_file

    for file in sorted(ledger_file("x").parent.glob("*.yaml")):
        assert ledger.load(file, file.stem).claims


def test_claims_are_frozen(tmp_path):
    claim = ledger.load(_write(tmp_path, [_claim(paper={"a": [1, 2]}, rule={"kind": "equal"})])).claims[0]
    with pytest.raises(AttributeError):
        claim.id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        claim.paper["a"] = 3  # type: ignore[index]
    assert ledger.thaw(claim.paper) == {"a": [1, 2]}
    assert claim.ours.file == "table-1.json" and claim.shown_beside == "table-1"


# ---------------------------------------------------------------- evaluation


def _toy(tmp_path: Path) -> tuple[ledger.Ledger, Path, Path]:
    figures = tmp_path / "figures" / "toy"
    figures.mkdir(parents=True)
    (figures / "table-1.json").write_text(json.dumps(DOC))
    (figures / "table-2.csv").write_text("collection,p\nfew,0.7\nfew,0.9\nzero,0.01\n")
    data = tmp_path / "data" / "toy"
    (data / "few" / "m50").mkdir(parents=True)
    claims = [
        _claim(id="t.match"),
        _claim(id="t.differ", paper=4.2, note="a known reason"),
        _claim(id="t.need", needs=["few/m100"]),
        _claim(id="t.sidecar", ours={"output": "figure-3", "path": "panels[0].m"}),
        _claim(id="t.path", ours={"output": "table-1", "path": "rows[lm_type=bert,m=100,n=50].boost_mean"}),
        _claim(
            id="t.csv",
            paper="all",
            ours={"output": "table-2.csv", "path": "[?collection=few].p"},
            rule={"kind": "all", "op": ">", "than": 0.5},
        ),
        _claim(
            id="t.fn",
            paper={"n": 2},
            ours={"function": "count_rows"},
            rule={"kind": "equal"},
            figure="table-1",
        ),
        _claim(
            id="t.fn_missing",
            paper=1,
            ours={"function": "reads_figure_9"},
            rule={"kind": "equal"},
            figure="figure-9",
        ),
    ]
    return ledger.load(_write(tmp_path, claims)), figures, data


FUNCTIONS = {
    "count_rows": lambda sidecars: {"n": sum(1 for r in sidecars["table-2.csv"] if r["collection"] == "few")},
    "reads_figure_9": lambda sidecars: sidecars["figure-9.json"]["x"],
}


def test_evaluation_matches_differs_and_not_computable(tmp_path):
    loaded, figures, data = _toy(tmp_path)
    verdicts = {v.claim.id: v for v in evaluate.evaluate(loaded, figures, data, FUNCTIONS)}
    assert verdicts["t.match"].status == evaluate.MATCHES
    assert verdicts["t.match"].ours == "4.1 (4.127 before rounding)"
    differ = verdicts["t.differ"]
    assert (
        differ.status == evaluate.DIFFERS
        and differ.difference == "-0.073"
        and differ.note == "a known reason"
    )
    need = verdicts["t.need"]
    assert need.status == evaluate.NOT_COMPUTABLE and need.missing == ("few/m100",)
    assert need.reason == "missing input few/m100" and "make data PAPER=toy" in need.command
    assert need.ours == "4.1 (4.127 before rounding)"  # shown on the data present, not judged
    sidecar = verdicts["t.sidecar"]
    assert sidecar.status == evaluate.NOT_COMPUTABLE and sidecar.missing == ("figure-3.json",)
    assert sidecar.command == "make figure-3 PAPER=toy"
    assert "0 items match" in verdicts["t.path"].reason
    assert verdicts["t.csv"].status == evaluate.MATCHES and verdicts["t.csv"].ours.startswith("2 of 2 > 0.5")
    assert verdicts["t.fn"].status == evaluate.MATCHES
    assert verdicts["t.fn_missing"].missing == ("figure-9.json",)
    assert evaluate.counts(list(verdicts.values())) == {"matches": 3, "differs": 1, "not computable": 4}
    json.dumps([v.as_dict() for v in verdicts.values()])  # the report's data is JSON


def test_a_null_value_names_the_output_the_path_and_what_the_figure_was_drawn_without(tmp_path):
    """A student's category whose benchmarks the release does not score: figure 3 holds null for it and says
    which benchmarks it was drawn without; the claim says so instead of "ours is not a number: None"."""
    figures = tmp_path / "figures" / "toy"
    figures.mkdir(parents=True)
    drawn = "not in the data, so not drawn: humaneval, mbpp"
    (figures / "figure-3.json").write_text(json.dumps({"tau": {"Code": None}, "drawn_without": [drawn]}))
    claims = [
        _claim(
            id="t.own",
            paper="yes",
            ours={"output": "figure-3", "path": "tau.Code"},
            rule={"kind": "all", "op": ">", "than": 0.7},
            needs=[],
        )
    ]
    (verdict,) = evaluate.evaluate(ledger.load(_write(tmp_path, claims)), figures, tmp_path, {})
    assert verdict.status == evaluate.NOT_COMPUTABLE and verdict.ours is None
    assert verdict.reason == f"figure-3.json holds no value at tau.Code; drawn without: {drawn}"


# ---------------------------------------------------------------- provenance and rendering


def test_subsets_are_discovered(tmp_path):
    for sub in ("few/m50/n50/bert", "few/m100/n50/bert", "zero/m100", "lone"):
        (tmp_path / sub).mkdir(parents=True)
    (tmp_path / ".hidden" / "x").mkdir(parents=True)
    assert provenance.subsets(tmp_path) == ("few/m100", "few/m50", "lone", "zero/m100")
    assert provenance.subsets(tmp_path / "absent") == ()


def test_release_not_fetched_and_not_verified(tmp_path):
    absent = provenance.release("toy", tmp_path / "none", {"repo": "a/b", "commit": "c"})
    assert not absent.present and absent.verified == "not fetched"
    (tmp_path / "toy" / "x").mkdir(parents=True)
    broken = provenance.release("toy", tmp_path / "toy", {"repo": "a/b", "commit": "c"})
    assert broken.present and broken.verified.startswith("NOT verified") and broken.subsets == ("x",)


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "img":
            self.images.append(attributes["src"])
        for key in ("src", "href"):
            value = attributes.get(key) or ""
            if value.startswith(("http:", "https:", "//")):
                self.external.append(value)


def check_page(page: Path) -> list[Path]:
    """Every <img> of `page` is a local file that PIL opens; no external resource. Returns the images."""
    from PIL import Image

    parser = _Images()
    parser.feed(page.read_text(encoding="utf-8"))
    assert not parser.external
    images = [page.parent / src for src in parser.images]
    for image in images:
        assert image.is_file(), image
        with Image.open(image) as opened:
            opened.verify()
    return images


def test_render_html_and_markdown(tmp_path):
    from PIL import Image

    loaded, figures, data = _toy(tmp_path)
    Image.new("RGB", (20, 10), "white").save(figures / "table-1.png")
    (figures / "table-2.md").write_text("| a |\n|---|\n" + "| 1 |\n" * 50)
    verdicts = evaluate.evaluate(loaded, figures, data, FUNCTIONS)
    reports = [
        render.PaperReport("toy", verdicts, figures, loaded.file),
        render.PaperReport("later", [], tmp_path / "figures" / "later", None),
    ]
    prov = provenance.Provenance("abc123", True, "testtask action=report", "now", tmp_path / "figures")
    out = tmp_path / "report"
    page, md = render.write(reports, prov, out)
    images = check_page(page)
    assert [i.name for i in images] == ["table-1.png"]
    text = page.read_text()
    assert "abc123 (with uncommitted changes)" in text and html.escape(rules.ZERO_RULE) in text
    assert text.count('class="badge match"') + text.count("class='badge match'") >= 3
    assert "make figure-3 PAPER=toy" in text and "a known reason" in text and "no ledger yet" in text
    markdown = md.read_text()
    assert "| toy | 3 | 1 | 4 |" in markdown and "![toy table-1](figures/toy/table-1.png)" in markdown
    assert "`t.need`" in markdown and "missing input few/m100" in markdown


def test_report_imports_no_paper_package():
    from tests.test_architecture import PAPERS, import_graph

    graph = import_graph()
    for module, targets in graph.items():
        if module.startswith("testtask.report"):
            assert not {t for t in targets if t.split(".")[1] in PAPERS}, module
            assert "testtask.pipeline" not in targets and "testtask.cli" not in targets


def test_build_missing_builds_only_absent_figures_and_tables(tmp_path):
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from testtask.report.main import _build_missing

    (tmp_path / "table-1.json").write_text("{}")
    calls = []

    sources = []

    def build(cfg, kind, numbers):
        calls.append((cfg.paper, kind, numbers))
        sources.append(cfg.source)
        if numbers == [7]:
            raise SystemExit("inputs not available")  # the verdict will say what is missing

    cfg = OmegaConf.create({"paper": "all", "source": "published"})
    _build_missing(
        cfg,
        "toy",
        "results",  # a ledger's own source (downstream-predictability: our runs only) wins over the command's
        {"table-1.json", "table-2.csv", "figure-7.json", "figure-mini.json", "x.json"},
        tmp_path,
        SimpleNamespace(build=build),
    )
    assert calls == [("toy", "figure", [7]), ("toy", "figure", ["mini"]), ("toy", "table", [2])]
    assert sources == ["results"] * 3
    assert cfg.paper == "all" and cfg.source == "published"  # the caller's config is left alone


def test_report_settings_are_in_the_config():
    from testtask.pipeline import CORE_ACTIONS, compose

    cfg = compose()
    assert cfg.report.out_dir == "report" and cfg.report.build_missing is False
    assert "report" in CORE_ACTIONS
    fast = compose(["report=fast"])  # `make report-fast`: builds what is missing, with smaller settings
    assert fast.report.build_missing is True and fast.report.out_dir == "report-fast"
    # both reports judge every claim under both protocol presets (report=fast replaces the group's file)
    assert list(fast.report.protocols) == list(cfg.report.protocols) == ["authors", "paper_text"]
    assert cfg.report.require_categories is True and fast.report.require_categories is False
    assert fast.sampler.draws < cfg.sampler.draws and fast.pretrain_on_test.figure_7.slices < 500
    assert (
        fast.pretrain_on_test.figure_7.m == cfg.pretrain_on_test.figure_7.m
    )  # only sizes change, not the design


# ---------------------------------------------------------------- a fresh clone


def test_a_fresh_clone_report_names_the_commands_that_build_its_inputs(tmp_path, caplog):
    """Nothing built: `make report` gave every claim "not computable" and no way on; the report and the console
    now start with the command per paper that builds what its claims read (with its SOURCE)."""
    from tests.conftest import tmp_config
    from testtask import papers
    from testtask.pipeline import run

    summary = run(tmp_config(tmp_path, "action=report", "paper=all", f"report.out_dir={tmp_path / 'report'}"))
    out = tmp_path / "report" / "published"  # paths.output_dir: one report folder per source
    claims = [c for p in summary["papers"].values() for c in p["claims"]]
    # all but claims on variants of a figure (built by their own command, which their verdict names)
    waiting = [c for c in claims if c["not_built"]]
    assert len(waiting) > 0.9 * len(claims) > 100
    notice = summary["not_built"]
    # under both presets: the authors' code (report.json's claims) and, for the papers with one, the text's
    shown = int(notice[0].split()[0])
    assert notice[0].endswith("or `make report-fast` for an approximate report in minutes):")
    assert shown > len(waiting) and " verdicts read outputs that are not built yet" in notice[0]
    sources = {p: "results" if p == "downstream-predictability" else "published" for p in papers.keys()}
    # the overrides that place outputs are repeated, so the command builds where this report reads
    places = [
        f"data.dest={tmp_path / 'published'}",
        f"figures_dir={tmp_path / 'figures'}",
        f"cache_dir={tmp_path / 'cache'}",
        f"results_dir={tmp_path / 'results'}",
        "results_run=null",
    ]
    expected = []
    for p, s in sources.items():
        expected.append(f"make figures tables PAPER={p} SOURCE={s} ARGS='{' '.join(places)}'")
        if "analysis" in papers.get(p).paper_text:
            expected.append(
                f"make figures tables PAPER={p} SOURCE={s} ARGS='{' '.join(places)} protocol=paper_text'"
            )
    assert [line for line in notice[1:] if line.startswith("make figures tables")] == expected
    # a sensitivity variant is named with its own command (train-before-test's, report.py VARIANTS)
    from testtask.train_before_test.report import VARIANTS

    own = [line for line in notice[1:] if not line.startswith("make figures tables")]
    text = [c.replace("ARGS='", "ARGS='protocol=paper_text ", 1) for c in sorted(VARIANTS.values())]
    assert own == sorted(VARIANTS.values()) + text  # under the authors' code, then under the paper's text
    assert summary["uncategorized"] == {}  # nothing built is nothing found
    markdown = (out / "REPRODUCTION.md").read_text()
    assert markdown.splitlines()[2] == f"> **Not built yet.** {notice[0]}"
    assert "> - `make figures tables PAPER=pretrain-on-test SOURCE=published ARGS='data.dest=" in markdown
    page = (out / "index.html").read_text()
    assert page.index("Not built yet") < page.index('class="prov"')
    assert "make figures tables PAPER=downstream-predictability SOURCE=results" in page
    console = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(
        line.startswith("report: make figures tables PAPER=proxy-tasks SOURCE=published") for line in console
    )
    # the per-claim command names SOURCE where it is not the Makefile's default
    dp = summary["papers"]["downstream-predictability"]["claims"][0]
    assert dp["command"].endswith("PAPER=downstream-predictability SOURCE=results")


def test_built_outputs_leave_no_notice_and_a_tried_build_says_what_failed(tmp_path):
    from testtask.report import unbuilt

    loaded, figures, data = _toy(tmp_path)
    verdicts = evaluate.evaluate(loaded, figures, data, FUNCTIONS)
    waiting = unbuilt.collect("toy", "published", verdicts)
    assert waiting == unbuilt.Unbuilt("toy", "published", ("figure-3.json", "figure-9.json"), 2)
    lines = unbuilt.notice([waiting], ["figures_dir=/x"])
    assert lines[1] == "make figures tables PAPER=toy SOURCE=published ARGS='figures_dir=/x'"
    tried = unbuilt.notice([waiting], tried=True)
    assert "could not be built although report.build_missing=true" in tried[0]
    assert tried[1] == "toy: figure-3.json, figure-9.json"
    variant_only = unbuilt.Unbuilt(
        "toy", "published", (), 1, own_commands=("make figure-6 PAPER=toy ARGS='x=1'",)
    )
    # a variant's output is named by its command, never an empty line
    assert unbuilt.notice([variant_only], tried=True)[1] == "toy: make figure-6 PAPER=toy ARGS='x=1'"
    (figures / "figure-3.json").write_text(json.dumps({"panels": [{"m": 50}]}))
    (figures / "figure-9.json").write_text(json.dumps({"x": 1}))
    verdicts = evaluate.evaluate(loaded, figures, data, FUNCTIONS)
    assert unbuilt.collect("toy", "published", verdicts) is None and unbuilt.notice([]) == []
    prov = provenance.Provenance("abc123", False, "testtask action=report", "now", tmp_path / "figures")
    page, md = render.write([render.PaperReport("toy", verdicts, figures, loaded.file)], prov, tmp_path / "r")
    assert "Not built yet" not in page.read_text() and "Not built yet" not in md.read_text()
    assert unbuilt.place_overrides(["paper=all", "figures_dir=/f", "results_run=x", "+cache_dir=c"]) == [
        "figures_dir=/f",
        "results_run=x",
        "+cache_dir=c",
    ]


def test_the_command_line_report_repeats_the_overrides_that_place_outputs(tmp_path):
    import subprocess
    import sys

    figures, out = tmp_path / "figs", tmp_path / "report"
    args = ["action=report", "paper=proxy-tasks", f"figures_dir={figures}", f"report.out_dir={out}"]
    hydra = [f"hydra.run.dir={tmp_path / 'hydra'}", "hydra.output_subdir=null"]
    code = "from testtask.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, *args, *hydra], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "published" / "proxy-tasks" / "report.json").read_text())
    command = f"make figures tables PAPER=proxy-tasks SOURCE=published ARGS='figures_dir={figures}'"
    assert report["not_built"][1:] == [command]
    assert command in done.stdout + done.stderr  # the console says it too


def test_the_header_names_paths_relative_to_the_repository():
    """The report's header names the repository's folders, not this machine's absolute paths."""
    from testtask.paths import repo_root
    from testtask.report.provenance import shown

    root = repo_root()
    assert shown(root / "figures") == "figures"
    assert shown(f"mirror:{root.parent / 'shared' / 'data' / 'x'}") == "mirror:../shared/data/x"
    assert shown("figures") == "figures" and shown(None) is None
