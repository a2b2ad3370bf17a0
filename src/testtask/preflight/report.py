"""The preflight's record: versions, the GPU, the git commit, every check's outcome; rewritten after every
check (`complete: false` until the last), so a run that dies still leaves what it found."""

from __future__ import annotations

import importlib.metadata
import platform
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testtask.io import atomic_write_json
from testtask.preflight.runner import Context, Outcome, counts
from testtask.provenance import code_record

SCHEMA = 1
DEFAULT_OUT = "results/gpu-preflight"
PACKAGES = (
    "torch",
    "transformers",
    "peft",
    "bitsandbytes",
    "lm_eval",
    "deepspeed",
    "accelerate",
    "datasets",
    "tokenizers",
    "flash_attn",
)


def version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    return {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}}


def slug(text: str) -> str:
    """`NVIDIA H100 80GB HBM3` -> `nvidia-h100-80gb-hbm3`."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown-gpu"


def _driver() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None


def gpu_info() -> dict[str, Any] | None:
    """Name, memory and compute capability of each visible GPU, CUDA and cuDNN versions; None without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    devices = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        devices.append(
            {
                "name": props.name,
                "memory_gib": round(props.total_memory / 2**30, 2),
                "capability": f"{props.major}.{props.minor}",
            }
        )
    return {
        "name": devices[0]["name"],
        "memory_gib": devices[0]["memory_gib"],
        "count": len(devices),
        "devices": devices,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "driver": _driver(),
        "bf16_supported": bool(torch.cuda.is_bf16_supported()),
    }


def file_name(gpu: dict[str, Any] | None, device: str) -> str:
    """`<gpu-name-slug>.json` (`-x<count>` with several GPUs), `cpu.json` for a CPU run."""
    if device == "cpu" or gpu is None:
        return "cpu.json"
    suffix = f"-x{gpu['count']}" if gpu["count"] > 1 else ""
    return f"{slug(gpu['name'])}{suffix}.json"


def runs_on(needs: frozenset[str] | set[str]) -> str:
    """`cpu` for a check that also runs on the CPU (`--cpu`), `cuda-only` for one that needs CUDA itself."""
    return "cuda-only" if "cuda" in needs else "cpu"


def cuda_only(registry: Mapping[str, Any], names: Sequence[str]) -> list[dict[str, str]]:
    """What a CPU run cannot show: each check, or part of a check, that only CUDA can run, with the reason."""
    return [
        {"check": name, "part": part, "reason": reason}
        for name in names
        if name in registry
        for part, reason in registry[name].cuda_only.items()
    ]


def record(
    outcomes: Sequence[Outcome],
    *,
    ctx: Context,
    gpu: dict[str, Any] | None,
    environment: dict[str, Any],
    selected: Sequence[str],
    all_names: Sequence[str],
    total_seconds: float,
    complete: bool,
) -> dict[str, Any]:
    from testtask.preflight.registry import checks

    registry = checks()

    def where(name: str) -> str | None:
        return runs_on(registry[name].needs) if name in registry else None

    return {
        "schema": SCHEMA,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "complete": complete,
        "device": ctx.device,
        "gpu": gpu,
        "cuda": gpu["cuda"] if gpu else None,
        "versions": environment["versions"],
        "git": environment["git"],
        "platform": environment["platform"],
        "command": environment["command"],
        "selected": list(selected),
        "all_checks": len(selected) == len(all_names),
        "total_seconds": round(total_seconds, 2),
        "summary": counts(outcomes),
        "checks": [{**o.as_dict(), "runs_on": where(o.name)} for o in outcomes],
        "cuda_only": cuda_only(registry, all_names),
    }


def environment(argv: Sequence[str]) -> dict[str, Any]:
    return {
        "versions": versions(),
        "git": code_record(),
        "platform": platform.platform(),
        "command": " ".join([Path(sys.executable).name, "-m", "testtask.preflight", *argv]),
    }


def write(path: Path, data: dict[str, Any]) -> Path:
    return atomic_write_json(path, data)
