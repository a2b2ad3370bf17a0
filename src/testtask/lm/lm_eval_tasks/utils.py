"""Document processing and metrics of our lm-eval tasks (referenced from the YAMLs as `!function utils.<name>`).

- `_mc` tasks (§3.2 of the paper): a benchmark reformulated MMLU-style, its choices the options' letters.
- `brier_score` (§5, Appendix F), per document next to `acc`, so the logged samples carry it too.
- MMLU-Pro with four options (Appendix E, Figure 16): six of the ten dropped at random, never the correct one.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

import datasets
import numpy as np

LETTERS = string.ascii_uppercase
ARC_NUM_OPTIONS = 4  # ARC questions with 3 or 5 options are left out (1172 -> 1144 test questions)
MMLU_PRO_KEEP = 4  # options kept per MMLU-Pro question (the correct one and three others)
MMLU_PRO_SEED = 1234


def lettered_prompt(query: str, options: Sequence[str], strip: bool = True) -> str:
    """`query` (stripped unless `strip` is False), then one line per option `A. <option>`, then `Answer:`
    (the MMLU prompt format)."""
    if len(options) > len(LETTERS):
        raise ValueError(f"{len(options)} options: more than there are letters")
    lines = [query.strip() if strip else query]
    lines += [f"{LETTERS[i]}. {option}" for i, option in enumerate(options)]
    lines.append("Answer:")
    return "\n".join(lines)


def mc_doc_to_text(doc: Mapping[str, Any]) -> str:
    """Prompt of a processed `_mc` document (fields `query`, `options`)."""
    return lettered_prompt(doc["query"], doc["options"])


def mc_doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    """The letters of a processed `_mc` document's options: ["A", "B", ...]."""
    return list(LETTERS[: len(doc["options"])])


def _arc_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    labels = list(doc["choices"]["label"])
    return {
        "query": doc["question"],
        "options": list(doc["choices"]["text"]),
        "gold": labels.index(doc["answerKey"]),
    }


def arc_process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    """ARC documents with four options, as `query`, `options` and `gold` (the index of `answerKey`)."""
    four = dataset.filter(lambda doc: len(doc["choices"]["text"]) == ARC_NUM_OPTIONS)
    return four.map(_arc_doc)


def hellaswag_clean(text: str) -> str:
    """lm-eval's HellaSwag text cleanup: WikiHow's `[title]` becomes a full stop, other brackets go."""
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def _hellaswag_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    context = doc["ctx_a"] + " " + doc["ctx_b"].capitalize()
    return {
        "query": hellaswag_clean(doc["activity_label"] + ": " + context),
        "options": [hellaswag_clean(ending).strip() for ending in doc["endings"]],
        "gold": int(doc["label"]),
    }


def hellaswag_process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    """HellaSwag documents as `query` (activity and context), `options` (the four endings) and `gold`."""
    return dataset.map(_hellaswag_doc)


def four_option_indices(
    num_options: int, answer_index: int, key: str, seed: int = MMLU_PRO_SEED
) -> list[int]:
    """Indices (in order) of the options kept: the correct one and three drawn by `seed` and the question's
    `key` alone (not the order or subset evaluated)."""
    if num_options <= MMLU_PRO_KEEP:
        return list(range(num_options))
    wrong = [i for i in range(num_options) if i != answer_index]
    rng = random.Random(f"mmlu_pro_four:{seed}:{key}")
    return sorted([answer_index, *rng.sample(wrong, MMLU_PRO_KEEP - 1)])


def _mmlu_pro_four_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    answer_index = int(doc["answer_index"])
    keep = four_option_indices(len(doc["options"]), answer_index, str(doc["question_id"]))
    new_index = keep.index(answer_index)
    return {
        "options": [doc["options"][i] for i in keep],
        "answer_index": new_index,
        "answer": LETTERS[new_index],
    }


def mmlu_pro_four_process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    """MMLU-Pro documents with four options left, `answer` and `answer_index` renumbered."""
    return dataset.map(_mmlu_pro_four_doc)


def mmlu_pro_doc_to_text(doc: Mapping[str, Any]) -> str:
    """lm-eval's leaderboard MMLU-Pro prompt: question (not stripped, as lm-eval's and the authors' fork's
    utils.doc_to_text), lettered options, `Answer:`."""
    return lettered_prompt(doc["question"], doc["options"], strip=False)


mmlu_pro_doc_to_choice = mc_doc_to_choice  # the letters of an MMLU-Pro document's options


def softmax(values: Sequence[float]) -> np.ndarray:
    """Probabilities proportional to exp(values)."""
    x = np.asarray(values, dtype=float)
    e = np.exp(x - x.max())
    return e / e.sum()


def brier_score(loglikelihoods: Sequence[float], gold: int) -> float:
    """sum_k (p_k - 1[k = gold])^2 with p the softmax of the choices' loglikelihoods."""
    p = softmax(loglikelihoods)
    onehot = np.zeros_like(p)
    onehot[gold] = 1.0
    return float(np.sum((p - onehot) ** 2))


def _gold_index(doc: Mapping[str, Any]) -> int:
    return int(doc["gold"] if "gold" in doc else doc["answer"])


def _scores(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> tuple[np.ndarray, int]:
    lls = np.array([float(ll) for ll, _ in results])
    gold = _gold_index(doc)
    if not 0 <= gold < len(lls):
        raise ValueError(f"gold index {gold} out of range for {len(lls)} choices")
    return lls, gold


def mc_process_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, float]:
    """Per-document `acc` and `brier_score` from one (loglikelihood, is_greedy) pair per choice; the gold
    index is `gold` (`_mc` tasks) or `answer` (MMLU)."""
    lls, gold = _scores(doc, results)
    return {"acc": float(np.argmax(lls) == gold), "brier_score": brier_score(lls, gold)}


def cloze_process_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, float]:
    """`mc_process_results` plus `acc_norm`: loglikelihoods over the `choices`' lengths in characters."""
    lls, gold = _scores(doc, results)
    lengths = np.array([max(len(str(choice)), 1) for choice in doc["choices"]], dtype=float)
    if len(lengths) != len(lls):
        raise ValueError(f"{len(lls)} loglikelihoods for {len(lengths)} choices")
    return {
        "acc": float(np.argmax(lls) == gold),
        "acc_norm": float(np.argmax(lls / lengths) == gold),
        "brier_score": brier_score(lls, gold),
    }
