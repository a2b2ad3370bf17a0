"""proxy-tasks' claims ledger (conf/claims/proxy-tasks.yaml) and its report functions: the ledger validates, the
named functions give known answers on small synthetic sidecars, Table 5's claims get their verdicts on a fresh
build (it reads only the committed transcription of the paper's Table 4), and the report on the real sidecars,
when they have been built, has no claim failing on a path or a rule."""

from __future__ import annotations

import pytest

from testtask.paths import resolve
from testtask.pipeline import build, compose, run
from testtask.proxy_tasks import registry
from testtask.proxy_tasks import report as functions
from testtask.report import evaluate
from testtask.report.main import ledger_file, load_ledger

PAPER = "proxy-tasks"
TABLE_5_MATCHES = {  # at the paper's 2 decimals: σ_r² of C3, CMNLI, CMMLU and R of CMMLU
    "pt.table5.c3.sigma_r",
    "pt.table5.cmnli.sigma_r",
    "pt.table5.cmmlu.sigma_r",
    "pt.table5.cmmlu.r",
}


def test_ledger_validates_and_names_only_hook_functions():
    loaded = load_ledger(PAPER)
    assert loaded is not None and loaded.file == ledger_file(PAPER)
    ids = [c.id for c in loaded.claims]
    assert len(ids) == len(set(ids)) == 21
    assert loaded.functions() == set(registry.PAPER.report) == set(functions.FUNCTIONS)
    table_5 = [c for c in loaded.claims if c.id.startswith("pt.table5.")]
    assert len(table_5) == 18  # 6 tasks × (σ_r², σ_d², R)
    for claim in table_5:
        assert claim.rule.kind == "round" and claim.rule.params["digits"] == 2
        assert claim.ours.output == "table-5" and not claim.needs
    # every claim that can differ explains why, or is about the paper's reading of its own table
    for claim in loaded.claims:
        if claim.id not in TABLE_5_MATCHES:
            assert claim.note, claim.id
    # and says why in a category: Table 5 and its reading disagree with Table 4 under §3.2's formula; §4.1's
    # "consistently" disagrees with Table 3's own n = 10, k = 25 row (Kendall's r 0.475 < Pearson's 0.476)
    kinds = {c.id: c.category.kind for c in loaded.claims if c.category}
    assert set(kinds) == {c.id for c in loaded.claims} - TABLE_5_MATCHES
    assert set(kinds.values()) == {"inconsistent"}
    for claim in loaded.claims:
        if claim.category and claim.id != "pt.s41.table3.kendall_dominates":
            assert any("Table 4" in place for place in claim.category.get("places")), claim.id
    kendall = {c.id: c for c in loaded.claims}["pt.s41.table3.kendall_dominates"].category
    assert "0.475 < 0.476" in kendall.get("arithmetic")


def _table_3_row(matrix, n, k, s, r):
    names = ("pearson", "spearman", "kendall")
    return {
        "matrix": matrix,
        "n": n,
        "k": k,
        "metrics": {m: {"s_mean": s[i], "r_mean": r[i]} for i, m in enumerate(names)},
    }


def test_functions_known_answers():
    rows = {
        "C3": {"ratio": 57.2},
        "CMNLI": {"ratio": 2.9},
        "OCNLI": {"ratio": 0.9},
        "CHID": {"ratio": 51.4},
        "RTE": {"ratio": 4.9},
    }
    sidecars = {"table-5.json": {"rows": rows}}
    robust = functions.most_robust_tasks(sidecars)
    assert robust["highest_two"] == ["C3", "CHID"] and robust["ranking"][-1] == "OCNLI"
    assert functions.most_robust_nli_task(sidecars) == {
        "best": "RTE",
        "ratio": {"RTE": 4.9, "CMNLI": 2.9, "OCNLI": 0.9},
    }
    with pytest.raises(LookupError, match="language inference"):
        functions.most_robust_nli_task({"table-5.json": {"rows": {"C3": {"ratio": 1.0}}}})

    table_3 = {
        "rows": [
            # the paper's own n = 10, k = 35 row: a tie in s is allowed (≥), r must be strictly higher
            _table_3_row("m", 10, 35, (0.551, 0.574, 0.574), (0.435, 0.434, 0.457)),
            # the paper's n = 10, k = 25 row: Kendall's r 0.475 is below Pearson's 0.476
            _table_3_row("m", 10, 25, (0.500, 0.568, 0.580), (0.476, 0.472, 0.475)),
        ]
    }
    result = functions.kendall_dominates({"table-3.json": table_3})
    assert result == {
        "every_configuration": False,
        "dominates": 1,
        "configurations": 2,
        "matrices": ["m"],
        "failing": ["m n=10 k=25"],
    }
    with pytest.raises(LookupError, match="no rows"):
        functions.kendall_dominates({"table-3.json": {"rows": []}})


def test_table_5_claims_on_a_fresh_build(tmp_path):
    """table-5 reads only conf/proxy_tasks/inputs/paper_table4.yaml: every Table 5 claim is computed; Table 3's
    claim, whose table is not built here, names the sidecar and the command that builds it."""
    cfg = compose([f"paper={PAPER}", f"figures_dir={tmp_path / 'figures'}"])
    build(cfg, "table", [5])
    summary = run(
        compose(
            [
                f"paper={PAPER}",
                "action=report",
                f"figures_dir={tmp_path / 'figures'}",
                f"report.out_dir={tmp_path / 'report'}",
            ]
        )
    )
    claims = {c["id"]: c for c in summary["papers"][PAPER]["claims"]}
    matches = {cid for cid, c in claims.items() if c["status"] == evaluate.MATCHES}
    assert matches == TABLE_5_MATCHES
    differs = {cid for cid, c in claims.items() if c["status"] == evaluate.DIFFERS}
    assert differs == {cid for cid in claims if cid.startswith(("pt.table5.", "pt.s42."))} - TABLE_5_MATCHES
    assert claims["pt.s42.most_robust"]["value"]["highest_two"] == ["CMNLI", "C3"]
    assert claims["pt.s42.rte_best_nli"]["value"]["best"] == "CMNLI"
    table_3 = claims["pt.s41.table3.kendall_dominates"]
    assert table_3["status"] == evaluate.NOT_COMPUTABLE and table_3["missing"] == ["table-3.json"]
    assert table_3["command"] == "make table-3 PAPER=proxy-tasks"
    assert summary["papers"][PAPER]["counts"] == {"matches": 4, "differs": 16, "not computable": 1}
    assert (
        "`pt.table5.cmnli.r`" in (tmp_path / "report" / "published" / PAPER / "REPRODUCTION.md").read_text()
    )


def test_report_on_the_real_sidecars():
    """On the outputs `make figures tables PAPER=proxy-tasks` wrote under figures/ (skipped when absent): no claim
    is left not computable by a path the sidecar lacks or a value of the wrong shape for its rule."""
    folder = resolve(compose([f"paper={PAPER}"]).figures_dir) / PAPER / "published"
    if not (folder / "table-5.json").is_file():
        pytest.skip(f"{folder} holds no built proxy-tasks tables")
    loaded = load_ledger(PAPER)
    verdicts = evaluate.evaluate(loaded, folder, folder, registry.PAPER.report)
    for verdict in verdicts:
        if verdict.status == evaluate.NOT_COMPUTABLE:
            assert verdict.missing and verdict.reason.endswith("has not been built"), verdict.as_dict()
    assert sum(v.status != evaluate.NOT_COMPUTABLE for v in verdicts) >= 20
