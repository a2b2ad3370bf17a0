"""The range each LM Evaluation Harness metric (`<name>,<filter>`: by its name) can take, so readers of raw results
can refuse impossible values; an unlisted name need only be a finite number."""

from __future__ import annotations

import math

UNIT = (0.0, 1.0)
RANGES: dict[str, tuple[float, float]] = {
    # shares of documents: accuracies and match rates
    "acc": UNIT,
    "acc_norm": UNIT,
    "acc_mutual_info": UNIT,
    "exact_match": UNIT,
    "em": UNIT,
    "contains": UNIT,
    "f1": UNIT,  # lm-eval's f1 (sklearn, DROP); squadv2's own `f1` is on 0-100 but is not read here
    "prompt_level_strict_acc": UNIT,
    "prompt_level_loose_acc": UNIT,
    "inst_level_strict_acc": UNIT,
    "inst_level_loose_acc": UNIT,
    "bleu_acc": UNIT,
    "rouge1_acc": UNIT,
    "rouge2_acc": UNIT,
    "rougeL_acc": UNIT,
    # Matthews correlation
    "mcc": (-1.0, 1.0),
    # sum over the options of (p - y)^2: 0 for a sure right answer, 2 for a sure wrong one
    "brier_score": (0.0, 2.0),
    # exp of a mean negative log-likelihood: at least 1
    "perplexity": (1.0, math.inf),
    "word_perplexity": (1.0, math.inf),
    "byte_perplexity": (1.0, math.inf),
    # a mean negative log-likelihood in bits: at least 0
    "bits_per_byte": (0.0, math.inf),
}


def metric_range(metric: str) -> tuple[float, float] | None:
    """(low, high) of metric `metric` (`name` or `name,filter`); None when the name is not listed."""
    return RANGES.get(metric.split(",", 1)[0])


def problem(value: object, metric: str) -> str | None:
    """Why `value` cannot be a score of `metric`, e.g. "not a number" (None when it can)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "not a number"
    if not math.isfinite(value):
        return "not a finite number"
    bounds = metric_range(metric)
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        return f"outside [{bounds[0]:g}, {bounds[1]:g}], the range of {metric.split(',', 1)[0]}"
    return None
