"""Simulated model families with a known answer, written as lm-eval samples files (tests and the notebook).

K members with log10 compute evenly spaced; standardised log compute z_k. For each document d with C choices:

    ℓ_correct[k, d] = a_d + b_d·z_k + ε                (ε ~ N(0, noise_correct²))
    ℓ_j[k, d]       = a_d + u_dj + ρ·b_d·z_k + η        (each incorrect choice j; η ~ N(0, noise_incorrect²))

(a_d is drawn low enough that the clip of ℓ at 0, a probability of 1, practically never binds.)
`b_d > 0` for a fraction `predictable` of the documents (their correct-choice mass rises with compute) and
`b_d ≤ 0` otherwise (flat or falling). With ρ > 0 the mass on the incorrect choices rises alongside (it
co-varies, as the paper's Figure 6 finds), so p_choices(correct) depends on the gap b_d·(1 − ρ)·z_k against the
choice-specific fluctuations η: its correlation with compute is weaker than that of log p_vocab(correct), and
accuracy, a threshold of it, weaker still — the paper's central claim, by construction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from testtask.downstream_predictability.chain import chain
from testtask.io import atomic_write_text


@dataclass(frozen=True)
class SimulatedFamily:
    name: str
    spec: dict[str, Any]  # a `downstream_predictability.families` entry (every key of settings.FamilySpec)
    compute: np.ndarray  # (K,) FLOPs
    slopes: dict[str, np.ndarray]  # task -> (n,) b_d
    loglik: dict[str, np.ndarray]  # task -> (K, n, C)
    target: dict[str, np.ndarray]  # task -> (n,)


def sample_line(doc_id: int, loglik: Sequence[float], target: int, choices: Sequence[str]) -> dict[str, Any]:
    """One document as `lm_eval --log_samples` writes it (the fields this package reads, and a few more)."""
    values = chain(np.asarray(loglik, dtype=float)[None, :], np.array([target]))
    context = f"Question {doc_id}: which choice is right?\nAnswer:"
    return {
        "doc_id": int(doc_id),
        "doc": {"query": context, "choices": list(choices), "gold": int(target)},
        "target": int(target),
        "arguments": {f"gen_args_{i}": {"arg_0": context, "arg_1": f" {c}"} for i, c in enumerate(choices)},
        "resps": [[[float(ll), False]] for ll in loglik],
        "filtered_resps": [[float(ll), False] for ll in loglik],
        "filter": "none",
        "metrics": ["acc", "brier_score"],
        "acc": float(values["accuracy"][0]),
        "brier_score": float(values["brier"][0]),
    }


def write_samples(path: Path, loglik: np.ndarray, target: np.ndarray, choices: Sequence[str]) -> Path:
    """Write a (n, C) array of loglikelihoods and the gold indices as one samples file."""
    lines = [json.dumps(sample_line(d, loglik[d], int(target[d]), choices)) for d in range(loglik.shape[0])]
    return atomic_write_text(path, "\n".join(lines) + "\n")


def simulate_family(
    paper_root: Path,
    paper: str,
    *,
    name: str = "simulated",
    model: str = "sim",
    tasks: Sequence[str] = ("sim_task",),
    n_members: int = 6,
    n_docs: int = 200,
    n_choices: int = 4,
    log10_compute: tuple[float, float] = (18.0, 22.0),
    predictable: float = 0.7,
    rho: float = 0.8,
    noise_correct: float = 0.05,
    noise_incorrect: float = 0.8,
    seed: int = 0,
    samples_dir: str = "samples",
) -> SimulatedFamily:
    """Write a simulated family under `paper_root/samples_dir/<member>/<model>-<task>/<task>.jsonl`."""
    rng = np.random.default_rng(seed)
    compute = 10.0 ** np.linspace(*log10_compute, n_members)
    z = np.log10(compute)
    z = (z - z.mean()) / z.std()
    choices = [chr(ord("A") + i) for i in range(n_choices)]
    slopes, logliks, targets = {}, {}, {}
    for task in tasks:
        rising = rng.random(n_docs) < predictable
        b = np.where(rising, rng.uniform(0.5, 2.0, n_docs), rng.uniform(-1.0, 0.0, n_docs))
        a = rng.uniform(-12.0, -6.0, n_docs)  # low enough that a log probability stays below 0
        offsets = rng.normal(0.0, 1.0, (n_docs, n_choices))
        ll = a[None, :, None] + offsets[None] + rho * b[None, :, None] * z[:, None, None]
        ll = ll + rng.normal(0.0, noise_incorrect, (n_members, n_docs, n_choices))
        gold = rng.integers(0, n_choices, n_docs)
        correct = a[None, :] + b[None, :] * z[:, None] + rng.normal(0.0, noise_correct, (n_members, n_docs))
        np.put_along_axis(
            ll, np.broadcast_to(gold[None, :, None], (n_members, n_docs, 1)), correct[..., None], axis=2
        )
        slopes[task], logliks[task], targets[task] = b, np.minimum(ll, 0.0), gold
    members = []
    for k in range(n_members):
        member = f"m{k:02d}"
        for task in tasks:
            path = Path(paper_root) / samples_dir / member / f"{model}-{task}" / f"{task}.jsonl"
            write_samples(path, logliks[task][k], targets[task], choices)
        members.append({"name": member, "samples": member, "compute": float(compute[k])})
    spec = {
        "label": f"simulated ({n_members} members, rho={rho})",
        "paper": paper,
        "samples_dir": samples_dir,
        "model": model,
        "members": members,
        "compute": None,  # the members are listed with their compute
    }
    return SimulatedFamily(name, spec, compute, slopes, logliks, targets)


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar (dicts, lists, quoted strings, numbers)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float | np.integer | np.floating):
        return repr(float(value)) if isinstance(value, float | np.floating) else str(int(value))
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def family_overrides(family: SimulatedFamily, task: str | None = None) -> list[str]:
    """CLI overrides that add the family to the config and analyse it alone (its first task in focus)."""
    key = "downstream_predictability"
    task = task or sorted(family.slopes)[0]
    return [
        f"+{key}.families.{family.name}={hydra_value(family.spec)}",
        f"{key}.families_used=[{family.name}]",
        f"{key}.focus.task={task}",
    ]


# (the overrides of a `testtask` config, figure numbers) -> what was built: the pipeline's build of those figures
BuildFigures = Callable[[list[str], list[int]], list[dict[str, Any]]]


def build_simulated(
    workdir: Path,
    figures_dir: Path,
    build: BuildFigures,
    figures: Sequence[int] = (2, 3, 4, 5, 6),
    **simulation: Any,
) -> tuple[SimulatedFamily, list[dict[str, Any]]]:
    """Write a simulated family into a results tree under `workdir` and build `figures` from it (source=results)
    into `figures_dir` with `build`, e.g. `lambda overrides, numbers: pipeline.build(pipeline.compose(overrides),
    "figure", numbers)` (this package does not import the pipeline). Returns the family and what was built."""
    paper, run = "downstream-predictability", "simulated"
    family = simulate_family(Path(workdir) / "results" / paper / run, paper, **simulation)
    overrides = [
        f"paper={paper}",
        "source=results",
        f"results_dir={Path(workdir) / 'results'}",
        f"results_run={run}",
        f"figures_dir={figures_dir}",
        *family_overrides(family),
    ]
    return family, build(overrides, list(figures))
