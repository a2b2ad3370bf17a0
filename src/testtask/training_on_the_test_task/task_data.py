"""Task data for fine-tuning on the test task (§3, App. B.2): documents formatted as question → answer text.

- `mmluaux`: the MMLU auxiliary training set (`cais/mmlu`, config `auxiliary_train`), MMLU-style: the question,
  the options lettered A–D, "Answer:" and the letter.
- `gsm8kaux`: MetaMathQA plus Orca-Math, "Question:" / "Answer:" with the worked solution.
The same formatters serve local multiple-choice sets (ARC, OpenBookQA) for the CPU mini-replication.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

LETTERS = "ABCDEFGHIJ"


class TaskDataError(ValueError):
    """A training document lacks a field its formatter needs; the message names the source and the field."""


def multiple_choice(question: str, options: Sequence[str], answer: int) -> str:
    """MMLU-style prompt with the gold letter appended."""
    if not 0 <= answer < len(options):
        raise TaskDataError(f"answer index {answer} is outside the {len(options)} options")
    lines = [question.strip()]
    lines += [f"{LETTERS[i]}. {str(option).strip()}" for i, option in enumerate(options)]
    lines.append(f"Answer: {LETTERS[answer]}")
    return "\n".join(lines)


def question_answer(question: str, answer: str) -> str:
    return f"Question: {question.strip()}\nAnswer: {answer.strip()}"


def _field(doc: Mapping[str, Any], name: str, source: str) -> Any:
    if name not in doc or doc[name] is None or (isinstance(doc[name], str) and not doc[name].strip()):
        raise TaskDataError(f"{source}: field {name!r} is missing or empty in {dict(doc)!r:.200}")
    return doc[name]


def mmlu_auxiliary(doc: Mapping[str, Any]) -> str:
    # The auxiliary_train config nests each row under "train" in some versions of the dataset.
    doc = doc.get("train", doc) if isinstance(doc.get("train"), Mapping) else doc
    return multiple_choice(
        _field(doc, "question", "mmlu auxiliary_train"),
        list(_field(doc, "choices", "mmlu auxiliary_train")),
        int(_field(doc, "answer", "mmlu auxiliary_train")),
    )


def metamath(doc: Mapping[str, Any]) -> str:
    return question_answer(_field(doc, "query", "MetaMathQA"), _field(doc, "response", "MetaMathQA"))


def orca_math(doc: Mapping[str, Any]) -> str:
    return question_answer(_field(doc, "question", "Orca-Math"), _field(doc, "answer", "Orca-Math"))


def _keyed_choices(doc: Mapping[str, Any], question_field: str, source: str) -> str:
    """Rows with choices {'text', 'label'} and an answerKey that is one of the labels (a letter or a digit)."""
    choices = _field(doc, "choices", source)
    labels = [str(label) for label in choices["label"]]
    key = str(_field(doc, "answerKey", source))
    if key not in labels:
        raise TaskDataError(f"{source}: answerKey {key!r} is not among the labels {labels}")
    return multiple_choice(_field(doc, question_field, source), list(choices["text"]), labels.index(key))


def arc(doc: Mapping[str, Any]) -> str:
    """ARC (allenai/ai2_arc layout)."""
    return _keyed_choices(doc, "question", "ARC")


def openbookqa(doc: Mapping[str, Any]) -> str:
    """OpenBookQA (allenai/openbookqa `main` layout): the question is `question_stem`."""
    return _keyed_choices(doc, "question_stem", "OpenBookQA")


FORMATTERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "mmlu_auxiliary": mmlu_auxiliary,
    "metamath": metamath,
    "orca_math": orca_math,
    "arc": arc,
    "openbookqa": openbookqa,
}


def load_source(source: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """Rows of one configured source: a Hub dataset (`path`, `name`, `split`), a `save_to_disk` folder (`disk`)
    or a JSON-lines file (`json`)."""
    import datasets

    from testtask.paths import resolve

    if source.get("disk"):
        ds = datasets.load_from_disk(str(resolve(source["disk"])))
    elif source.get("json"):
        ds = datasets.load_dataset("json", data_files=str(resolve(source["json"])), split="train")
    else:
        ds = datasets.load_dataset(
            str(source["path"]), source.get("name"), split=str(source.get("split", "train"))
        )
    if source.get("limit"):
        ds = ds.select(range(min(int(source["limit"]), len(ds))))
    return ds


def build_texts(sources: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every configured source, formatted and concatenated in order."""
    texts: list[str] = []
    for source in sources:
        name = str(source["format"])
        if name not in FORMATTERS:
            raise TaskDataError(f"unknown format {name!r}; known: {', '.join(FORMATTERS)}")
        texts += [FORMATTERS[name](row) for row in load_source(source)]
    return texts
