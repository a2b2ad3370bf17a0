"""analysis/compare_sidecars.py: two figure folders hold the same numbers, or every difference is printed."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import analysis_script, write_json

compare = analysis_script("compare_sidecars")

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


def _stamped(obj: dict, protocol: str, checksum: str = "sha256:aa") -> dict:
    block = {"source": "published", "run": None, "protocol": protocol, "data": {"checksum": checksum}}
    return {**obj, "provenance": block}


def test_two_presets_are_compared_only_when_asked_and_each_sidecar_says_whether_it_differs(tmp_path, capsys):
    old, new = tmp_path / "published", tmp_path / "published.paper_text"
    _write(old, _stamped(SIDECAR, "authors"))
    _write(new, _stamped(SIDECAR, "paper_text"))
    _write(old, _stamped(SIDECAR, "authors"), "paper/figure-2.json")
    _write(new, _stamped({**SIDECAR, "theta": 0.08, "note": "x"}, "paper_text"), "paper/figure-2.json")
    assert compare.main([str(old), str(new)]) == 2  # another preset's outputs: refused unless asked
    assert "under protocol=paper_text" in capsys.readouterr().out
    assert compare.main([str(old), str(new), "--across-presets", "--by-file"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["paper/figure-1.json: same", "paper/figure-2.json: 2 difference(s)"]
    assert out[2].endswith(
        "2 difference(s), 0 added key(s); 4 numbers compared, 1 differ; 1 sidecar(s) differ"
    )
    # each side may be of either preset, also where every sidecar must be of one source
    assert compare.main([str(new), str(old), "--across-presets", "--source", "published"]) == 1
    capsys.readouterr()
    # across presets, the source and the data are still checked
    _write(new, _stamped(SIDECAR, "paper_text", checksum="sha256:bb"))
    assert compare.main([str(old), str(new), "--across-presets"]) == 2
    assert "other data" in capsys.readouterr().out
