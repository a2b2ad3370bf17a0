"""Run the selected checks one after the other: time each, catch what it raises (one failing check never stops
the others), report progress. On CUDA each check ends with a synchronisation, so an asynchronous CUDA error is
charged to the check that caused it."""

from __future__ import annotations

import gc
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testtask.preflight.registry import NEEDS, Check, Skip

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
TRACEBACK_CHARS = 4000
OUTPUT_CHARS = 3000


@dataclass
class Context:
    """What a check may use: the device it runs on, GPUs visible, a scratch folder, shared fixtures."""

    device: str  # "cuda" or "cpu"
    work: Path
    gpus: int = 0
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def folder(self, name: str) -> Path:
        """A fresh folder below the scratch folder (`name`, then `name-2`, ...)."""
        path, k = self.work / name, 1
        while path.exists():
            k += 1
            path = self.work / f"{name}-{k}"
        path.mkdir(parents=True)
        return path

    def cached(self, key: str, build: Callable[[], Any]) -> Any:
        """A fixture built once per run and shared by the checks that need it (tiny models, data)."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]


@dataclass
class Outcome:
    name: str
    status: str
    seconds: float
    numbers: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    reason: str | None = None  # why it was skipped
    output: str | None = None  # the tail of what a failed check printed

    def as_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "status": self.status, "seconds": round(self.seconds, 3)}
        optional = {"error": self.error, "reason": self.reason, "output": self.output}
        return out | {"numbers": self.numbers} | {k: v for k, v in optional.items() if v is not None}


def unmet_need(item: Check, ctx: Context) -> str | None:
    """Why `item` cannot run in `ctx`, or None."""
    if "cuda" in item.needs and not ctx.cuda:
        return NEEDS["cuda"] + (" (this run is on the CPU)" if ctx.gpus else "")
    if "2gpu" in item.needs and ctx.cuda and ctx.gpus < 2:  # on the CPU two gloo ranks stand in
        return NEEDS["2gpu"] + f" ({ctx.gpus} in use)"
    return None


def traceback_tail(limit: int = TRACEBACK_CHARS) -> str:
    text = traceback.format_exc().rstrip()
    return text if len(text) <= limit else "...\n" + text[-limit:]


def _cuda_begin(ctx: Context) -> None:
    if ctx.cuda:
        import torch

        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _cuda_end(ctx: Context, numbers: dict[str, Any]) -> None:
    """Synchronise (raising a pending CUDA error here) and record the check's peak GPU memory."""
    if ctx.cuda:
        import torch

        torch.cuda.synchronize()
        numbers.setdefault("peak_gpu_memory_mib", round(torch.cuda.max_memory_allocated() / 2**20, 1))


def _cleanup(ctx: Context) -> None:
    gc.collect()
    if ctx.cuda:
        import torch

        try:
            torch.cuda.empty_cache()
        except Exception:  # a broken CUDA context is reported by the next check that uses it
            pass


@contextmanager
def captured(path: Path | None) -> Iterator[None]:
    """What the check prints (Trainer logs, lm-eval's bars, warnings) goes to `path`; None: left alone."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with (
        path.open("w", encoding="utf-8", errors="replace") as stream,
        redirect_stdout(stream),
        redirect_stderr(stream),
    ):
        yield


def output_tail(path: Path | None, limit: int = OUTPUT_CHARS) -> str | None:
    """The last lines a check printed, progress-bar redraws collapsed."""
    if path is None or not path.is_file():
        return None
    text = re.sub(r"[^\n]*\r(?!\n)", "", path.read_text(encoding="utf-8", errors="replace")).strip()
    if not text:
        return None
    return text if len(text) <= limit else "...\n" + text[-limit:]


def run_one(item: Check, ctx: Context, log: Path | None = None) -> Outcome:
    """Run one check; with `log`, its output is captured there (and its tail kept when it fails)."""
    reason = unmet_need(item, ctx)
    if reason:
        return Outcome(item.name, SKIPPED, 0.0, reason=reason)
    start = time.perf_counter()
    numbers: dict[str, Any] = {}
    try:
        with captured(log):
            _cuda_begin(ctx)
            numbers = dict(item.run(ctx) or {})
            _cuda_end(ctx, numbers)
    except Skip as skip:
        return Outcome(item.name, SKIPPED, time.perf_counter() - start, reason=str(skip) or "skipped")
    except Exception as error:  # noqa: BLE001 -- every failure is recorded, the next check runs
        tail = traceback_tail()
        if not tail.endswith(str(error)):
            tail += f"\n{type(error).__name__}: {error}"
        seconds = time.perf_counter() - start
        return Outcome(item.name, FAILED, seconds, numbers, error=tail, output=output_tail(log))
    finally:
        _cleanup(ctx)
    return Outcome(item.name, PASSED, time.perf_counter() - start, numbers)


def _short(numbers: dict[str, Any], limit: int = 6) -> str:
    shown = list(numbers.items())[:limit]
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown)


def run_checks(
    items: Sequence[Check],
    ctx: Context,
    *,
    echo: Callable[[str], None] = print,
    after_each: Callable[[list[Outcome]], None] | None = None,
    capture: bool = True,
) -> list[Outcome]:
    """Run `items` in order with a progress line as each starts and ends; `capture`: their output to
    `<work>/logs/`."""
    outcomes: list[Outcome] = []
    width = len(str(len(items)))
    for k, item in enumerate(items, 1):
        tag = f"[{k:>{width}}/{len(items)}] {item.name}"
        echo(f"{tag}: started ({item.description})")
        outcome = run_one(item, ctx, ctx.work / "logs" / f"{item.name}.log" if capture else None)
        outcomes.append(outcome)
        line = f"{tag}: {outcome.status} in {outcome.seconds:.1f} s"
        if outcome.status == SKIPPED:
            line += f" ({outcome.reason})"
        elif outcome.status == FAILED:
            last = (outcome.error or "").strip().splitlines()[-1:] or [""]
            line += f": {last[0][:300]}"
        elif outcome.numbers:
            line += f"  {_short(outcome.numbers)}"
        echo(line)
        if after_each is not None:
            after_each(outcomes)
    return outcomes


def counts(outcomes: Iterable[Outcome]) -> dict[str, int]:
    statuses = [outcome.status for outcome in outcomes]
    return {status: statuses.count(status) for status in (PASSED, FAILED, SKIPPED)}


def run_and_save(
    prog: str,
    items: Sequence[Check],
    ctx: Context,
    save: Callable[..., None],
    *,
    capture: bool,
    started: float,
    out: Path,
) -> int:
    """`run_checks` saving after each check and at the end (`complete=True`); the exit status (1: a check
    failed)."""
    stdout = sys.stdout  # progress lines go here while a check's own output is captured
    outcomes = run_checks(
        items, ctx, echo=lambda line: print(line, file=stdout, flush=True), after_each=save, capture=capture
    )
    save(outcomes, complete=True)
    total = counts(outcomes)
    print(
        f"{prog}: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped "
        f"in {time.perf_counter() - started:.1f} s -> {out}",
        flush=True,
    )
    return 1 if total["failed"] else 0
