"""Per-step timing of the runners' own Trainer runs and of forward passes, and the FLOP arithmetic.

A step is the time between consecutive optimizer-step ends (data loading and the update included),
synchronised on CUDA so its kernels are charged to it. Model FLOPs: 6·N·positions for a training step,
2·N·positions for a forward pass (N: every parameter as built); attention's own FLOPs and recomputation are
not counted."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

TRAINING, INFERENCE = "training", "inference"
FLOPS_PER_POSITION = {TRAINING: 6, INFERENCE: 2}


def _sync(cuda: bool) -> None:
    if cuda:
        import torch

        torch.cuda.synchronize()


class Counter:
    """Positions and attended tokens of every forward call of a module (a forward pre-hook)."""

    def __init__(self) -> None:
        self.positions = 0
        self._tokens: list[Any] = []  # attention-mask sums, summed lazily (no device sync per micro-batch)
        self._plain = 0
        self.handle: Any = None

    def attach(self, module: Any) -> Counter:
        self.handle = module.register_forward_pre_hook(self._count, with_kwargs=True)
        return self

    def detach(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None

    def _count(self, module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            return
        self.positions += int(ids.numel())
        mask = kwargs.get("attention_mask")
        if mask is None:
            self._plain += int(ids.numel())
        else:
            self._tokens.append(mask.sum())

    @property
    def tokens(self) -> int:
        total = self._plain + sum(int(t) for t in self._tokens)
        self._plain, self._tokens = total, []
        return total


@dataclass
class Step:
    seconds: float
    positions: int
    tokens: int

    def as_dict(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 6), "positions": self.positions, "tokens": self.tokens}


@dataclass
class Timed:
    """The steps of one step kind: the warm-up ones and the measured ones."""

    warmup: list[Step] = field(default_factory=list)
    measured: list[Step] = field(default_factory=list)

    def add(self, step: Step, warmup: int) -> None:
        (self.warmup if len(self.warmup) < warmup else self.measured).append(step)


def step_timer(warmup: int, cuda: bool) -> Any:
    """A Trainer callback timing every optimizer step; `.timed` holds them once training ends."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.timed = Timed()
            self.counter = Counter()
            self.peak_gpu_memory_mib: float | None = None
            self._last: tuple[float, int, int] | None = None

        def _mark(self) -> tuple[float, int, int]:
            _sync(cuda)
            return time.perf_counter(), self.counter.positions, self.counter.tokens

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self.counter.attach(model)
            if cuda:
                import torch

                torch.cuda.reset_peak_memory_stats()  # the training's peak, the model's load aside

        def on_step_begin(self, args, state, control, **kwargs):
            if self._last is None:
                self._last = self._mark()

        def on_step_end(self, args, state, control, **kwargs):
            now = self._mark()
            then = self._last or now
            self.timed.add(Step(now[0] - then[0], now[1] - then[1], now[2] - then[2]), warmup)
            self._last = now

        def on_train_end(self, args, state, control, **kwargs):
            self.counter.detach()
            if cuda:
                import torch

                self.peak_gpu_memory_mib = round(torch.cuda.max_memory_allocated() / 2**20, 1)

    return StepTimer()


def timed_passes(run: Any, module: Any, *, warmup: int, measured: int, cuda: bool) -> Timed:
    """Call `run()` warmup + measured times, each a timed pass of forward calls of `module`."""
    timed = Timed()
    counter = Counter().attach(module)
    try:
        for _ in range(warmup + measured):
            _sync(cuda)
            start, positions, tokens = time.perf_counter(), counter.positions, counter.tokens
            run()
            _sync(cuda)
            step = Step(time.perf_counter() - start, counter.positions - positions, counter.tokens - tokens)
            timed.add(step, warmup)
    finally:
        counter.detach()
    return timed


def summary(
    timed: Timed, *, kind: str, parameters: int, peak_tflops: float | None, expected: int
) -> dict[str, Any]:
    """Tokens and positions per second over the measured steps, achieved TFLOP/s and MFU."""
    if len(timed.measured) < expected:
        raise AssertionError(
            f"{len(timed.warmup)} warm-up and {len(timed.measured)} measured steps ran; expected "
            f"{len(timed.warmup) + expected}: the run ended early"
        )
    seconds = sum(s.seconds for s in timed.measured)
    positions = sum(s.positions for s in timed.measured)
    tokens = sum(s.tokens for s in timed.measured)
    if seconds <= 0 or positions <= 0:
        raise AssertionError(f"measured {positions} positions in {seconds} s")
    flops = FLOPS_PER_POSITION[kind] * parameters * positions / seconds
    tflops = flops / 1e12
    return {  # the first entries are what the progress line shows
        "tokens_per_second": tokens / seconds,
        "positions_per_second": positions / seconds,
        "achieved_tflops": tflops,
        "mfu": tflops / peak_tflops if peak_tflops else None,
        "seconds_per_step": seconds / len(timed.measured),
        "kind": kind,
        "parameters": parameters,
        "flops_per_position": f"{FLOPS_PER_POSITION[kind]}*N",
        "warmup_steps": len(timed.warmup),
        "measured_steps": len(timed.measured),
        "steps": [s.as_dict() for s in timed.measured],
        "warmup": [s.as_dict() for s in timed.warmup],
    }
