"""analysis/compare_sidecars.py: two figure folders hold the same numbers, or every difference is printed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.conftest import write_json

SCRIPT = Path(__file__).resolve().parents[1] / "analysis" / "compare_sidecars.py"
spec = importlib.util.spec_from_file_location("compare_sidecars", SCRIPT)
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)

SIDECAR = {"theta": 0.0731, "panels": [{"n": 53, "ok": True, "label": "mmlu"}], "note": None}


def _write(root: Path, obj: dict, name: str = "paper/figure-1.json") -> None:
    write_json(root / name, obj)


def test_equal_within_tolerance_and_added_keys_allowed(tmp_path, capsys):
    _write(tmp_path / "old", SIDECAR)
    _write(tmp_path / "new", {**SIDECAR, "theta": 0.0731 * (1 + 1e-12), "excluded_models": []})
    assert compare.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert "added excluded_models" in out and "0 difference(s), 1 added key(s)" in out
    assert compare.main([str(tmp_path / "old"), str(tmp_path / "new"), "--strict"]) == 1


def test_every_kind_of_difference_is_reported(tmp_path, capsys):
    changed = {"theta": 0.08, "panels": [{"n": 52, "ok": False, "label": "mmlu"}, {}], "note": "x"}
    _write(tmp_path / "old", SIDECAR)
    _write(tmp_path / "old", SIDECAR, "paper/figure-2.json")
    _write(tmp_path / "new", changed)
    assert compare.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 1
    out = capsys.readouterr().out
    for line in (
        "changed theta: 0.0731 -> 0.08",
        "changed panels[len]: 1 -> 2",
        "changed panels[0].n: 53 -> 52",
        "changed panels[0].ok: true -> false",
        'changed note: null -> "x"',
        "paper/figure-2.json: missing",
    ):
        assert line in out, line
    assert "6 difference(s)" in out


def test_timing_keys_are_ignored_unless_asked(tmp_path, capsys):
    _write(tmp_path / "old", {**SIDECAR, "seconds": 1.0})
    _write(tmp_path / "new", {**SIDECAR, "seconds": 2.5})
    assert compare.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 0
    assert compare.main([str(tmp_path / "old"), str(tmp_path / "new"), "--ignore", "note"]) == 1
    assert "changed seconds: 1.0 -> 2.5" in capsys.readouterr().out
