"""Synthetic data for the preflight, in the layouts the runners read: a 3-class text classification set and
ARC-style multiple-choice questions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CLASSES = ("sports", "food", "music")
DESCRIPTION = "Each text is a short note. Name its topic."
CLASS_WORDS = {
    0: ["ball", "goal", "team", "match", "score", "coach", "run", "win"],
    1: ["bread", "soup", "salt", "cook", "taste", "meal", "rice", "cake"],
    2: ["song", "drum", "tune", "band", "sing", "piano", "beat", "choir"],
}
COMMON_WORDS = ["the", "a", "very", "today", "we", "like", "this", "and", "it", "was"]
# The zero-shot prompt's words (conf/lm/mistral_qlora.yaml), so that prompts tokenize without [UNK].
PROMPT_TEXT = (
    "Your task is to classify a given text as one of these categories:\n\n### Text: \n ### Answer: "
    + " ".join(CLASSES)
    + " "
    + DESCRIPTION
)
ROWS_PER_CLASS = (60, 50, 40)
DATASET = "preflight"

WORDS = [
    "red", "blue", "green", "stone", "water", "light", "plant", "sun", "moon", "rock", "heat", "cold",
    "river", "cloud", "seed", "leaf", "sand", "wind", "rain", "salt",
]  # fmt: skip
# Words of our multiple-choice prompts (lm_eval_tasks/utils.py, task_data.multiple_choice).
MC_PROMPT_TEXT = "Question : Answer : A . B . C . D . E . ? \n"


def classification_frame(seed: int = 0) -> Any:
    """Texts of class words and common words, 60/50/40 rows of the three classes (a DataFrame: text, label)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    for label, count in enumerate(ROWS_PER_CLASS):
        for _ in range(count):
            words = list(rng.choice(CLASS_WORDS[label], size=rng.integers(3, 6))) + list(
                rng.choice(COMMON_WORDS, size=rng.integers(1, 4))
            )
            rng.shuffle(words)
            rows.append({"text": " ".join(words), "label": label})
    return pd.DataFrame(rows).iloc[rng.permutation(len(rows))].reset_index(drop=True)


def write_classification(folder: Path) -> dict:
    """Write `<folder>/preflight.csv`; returns its dataset spec (an entry of conf/datasets/*.yaml)."""
    folder.mkdir(parents=True, exist_ok=True)
    classification_frame().to_csv(folder / f"{DATASET}.csv", index=False)
    return {"source": "file", "path": f"{DATASET}.csv", "classes": list(CLASSES), "description": DESCRIPTION}


def _phrase(i: int, n: int = 4) -> str:
    return " ".join(WORDS[(i * 7 + k * (3 + i // len(WORDS))) % len(WORDS)] for k in range(n))


def arc_rows(count: int, offset: int = 0) -> list[dict]:
    """ARC rows with the Hub dataset's columns: four lettered options, `answerKey` a letter."""
    rows = []
    for i in range(offset, offset + count):
        labels = list("ABCD")
        rows.append(
            {
                "id": f"arc-{i}",
                "question": _phrase(i) + " ?",
                "choices": {"text": [_phrase(i + k + 1, 2) for k in range(4)], "label": labels},
                "answerKey": labels[i % 4],
            }
        )
    return rows


def arc_pairs(count: int, offset: int = 0) -> list[tuple[str, str]]:
    """(prompt, completion) training pairs in the runner's format (task_data.arc)."""
    from testtask.training_on_the_test_task import task_data

    return [task_data.arc(row) for row in arc_rows(count, offset)]


def write_arc(folder: Path, splits: dict[str, list[dict]] | None = None) -> Path:
    """`<folder>/ARC-Challenge/<split>.jsonl` (default: the preflight's train, validation and test rows), the
    local copy `evaluation.task_manager` reads."""
    splits = splits or {"train": arc_rows(8, 40), "validation": arc_rows(8, 60), "test": arc_rows(12)}
    for split, rows in splits.items():
        path = folder / "ARC-Challenge" / f"{split}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def arc_text(folder: Path) -> str:
    """Every word the ARC files and the prompts use (the tokenizer's vocabulary)."""
    return " ".join(p.read_text() for p in sorted(folder.rglob("*.jsonl"))) + " " + MC_PROMPT_TEXT
