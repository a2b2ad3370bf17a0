"""`testtask action=assess-model` (`make assess-model`): one page per user model, PNG + JSON + Markdown, with
paper 000's verdict (Figure 1 with the model marked, residuals, θ̂ with and without it) and train-before-test's
ranks. The user's results are laid over the release (source=published+results), never copied into it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from omegaconf import DictConfig

from testtask import provenance
from testtask.assess import cohort, ranks
from testtask.assess.models import ModelFileError, model_file, read_models, with_models
from testtask.context import Context
from testtask.io import atomic_save, atomic_write_json, atomic_write_text
from testtask.paths import in_repo
from testtask.sources import OVERLAY, run_root

log = logging.getLogger(__name__)

TOTT, TBT = "training-on-the-test-task", "train-before-test"
CONFIG_KEY = "training_on_the_test_task"


def page_dir(cfg: DictConfig, model: str) -> Path:
    """Where `model`'s page goes, per source and run like every output."""
    from testtask.paths import output_dir

    return (
        output_dir(cfg.figures_dir, str(cfg.source), cfg.get("results_run"), "assess-model", cfg.protocol)
        / model
    )


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def _interval(ci: list[float] | tuple[float, float]) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _theta(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "n/a"
    return f"{entry['theta']:+.3f} (SE {entry['se']:.3f}, interval {_interval(entry['ci'])})"


def _removed_words(gone: dict[str, Any], before: float) -> str:
    if before <= 0:
        return f"it has no advantage to remove (the adjustment moves it by {_signed(-gone['removed'])})"
    if gone["removed"] <= 0:
        return f"the adjustment removes none of its advantage (its residual grows by {-gone['removed']:.3f})"
    return f"the adjustment removes {gone['removed']:.3f} of its advantage ({gone['share']:.0%} of it)"


def cohort_text(model: str, record: dict[str, Any], level: float) -> str:
    """The sentence of one benchmark: the residual before and after, what the adjustment removes, θ̂."""
    pct = f"{level:.0%}"
    before, after = record["before"]["residual"], record["adjusted"]["residual"]
    text = (
        f"{record['label']}: {model} scores {before['score']:.3f}, {_signed(before['residual'])} against the "
        f"older models' fit ({pct} interval {_interval(before['ci'])}) before adjustment"
    )
    if after is None:
        text += "; no fine-tuned results were given, so the adjustment cannot be judged."
    else:
        gone = record["removed"]
        text += (
            f" and {_signed(after['residual'])} ({pct} interval {_interval(after['ci'])}) after fine-tuning on the "
            f"test task: {_removed_words(gone, before['residual'])}, {pct} interval {_interval(gone['ci'])}."
        )
    b, a = record["before"], record["adjusted"]
    text += (
        f" θ̂ (newer − older) before adjustment: {_theta(b['theta_without'])} without it, "
        f"{_theta(b['theta_with'])} with it; after: {_theta(a['theta_without'])} without, "
        f"{_theta(a['theta_with'])} with."
    )
    return text


def ranks_text(model: str, verdict: dict[str, Any] | None) -> str:
    if verdict is None:
        return f"Train-before-test: no scores of {model} (add all_results.json to the run to rank it)."
    parts = []
    for key, entry in verdict["regimes"].items():
        label = verdict["labels"][key]
        if entry is None:
            parts.append(f"{label}: no scores given")
        else:
            parts.append(
                f"{label}: mean rank {entry['mean_rank']:.1f} over {len(entry['benchmarks'])} benchmarks, "
                f"rank {entry['rank_by_mean_score']} of {entry['of']} by mean score"
            )
    return f"Train-before-test, {model}: " + "; ".join(parts) + "."


def markdown(numbers: dict[str, Any]) -> str:
    model = numbers["model"]
    lines = [
        f"# {model}: training on the test task and train-before-test",
        "",
        f"![Figure 1]({model}.png)",
        "",
    ]
    lines += [f"- {line}" for line in numbers["verdict"]]
    lines += ["", f"Source: {numbers['source']}; details and provenance in `{model}.json`.", ""]
    return "\n".join(lines)


MakeContext = Callable[[DictConfig, str], Context]  # pipeline.make_context, passed in (no import cycle)


def _tbt_context(cfg: DictConfig, make_context: MakeContext) -> Context | None:
    """train-before-test's context when the user's run has its scores; None otherwise (its section is skipped)."""
    if cfg.source == OVERLAY and not (run_root(cfg, TBT) / str(cfg.train_before_test.results_file)).is_file():
        return None
    return make_context(cfg, TBT)


def _provenance(ctxs: list[Any], model_file: Path) -> dict[str, Any]:
    """The code, command, the model file read (by its SHA-256) and every root read, with its checksum (both roots
    of an overlay)."""
    commit, dirty = provenance.code_git_state()
    data = {
        ctx.paper: [
            provenance.data_identity(root, src) for root, src in zip(ctx.roots(), _sources(ctx), strict=True)
        ]
        for ctx in ctxs
    }
    return {
        "git_commit": commit,
        "dirty": dirty,
        "command": provenance.command(),
        "source": ctxs[0].source,
        "model_file": {"path": in_repo(model_file), "sha256": provenance.file_sha256(model_file)},
        "data": data,
    }


def _sources(ctx: Any) -> list[str]:
    return ["published", "results"] if ctx.overlay_root is not None else [ctx.source]


def run(cfg: DictConfig, make_context: MakeContext) -> list[dict[str, Any]]:
    """Assess every model of the model file (or those `assess.models` names) and print each verdict."""
    entries = read_models(cfg)
    chosen = list(cfg.assess.get("models") or entries)
    unknown = sorted(set(chosen) - set(entries))
    if unknown:
        raise ModelFileError(f"assess.models: {unknown} not in assess.model_file ({sorted(entries)})")
    level = float(cfg.assess.level)
    ctx = make_context(with_models(cfg, entries, CONFIG_KEY), TOTT)
    tbt = _tbt_context(cfg, make_context)
    pages = []
    for model in chosen:
        fig, records = cohort.verdicts(ctx, model, list(entries), level)
        rank = ranks.verdict(tbt, model) if tbt is not None else None
        if rank is not None and all(v is None for v in rank["regimes"].values()):
            rank = None
        lines = [cohort_text(model, r, level) for r in records] + [ranks_text(model, rank)]
        numbers = {
            "model": model,
            "entry": entries[model],
            "source": ctx.source,
            "level": level,
            "training_on_the_test_task": records,
            "train_before_test": rank,
            "verdict": lines,
            provenance.KEY: _provenance([c for c in (ctx, tbt) if c is not None], model_file(cfg)),
        }
        folder = page_dir(cfg, model)
        atomic_save(
            folder / f"{model}.png", lambda p, f=fig: f.savefig(p, dpi=150, bbox_inches="tight", format="png")
        )
        atomic_write_json(folder / f"{model}.json", numbers)
        atomic_write_text(folder / f"{model}.md", markdown(numbers))
        plt.close(fig)
        print("\n".join(lines))
        log.info("assess-model %s -> %s", model, folder)
        pages.append(numbers)
    return pages
