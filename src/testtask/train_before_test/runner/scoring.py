"""Zero-shot lm-eval scores of a model (or a LoRA checkpoint on it) on one view of a benchmark.

Each score is one lm-eval run written to its own JSON (lm-eval's output without the logged samples, atomically,
last), so an existing file is a finished score: it is read back instead of recomputed, and a cell resumes where
it stopped. Logged samples go to `<json stem>.samples/<task>.jsonl` when asked for. The output format and the
sample writer are those of `lm.evaluation`, so the files read the same way.
"""

from __future__ import annotations

import gc
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testtask.errors import InputError
from testtask.io import atomic_write_text
from testtask.lm.evaluation import dumps_result, task_hashes, write_samples
from testtask.train_before_test.runner.benchmarks import BenchmarkSpec

if TYPE_CHECKING:
    from lm_eval.tasks import TaskManager

log = logging.getLogger(__name__)


class MetricMissing(InputError, KeyError):
    pass


@dataclass(frozen=True)
class Score:
    value: float
    stderr: float | None
    documents: int
    file: Path


def read_score(path: Path, spec: BenchmarkSpec) -> Score:
    """The spec's metric (and its standard error) from an lm-eval result file."""
    out = json.loads(Path(path).read_text())
    results = out.get("results", {}).get(spec.task)
    if results is None:
        raise MetricMissing(
            f"{path}: no results for task {spec.task!r} (has {sorted(out.get('results', {}))})"
        )
    if spec.metric_key not in results:
        keys = sorted(k for k in results if "," in k and "_stderr" not in k)
        raise MetricMissing(f"{path}: task {spec.task!r} reports no {spec.metric_key!r}; it has {keys}")
    stderr = results.get(spec.stderr_key)
    documents = out.get("n-samples", {}).get(spec.task, {}).get("effective", 0)
    value = results[spec.metric_key]
    return Score(
        value=float("nan") if value is None else float(value),
        stderr=None if stderr in (None, "N/A") else float(stderr),
        documents=int(documents),
        file=Path(path),
    )


class Scorer:
    """Runs lm-eval; keeps the last loaded model while consecutive scores use the same weights."""

    def __init__(
        self,
        manager: TaskManager,
        *,
        device: str,
        batch_size: int | str = "auto",
        max_batch_size: int | None = None,
        model_args: Mapping[str, Any] | None = None,
        num_fewshot: int = 0,
        bootstrap_iters: int = 100000,
        log_samples: bool = False,
    ):
        self.manager = manager
        self.device = device
        self.batch_size = batch_size
        self.max_batch_size = max_batch_size
        self.model_args = dict(model_args or {})
        self.num_fewshot = int(num_fewshot)
        self.bootstrap_iters = int(bootstrap_iters)
        self.log_samples = bool(log_samples)
        self._loaded: tuple[tuple[str, Any], ...] | None = None
        self._lm: Any = None

    def _model(self, pretrained: str, adapter: Path | None) -> Any:
        args = {"pretrained": str(pretrained), **self.model_args}
        if adapter is not None:
            args["peft"] = str(adapter)
        key = tuple(sorted((k, str(v)) for k, v in args.items()))
        if key != self._loaded:
            self.release()
            from lm_eval.api.registry import get_model

            extra = {
                "batch_size": self.batch_size,
                "device": self.device,
                "max_batch_size": self.max_batch_size,
            }
            self._lm = get_model("hf").create_from_arg_obj(args, extra)
            self._loaded = key
        return self._lm

    def release(self) -> None:
        """Drop the loaded model; on a GPU also free its memory before training or the next model needs it."""
        if self._lm is None:
            return
        self._lm, self._loaded = None, None
        # a full collection costs ~0.5 s; only worth it for GPU memory
        if str(self.device).startswith("cuda"):
            import torch

            gc.collect()
            torch.cuda.empty_cache()

    def score(
        self,
        spec: BenchmarkSpec,
        config: Mapping[str, Any],
        out: Path,
        *,
        pretrained: str,
        adapter: Path | None = None,
        chat: bool = False,
    ) -> Score:
        """Score `pretrained` (+ `adapter`) on the view `config` reads; reuse `out` when it exists."""
        out = Path(out)
        if out.is_file():
            return read_score(out, spec)
        from lm_eval import simple_evaluate

        started = time.time()
        result = simple_evaluate(
            model=self._model(pretrained, adapter),
            tasks=[dict(config)],
            num_fewshot=self.num_fewshot,
            bootstrap_iters=self.bootstrap_iters,
            log_samples=self.log_samples,
            apply_chat_template=chat,
            task_manager=self.manager,
        )
        samples = result.pop("samples", None) or {}
        result["task_hashes"] = task_hashes(samples) if samples else {}
        result["scored"] = {
            "pretrained": str(pretrained),
            "adapter": str(adapter) if adapter else None,
            "chat": chat,
        }
        if self.log_samples and samples:
            write_samples(out.with_suffix(".samples"), samples)
        atomic_write_text(out, dumps_result(result, indent=2) + "\n")
        score = read_score(out, spec)
        log.info(
            "%s %s: %s = %.4f (%.0f s)",
            spec.name,
            out.name,
            spec.metric_key,
            score.value,
            time.time() - started,
        )
        return score
