"""`python -m testtask.gpu_bench [--cpu] [--only NAME[,NAME]] [--out DIR] [--list] [key=value ...]`.

Exit status: 0 when no step failed, 1 when one did, 2 for a usage or config error or a missing GPU. The JSON
is rewritten after every step, so a run cut short keeps what it measured."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEMA = 1
NO_CUDA = "no CUDA GPU: the bench needs one; `--cpu preset=tiny` runs it on the CPU at tiny sizes"
NOTES = {
    "tokenizer": "a word-level tokenizer over the synthetic texts' words stands in for each model's own (one token "
    "per word, ids below the architecture's vocabulary): throughput depends on token counts and shapes",
    "weights": "random initialisation from the architectures' published configurations; nothing downloaded",
    "flops": "model FLOPs: 6*N per position for a training step, 2*N for a forward pass (N: every parameter as "
    "built, embeddings included), over positions (padding included: what the GPU computes); attention's own "
    "FLOPs, recomputation under gradient checkpointing and LoRA's absent weight gradients are not counted, so "
    "QLoRA's MFU by 6*N overstates the arithmetic done (about 4*N per position)",
    "rates": "tokens_per_second counts attended tokens (attention mask), positions_per_second every position; "
    "the rates are over the measured steps only (warm-up steps run first, untimed)",
    "memory": "peak_gpu_memory_mib: the step's training phase (model loaded) for training steps, else the whole "
    "step; torch.cuda.max_memory_allocated",
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m testtask.gpu_bench",
        description="Time the runners' real steps at the papers' model sizes (random weights) and write "
        "results/gpu-bench/<gpu>.json.",
    )
    p.add_argument("overrides", nargs="*", metavar="key=value", help="overrides of conf/gpu_bench/paper.yaml")
    p.add_argument("--only", action="append", metavar="NAME[,NAME]", help="run only these step kinds")
    p.add_argument("--out", type=Path, help="folder for the JSON (default: the config's `out`)")
    p.add_argument("--cpu", action="store_true", help="run on the CPU (with preset=tiny: the tests)")
    p.add_argument("--list", action="store_true", help="list the step kinds and exit")
    p.add_argument("--verbose", action="store_true", help="show what the steps print (default: captured)")
    return p


def _preset(overrides: Sequence[str]) -> tuple[str, list[str]]:
    """The `preset=` override (paper.yaml's own `preset` otherwise) and the other overrides."""
    presets = [item.split("=", 1)[1] for item in overrides if item.startswith("preset=")]
    rest = [item for item in overrides if not item.startswith("preset=")]
    return (presets[-1] if presets else "paper"), rest


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ns = parser().parse_intermixed_args(argv)  # overrides before and after the options
    from testtask.gpu_bench.settings import load_settings
    from testtask.gpu_bench.steps import STEPS, checks
    from testtask.preflight.cli import names
    from testtask.schema import ConfigError

    if ns.list:
        for name, (description, _) in STEPS.items():
            print(f"{name:<26}  {description}")
        return 0
    preset, overrides = _preset(ns.overrides)
    try:
        settings = load_settings(preset, overrides)
        items = checks(settings, names(ns.only))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyError as error:
        print(f"gpu-bench: {error.args[0]}", file=sys.stderr)
        return 2
    import torch

    if not ns.cpu and not torch.cuda.is_available():
        print(NO_CUDA, file=sys.stderr)
        return 2
    from testtask.preflight.cli import warnings_to_current_stderr

    warnings_to_current_stderr()
    return run(
        settings, items, argv, device="cpu" if ns.cpu else "cuda", out_dir=ns.out, capture=not ns.verbose
    )


def run(
    settings: Any,
    items: Sequence[Any],
    argv: Sequence[str],
    *,
    device: str,
    out_dir: Path | None,
    capture: bool,
) -> int:
    from testtask.gpu_bench.steps import peak
    from testtask.paths import resolve
    from testtask.preflight import report
    from testtask.preflight.cli import quiet_offline
    from testtask.preflight.runner import Context, counts, run_and_save
    from testtask.schema import to_plain

    gpu = report.gpu_info() if device == "cuda" else None
    out = (out_dir if out_dir is not None else resolve(settings.out)) / report.file_name(gpu, device)
    environment = report.environment(argv)
    environment["command"] = " ".join(["python", "-m", "testtask.gpu_bench", *argv])
    found_peak = peak(settings, gpu["name"] if gpu else None)
    where = f"{gpu['name']} × {gpu['count']}" if gpu else "CPU"
    print(f"gpu-bench: {len(items)} step kind(s), preset {settings.preset}, on {where} -> {out}", flush=True)
    started = time.perf_counter()
    scratch = resolve(settings.scratch) if settings.scratch else None
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="testtask-gpu-bench-", dir=scratch) as work, quiet_offline():
        ctx = Context(device=device, work=Path(work), gpus=gpu["count"] if gpu else 0)
        ctx.cached("peak", lambda: found_peak)

        def save(outcomes, complete: bool = False) -> None:
            report.write(
                out,
                {
                    "schema": SCHEMA,
                    "created": datetime.now(UTC).isoformat(timespec="seconds"),
                    "complete": complete,
                    "device": device,
                    "gpu": gpu,
                    "peak_bf16_tflops": found_peak,
                    "versions": environment["versions"],
                    "git": environment["git"],
                    "platform": environment["platform"],
                    "command": environment["command"],
                    "threads": __import__("torch").get_num_threads(),
                    "preset": settings.preset,
                    "settings": to_plain(settings),
                    "notes": NOTES,
                    "selected": [i.name for i in items],
                    "total_seconds": round(time.perf_counter() - started, 2),
                    "summary": counts(outcomes),
                    "steps": [o.as_dict() for o in outcomes],
                },
            )

        return run_and_save("gpu-bench", items, ctx, save, capture=capture, started=started, out=out)
