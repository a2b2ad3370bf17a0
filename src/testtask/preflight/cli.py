"""`python -m testtask.preflight [--cpu] [--only NAME[,NAME]] [--out DIR] [--list]` (`make gpu-preflight`).

Without CUDA the preflight says so and exits 2, unless `--cpu` asks for the checks that run on the CPU. Exit
status: 0 when no check failed, 1 when one did, 2 for a usage error or a missing GPU.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

NO_CUDA = "no CUDA GPU: the preflight needs one; `--cpu` runs the CPU subset"
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "TRANSFORMERS_VERBOSITY": "error",
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m testtask.preflight",
        description="Run every GPU code path of the three runners on tiny random models (no Hub access) and "
        "write results/gpu-preflight/<gpu>.json.",
    )
    p.add_argument(
        "--only", action="append", metavar="NAME[,NAME]", help="run only these checks (see --list)"
    )
    p.add_argument("--out", type=Path, help="folder for the JSON (default: results/gpu-preflight)")
    p.add_argument("--cpu", action="store_true", help="run the checks that work on the CPU, on the CPU")
    p.add_argument("--list", action="store_true", help="list the checks and exit")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    p.add_argument("--verbose", action="store_true", help="show what the checks print (default: captured)")
    return p


def names(only: Sequence[str] | None) -> list[str]:
    return [n.strip() for item in only or [] for n in item.split(",") if n.strip()]


def list_checks(echo=print) -> int:
    from testtask.preflight.registry import NEEDS, checks

    registry = checks()
    width = max(map(len, registry))
    for item in registry.values():
        if "cuda" in item.needs:
            needs = NEEDS["cuda"]
        else:
            parts = [NEEDS[n] for n in sorted(item.needs)] + [f"CUDA only: {p}" for p in item.cuda_only]
            needs = "; ".join(["runs on CPU too", *parts])
        echo(f"{item.name:<{width}}  {item.description}  [{needs}]")
    return 0


class CurrentStderr(logging.StreamHandler):
    """A log handler writing to whatever sys.stderr is now (so a check's captured output gets its warnings)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


@contextmanager
def quiet_offline() -> Iterator[None]:
    """No Hub access and transformers' warnings only (the environment variables are read when the libraries are
    first imported, which is inside the checks); the environment is restored afterwards."""
    with mock.patch.dict(os.environ, OFFLINE_ENV):
        yield


def warnings_to_current_stderr() -> None:
    """Log warnings to the current stderr (a check's captured log while it runs); the runners' INFO stays quiet.
    Nothing changes where the caller already configured logging."""
    if not logging.getLogger().handlers:
        handler = CurrentStderr()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.basicConfig(level=logging.WARNING, handlers=[handler])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ns = parser().parse_args(argv)
    if ns.list:
        return list_checks()
    from testtask.preflight.registry import checks, select

    try:
        items = select(names(ns.only))
    except KeyError as error:
        print(f"preflight: {error.args[0]}", file=sys.stderr)
        return 2
    import torch

    if not ns.cpu and not torch.cuda.is_available():
        print(NO_CUDA, file=sys.stderr)
        return 2
    if ns.threads:
        torch.set_num_threads(ns.threads)
    warnings_to_current_stderr()
    from testtask.paths import resolve
    from testtask.preflight import report
    from testtask.preflight.runner import Context, run_and_save

    device = "cpu" if ns.cpu else "cuda"
    gpu = report.gpu_info() if device == "cuda" else None
    out = (ns.out if ns.out is not None else resolve(report.DEFAULT_OUT)) / report.file_name(gpu, device)
    environment = report.environment(argv)
    where = f"{gpu['name']} × {gpu['count']}" if gpu else "CPU"
    print(f"preflight: {len(items)} check(s) on {where} -> {out}", flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="testtask-preflight-") as scratch, quiet_offline():
        ctx = Context(device=device, work=Path(scratch), gpus=gpu["count"] if gpu else 0)

        def save(outcomes, complete: bool = False) -> None:
            report.write(
                out,
                report.record(
                    outcomes,
                    ctx=ctx,
                    gpu=gpu,
                    environment=environment,
                    selected=[i.name for i in items],
                    all_names=list(checks()),
                    total_seconds=time.perf_counter() - started,
                    complete=complete,
                ),
            )

        return run_and_save("preflight", items, ctx, save, capture=not ns.verbose, started=started, out=out)
