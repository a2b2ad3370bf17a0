"""Offline fixtures for the lm-eval task tests of `training-on-the-test-task`.

Small JSON Lines copies of ARC-Challenge, HellaSwag, MMLU and MMLU-Pro with the Hub datasets' columns, and a
randomly initialised one-layer Llama (hidden size 16) with a word-level tokenizer whose vocabulary holds every
word of the fixtures and of the prompts, saved with `save_pretrained`.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

from testtask.lm.tiny_llama import build_tiny_llama

WORDS = [
    "red", "blue", "green", "stone", "water", "light", "plant", "sun", "moon", "rock", "heat", "cold",
    "river", "cloud", "seed", "leaf", "sand", "wind", "rain", "salt",
]  # fmt: skip
PROMPT_TEXT = (
    "Question : Answer : The following are questions ( with answers ) about multiple choice . "
    + " ".join(string.ascii_uppercase[:10])
)
MMLU_SUBJECT = "anatomy"


def _phrase(i: int, n: int = 4) -> str:
    """A deterministic phrase of `n` fixture words."""
    return " ".join(WORDS[(i * 7 + k * (3 + i // len(WORDS))) % len(WORDS)] for k in range(n))


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def arc_rows(count: int, offset: int = 0) -> list[dict]:
    """ARC rows (4 options, letter labels); row 1 uses numeric labels, row 2 has five options."""
    rows = []
    for i in range(offset, offset + count):
        n = 5 if i - offset == 2 else 4
        labels = [str(k + 1) for k in range(n)] if i - offset == 1 else list("ABCDE"[:n])
        texts = [_phrase(i + k + 1, 2) for k in range(n)]
        rows.append(
            {
                "id": f"arc-{i}",
                "question": _phrase(i) + " ?",
                "choices": {"text": texts, "label": labels},
                "answerKey": labels[i % n],
            }
        )
    return rows


def hellaswag_rows(count: int, offset: int = 0) -> list[dict]:
    """HellaSwag rows; row 0 carries WikiHow's ` [title]` and a bracket artefact."""
    rows = []
    for i in range(offset, offset + count):
        ctx_a = _phrase(i) + (" [title] " + _phrase(i + 1, 2) if i == offset else "")
        rows.append(
            {
                "ind": i,
                "activity_label": WORDS[i % len(WORDS)],
                "ctx_a": ctx_a,
                "ctx_b": _phrase(i + 2, 2),
                "ctx": ctx_a,
                "endings": [_phrase(i + k + 3, 3) + (" [step]" if k == 0 else "") for k in range(4)],
                "source_id": f"src-{i}",
                "split": "val",
                "split_type": "indomain",
                "label": str(i % 4),
            }
        )
    return rows


def mmlu_rows(subject: str, count: int, offset: int = 0) -> list[dict]:
    """MMLU rows: a question, four answer texts of different lengths, `answer` the gold index."""
    return [
        {
            "question": _phrase(i) + " ?",
            "subject": subject,
            "choices": [_phrase(i + k + 1, 1 + k % 3) for k in range(4)],
            "answer": (i * 3) % 4,
        }
        for i in range(offset, offset + count)
    ]


def mmlu_pro_rows(count: int, offset: int = 0, num_options: int = 10) -> list[dict]:
    """MMLU-Pro rows with `num_options` options (the last row of a call has seven when that is fewer)."""
    rows = []
    for i in range(offset, offset + count):
        n = 7 if i == offset + count - 1 and count > 1 and num_options > 7 else num_options
        options = [f"{_phrase(i + k, 2)} {k}" for k in range(n)]
        answer_index = (i * 5 + 2) % n
        rows.append(
            {
                "question_id": 100 + i,
                "question": _phrase(i) + " ?",
                "options": options,
                "answer": string.ascii_uppercase[answer_index],
                "answer_index": answer_index,
                "cot_content": "",
                "category": "physics",
                "src": "fixture",
            }
        )
    return rows


def write_datasets(root: Path, mmlu_subjects: tuple[str, ...] = (MMLU_SUBJECT,)) -> dict[str, Path]:
    """Local data folders, benchmark -> folder, laid out as `evaluation.local_dataset_overrides` reads them."""
    arc = root / "arc"
    write_jsonl(arc / "ARC-Challenge" / "train.jsonl", arc_rows(6, offset=20))
    write_jsonl(
        arc / "ARC-Challenge" / "validation.jsonl", arc_rows(6, offset=30)
    )  # arc_challenge_mc few-shot
    write_jsonl(arc / "ARC-Challenge" / "test.jsonl", arc_rows(5))
    hellaswag = root / "hellaswag"
    write_jsonl(hellaswag / "train.jsonl", hellaswag_rows(4, offset=30))
    write_jsonl(hellaswag / "validation.jsonl", hellaswag_rows(4))
    mmlu = root / "mmlu"
    for s, subject in enumerate(mmlu_subjects):
        write_jsonl(mmlu / subject / "dev.jsonl", mmlu_rows(subject, 5, offset=40 + s))
        write_jsonl(mmlu / subject / "test.jsonl", mmlu_rows(subject, 3, offset=s))
    pro = root / "mmlu_pro"
    write_jsonl(pro / "validation.jsonl", mmlu_pro_rows(5, offset=50))
    write_jsonl(pro / "test.jsonl", mmlu_pro_rows(4))
    pro4 = (
        root / "mmlu_pro_4"
    )  # the authors' fixed four-option subsample has MMLU-Pro's columns, four options
    write_jsonl(pro4 / "validation.jsonl", mmlu_pro_rows(5, offset=50, num_options=4))
    write_jsonl(pro4 / "test.jsonl", mmlu_pro_rows(4, num_options=4))
    return {
        "arc_challenge_mc": arc,
        "hellaswag_mc": hellaswag,
        "mmlu_cloze": mmlu,
        "mmlu_mc": mmlu,
        "leaderboard_mmlu_pro_four": pro4,
        "leaderboard_mmlu_pro_four_seeded": pro,
    }


def _all_text(root: Path) -> str:
    return " ".join(p.read_text() for p in sorted(root.rglob("*.jsonl"))) + " " + PROMPT_TEXT


def build_model(directory: Path, data_root: Path) -> Path:
    """A tiny random Llama and a word-level tokenizer covering the words below `data_root`."""
    return build_tiny_llama(directory, [_all_text(data_root)])


def build_bos_llama(directory: Path, texts: list[str], pad_is_eos: bool = True) -> Path:
    """The tiny Llama with a Llama-type tokenizer: BOS prepended by its post-processor (as Llama's and Mistral's
    tokenizers do) and, with `pad_is_eos`, no pad token of its own (EOS pads, as the runners set it)."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer

    folder = build_tiny_llama(directory, texts)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    bos = tokenizer.bos_token_id
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(
        single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", bos)]
    )
    if pad_is_eos:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.save_pretrained(folder)
    return folder
