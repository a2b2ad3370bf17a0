"""Shared by train-before-test's tests: a small synthetic release (known effects, a small category layout) and
where its outputs land."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from tests.conftest import stamp_release, write_json
from testtask.pipeline import compose

PAPER = "train-before-test"
CORPORA = ["arxiv_2025", "wiki_2025", "stackexchange_2025"]
CATEGORIES = {
    "LU": {"name": "Language understanding", "benchmarks": ["mnli", "qnli"]},
    "QA": {"name": "Question answering", "benchmarks": ["boolq", "arc_easy", "nq_open"]},
    "Math": {"name": "Math", "benchmarks": ["gsm8k"]},
}
SMALL_BENCHMARKS = [b for spec in CATEGORIES.values() for b in spec["benchmarks"]]
MODELS = [
    "Qwen/Qwen1.5-0.5B",
    "Qwen/Qwen1.5-0.5B-Chat",
    "Qwen/Qwen1.5-7B",
    "Qwen/Qwen1.5-14B",
    "EleutherAI/pythia-70m-deduped",
    "EleutherAI/pythia-12b",
    "meta-llama/Meta-Llama-3-8B",
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "google/gemma-7b",
    "google/gemma-7b-it",
    "01-ai/Yi-6B",
    "01-ai/Yi-6B-Chat",
]


def synthetic_results(benchmarks: list[str], seed: int = 0) -> dict:
    """Score = 0.5 + 0.1 * ability + noise, ten times noisier under direct evaluation; bits per byte fall with
    ability. Gemma has no perplexity entries and perplexity standard errors are "N/A", as in the release."""
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.5, 1.5, len(MODELS))[rng.permutation(len(MODELS))]
    out: dict[str, dict] = {}
    for field, noise in (("direct_eval", 0.1), ("train_before_test", 0.01)):
        scores, errors = {}, {}
        for bench in benchmarks:
            values = 0.5 + 0.1 * ability + noise * rng.normal(size=len(MODELS))
            scores[bench] = dict(zip(MODELS, values.tolist(), strict=True))
            errors[bench] = dict.fromkeys(MODELS, 0.001)
        for corpus in CORPORA:
            bpb = 0.8 - 0.1 * ability + 0.01 * rng.normal(size=len(MODELS))
            scores[corpus] = {m: v for m, v in zip(MODELS, bpb.tolist(), strict=True) if "gemma" not in m}
            errors[corpus] = dict.fromkeys(MODELS, "N/A")
        out[field], out[f"{field}_stderr"] = scores, errors
    return out


def small_config(tmp_path: Path, *extra: str):
    """The config of `tmp_path/published`, outputs under `tmp_path/figs`, with the small category layout."""
    cfg = compose(
        [f"paper={PAPER}", f"data.dest={tmp_path / 'published'}", f"figures_dir={tmp_path / 'figs'}", *extra]
    )
    cfg.train_before_test.categories = OmegaConf.create(CATEGORIES)  # a small layout keeps drawing fast
    return cfg


def output_folder(tmp_path: Path, folder: str = "published") -> Path:
    """The source folder `folder` (paths.source_folder) of the outputs: the preset's, or the variant folder of
    settings changed in Python (`small_config`'s layout)."""
    (found,) = [
        *(tmp_path / "figs").glob(f"{PAPER}/{folder}"),
        *(tmp_path / "figs").glob(f"variants/*/{PAPER}/{folder}"),
    ]
    return found


def sidecar(tmp_path: Path, name: str, folder: str = "published") -> dict:
    """A sidecar of the source folder `folder`."""
    return json.loads((output_folder(tmp_path, folder) / f"{name}.json").read_text())


def write_release(root: Path, results: dict) -> Path:
    """`results` as train-before-test's published release under `root/published`, stamped as a finished fetch;
    returns `root`."""
    path = write_json(root / "published" / PAPER / "all_results.json", results)
    stamp_release(path.parent)
    return root
