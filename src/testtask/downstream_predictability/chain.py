"""The chain of §3: log p_vocab(correct) → p_vocab(correct) → p_choices(correct) → Brier score, accuracy.

For one document with choices i = 1..C and gold choice c, lm-eval logs each choice's loglikelihood ℓ_i, the log
probability the model gives the choice's continuation over its whole vocabulary, given the prompt. When the
continuation is several tokens long, ℓ_i is the *sum* of the tokens' log probabilities, so

    log p_vocab(correct) = ℓ_c                          (Eq. 1, negated)
    p_vocab(correct)     = exp(ℓ_c)                     (Eq. 2: the probability of the whole continuation)
    p_choices(correct)   = exp(ℓ_c) / Σ_i exp(ℓ_i)      (Eq. 3: renormalised over the available choices)
    Brier score          = Σ_i (1[i = c] − p_choices(i))²   (Eq. 5, as lm-eval's `brier_score`; lower is better)
    accuracy             = 1[argmax_i p_choices(i) = c]  (Eq. 4; the first maximum on ties, as numpy's argmax)

A length normalisation (lm-eval's `acc_norm`: ℓ_i divided by the choice's length in characters) may be applied
to every ℓ_i first; the chain is then that of the per-character loglikelihoods.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from testtask.downstream_predictability.inputs import TaskSamples
from testtask.downstream_predictability.settings import Normalisation

LABELS = {
    "log_p_vocab": "log p_vocab(correct)",
    "p_vocab": "p_vocab(correct)",
    "p_choices": "p_choices(correct)",
    "brier": "Brier score",
    "accuracy": "accuracy",
}


def normalised_loglik(samples: TaskSamples, normalisation: Normalisation) -> np.ndarray:
    """The loglikelihoods the chain starts from: as logged (`none`), or per character / per UTF-8 byte."""
    if normalisation == Normalisation.none:
        return samples.loglik
    if normalisation == Normalisation.chars:
        return samples.loglik / samples.chars
    if normalisation == Normalisation.bytes:
        return samples.loglik / samples.bytes
    raise ValueError(f"normalisation must be one of {', '.join(Normalisation)}, got {normalisation!r}")


def chain(loglik: np.ndarray, target: np.ndarray) -> dict[str, np.ndarray]:
    """Every quantity of the chain for each document.

    `loglik` is (..., C) with NaN for absent choices (documents with fewer choices); `target` holds the gold
    index and broadcasts against `loglik[..., 0]`. Returns arrays shaped like `loglik[..., 0]`, plus the
    per-choice `p_choices_all` and the log of the vocabulary mass on the incorrect choices (summed, and per
    choice with NaN at the gold and absent choices) for the mechanism figures.
    """
    loglik = np.asarray(loglik, dtype=float)
    present = ~np.isnan(loglik)
    if not np.all(present.any(axis=-1)):
        raise ValueError("a document has no choice with a loglikelihood")
    gold = np.broadcast_to(np.asarray(target, dtype=int), loglik.shape[:-1])
    if np.any(gold < 0) or np.any(np.take_along_axis(present, gold[..., None], axis=-1)[..., 0] == 0):
        raise ValueError("a target index points at a choice without a loglikelihood")
    filled = np.where(present, loglik, -np.inf)
    log_norm = logsumexp(filled, axis=-1)
    log_p_choices_all = filled - log_norm[..., None]
    p_choices_all = np.where(present, np.exp(log_p_choices_all), 0.0)
    onehot = np.zeros_like(p_choices_all)
    np.put_along_axis(onehot, gold[..., None], 1.0, axis=-1)
    correct = np.take_along_axis(filled, gold[..., None], axis=-1)[..., 0]
    incorrect = np.where(onehot.astype(bool) | ~present, -np.inf, filled)
    with np.errstate(divide="ignore"):
        log_incorrect_sum = logsumexp(incorrect, axis=-1)  # -inf when a document has one choice
    return {
        "log_p_vocab": correct,
        "p_vocab": np.exp(correct),
        "p_choices": np.take_along_axis(p_choices_all, gold[..., None], axis=-1)[..., 0],
        "brier": np.sum((onehot - p_choices_all) ** 2, axis=-1),
        "accuracy": (np.argmax(filled, axis=-1) == gold).astype(float),
        "p_choices_all": p_choices_all,
        "log_p_vocab_incorrect_sum": log_incorrect_sum,
        "log_p_vocab_incorrect_each": np.where(np.isinf(incorrect), np.nan, incorrect),
    }
