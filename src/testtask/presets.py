"""An analysis preset laid over a composed config: what `analysis_protocol=<preset>` would have composed.

The report evaluates every claim under both presets (the authors' code, the default, and the paper's text) in one
run, so it needs the paper_text config beside the one it was given. The preset files
(conf/analysis_protocol/<preset>.yaml and the per-paper files its defaults list names) are `# @package _global_`
mappings of settings; laying them over the default config in their defaults order is what Hydra's composition
does with them (tests/test_presets.py compares the two).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from testtask.errors import InputError
from testtask.paths import AUTHORS, PRESETS, conf_dir


def has_text_preset(paper: str) -> bool:
    """Whether `paper`'s released analysis code differs from its text somewhere (a paper_text preset and a table
    docs/protocols/<paper>-analysis.md); the others have one protocol (no released analysis code)."""
    from testtask.protocol_tables import ANALYSES

    return paper in ANALYSES


def _read(file: Path) -> dict[str, Any]:
    data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise InputError(f"{file}: an analysis preset must be a mapping of settings")
    return data


def layers(preset: str) -> list[dict[str, Any]]:
    """The settings `analysis_protocol=<preset>` lays over the defaults, in Hydra's order (its defaults list, with
    `_self_` where it stands, last when absent)."""
    if preset not in PRESETS:
        raise InputError(f"analysis preset {preset!r}: choose {', '.join(PRESETS)}")
    folder = conf_dir() / "analysis_protocol"
    top = _read(folder / f"{preset}.yaml")
    defaults = top.pop("defaults", None) or ["_self_"]
    if "_self_" not in defaults:
        defaults = [*defaults, "_self_"]
    out: list[dict[str, Any]] = []
    for entry in defaults:
        if entry == "_self_":
            out.append(top)
            continue
        nested = _read(folder / f"{entry}.yaml")
        if "defaults" in nested:
            raise InputError(
                f"{folder / entry}.yaml: a per-paper preset file cannot have its own defaults list"
            )
        out.append(nested)
    return out


def with_preset(cfg: DictConfig, preset: str) -> DictConfig:
    """A copy of `cfg` (composed under the authors' preset) with `preset`'s settings laid over it."""
    if str(cfg.get("analysis_preset") or AUTHORS) != AUTHORS:
        raise InputError(
            f"the config was composed with analysis_protocol={cfg.get('analysis_preset')}; the report evaluates "
            "both presets from the default config: run it without analysis_protocol"
        )
    merged = cfg.copy()
    OmegaConf.set_struct(merged, False)
    for layer in layers(preset):
        merged = OmegaConf.merge(merged, layer)
    assert isinstance(merged, DictConfig)
    return merged
