"""The published layout of lm-eval result files: where a file sits says what it holds.

Below the `evaluations/` root (training-on-the-test-task's release, and what `testtask.lm.evaluation` writes):

- `base/<model>-<benchmark>.json`                        no fine-tuning
- `<stage>/<finetune>/<model>-<benchmark>.json`          stage e1, e2, e1+2, e3; finetune mmluaux or gsm8kaux
- `intermediate/<finetune>/evals/<model>/step_<k>/<benchmark>.json`   checkpoints during fine-tuning
- `new_evals/<base|finetune>/<model>-<benchmark>.json`   Open LLM Leaderboard v2 tasks
- `lr_sweep/<learning rate>/<finetune>/<model>-<benchmark>.json`   fine-tuned (e3) at another peak learning
  rate (Appendix B.3; not in the authors' release, written by our runners)

Benchmark names never contain '-', so a flat file name splits at its last '-'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from testtask.errors import InputError

STAGES = ("e1", "e2", "e1+2", "e3")
FINETUNES = ("mmluaux", "gsm8kaux", "mcaux")  # mcaux: ARC/OpenBookQA train (the CPU mini-replication)
ADJUSTMENTS = ("base", *STAGES, "intermediate", "lr_sweep")
_STEP = re.compile(r"^step_(\d+)$")


class ResultsError(InputError, ValueError):
    """A result file is malformed or sits where the layout does not expect one; names the file."""


@dataclass(frozen=True)
class ResultFile:
    path: Path
    model: str
    benchmark: str
    adjustment: str  # base | e1 | e2 | e1+2 | e3 | intermediate
    finetune: str | None  # mmluaux | gsm8kaux | None
    suite: str  # v1 (Leaderboard v1 era evaluations) | v2 (new_evals: Leaderboard v2)
    step: int | None = None
    learning_rate: float | None = None


def _split_flat(path: Path) -> tuple[str, str]:
    stem = path.stem
    if "-" not in stem:
        raise ResultsError(f"{path}: file name must be <model>-<benchmark>.json")
    model, benchmark = stem.rsplit("-", 1)
    return model, benchmark


def classify(path: Path, root: Path) -> ResultFile:
    """Where a file sits in the layout says what it holds."""
    parts = path.relative_to(root).parts
    top = parts[0]
    if top == "base" and len(parts) == 2:
        model, bench = _split_flat(path)
        return ResultFile(path, model, bench, "base", None, "v1")
    if top in STAGES and len(parts) == 3 and parts[1] in FINETUNES:
        model, bench = _split_flat(path)
        return ResultFile(path, model, bench, top, parts[1], "v1")
    if top == "intermediate" and len(parts) == 6 and parts[1] in FINETUNES and parts[2] == "evals":
        match = _STEP.match(parts[4])
        if match:
            return ResultFile(path, parts[3], path.stem, "intermediate", parts[1], "v1", int(match.group(1)))
    if top == "new_evals" and len(parts) == 3 and parts[1] in ("base", *FINETUNES):
        model, bench = _split_flat(path)
        finetune = None if parts[1] == "base" else parts[1]
        return ResultFile(path, model, bench, "base" if finetune is None else "e3", finetune, "v2")
    if top == "lr_sweep" and len(parts) == 4 and parts[2] in FINETUNES:
        try:
            rate = float(parts[1])
        except ValueError:
            raise ResultsError(f"{path}: folder {parts[1]!r} is not a learning rate") from None
        model, bench = _split_flat(path)
        return ResultFile(path, model, bench, "lr_sweep", parts[2], "v1", learning_rate=rate)
    raise ResultsError(
        f"{path}: not a place the layout expects a result "
        "(base/, e1|e2|e1+2|e3/<mmluaux|gsm8kaux>/, intermediate/<ft>/evals/<model>/step_<k>/, new_evals/<base|ft>/, lr_sweep/<lr>/<ft>/)"
    )


def discover(root: Path) -> list[ResultFile]:
    """Every `*.json` below `root`, classified; sorted for reproducible order."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no evaluations folder")
    return [classify(p, root) for p in sorted(root.rglob("*.json"))]
