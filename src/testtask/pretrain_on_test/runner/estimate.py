"""How long a cell will take, said before it starts: repetitions × seconds per repetition, from earlier runs of
the LM type on the device (scaled by m + n), else from the model's size (6 × parameters × tokens FLOPs)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from testtask.pretrain_on_test.runner.settings import FewShotLm, ZeroShotLm

# Sustained training FLOP/s, rough (a laptop's CPU cores in fp32; one data-centre GPU): a factor of a few either way.
FLOPS = {"cpu": 2e10, "cuda": 5e13, "mps": 2e12}
PARAMETERS = {  # Hub ids of conf/lm/*.yaml: parameter counts from their model cards
    "bert-base-uncased": 110e6,
    "gpt2": 124e6,
    "mistralai/Mistral-7B-v0.1": 7.24e9,
}
# Tokens per text where a stage sets no cut (zero-shot pretraining, classification without a stage): a guess
GUESSED_LENGTH = 512
_CELL = re.compile(r"^m(\d+)$")


@dataclass(frozen=True)
class Estimate:
    seconds_per_repetition: float | None
    basis: str  # how it was computed, for the message

    def message(self, dataset: str, repetitions: int, device: str) -> str:
        if self.seconds_per_repetition is None:
            return f"{dataset}: {repetitions} repetitions on {device}; no time estimate ({self.basis})"
        total = repetitions * self.seconds_per_repetition
        return f"{dataset}: {repetitions} repetitions, about {_duration(total)} on this {device.upper()} ({self.basis})"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def from_run_logs(results_dir: Path, lm_type: str, device: str, m: int, n: int) -> Estimate | None:
    """Step 1: earlier repetitions of `lm_type` on `device` under `results_dir`, scaled to m + n texts."""
    scaled: list[float] = []
    for log in sorted(Path(results_dir).glob(f"m*/n*/{lm_type}/*/run_log.jsonl")):
        cell_m, cell_n = log.parents[3].name, log.parents[2].name
        if not _CELL.match(cell_m) or not cell_n[1:].isdigit():
            continue
        size = int(cell_m[1:]) + int(cell_n[1:])
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            if record.get("device") == device and isinstance(record.get("seconds"), int | float):
                scaled.append(float(record["seconds"]) * (m + n) / size)
    if not scaled:
        return None
    mean = sum(scaled) / len(scaled)
    return Estimate(mean, f"mean of {len(scaled)} earlier {lm_type} repetitions on {device} in {results_dir}")


def parameters(model: str) -> float | None:
    """The model's parameter count: float32 weight files of a local folder (bytes / 4), else PARAMETERS."""
    folder = Path(model)
    if folder.is_dir():
        size = sum(f.stat().st_size for pattern in ("*.safetensors", "*.bin") for f in folder.glob(pattern))
        return size / 4 if size else None
    return PARAMETERS.get(model)


def from_model_size(lm: FewShotLm | ZeroShotLm, device: str, m: int, n: int) -> Estimate | None:
    """Step 2: 6 × parameters × tokens FLOPs at FLOPS[device]."""
    count = parameters(lm.model)
    if isinstance(lm, FewShotLm):
        pretrain_length, classify = float(lm.pretrain.max_length), lm.classify
        classify_tokens = float(classify.epochs) * m * float(classify.max_length or GUESSED_LENGTH)
    else:  # zero-shot: pretraining only (no classification stage: one epoch's worth of m texts, as an upper bound)
        pretrain_length, classify_tokens = float(GUESSED_LENGTH), float(m) * GUESSED_LENGTH
    tokens = float(lm.pretrain.epochs) * n * pretrain_length + classify_tokens
    if count is None or device not in FLOPS:
        return None
    seconds = 6 * count * tokens / FLOPS[device]
    return Estimate(
        seconds, f"6 x {count / 1e6:.0f}M parameters x {tokens:.3g} tokens at ~{FLOPS[device]:.0e} FLOP/s"
    )


def estimate(results_dir: Path, lm: FewShotLm | ZeroShotLm, device: str, m: int, n: int) -> Estimate:
    """Seconds per repetition of a cell (see the module's docstring for the order)."""
    kind = device.split(":")[0]
    found = from_run_logs(results_dir, lm.lm_type, device, m, n) or from_model_size(lm, kind, m, n)
    if found is not None:
        return found
    return Estimate(None, f"no earlier {lm.lm_type} run on {device} in {results_dir}, model size unknown")
