"""Task data for fine-tuning on the test task (§3, App. B.2): (prompt, completion) pairs, as the authors built them
(socialfoundations/training-on-the-test-task@c357810, experiments/data_utils.py).

- `mmluaux`: the MMLU auxiliary training set (`cais/mmlu`, config `auxiliary_train`): prompt = the question, the
  options lettered A–D, each stripped, one per line, then "Answer:"; completion = " " + the letter (data_utils.py:4-10).
- `gsm8kaux`: Orca-Math then MetaMathQA, prompt "Question: {question}\nAnswer:", completion = the solution as
  stored, no strip and no added space (data_utils.py:12-15); examples over `max_chars` (1,700) characters dropped,
  then the concatenation shuffled with seed 42 (data_utils.py:61-62,77-80).
The same formatters serve local multiple-choice sets (ARC, OpenBookQA) for the CPU mini-replication.
The fine-tuning loss falls on the completion only (`recipe.loss_on: completion`, finetune.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from testtask.errors import InputError
from testtask.training_on_the_test_task.runner.settings import SourceFormat

LETTERS = "ABCDEFGHIJ"
Pair = tuple[str, str]


class TaskDataError(InputError, ValueError):
    """A training document lacks a field its formatter needs; the message names the source and the field."""


def multiple_choice(question: str, options: Sequence[str], answer: int) -> Pair:
    """MMLU-style prompt ending in "Answer:" and the gold letter after a space as the completion."""
    if not 0 <= answer < len(options):
        raise TaskDataError(f"answer index {answer} is outside the {len(options)} options")
    lines = [question.strip()]
    lines += [f"{LETTERS[i]}. {str(option).strip()}" for i, option in enumerate(options)]
    lines.append("Answer:")
    return "\n".join(lines), f" {LETTERS[answer]}"


def question_answer(question: str, answer: str) -> Pair:
    """GSM8K-style: neither side stripped, no space after "Answer:" (the solution is the completion as stored)."""
    return f"Question: {question}\nAnswer:", str(answer)


def text(pair: Pair) -> str:
    """The training document of a pair: prompt and completion joined as the tokenizer sees them."""
    return pair[0] + pair[1]


def _field(doc: Mapping[str, Any], name: str, source: str) -> Any:
    if name not in doc or doc[name] is None or (isinstance(doc[name], str) and not doc[name].strip()):
        raise TaskDataError(f"{source}: field {name!r} is missing or empty in {dict(doc)!r:.200}")
    return doc[name]


def mmlu_auxiliary(doc: Mapping[str, Any]) -> Pair:
    # The auxiliary_train config nests each row under "train" in some versions of the dataset.
    doc = doc.get("train", doc) if isinstance(doc.get("train"), Mapping) else doc
    return multiple_choice(
        _field(doc, "question", "mmlu auxiliary_train"),
        list(_field(doc, "choices", "mmlu auxiliary_train")),
        int(_field(doc, "answer", "mmlu auxiliary_train")),
    )


def metamath(doc: Mapping[str, Any]) -> Pair:
    return question_answer(_field(doc, "query", "MetaMathQA"), _field(doc, "response", "MetaMathQA"))


def orca_math(doc: Mapping[str, Any]) -> Pair:
    return question_answer(_field(doc, "question", "Orca-Math"), _field(doc, "answer", "Orca-Math"))


def _keyed_choices(doc: Mapping[str, Any], question_field: str, source: str) -> Pair:
    """Rows with choices {'text', 'label'} and an answerKey that is one of the labels (a letter or a digit)."""
    choices = _field(doc, "choices", source)
    labels = [str(label) for label in choices["label"]]
    key = str(_field(doc, "answerKey", source))
    if key not in labels:
        raise TaskDataError(f"{source}: answerKey {key!r} is not among the labels {labels}")
    return multiple_choice(_field(doc, question_field, source), list(choices["text"]), labels.index(key))


def arc(doc: Mapping[str, Any]) -> Pair:
    """ARC (allenai/ai2_arc layout)."""
    return _keyed_choices(doc, "question", "ARC")


def openbookqa(doc: Mapping[str, Any]) -> Pair:
    """OpenBookQA (allenai/openbookqa `main` layout): the question is `question_stem`."""
    return _keyed_choices(doc, "question_stem", "OpenBookQA")


FORMATTERS: dict[SourceFormat, Callable[[Mapping[str, Any]], Pair]] = {
    SourceFormat.mmlu_auxiliary: mmlu_auxiliary,
    SourceFormat.metamath: metamath,
    SourceFormat.orca_math: orca_math,
    SourceFormat.arc: arc,
    SourceFormat.openbookqa: openbookqa,
}


def load_source(source: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """Rows of one configured source (runner.settings.Source): a Hub dataset (`path`, `name`, `split`), a
    `save_to_disk` folder (`disk`) or a JSON-lines file (`json`)."""
    import datasets

    from testtask.paths import resolve

    if source.get("disk"):
        ds = datasets.load_from_disk(str(resolve(source["disk"])))
    elif source.get("json"):
        ds = datasets.load_dataset("json", data_files=str(resolve(source["json"])), split="train")
    else:
        ds = datasets.load_dataset(str(source["path"]), source.get("name"), split=str(source["split"]))
    if source.get("limit"):
        ds = ds.select(range(min(int(source["limit"]), len(ds))))
    return ds


def keep_short(pairs: list[Pair], max_chars: int | None) -> list[Pair]:
    """Pairs whose prompt + completion have at most `max_chars` characters (all with None)."""
    if max_chars is None:
        return pairs
    return [p for p in pairs if len(p[0]) + len(p[1]) <= int(max_chars)]


def shuffled(pairs: list[Pair], seed: int | None) -> list[Pair]:
    """The order `datasets.Dataset.shuffle(seed=seed)` gives (NumPy's default generator's permutation);
    unchanged with None."""
    if seed is None:
        return pairs
    import numpy as np

    order = np.random.default_rng(int(seed)).permutation(len(pairs))
    return [pairs[i] for i in order]


def build_texts(
    sources: Sequence[Mapping[str, Any]], *, max_chars: int | None = None, shuffle_seed: int | None = None
) -> list[Pair]:
    """Every configured source formatted, each filtered to `max_chars`, concatenated in order, then shuffled."""
    pairs: list[Pair] = []
    for source in sources:
        name = source["format"]
        if name not in set(SourceFormat):
            raise TaskDataError(f"unknown format {name!r}; known: {', '.join(SourceFormat)}")
        pairs += keep_short([FORMATTERS[SourceFormat(name)](row) for row in load_source(source)], max_chars)
    return shuffled(pairs, shuffle_seed)
