"""Which entries of the results are downstream benchmarks (by category) and which are perplexity corpora."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from testtask.context import InputsUnavailable
from testtask.train_before_test.inputs import Results
from testtask.train_before_test.settings import Category, Perplexity

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Layout:
    categories: dict[str, list[str]]  # category key -> benchmarks, in the order of Table 1
    category_names: dict[str, str]
    corpora: list[str]  # perplexity corpora (never among the downstream benchmarks)
    corpora_higher_is_better: bool
    labels: dict[str, str]

    @property
    def downstream(self) -> list[str]:
        return [b for benches in self.categories.values() for b in benches]

    def label(self, name: str) -> str:
        return self.labels.get(name, name)

    def category_of(self, bench: str) -> str:
        return next(key for key, benches in self.categories.items() if bench in benches)


def layout(
    categories_of: Mapping[str, Category], perplexity: Perplexity, labels: Mapping[str, str]
) -> Layout:
    """The layout of the settings; ValueError when a benchmark is listed twice or is also a perplexity corpus."""
    categories = {k: list(v.benchmarks) for k, v in categories_of.items()}
    names = {k: v.name for k, v in categories_of.items()}
    corpora = list(perplexity.corpora)
    flat = [b for benches in categories.values() for b in benches]
    repeated = sorted({b for b in flat if flat.count(b) > 1})
    if repeated:
        raise ValueError(f"train_before_test.categories: benchmarks listed more than once: {repeated}")
    overlap = sorted(set(flat) & set(corpora))
    if overlap:
        raise ValueError(
            f"train_before_test: {overlap} are both downstream benchmarks and perplexity corpora"
        )
    return Layout(categories, names, corpora, perplexity.higher_is_better, dict(labels))


def present_downstream(res: Results, lay: Layout, minimum: int = 2) -> tuple[list[str], list[str]]:
    """(configured downstream benchmarks present in every regime, in category order; those absent).

    Entries of the file that are neither configured benchmarks nor perplexity corpora are ignored (logged)."""
    available = res.benchmarks()
    present = [b for b in lay.downstream if b in available]
    missing = [b for b in lay.downstream if b not in available]
    unknown = sorted(available - set(lay.downstream) - set(lay.corpora))
    if missing:
        log.warning("%s: configured benchmarks absent from some regime: %s", res.path, missing)
    if unknown:
        log.warning(
            "%s: entries ignored (neither a configured benchmark nor a corpus): %s", res.path, unknown
        )
    if len(present) < minimum:
        raise InputsUnavailable(
            f"{res.path}: only {len(present)} of the {len(lay.downstream)} downstream benchmarks of "
            f"train_before_test.categories are in every regime (at least {minimum} needed); the file has "
            f"{', '.join(sorted(available)) or 'none'}"
        )
    return present, missing


def present_corpora(res: Results, lay: Layout) -> list[str]:
    """Configured perplexity corpora present in every regime; InputsUnavailable when none is."""
    available = res.benchmarks()
    corpora = [c for c in lay.corpora if c in available]
    if not corpora:
        raise InputsUnavailable(
            f"{res.path}: none of the perplexity corpora of train_before_test.perplexity.corpora "
            f"({', '.join(lay.corpora)}) is in every regime"
        )
    return corpora
