"""The lm-eval metric each benchmark is run with, read from a folder of benchmark presets (YAML files mapping
a benchmark to its settings, `metric` among them: conf/train_before_test/benchmarks/*.yaml)."""

from __future__ import annotations

from pathlib import Path


def preset_metrics(folder: Path) -> dict[str, str]:
    """Benchmark -> its lm-eval metric over every preset in `folder`; one given different metrics is left
    out."""
    from omegaconf import OmegaConf

    found: dict[str, set[str]] = {}
    for preset in sorted(Path(folder).glob("*.yaml")):
        for name, entry in OmegaConf.to_container(OmegaConf.load(preset), resolve=False).items():
            if isinstance(entry, dict) and isinstance(entry.get("metric"), str):
                found.setdefault(str(name), set()).add(entry["metric"])
    return {name: metrics.pop() for name, metrics in found.items() if len(metrics) == 1}
