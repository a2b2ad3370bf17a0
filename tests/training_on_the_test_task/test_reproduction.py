"""analysis/training_on_the_test_task_reproduction.py: rows pair the paper's value with ours from the sidecars."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "analysis" / "training_on_the_test_task_reproduction.py"


@pytest.fixture(scope="module")
def repro():
    spec = importlib.util.spec_from_file_location("reproduction_tott", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _panel(benchmark: str, adjusted: bool, theta: float, p: float, rel: float) -> dict:
    return {
        "benchmark": benchmark,
        "adjusted": adjusted,
        "theta": theta,
        "theta_se": 0.01,
        "theta_p": p,
        "r2": 0.95,
        "c_e": 22.0,
        "chance": 0.25,
        "n_models": 50,
        "relative_difference": rel,
        "fit": {"r2_centered": 0.85},
        "points": [
            {"model": "llama-3-8b", "log10_compute": 23.9, "group": 1, "value": 0.66},
            {"model": "llama-2-70b", "log10_compute": 23.9, "group": 0, "value": 0.69},
        ],
    }


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    figure_1 = {
        "panels": [
            _panel("mmlu", False, 0.0612, 0.01, 0.1531),
            _panel("gsm8k", False, 0.191, 0.001, 0.25),
            _panel("mmlu", True, -0.002, 0.8, -0.01),
            _panel("gsm8k", True, 0.003, 0.9, 0.01),
        ]
    }
    figure_17 = {"mean_shift": 4.8, "max_shift": 12, "n_models": 50}
    table_3 = {
        "rows": {
            "mmlu": {"coef": 0.0712, "se": 0.0181, "p": 0.001, "r2": 0.5301},
            "gsm8k": {"coef": 0.150, "se": 0.030, "p": 0.001, "r2": 0.49},
        }
    }
    (tmp_path / "figure-1.json").write_text(json.dumps(figure_1))
    (tmp_path / "figure-17.json").write_text(json.dumps(figure_17))
    (tmp_path / "table-3.json").write_text(json.dumps(table_3))
    return tmp_path


def _row(rows: list[tuple[str, str, str, str]], start: str) -> tuple[str, str, str, str]:
    hits = [r for r in rows if r[0].startswith(start)]
    assert len(hits) == 1, (start, [r[0] for r in rows])
    return hits[0]


def test_rows_pair_paper_and_ours(repro, folder: Path) -> None:
    rows = repro.rows(folder)
    assert all(len(r) == 4 for r in rows)

    statement, paper, ours, note = _row(rows, "Fig. 1 top / App. E: θ̂ newer − older, MMLU")
    assert paper.startswith("0.073")
    assert "0.0612" in ours and "p = 0.010" in ours
    assert "lower" in note and "matches" not in note

    _, paper, ours, note = _row(rows, "Fig. 1 top / App. E: θ̂ newer − older, GSM8K")
    assert paper.startswith("0.191") and "0.1910" in ours
    assert note.startswith("matches at the paper's precision")

    _, paper, ours, note = _row(rows, "App. E: relative difference newer − older, MMLU (Fig. 1)")
    assert (paper, ours) == ("15.3%", "15.31%")
    assert note.startswith("matches")

    _, paper, ours, note = _row(rows, "App. F Fig. 17: MMLU average rank shift")
    assert (paper, ours) == ("4.8", "4.80") and note.startswith("matches")
    _, paper, ours, note = _row(rows, "App. F Fig. 17: MMLU maximum rank shift")
    assert (paper, ours) == ("16", "12") and "4.0 lower" in note

    _, paper, ours, note = _row(rows, "App. C Table 3: φ̂ (SE), MMLU")
    assert paper == "0.071 (0.018), bold"
    assert ours.startswith("0.0712 (0.0181)")
    assert "coef: matches" in note and "bold (agrees)" in note
    _, paper, ours, note = _row(rows, "App. C Table 3: R², GSM8K")
    assert (paper, ours) == ("0.503", "0.4900") and "lower" in note

    _, _, ours, note = _row(rows, "Fig. 1 bottom / §2.2: adjusted θ̂ small and not significant")
    assert "-0.0020" in ours and note.startswith("agrees")


def test_absent_sidecars_print_not_built(repro, folder: Path) -> None:
    rows = repro.rows(folder)
    for start in (
        "App. C Table 4: ψ̂ (SE), MMLU",  # table-4.json absent
        "App. D.3 Table 5: Older models vs newer models, MMLU",  # table-5.csv absent
        "§4.2 Fig. 7: Pareto area of improvement shrinks after adjustment, MMLU",
        "§5 Fig. 8 bottom: MMLU log-linear R²",
        "App. E: BBH θ̂ reduction after adjustment",
    ):
        _, paper, ours, _ = _row(rows, start)
        assert ours == repro.NOT_BUILT
        assert paper and paper != repro.NOT_BUILT
    # Figures 9 and 20 are not in the authors' release: said so when their sidecar is absent.
    assert _row(rows, "App. B.3 Fig. 9")[2] == repro.NOT_RELEASED
    assert _row(rows, "App. G Fig. 20")[2] == repro.NOT_RELEASED


def test_empty_folder_and_markdown(repro, tmp_path: Path, capsys, monkeypatch) -> None:
    rows = repro.rows(tmp_path / "nothing-here")
    assert rows and all(r[2] in (repro.NOT_BUILT, repro.NOT_RELEASED) for r in rows)
    monkeypatch.setattr("sys.argv", ["x", str(tmp_path)])
    repro.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| statement | paper | ours (published data) | note |"
    # a literal "|" inside a cell (|θ̂|) is escaped, so every row keeps exactly four cells
    assert all(line.replace("\\|", "").count("|") == 5 for line in lines)
