"""The lm-eval metric each benchmark is run with, read from a folder of benchmark presets.

A preset is a YAML file mapping a benchmark name to its settings, among them `metric` (an lm-eval metric key such as
`acc` or `bits_per_byte`): train-before-test's conf/train_before_test/benchmarks/*.yaml. Readers of that paper's
scores check each score against its metric's range (`testtask.metric_ranges`).
"""

from __future__ import annotations

from pathlib import Path


def preset_metrics(folder: Path) -> dict[str, str]:
    """Benchmark -> the lm-eval metric it is run with, over every `*.yaml` preset in `folder`.

    A benchmark the presets give different metrics is left out (its scores are only checked to be finite)."""
    from omegaconf import OmegaConf

    found: dict[str, set[str]] = {}
    for preset in sorted(Path(folder).glob("*.yaml")):
        for name, entry in OmegaConf.to_container(OmegaConf.load(preset), resolve=False).items():
            if isinstance(entry, dict) and isinstance(entry.get("metric"), str):
                found.setdefault(str(name), set()).add(entry["metric"])
    return {name: metrics.pop() for name, metrics in found.items() if len(metrics) == 1}
